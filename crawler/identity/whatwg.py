"""URLs read as browsers read them: the WHATWG URL Standard, through the ada parser (``ada-url``).

Python's ``urljoin`` and ``idna`` codec follow older rules than browsers do, and a crawler that
reads a link otherwise than a browser follows another page than the site links to: a browser
reads ``\\`` as ``/`` in http(s) URLs, ``https:example.com`` as an absolute URL, IPv4 addresses
written as numbers (``0x7f.1``) as addresses and refuses invalid ones (``1.2.3.08``), and maps
non-ASCII hosts with UTS #46 non-transitional IDNA (``faß.example`` is ``xn--fa-hia.example``,
where Python's codec makes it ``fass.example``, another domain).
"""

from __future__ import annotations

import ada_url


def parse(url: str) -> str | None:
    """The absolute URL ``url`` as a browser serializes it; None when a browser refuses it."""
    try:
        # ada's "normalize" is the URL Standard's parse-then-serialize, nothing more.
        return _with_valid_host(ada_url.normalize_url(url))
    except ValueError:
        return None


def join(base: str, href: str) -> str | None:
    """``href`` resolved against ``base`` and serialized as a browser does; None when a browser
    refuses it."""
    try:
        return _with_valid_host(ada_url.join_url(base, href))
    except ValueError:
        return None


def _with_valid_host(url: str) -> str | None:
    """``url``, unless it is an http(s) URL whose host has a label that says it is IDNA
    (``xn--``) and is not.

    The URL Standard now lets an all-ASCII host through unchecked, and ada 4 follows it; the
    standard before refused such a host, and so do the web-platform-tests cases the crawler is
    checked against. No registry hands out such a name, so a link to one leads nowhere.
    """
    if "xn--" not in url or not url.startswith(("http://", "https://")):
        return url
    authority = url.partition("//")[2].partition("/")[0]
    host = authority.rpartition("@")[2].partition(":")[0]
    if "xn--" not in host:
        return url
    # ada's ToUnicode leaves a label as it is when it does not decode to a valid one.
    labels = ada_url.idna_to_unicode(host).split(".")
    return None if any(label.startswith("xn--") for label in labels) else url
