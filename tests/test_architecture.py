"""The layout keeps its rules: concept packages never import the adapters (a package imports only
its own layer and those below), no import cycle between packages or modules (imports inside
functions counted), and private parts of Scrapy, Twisted and Protego only in ``crawler.compat``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture import (
    ADAPTERS,
    LAYERS,
    cycles,
    layering_violations,
    module_edges,
    modules,
    package_edges,
    private_uses,
)
from tests.helpers import ROOT

CRAWLER = ROOT / "crawler"


def test_every_package_imports_only_its_layer_and_those_below() -> None:
    assert layering_violations(CRAWLER) == []


def test_every_package_is_in_a_layer() -> None:
    packages = {name.split(".")[1] for name in modules(CRAWLER) if name.count(".") >= 1}
    layered = set().union(*(members for _, members in LAYERS))
    assert packages == layered


def test_no_import_cycle_between_packages_or_modules() -> None:
    assert cycles(package_edges(CRAWLER)) == []
    assert cycles(module_edges(CRAWLER)) == []


def test_private_parts_of_other_projects_are_used_only_in_compat() -> None:
    assert private_uses(CRAWLER) == []


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "crawler" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "crawler"


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_a_concept_package_importing_an_adapter_is_reported(tmp_path: Path, adapter: str) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "politeness/__init__.py": "",
            "politeness/limiter_local.py": f"def later():\n    from crawler.{adapter}.thing import Thing\n",
            f"{adapter}/__init__.py": "",
            f"{adapter}/thing.py": "Thing = object\n",
        },
    )
    assert layering_violations(root) == [
        f"crawler.politeness.limiter_local:2: politeness (concepts) imports {adapter} (adapters)"
    ]


def test_cycles_hidden_in_functions_and_private_parts_are_reported(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "storage/__init__.py": "",
            "storage/backend.py": "def open_backend():\n    from crawler.storage.sqlite import Sqlite\n",
            "storage/sqlite.py": "from crawler.storage.backend import open_backend\nSqlite = object\n",
            "robots/__init__.py": "",
            "robots/rules.py": "from protego._utils import _quote_path\n\ndef groups(parser):\n    return parser._user_agents\n",
        },
    )
    assert cycles(module_edges(root)) == [["crawler.storage.backend", "crawler.storage.sqlite"]]
    assert private_uses(root) == [
        "crawler.robots.rules:1: imports protego._utils._quote_path",
        "crawler.robots.rules:4: reads ._user_agents",
    ]
