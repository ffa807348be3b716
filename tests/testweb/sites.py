"""The generated sites. Each site answers a path (with its query) for one host; ``base`` is
the host's own ``http://127.0.0.x:port``. Class constants say what a crawl should find."""

from __future__ import annotations

import gzip
import hashlib
import random
from functools import cache

from tests.testweb.pages import (
    NOT_FOUND,
    Reply,
    gzipped,
    html,
    redirect,
    sitemapindex,
    text,
    urlset,
    xml,
)

ALLOW_ALL = "User-agent: *\nDisallow:\n"


class Site:
    name = ""
    robots: str | None = ALLOW_ALL
    rate: float | None = None
    """Requests per second the server accepts before answering 429 (None: no limit)."""

    def __init__(self, options: dict[str, str] | None = None):
        self.options = options or {}

    @property
    def latency(self) -> float:
        """Seconds the server takes to answer (option ``latency_ms``, on every site)."""
        return float(self.options.get("latency_ms", "0")) / 1000

    def reply(self, path: str, base: str) -> Reply:
        if path == "/robots.txt":
            return text(self.robots) if self.robots is not None else NOT_FOUND
        return self.page(path, base)

    def page(self, path: str, base: str) -> Reply:
        return NOT_FOUND


class LinksSite(Site):
    """A site for link following: a tree of sections, a long chain for depth limits, and one
    page for each thing a link-following crawler must handle."""

    name = "links"
    robots = "User-agent: *\nDisallow: /private\n"
    SECTIONS = 3
    PAGES_PER_SECTION = 4
    CHAIN = 14
    SPECIAL = [
        "/nofollow-target",  # linked only with rel=nofollow
        "/noindex-meta",
        "/noindex-header",
        "/duplicate?b=2&a=1&utm_source=news",
        "/redirect",
        "/loop-a",
        "/big",
        "/gzip-bomb",
        "/image.png",
        "/latin1",
        "/shift-jis",
        "/malformed",
        "/bad-links",
        "/missing",
        "/server-error",
        "/private/secret",
        "/with-canonical",
        "/long-link",
    ]
    LONG_PATH = "/long/" + "x" * 2100  # longer than Scrapy's URLLENGTH_LIMIT (2083)

    def page(self, path: str, base: str) -> Reply:
        if path == "/":
            sections = [f"/section/{i}" for i in range(self.SECTIONS)]
            regular = [*sections, "/chain/1", *(s for s in self.SPECIAL if s != "/nofollow-target")]
            return html("Home", regular, nofollow=["/nofollow-target"], body="Welcome home")
        if path.startswith("/section/"):
            parts = path.split("/")
            if len(parts) == 3:
                i = parts[2]
                return html(f"Section {i}", ["/", *(f"/section/{i}/page/{j}" for j in range(self.PAGES_PER_SECTION))])
            return html(f"Page {path}", ["/", f"/section/{parts[2]}", "/section/0/page/0#fragment"])
        if path.startswith("/chain/"):
            n = int(path.rsplit("/", 1)[1])
            return html(f"Chain {n}", [f"/chain/{n + 1}"] if n < self.CHAIN else [])
        if path == "/nofollow-target":
            return html("Nofollowed", ["/only-from-nofollow"])
        if path == "/noindex-meta":
            return html(
                "Meta noindex",
                ["/from-noindex"],
                head='<meta name="robots" content="noindex">',
                body="secret body text",
            )
        if path == "/noindex-header":
            reply = html("Header noindex", body="secret header text")
            reply.headers["X-Robots-Tag"] = "noindex"
            return reply
        if path == "/from-noindex":
            return html("Linked from a noindex page")
        if path in ("/duplicate?a=1&b=2", "/duplicate?b=2&a=1&utm_source=news"):
            return html("Duplicate", ["/duplicate?a=1&b=2&utm_medium=x"])
        if path == "/redirect":
            return redirect("/redirect-target")
        if path == "/redirect-target":
            return html("Redirect target", ["/redirect"])
        if path == "/loop-a":
            return redirect("/loop-b", 302)
        if path == "/loop-b":
            return redirect("/loop-a", 302)
        if path == "/big":
            return Reply(
                200, b"<html><body>" + b"x" * (11 * 1024 * 1024) + b"</body></html>", {"Content-Type": "text/html"}
            )
        if path == "/gzip-bomb":
            return Reply(200, _gzip_bomb(), {"Content-Type": "text/html", "Content-Encoding": "gzip"})
        if path == "/image.png":
            return Reply(200, b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, {"Content-Type": "image/png"})
        if path == "/latin1":
            body = "<html><head><title>Caf\xe9 cr\xe8me</title></head><body>Na\xefve fa\xe7ade</body></html>"
            return Reply(200, body.encode("latin-1"), {"Content-Type": "text/html; charset=iso-8859-1"})
        if path == "/shift-jis":
            body = '<html><head><meta charset="shift_jis"><title>日本語</title></head><body>こんにちは</body></html>'
            return Reply(200, body.encode("shift_jis") + b"\xff\xfe broken", {"Content-Type": "text/html"})
        if path == "/malformed":
            return Reply(
                200,
                b"<html><head><title>Malformed</title><body><p>unclosed <b>tags <a href='/from-malformed'>ok</a"
                b"<div><table><tr><td>cell</html></html>\x00\xff",
                {"Content-Type": "text/html"},
            )
        if path == "/from-malformed":
            return html("Linked from malformed HTML")
        if path == "/bad-links":
            return html(
                "Bad links",
                [
                    "http://exa mple.com/",
                    "http://[::1/",
                    "javascript:alert(1)",
                    "mailto:a@b.c",
                    "http://x:99999/",
                    "/good-link",
                ],
            )
        if path == "/good-link":
            return html("Good link")
        if path == "/server-error":
            return Reply(500, b"boom", {"Content-Type": "text/plain"})
        if path == "/with-canonical":
            return html("Has a canonical", head='<link rel="canonical" href="/canonical-target">')
        if path == "/canonical-target":
            return html("Canonical target")
        if path == "/long-link":
            return html("A link too long", [self.LONG_PATH])
        return NOT_FOUND


