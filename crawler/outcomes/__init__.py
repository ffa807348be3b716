"""Turning what happened to a request (a response, a failure) into a ``PageItem`` row."""

from crawler.outcomes.recorder import OutcomeRecorder, page_item

__all__ = ["OutcomeRecorder", "page_item"]
