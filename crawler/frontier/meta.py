"""What a request carries for the frontier."""

NOT_BEFORE = "not_before"
"""Unix time before which the frontier does not hand the request out (retries with backoff)."""