class SitemapSite(Site):
    """robots.txt lists an index; the index lists a urlset, a gzip urlset named .xml, a text
    sitemap, itself, a broken sitemap, a missing one and a nested index with a .gz urlset."""

    name = "sitemaps"
    robots = "User-agent: *\nDisallow:\nSitemap: /maps/index.xml\n"
    XML_PAGES = [f"/p/xml-{i}" for i in range(5)]
    GZIP_PAGES = [f"/p/gzip-{i}" for i in range(3)]
    TEXT_PAGES = [f"/p/text-{i}" for i in range(3)]
    DEEP_PAGES = [f"/p/deep-{i}" for i in range(2)]
    LISTED = [*XML_PAGES, *GZIP_PAGES, *TEXT_PAGES, *DEEP_PAGES]
    SITEMAPS = [
        "/maps/index.xml",
        "/maps/pages.xml",
        "/maps/pages-gzip.xml",
        "/maps/pages.txt",
        "/maps/broken.xml",
        "/maps/missing.xml",
        "/maps/nested.xml",
        "/maps/deep.xml.gz",
    ]

    def page(self, path: str, base: str) -> Reply:
        if path == "/maps/index.xml":
            children = [
                "pages.xml",
                "pages-gzip.xml",
                "pages.txt",
                "index.xml",
                "broken.xml",
                "missing.xml",
                "nested.xml",
            ]
            return xml(sitemapindex(f"{base}/maps/{c}" for c in children))
        if path == "/maps/pages.xml":
            invalid = "<url><loc>http://exa mple.com/bad</loc></url><url><loc>not a url</loc></url>"
            offsite = "<url><loc>http://offsite.invalid/elsewhere</loc></url>"
            return xml(urlset((f"{base}{p}" for p in self.XML_PAGES), extra=invalid + offsite))
        if path == "/maps/pages-gzip.xml":
            return gzipped(xml(urlset(f"{base}{p}" for p in self.GZIP_PAGES)), "application/xml")
        if path == "/maps/pages.txt":
            return text("\n".join(f"{base}{p}" for p in self.TEXT_PAGES) + "\n")
        if path == "/maps/broken.xml":
            return xml('<?xml version="1.0"?><urlset><url><loc>')
        if path == "/maps/nested.xml":
            return xml(sitemapindex([f"{base}/maps/deep.xml.gz", f"{base}/maps/index.xml"]))
        if path == "/maps/deep.xml.gz":
            return gzipped(xml(urlset(f"{base}{p}" for p in self.DEEP_PAGES)))
        if path.startswith("/p/"):
            return html(f"Listed {path}", ["/p/not-listed"])
        return NOT_FOUND


