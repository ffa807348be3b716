"""Content-type accept and reject lists."""

from __future__ import annotations

import pytest

from crawler.middlewares.filters import content_type_allowed


@pytest.mark.parametrize(
    ("media_type", "accept", "reject", "allowed"),
    [
        ("text/html", ["text/*"], [], True),
        ("text/csv", ["text/*"], ["text/csv"], False),
        ("image/png", ["text/*", "application/xhtml+xml"], [], False),
        ("application/atom+xml", ["application/*+xml"], [], True),
        ("application/pdf", ["*/*"], ["application/pdf"], False),
        (None, ["text/html"], [], True),
    ],
)
def test_content_type_lists(media_type, accept, reject, allowed) -> None:
    assert content_type_allowed(media_type, accept, reject) is allowed
