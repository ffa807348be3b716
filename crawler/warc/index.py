"""The CDXJ index of a finished WARC file, written beside it by Webrecorder's cdxj-indexer (the
index pywb reads: one sorted line per response, revisit and resource record)."""

from __future__ import annotations

from pathlib import Path

from crawler.warc.names import index_name


def write_index(warc: Path) -> Path:
    """Index ``warc`` into ``NAME.cdxj`` beside it; the index's path."""
    # Imported here, when a file is closed: it loads pkg_resources (80 ms at every crawl's start).
    from cdxj_indexer.main import write_cdx_index

    index = warc.with_name(index_name(warc.name))
    write_cdx_index(str(index), [str(warc)], {"sort": True})
    return index