class FallbackSitemapSite(Site):
    """No robots.txt; the sitemap is at /sitemap.xml."""

    name = "fallback"
    robots = None
    LISTED = ["/a", "/b"]

    def page(self, path: str, base: str) -> Reply:
        if path == "/sitemap.xml":
            return xml(urlset(f"{base}{p}" for p in self.LISTED))
        if path in self.LISTED:
            return html(path)
        return NOT_FOUND


class IndexFallbackSite(Site):
    """robots.txt without Sitemap lines, no /sitemap.xml; an index at /sitemap_index.xml."""

    name = "index-fallback"
    LISTED = ["/x", "/y", "/z"]

    def page(self, path: str, base: str) -> Reply:
        if path == "/sitemap_index.xml":
            return xml(sitemapindex([f"{base}/child.xml"]))
        if path == "/child.xml":
            return xml(urlset(f"{base}{p}" for p in self.LISTED))
        if path in self.LISTED:
            return html(path)
        return NOT_FOUND


class NoSitemapSite(Site):
    """No sitemap anywhere: a sitemap crawl of a page crawls that page."""

    name = "no-sitemap"

    def page(self, path: str, base: str) -> Reply:
        if path in ("/", "/deep/page"):
            return html(path, ["/other"])
        return NOT_FOUND


class SitemapQuirksSite(Site):
    """robots.txt names one sitemap with ``Site-map:``, a spelling search engines accept, and
    another that the server cut short inside the ``<loc>`` of its last entry."""

    name = "sitemap-quirks"
    robots = "User-agent: *\nDisallow:\nSite-map: /maps/hyphenated.xml\nSitemap: /maps/cut.xml\n"
    HYPHENATED_PAGES = ["/p/hyphenated-0", "/p/hyphenated-1"]
    CUT_PAGES = ["/p/cut-0", "/p/cut-1"]
    CUT_SHORT = "/p/cut-2"
    """What is left of the last entry's URL, ``/p/cut-2-of-3``."""

    def page(self, path: str, base: str) -> Reply:
        if path == "/maps/hyphenated.xml":
            return xml(urlset(f"{base}{p}" for p in self.HYPHENATED_PAGES))
        if path == "/maps/cut.xml":
            whole = urlset(f"{base}{p}" for p in [*self.CUT_PAGES, "/p/cut-2-of-3"])
            return xml(whole[: whole.index(self.CUT_SHORT) + len(self.CUT_SHORT)])
        if path.startswith("/p/"):
            return html(f"Listed {path}")
        return NOT_FOUND


class SitemapLoopSite(Site):
    """robots.txt lists an index that lists robots.txt and a sitemap that redirects (301) back
    to the index; nothing at the fallback paths, so the seed itself is what a crawl finds."""

    name = "sitemap-loop"
    robots = "User-agent: *\nDisallow:\nSitemap: /maps/index.xml\n"

    def page(self, path: str, base: str) -> Reply:
        if path == "/maps/index.xml":
            return xml(sitemapindex([f"{base}/robots.txt", f"{base}/maps/moved.xml"]))
        if path == "/maps/moved.xml":
            return redirect("/maps/index.xml", 301)
        if path == "/":
            return html("Home")
        return NOT_FOUND


