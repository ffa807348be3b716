"""One digest of what extraction reads from every page of the real corpus, for this checkout and
others: a change to the hot path must leave it as it was.

    .venv/bin/python -m bench.corpus_digest [--also NAME=PATH ...]

Each page of ``bench.realweb``'s corpus (the Python documentation, 530 pages, UTF-8, which the
crawl hands to extraction as it came) goes through the crawl's extraction, with one link
resolver for the whole corpus: its title, description, text and text hash, links and followable
links, canonical link, robots directives and count of invalid links, the SimHash of its text and
its nesting depth (not the attributes counted with it, which earlier checkouts do not count). Prints a SHA-256 of
all of them for each checkout (``git archive COMMIT | tar -x -C PATH``, with
``VENV=$PWD/.venv scripts/compile.sh`` run in it where its compiled modules are wanted), run in
a process of its own with that checkout first on the path, and exits 1 if they differ.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from bench.commands import add_also_option, other_checkouts
from bench.crawl_speed import ROOT
from bench.realweb import prepared_corpus

# Run with the checkout's own crawler package: it reads what that checkout's extraction gives,
# the SimHash from the words where a checkout's pages still carry them.
_DIGEST = """
import gzip, hashlib, sys
from pathlib import Path
from crawler.extraction import extract_page
from crawler.extraction import budget
from crawler.identity import UrlNormalizer
from crawler.identity.resolve import LinkResolver
from crawler.twins import simhash

depth = getattr(budget, "nesting_depth", None) or (lambda html: budget.document_shape(html)[0])
corpus = Path(sys.argv[1])
normalize = UrlNormalizer([])
resolver = LinkResolver(normalize)
digest = hashlib.sha256()
for path in (corpus / "pages.txt").read_text().split():
    page_file = corpus / "corpus" / path.lstrip("/")
    html = page_file.read_bytes() if page_file.exists() else gzip.decompress(Path(f"{page_file}.gz").read_bytes())
    page = extract_page(html, "http://127.20.0.1:8080" + path, normalize, ("crawler",), resolver, 10_000)
    words = getattr(page, "words", None)
    fingerprint = simhash.simhash_of_words(words) if words is not None else simhash.simhash_of_utf8(page.utf8)
    read = (page.title, page.description, page.text, page.text_hash, page.links, page.followable, page.canonical,
            repr(page.robots), page.invalid_links, fingerprint, depth(html))
    digest.update(repr(read).encode())
print(digest.hexdigest())
"""


def digest_of(project: Path, corpus: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-c", _DIGEST, str(corpus)],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(project)},
    )
    if result.returncode != 0:
        raise SystemExit(f"{project}: {result.stderr[-3000:]}")
    return result.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_also_option(parser)
    args = parser.parse_args()
    corpus = prepared_corpus()
    digests = {name: digest_of(project, corpus) for name, project in {"crawler": ROOT, **other_checkouts(args)}.items()}
    for name, digest in digests.items():
        print(f"{name:12} {digest}")
    if len(set(digests.values())) > 1:
        print("the extraction of the corpus differs")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
