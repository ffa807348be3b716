"""Shared crawls on a Redis Cluster of the test's own (three masters, a replica each, on
loopback), ``REDIS_URL`` naming one node, a replica: the crawl's frontier spreads over every
master, and a master killed mid-crawl is followed to its promoted replica without losing or
dropping anything. Asserted from the test web's request log, the rows and the workers' logs."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis.asyncio
from redis.cluster import RedisCluster as ClusterClient
from scrapy.settings import Settings

from crawler.redis.connection import async_redis_client, redis_client
from crawler.redis.shards import shard_pattern
from tests.conftest import REDIS_URL
from tests.helpers import (
    Database,
    crawl_keys,
    crawl_store,
    finish_all,
    run_scrapy,
    start_crawl,
    wait_until,
)
from tests.redis_cluster import ClusterNode, RedisCluster
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration

HOSTS = 24
"""Sites of their own host each: domains enough that every master holds some."""
PAGES = 12
DELAY = 0.05
TOLERANCE = 0.010
DROPPED = "A Redis operation failed and is dropped"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RedisCluster]:
    started = RedisCluster(tmp_path / "cluster").start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def sites() -> Iterator[TestWeb]:
    specs = {f"c{n}": f"paced:crawl_delay={DELAY},pages={PAGES},latency_ms=100" for n in range(HOSTS)}
    with TestWeb(specs, first_address=160) as web:
        yield web


def _seeds(web: TestWeb, folder: Path) -> Path:
    seeds = folder / "seeds.txt"
    seeds.write_text("".join(web.url(label) + "\n" for label in web.specs))
    return seeds


def _workers(
    web: TestWeb, database: Database, cluster: RedisCluster, crawl_name: str, folder: Path, **extra: str
) -> tuple[list[subprocess.Popen[bytes]], list[Path]]:
    settings = {
        "REDIS_URL": cluster.url,
        "CRAWLER_CRAWL_ID": crawl_name,
        "CRAWLER_IDLE_CLOSE_SECONDS": "3",
        **extra,
    }
    seeds = _seeds(web, folder)
    logs = [folder / f"worker-{n}.log" for n in range(3)]
    workers = [start_crawl("links", database, log, settings=settings, seeds_file=str(seeds)) for log in logs]
    return workers, logs


def _finish(workers: list[subprocess.Popen[bytes]], logs: list[Path]) -> list[str]:
    outputs = finish_all(workers, logs, timeout=180)
    for worker, output in zip(workers, outputs):
        assert worker.returncode == 0, output[-5000:]
        assert "Traceback" not in output, output[-5000:]
        assert DROPPED not in output, output[-5000:]
    return outputs


def _crawl_keys_on(node: ClusterNode, crawl_name: str) -> list[bytes]:
    client = node.client()
    patterns = (f"{crawl_keys(crawl_name)}:*", shard_pattern(crawl_keys(crawl_name)))
    return [key for pattern in patterns for key in client.scan_iter(match=pattern, count=1000)]


def _assert_polite_and_whole(web: TestWeb, database: Database, allowed_duplicates: int) -> int:
    """Every page of every site has its row; no request came sooner than the delay after the
    last one on its host; the duplicate fetches, returned."""
    by_host: defaultdict[str, list[float]] = defaultdict(list)
    fetched: Counter[tuple[str, str]] = Counter()
    for entry in web.log():
        by_host[entry.host].append(entry.start)
        if entry.path != "/robots.txt":
            fetched[entry.host, entry.path] += 1
    for host, starts in by_host.items():
        starts.sort()
        gaps = [b - a for a, b in zip(starts, starts[1:])]
        assert min(gaps) >= DELAY - TOLERANCE, (host, sorted(gaps)[:5])
    expected = {
        web.url(label, path)
        for label in web.specs
        for path in ["/", "/private/page", *(f"/p/{n}" for n in range(PAGES))]
    }
    assert set(database.pages()) == expected
    duplicates = sum(n - 1 for n in fetched.values())
    assert duplicates <= allowed_duplicates, (duplicates, [key for key, n in fetched.items() if n > 1])
    return duplicates


def test_three_workers_on_a_cluster_spread_the_crawl_over_every_master(
    sites: TestWeb, postgres_database: Database, cluster: RedisCluster, tmp_path: Path
) -> None:
    sites.clear()
    crawl_name = "cluster-spread"
    workers, logs = _workers(sites, postgres_database, cluster, crawl_name, tmp_path)
    try:
        client = ClusterClient.from_url(cluster.url)
        wait_until(lambda: crawl_store(client, crawl_name).sizes().leased > 0, 90, "the crawl leasing work")
        # Half way: every master holds part of the crawl.
        wait_until(lambda: len(sites.log()) > HOSTS * PAGES // 2, 90, "half the crawl fetched")
        masters = cluster.masters()
        assert len(masters) == 3
        # Where each site's state should lie: the master owning the slot of its shard.
        store = crawl_store(client, crawl_name)
        expected = Counter(
            client.get_node_from_key(store.domain_key(urlsplit(sites.url(label)).netloc)).port for label in sites.specs
        )
        for master in masters:
            keys = _crawl_keys_on(master, crawl_name)
            domains = sum(b"}:d:" in key for key in keys)
            memory = master.client().info("memory")["used_memory"]
            print(f"master {master.address}: {len(keys)} keys of the crawl, {domains} domains, used_memory {memory}")
            assert domains == expected[master.port], (master.address, expected)
            assert len(keys) > domains  # every shard's counters and marks: every master holds part of the crawl
        shown = run_scrapy(postgres_database, "frontier", crawl_name, "-s", f"REDIS_URL={cluster.url}")
        assert shown.returncode == 0 and f"crawl {crawl_name}: " in shown.stdout, shown.stderr[-3000:]
    finally:
        outputs = _finish(workers, logs)
    fetched_by = Counter(row["job_id"] for row in postgres_database.pages().values())
    assert len(fetched_by) == 3, fetched_by  # the work was shared
    assert _assert_polite_and_whole(sites, postgres_database, allowed_duplicates=0) == 0
    assert all("Shared crawl cluster-spread" in output for output in outputs)


def test_a_master_killed_mid_crawl_is_followed_to_its_promoted_replica(
    sites: TestWeb, postgres_database: Database, cluster: RedisCluster, tmp_path: Path
) -> None:
    sites.clear()
    crawl_name = "cluster-failover"
    # Short leases: one a killed master took with it comes back soon, not in two minutes.
    workers, logs = _workers(sites, postgres_database, cluster, crawl_name, tmp_path, CRAWLER_LEASE_SECONDS="10")
    try:
        client = ClusterClient.from_url(cluster.url)
        wait_until(lambda: len(sites.log()) > HOSTS * PAGES // 4, 90, "a quarter of the crawl fetched")
        victim = max(cluster.masters(), key=lambda master: len(_crawl_keys_on(master, crawl_name)))
        replica = cluster.replica_of(victim)
        leased = crawl_store(client, crawl_name).sizes().leased
        victim.kill()  # SIGKILL, by its PID
        killed_at = time.time()
        wait_until(lambda: replica.role() == "master", 30, "the replica promoted")
        promoted_at = time.time()
        print(
            f"master {victim.address} killed with {leased} requests leased; replica promoted in {promoted_at - killed_at:.1f} s"
        )
        fetched_before = len(sites.log())
        wait_until(lambda: any(entry.start > promoted_at for entry in sites.log()), 30, "the workers resuming")
        resumed_at = min(entry.start for entry in sites.log() if entry.start > promoted_at)
        print(f"first fetch {resumed_at - promoted_at:.1f} s after the promotion ({fetched_before} requests before)")
    finally:
        outputs = _finish(workers, logs)
    assert any("Redis unavailable" in output for output in outputs)  # the workers noticed, paused
    duplicates = _assert_polite_and_whole(sites, postgres_database, allowed_duplicates=leased)
    print(f"{duplicates} duplicate fetches, {leased} requests leased at the kill")


def test_the_client_is_a_cluster_client_where_the_server_is_a_cluster_node(cluster: RedisCluster) -> None:
    single_url = REDIS_URL

    def settings(url: str, mode: str) -> Settings:
        return Settings({"REDIS_URL": url, "CRAWLER_REDIS_CLUSTER": mode, "CRAWLER_REDIS_TIMEOUT": 5.0})

    assert isinstance(redis_client(settings(cluster.url, "auto")), ClusterClient)
    assert isinstance(redis_client(settings(cluster.url, "on")), ClusterClient)
    assert not isinstance(redis_client(settings(cluster.url, "off")), ClusterClient)
    assert not isinstance(redis_client(settings(single_url, "auto")), ClusterClient)

    async def asyncio_clients() -> list[object]:
        clients = [await async_redis_client(settings(url, "auto"), url) for url in (cluster.url, single_url)]
        await clients[0].set("crawler:{api}:probe", 1)  # any node answers for any key
        for client in clients:
            await client.aclose()
        return clients

    cluster_client, single_client = asyncio.run(asyncio_clients())
    assert isinstance(cluster_client, redis.asyncio.RedisCluster)
    assert not isinstance(single_client, redis.asyncio.RedisCluster)
    with pytest.raises(ValueError, match="CRAWLER_REDIS_CLUSTER"):
        redis_client(settings(cluster.url, "maybe"))