class HostileSitemapSite(Site):
    """Sitemaps that attack the parser: a gzip bomb, entity expansion and external entities."""

    name = "hostile"
    robots = "User-agent: *\nDisallow:\nSitemap: /bomb.xml.gz\nSitemap: /laughs.xml\nSitemap: /xxe.xml\n"
    SAFE_PAGES = ["/safe"]

    def page(self, path: str, base: str) -> Reply:
        if path == "/bomb.xml.gz":
            return Reply(200, _gzip_bomb(), {"Content-Type": "application/x-gzip"})
        if path == "/laughs.xml":
            entities = '<!ENTITY a "ha">' + "".join(
                f'<!ENTITY {c} "&{p};&{p};&{p};&{p};&{p};&{p};&{p};&{p};">' for p, c in zip("abcdefgh", "bcdefghi")
            )
            body = (
                f'<?xml version="1.0"?><!DOCTYPE urlset [{entities}]>'
                f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"<url><loc>{base}/safe</loc></url><url><loc>{base}/&i;</loc></url></urlset>"
            )
            return xml(body)
        if path == "/xxe.xml":
            body = (
                '<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{base}/&x;</loc></url></urlset>'
            )
            return xml(body)
        if path == "/safe":
            return html("Safe")
        return NOT_FOUND


@cache
def _gzip_bomb() -> bytes:
    # 80 MiB of zeros packs into about 80 KiB: over the 50 MiB decompression cap.
    return gzip.compress(b"\0" * (80 * 1024 * 1024), compresslevel=9)


class HeavySite(Site):
    """Link-heavy pages like real documentation sites: every page links to the navigation
    (the same first pages everywhere) and to many other pages, most of them already seen."""

    name = "heavy"

    def page(self, path: str, base: str) -> Reply:
        pages = int(self.options.get("pages", "2000"))
        links = int(self.options.get("links", "300"))
        if path == "/":
            n = 0
        elif path.startswith("/doc/"):
            try:
                n = int(path[5:])
            except ValueError:
                return NOT_FOUND
            if not 0 <= n < pages:
                return NOT_FOUND
        else:
            return NOT_FOUND
        return _heavy_page(n, pages, links)


