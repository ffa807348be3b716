"""Signals of the storage pipeline."""

rows_committed = object()
"""Sent with ``urls``, the URLs of page rows now stored (in the database, or in the file of
unsaved rows when the database stayed away): their requests are done for good."""
