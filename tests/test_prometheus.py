"""The crawl as Prometheus sees it: a real Prometheus (Debian's package) scraping `scrapy serve`'s
/metrics every 2 s with the scrape token during a crawl, every scrape answered and the rate it
computes the crawl's own; the alert rules in deploy/prometheus checked and unit-tested by
promtool (each alert firing in one case and silent in another)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.api_server import ServeProcess, migrate
from tests.helpers import ROOT, Database, finish_all, logged_rate, start_crawl
from tests.prometheus import Prometheus
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration

RULES = ROOT / "deploy" / "prometheus"
TOKEN = "a-scrape-token-of-the-tests"
SCRAPE_SECONDS = 2
CRAWL_SECONDS = 60


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    assert binary, "Debian's prometheus (promtool) is not installed (scripts/debian.sh installs it)"
    return subprocess.run([binary, *args], cwd=RULES, capture_output=True, text=True, timeout=60)


def test_the_alert_rules_are_valid_and_each_alert_fires_only_when_it_should() -> None:
    checked = _promtool("check", "rules", "crawler.rules.yml")
    assert checked.returncode == 0 and "SUCCESS: 3 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = _promtool("test", "rules", "crawler.rules.test.yml")
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_prometheus_scrapes_every_2_s_and_reads_the_crawls_own_rate(
    web: TestWeb, postgres_database: Database, tmp_path: Path
) -> None:
    database = postgres_database
    migrate(database)
    log = tmp_path / "crawl.log"
    crawl = start_crawl("links", database, log, url=web.url("endless-a"), settings={"CRAWLER_DEFAULT_DELAY": "0.25"})
    server = ServeProcess(database, tmp_path / "serve.log", {"CRAWLER_API_METRICS_TOKEN": TOKEN})
    try:
        with Prometheus(tmp_path / "prometheus", f"127.0.0.1:{server.port}", TOKEN, SCRAPE_SECONDS) as prometheus:
            time.sleep(CRAWL_SECONDS)
            window = f"{CRAWL_SECONDS - 5}s"
            scrapes = prometheus.value(f"count_over_time(up[{window}])")
            answered = prometheus.value(f"sum_over_time(up[{window}])")
            scraped_rate = prometheus.value("rate(crawler_pages_fetched_total[30s])")
            crawls = prometheus.query("crawler_crawl_pages_fetched_total")
            firing = {s["metric"]["alert"]: s["value"][1] for s in prometheus.query("crawler_alert_firing")}
            own_rate = logged_rate(log, window=30)
    finally:
        crawl.terminate()  # our own process, by its PID
        finish_all([crawl], [log], 60)
        server.stop()
    print(
        f"scrapes {scrapes:.0f}, answered {answered:.0f}; Prometheus's rate {scraped_rate:.2f}, logged {own_rate:.2f}"
    )
    # Far more often than the anonymous budget (10 a minute) allows: the token is outside it.
    assert scrapes >= (CRAWL_SECONDS - 5) / SCRAPE_SECONDS - 3 and answered == scrapes, (scrapes, answered)
    assert own_rate > 2.0, "the crawl hardly runs"
    assert scraped_rate == pytest.approx(own_rate, rel=0.20), (scraped_rate, own_rate)
    assert len(crawls) == 1 and float(crawls[0]["value"][1]) > 0  # the crawl running, named for the token
    # One series per alert, each 0 or 1 (an endless site's frontier may well grow 10% a minute).
    assert firing.keys() == {"high_error_rate", "frontier_backlog", "worker_crash"}
    assert firing["high_error_rate"] == firing["worker_crash"] == "0"