@cache
def _heavy_page(n: int, pages: int, links: int) -> Reply:
    rng = random.Random(n)
    navigation = [f"/doc/{i}" for i in range(min(links // 2, pages))]
    # The next pages keep the site connected in breadth-first order; the rest are random.
    forward = [f"/doc/{(n * 4 + k) % pages}" for k in range(1, 5)]
    others = [f"/doc/{rng.randrange(pages)}" for _ in range(links - len(navigation) - len(forward))]
    anchors = "".join(f'<li><a href="{href}" class="nav">{href}</a></li>' for href in [*navigation, *forward, *others])
    paragraph = "<p>" + " ".join(f"word{rng.randrange(5000)}" for _ in range(120)) + "</p>"
    body = (
        f"<!DOCTYPE html><html><head><title>Doc {n}</title>"
        f'<meta name="description" content="Documentation page {n}">'
        "<style>body{font-family:sans-serif}</style><script>var x=1;</script></head>"
        f"<body><nav><ul>{anchors}</ul></nav><main><h1>Doc {n}</h1>{paragraph * 8}</main></body></html>"
    )
    return Reply(200, body.encode(), {"Content-Type": "text/html; charset=utf-8"})


class PacedSite(Site):
    """A site that wants pacing: ``crawl_delay`` in robots.txt, a hidden ``rate`` limit (requests
    per second, enforced by the server with 429 and ``retry_after`` if given), ``latency_ms`` per
    response (429s come at once) and a share of 5xx answers (``error_rate``, ``error_status``;
    the home page always answers); ``refuse=A-B`` answers 429 to everything from A to B
    seconds after the first request; ``validators=1`` gives pages an ``ETag`` and a
    ``Last-Modified``. Pages ``/p/N`` link forward; ``index=N``: the home page links to
    ``/index`` too, which links to the first N pages twice each, as a site's general index does."""

    name = "paced"

    @property
    def robots(self) -> str:  # type: ignore[override]
        delay = self.options.get("crawl_delay")
        return "User-agent: *\nDisallow: /private\n" + (f"Crawl-delay: {delay}\n" if delay else "")

    def reply(self, path: str, base: str) -> Reply:
        status = int(self.options.get("robots_status", "200"))
        if path == "/robots.txt" and status != 200:
            return Reply(status, b"no robots here", {"Content-Type": "text/plain"})
        return super().reply(path, base)

    @property
    def rate(self) -> float | None:
        return float(self.options["rate"]) if "rate" in self.options else None

    def page(self, path: str, base: str) -> Reply:
        pages = int(self.options.get("pages", "1000"))
        if path == "/index" and "index" in self.options:
            entries = int(self.options["index"])
            return html("Index", [f"/p/{n}#{anchor}" for n in range(entries) for anchor in ("term", "see-also")])
        if path == "/":
            n = 0
        elif path.startswith("/p/") and path[3:].isdigit() and int(path[3:]) < pages:
            n = int(path[3:])
        else:
            return NOT_FOUND
        error_rate = float(self.options.get("error_rate", "0"))
        if n and error_rate and random.random() < error_rate:
            return Reply(int(self.options.get("error_status", "503")), b"try again", {"Content-Type": "text/plain"})
        links = [f"/p/{(n * 5 + k) % pages}" for k in range(1, 6)]
        if n == 0:
            links += ["/private/page", *(["/index"] if "index" in self.options else [])]
        reply = html(f"Paced {n}", links)
        if self.options.get("validators"):
            reply.headers["ETag"] = f'"{hashlib.sha256(reply.body).hexdigest()[:16]}"'
            reply.headers["Last-Modified"] = "Mon, 01 Jan 2024 00:00:00 GMT"
        return reply


def target_spellings(port: str) -> list[str]:
    """Bases of one loopback host (127.0.0.1) under every spelling a resolver accepts."""
    hosts = [
        "127.0.0.1",
        "2130706433",
        "0x7f000001",
        "0177.0.0.1",
        "127.1",
        "0x7f.1",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[64:ff9b::7f00:1]",
        "[2002:7f00:1::1]",
        "localhost",
    ]
    return [f"http://{host}:{port}" for host in hosts]


class SecretSite(Site):
    """An internal host that nothing but hostile pages point at: any request in its log is a
    request the address guard let through."""

    name = "secret"

    def page(self, path: str, base: str) -> Reply:
        return text("internal secret") if path == "/secret.txt" else NOT_FOUND


class PointingSite(Site):
    """A plain site whose home page links to one of its pages and to an internal host by name:
    ``http://localhost:{target_port}/secret.txt`` (option ``target_port``)."""

    name = "pointing"

    def page(self, path: str, base: str) -> Reply:
        if path == "/":
            return html("Pointing", ["/page", f"http://localhost:{self.options['target_port']}/secret.txt"])
        return html("A page") if path == "/page" else NOT_FOUND


class HostileWebSite(HostileSitemapSite):
    """A site that attacks the crawler: links, redirects, meta refreshes, robots.txt
    ``Sitemap:`` lines, sitemap entries and an external entity pointing at an internal host
    (option ``target_port``: 127.0.0.1 on that port, under every spelling); redirect loops and a
    30-hop chain; robots.txt behind two redirects; a 50 MB page, a gzip bomb, invalid encodings,
    100,000 links on one page, a 100 KB URL, binary served as text/html, an empty 200."""

    name = "hostile-web"
    CHAIN = 30
    DEAD_LINKS = 100_000
    PAGES = [
        "/redirect-loop-a",
        "/chain/0",
        "/to-target-302",
        "/to-target-301-spelled",
        "/to-target-refresh",
        "/big-50mb",
        "/gzip-bomb",
        "/invalid-utf8",
        "/unknown-charset",
        "/binary-as-html",
        "/empty",
        "/many-links",
        "/forbidden",
    ]
    LONG_URL = "/long?" + "x" * 100_000

    @property
    def targets(self) -> list[str]:
        return target_spellings(self.options["target_port"])

    def reply(self, path: str, base: str) -> Reply:
        if path == "/robots.txt":
            return redirect("/robots-moved.txt", 301)
        if path == "/robots-moved.txt":
            return redirect("/robots-real.txt", 302)
        if path == "/robots-real.txt":
            lines = [
                "User-agent: *",
                "Disallow: /forbidden",
                "Sitemap: /maps/own.xml",
                "Sitemap: /laughs.xml",
                "Sitemap: /bomb.xml.gz",
                "Sitemap: /maps/xxe-net.xml",
            ]
            lines += [f"Sitemap: {target}/sitemap.xml" for target in self.targets[:3]]
            return text("\n".join(lines) + "\n")
        return self.page(path, base)

    def page(self, path: str, base: str) -> Reply:
        targets = [f"{target}/secret.txt" for target in self.targets]
        if path == "/":
            return html("Hostile", [*self.PAGES, self.LONG_URL, *targets])
        if path == "/redirect-loop-a":
            return redirect("/redirect-loop-b", 302)
        if path == "/redirect-loop-b":
            return redirect("/redirect-loop-a", 302)
        if path.startswith("/chain/") and path[7:].isdigit():
            n = int(path[7:])
            return redirect(f"/chain/{n + 1}", 302) if n < self.CHAIN else html("End of the chain")
        if path == "/to-target-302":
            return redirect(targets[0], 302)
        if path == "/to-target-301-spelled":
            return redirect(targets[1], 301)
        if path == "/to-target-refresh":
            # a URL nothing else links to: its own refusal, not a redirect to a URL seen before
            return html("Refresh", head=f'<meta http-equiv="refresh" content="0; url={targets[-1]}?via=refresh">')
        if path == "/big-50mb":
            return _big_page()
        if path == "/gzip-bomb":
            return Reply(200, _gzip_bomb(), {"Content-Type": "text/html", "Content-Encoding": "gzip"})
        if path == "/invalid-utf8":
            return Reply(
                200,
                b"<html><head><title>Bad \xc3\x28 bytes</title></head><body>\xff\xfe\xfd text \xed\xa0\x80</body></html>",
                {"Content-Type": "text/html; charset=utf-8"},
            )
        if path == "/unknown-charset":
            return Reply(
                200,
                b"<html><head><title>Unknown charset</title></head><body>caf\xe9</body></html>",
                {"Content-Type": "text/html; charset=x-no-such-charset"},
            )
        if path == "/binary-as-html":
            return Reply(200, b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64, {"Content-Type": "text/html"})
        if path == "/empty":
            return Reply(200, b"", {"Content-Type": "text/html"})
        if path == "/many-links":
            return _many_links(self.DEAD_LINKS)
        if path == "/maps/own.xml":
            return xml(urlset([f"{base}/", f"{base}/empty", *targets]))
        if path == "/maps/xxe-net.xml":
            body = (
                f'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY x SYSTEM "{targets[0]}">]>'
                f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{base}/&x;</loc></url></urlset>'
            )
            return xml(body)
        if path in ("/bomb.xml.gz", "/laughs.xml"):
            return super().page(path, base)
        return NOT_FOUND


class BigRobotsSite(Site):
    """An 11 MB robots.txt, its length announced (over ``DOWNLOAD_MAXSIZE``): its first 500 KiB
    are read (``/blocked-early`` is disallowed there), the rest not (a last ``Disallow: /`` is
    past the cut)."""

    name = "big-robots"

    def reply(self, path: str, base: str) -> Reply:
        if path == "/robots.txt":
            body = _big_robots()
            return Reply(200, body, {"Content-Type": "text/plain", "Content-Length": str(len(body))})
        return self.page(path, base)

    def page(self, path: str, base: str) -> Reply:
        if path == "/":
            return html("Big robots", ["/blocked-early", "/after"])
        if path in ("/blocked-early", "/after"):
            return html(path)
        return NOT_FOUND


@cache
def _big_robots() -> bytes:
    filler = b"# " + b"x" * 98 + b"\n"
    return b"User-agent: *\nDisallow: /blocked-early\n" + filler * (11 * 1024 * 1024 // len(filler)) + b"Disallow: /\n"


@cache
def _big_page() -> Reply:
    body = b"<html><body>" + b"y" * (50 * 1024 * 1024) + b"</body></html>"
    return Reply(200, body, {"Content-Type": "text/html", "Content-Length": str(len(body))})


@cache
def _many_links(count: int) -> Reply:
    return html(f"{count} links", (f"/dead?n={n}" for n in range(count)))


class DeepSite(Site):
    """Pages nested as deep as their path says (``/deep/400000``: 400,000 ``<div>`` inside each
    other, 4.4 MB), with one element of as many attributes (``/attributes/N``, which lexbor
    reads in a time that grows with the square of N), or with one ``select`` of as many selected
    options (``/options/N``, likewise, spread over the document), linked from the home page with
    ``pages`` ordinary pages ``/p/N``."""

    name = "deep"

    def page(self, path: str, base: str) -> Reply:
        pages = int(self.options.get("pages", "20"))
        depths = self.options.get("depths", "400000").split("-")
        attributes = [n for n in self.options.get("attributes", "").split("-") if n]
        options = [n for n in self.options.get("options", "").split("-") if n]
        if path == "/":
            deep = [
                *(f"/deep/{d}" for d in depths),
                *(f"/attributes/{n}" for n in attributes),
                *(f"/options/{n}" for n in options),
            ]
            return html("Deep", [*deep, *(f"/p/{n}" for n in range(pages))])
        if path.startswith("/deep/") and path[6:] in depths:
            return _nested_page(int(path[6:]))
        if path.startswith("/attributes/") and path[12:] in attributes:
            return attributes_page(int(path[12:]))
        if path.startswith("/options/") and path[9:] in options:
            return options_page(int(path[9:]))
        if path.startswith("/p/") and path[3:].isdigit() and int(path[3:]) < pages:
            return html(f"Page {path[3:]}", ["/"])
        return NOT_FOUND


@cache
def _nested_page(depth: int) -> Reply:
    body = f"<!DOCTYPE html><html><head><title>Nested {depth}</title></head><body>{'<div>' * depth}deep{'</div>' * depth}</body></html>"
    return Reply(200, body.encode(), {"Content-Type": "text/html; charset=utf-8"})


@cache
def attributes_page(count: int) -> Reply:
    attributes = " ".join(f"a{n}" for n in range(count))
    body = f"<!DOCTYPE html><html><head><title>Attributes</title></head><body><p {attributes}>x</p></body></html>"
    return Reply(200, body.encode(), {"Content-Type": "text/html; charset=utf-8"})


@cache
def options_page(count: int) -> Reply:
    options = "<option selected>x" * count
    body = f"<!DOCTYPE html><html><head><title>Options</title></head><body><select>{options}</select></body></html>"
    return Reply(200, body.encode(), {"Content-Type": "text/html; charset=utf-8"})


class TrapSite(Site):
    """Five real pages behind an index, and the traps of the open web around them: every page
    links to three copies of itself under new session ids in the path (``/s/ID/…``, each
    showing its id), an endless calendar (``/calendar/YYYY/MM`` links the next and previous
    month, all empty), a soft 404 (any other path answers 200 with a "not found" page, and pages
    link to a few such paths), a relative link that nests the guide in itself and a faceted
    search with too many parameters. Every page carries the site's navigation and footer, as
    real pages do."""

    name = "traps"
    REAL = ["/about", "/products", "/blog/first-post", "/contact", "/docs/guide/"]
    BROKEN = ["/old/archive", "/docs/legacy", "/blog/missing-post"]
    COPIES = 3
    LISTED_COPIES = ["/s/listed1/about", "/s/listed2/contact"]

    def page(self, path: str, base: str) -> Reply:
        session, _, rest = path.partition("/s/")[2].partition("/") if path.startswith("/s/") else ("", "", path[1:])
        path = "/" + rest
        while path.startswith("/docs/guide/docs/guide/"):  # the server ignores what the link nests
            path = path[len("/docs/guide") :]
        prefix = f"/s/{session}" if session else ""
        if path == "/sitemap.xml" and not session:  # the same page under two URLs, as sitemaps do list
            return xml(urlset(f"{base}{page}" for page in ["/", *self.REAL, *self.LISTED_COPIES]))
        if path == "/" or path in self.REAL:
            return self._page(path, prefix, session)
        if path.startswith("/calendar/"):
            return self._calendar(path, prefix, session)
        text = f"There is no such page on this site. {_vocabulary(31, 500)}"  # and how to find one
        return _trap_page("Page not found", text, [], path, prefix, session)

    def _page(self, path: str, prefix: str, session: str) -> Reply:
        links = [*self.REAL, "/calendar/2026/01"] if path == "/" else list(self.BROKEN)
        if path == "/docs/guide/":
            links += ["docs/guide/", "docs/guide/docs/guide/"]  # relative: nest the guide in itself
        if path == "/products":
            links.append("/search?" + "&".join(f"facet{n}=any" for n in range(25)))
        seed = sum(map(ord, path))
        return _trap_page(f"Page {path}", _vocabulary(seed, 500), links, path, prefix, session)

    def _calendar(self, path: str, prefix: str, session: str) -> Reply:
        try:
            year, month = (int(part) for part in path.split("/")[2:4])
        except ValueError:
            return NOT_FOUND
        previous = (year, month - 1) if month > 1 else (year - 1, 12)
        following = (year, month + 1) if month < 12 else (year + 1, 1)
        weekdays = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
        days = " ".join(f"{weekdays[day % 7]} {day} no events" for day in range(1, 29))
        text = f"Calendar of {year}-{month:02d}: {days}. {_vocabulary(21, 1000)}"  # how events are listed
        links = [f"/calendar/{y}/{m:02d}" for y, m in (previous, following)]
        return _trap_page(f"Calendar {year}-{month:02d}", text, links, path, prefix, session)


def _session_id(path: str, n: int) -> str:
    return hashlib.sha1(f"{path} {n}".encode()).hexdigest()[:10]


@cache
def _vocabulary(seed: int, count: int) -> str:
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ren", "sta", "vo", "tri", "pel", "du", "nor", "xa", "bel"]
    return " ".join("".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))) for _ in range(count))


def _trap_page(title: str, text: str, links: list[str], path: str, prefix: str, session: str) -> Reply:
    copies = [f"/s/{_session_id(prefix + path, n)}{path}" for n in range(TrapSite.COPIES)]
    navigation = "".join(f'<li><a href="{prefix}{href}">{href.strip("/") or "home"}</a></li>' for href in TrapSite.REAL)
    own = "".join(
        f'<li><a href="{href if not href.startswith("/") else prefix + href}">more</a></li>' for href in links
    )
    copied = "".join(f'<li><a href="{href}">this page</a></li>' for href in copies)
    footer = _vocabulary(7, 250)
    body = (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body><nav><ul>{navigation}</ul></nav>"
        f"<main><h1>{title}</h1><p>{text}</p><ul>{own}{copied}</ul></main>"
        f"<footer><p>{footer}</p><p>Session {session or 'none'}</p></footer></body></html>"
    )
    return Reply(200, body.encode(), {"Content-Type": "text/html; charset=utf-8"})


SITES: dict[str, type[Site]] = {
    cls.name: cls
    for cls in (
        LinksSite,
        SitemapSite,
        FallbackSitemapSite,
        IndexFallbackSite,
        NoSitemapSite,
        SitemapQuirksSite,
        SitemapLoopSite,
        HostileSitemapSite,
        HeavySite,
        PacedSite,
        SecretSite,
        PointingSite,
        HostileWebSite,
        BigRobotsSite,
        DeepSite,
        TrapSite,
    )
}
