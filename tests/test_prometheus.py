"""The crawl as Prometheus sees it: the alert rules in deploy/prometheus checked and unit-tested
by Debian's promtool (each alert firing in one case and silent in another)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.integration

RULES = ROOT / "deploy" / "prometheus"


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    assert binary, "Debian's prometheus (promtool) is not installed (scripts/debian.sh installs it)"
    return subprocess.run([binary, *args], cwd=RULES, capture_output=True, text=True, timeout=60)


def test_the_alert_rules_are_valid_and_each_alert_fires_only_when_it_should() -> None:
    checked = _promtool("check", "rules", "crawler.rules.yml")
    assert checked.returncode == 0 and "SUCCESS: 3 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = _promtool("test", "rules", "crawler.rules.test.yml")
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr
