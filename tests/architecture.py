"""The crawler's import graph, read from its source (imports inside functions counted), and the
rules its layout keeps: layers, no cycles, private parts of other projects only in compat."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "foundations",
        frozenset({"compat", "signals", "exceptions", "items", "exitcodes", "logformatter", "setting_lists"}),
    ),
    ("readers of the web", frozenset({"identity", "http", "extraction", "sitemaps"})),
    ("edges", frozenset({"redis", "storage", "warc"})),
    (
        "concepts",
        frozenset(
            {
                "politeness",
                "robots",
                "seen",
                "scope",
                "guard",
                "recrawl",
                "outcomes",
                "control",
                "traps",
                "twins",
                "ingestion",
            }
        ),
    ),
    ("services", frozenset({"services"})),
    ("plug-ins", frozenset({"frontier", "download"})),
    (
        "adapters",
        frozenset({"middlewares", "extensions", "pipelines", "spiders", "commands", "api", "addons", "settings"}),
    ),
)
"""Bottom first: a package imports packages of its own layer or of the layers below."""

ADAPTERS = LAYERS[-1][1]

PRIVATE_PROJECTS = ("scrapy", "twisted", "protego")
PRIVATE_ATTRIBUTES = frozenset(
    "_slot _pool _factory _parser _quiescentCallback _newConnection _clientProtocol _handshakeDone _appSendBuffer "
    "_tempDataLen _user_agents _rules _pattern _decode _redirect _ignore_tags _crawler _retry _create_crawler".split()
)
"""Private attributes of Scrapy, Twisted and Protego objects the crawler reads, inherited ones
(``self._pool`` in a subclass of Scrapy's handler) included: the crawler's own classes do not
use these names."""
COMPAT = "crawler.compat"


@dataclass(frozen=True, slots=True)
class Import:
    module: str
    """The importing module."""
    target: str
    """The imported module (or package), as written."""
    line: int


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root``, by dotted name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(root: Path) -> Iterator[Import]:
    """Every import in the package at ``root``, wherever it is written."""
    for name, path in modules(root).items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(name, alias.name, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                yield Import(name, target, node.lineno)
                for alias in node.names:  # ``from crawler.api import params`` imports a module too
                    yield Import(name, f"{target}.{alias.name}", node.lineno)


def package(module: str, top: str) -> str | None:
    """The package of ``top`` a module belongs to (its second dotted part), None for ``top`` itself."""
    parts = module.split(".")
    return parts[1] if parts[0] == top and len(parts) > 1 else None


def package_edges(root: Path) -> dict[str, dict[str, Import]]:
    """Package -> packages it imports (with one import that does)."""
    top, known = root.name, modules(root)
    edges: dict[str, dict[str, Import]] = {}
    for found in imports(root):
        if found.target not in known:
            continue
        source, target = package(found.module, top), package(found.target, top)
        if source is not None and target is not None and source != target:
            edges.setdefault(source, {}).setdefault(target, found)
    return edges


def module_edges(root: Path) -> dict[str, set[str]]:
    """Module -> modules of the package it imports."""
    known = modules(root)
    edges: dict[str, set[str]] = {}
    for found in imports(root):
        if found.target in known and found.target != found.module:
            edges.setdefault(found.module, set()).add(found.target)
    return edges


def cycles(edges: dict[str, set[str]] | dict[str, dict[str, Import]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(edges):
        if node not in index:
            visit(node)
    return found


def layer_of(name: str) -> int | None:
    return next((number for number, (_, members) in enumerate(LAYERS) if name in members), None)


def layering_violations(root: Path) -> list[str]:
    """Imports of a package from a higher layer; packages in no layer."""
    problems = []
    for source, targets in sorted(package_edges(root).items()):
        for target, found in sorted(targets.items()):
            low, high = layer_of(source), layer_of(target)
            if low is None or high is None:
                problems.append(f"{source if low is None else target} is in no layer")
            elif high > low:
                where = f"{found.module}:{found.line}"
                problems.append(f"{where}: {source} ({LAYERS[low][0]}) imports {target} ({LAYERS[high][0]})")
    return problems


def private_uses(root: Path) -> list[str]:
    """Private modules or names of Scrapy, Twisted or Protego, and their private attributes,
    used outside ``compat``."""
    problems = []
    for name, path in modules(root).items():
        if name == COMPAT:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom | ast.Import):
                for text in _imported_names(node):
                    if text.split(".")[0] in PRIVATE_PROJECTS and any(part.startswith("_") for part in text.split(".")):
                        problems.append(f"{name}:{node.lineno}: imports {text}")
            elif isinstance(node, ast.Attribute) and node.attr in PRIVATE_ATTRIBUTES:
                problems.append(f"{name}:{node.lineno}: reads .{node.attr}")
    return problems


def _imported_names(node: ast.Import | ast.ImportFrom) -> Iterable[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    return [f"{base}.{alias.name}" for alias in node.names]
