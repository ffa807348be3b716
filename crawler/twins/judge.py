"""What a fetched page is among its site's pages: one of its own, the twin of a page fetched
before it (``duplicate``), or a soft 404 (like the answer to the site's probe: ``filtered``).
The row says which and names the twin; a twin's body and text are not stored again, and its
links are not followed unless ``follow_twins``. The trap guard learns which patterns give twins."""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler.identity import site_of
from crawler.items import PageItem
from crawler.traps.guard import TrapGuard
from crawler.twins.earlier_runs import StoredFingerprints
from crawler.twins.index_local import Twin, TwinIndex
from crawler.twins.probe import SoftNotFoundProbes

if TYPE_CHECKING:
    from crawler.twins.index_redis import RedisTwinIndex

JUDGED_STATUSES = frozenset({"fetched", "unchanged"})
"""Rows whose text is compared: a page fetched again whose text did not change stays
``unchanged`` (and is never its own twin), but the links of an unchanged twin are not followed."""


class TwinJudge:
    def __init__(
        self,
        index: TwinIndex | RedisTwinIndex,
        probes: SoftNotFoundProbes,
        guard: TrapGuard | None,
        follow_twins: bool,
        stored: StoredFingerprints | None = None,
    ):
        self.index = index
        self.probes = probes
        self.guard = guard
        self.follow_twins = follow_twins
        self.stored = stored

    async def judge(self, item: PageItem, seed: bool = False) -> Twin | None:
        """Mark ``item`` (a fetched page's row) as what it is; its twin, if it has one."""
        if item.simhash is None or item.status not in JUDGED_STATUSES:
            return None
        site = site_of(item.url)
        if self.stored is not None:
            await self.stored.read_into(self.index, site)
        twin = await self.index.find_or_add(site, int(item.simhash, 16), item.url)
        soft_404 = twin is not None and self.probes.is_probe(twin.url)
        if soft_404 and seed:  # a seed is crawled whatever it says
            twin = None
        if self.guard is not None:
            self.guard.judged(item.url, twin is not None)
        if twin is None or item.status != "fetched":
            return twin
        item.text = item.body = None
        item.body_truncated = False
        if soft_404:
            item.status = "filtered"
            item.error = f"soft 404: says what the site answers for a missing page ({_bits(twin)} from {twin.url})"
        else:
            item.status = "duplicate"
            item.duplicate_of = twin.url
            item.error = f"twin of {twin.url} ({_bits(twin)})"
        return twin

    def follows(self, item: PageItem, twin: Twin | None) -> bool:
        """Whether the links of a page judged so are followed."""
        return twin is None or (self.follow_twins and not self.probes.is_probe(twin.url))


def _bits(twin: Twin) -> str:
    return f"SimHash {twin.distance} bits apart"
