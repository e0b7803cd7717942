"""The import graph keeps the layers of docs/architecture.md.

Imports are read with ``ast`` from the source (every ``import`` statement, also inside functions
and ``TYPE_CHECKING`` blocks), so a breach is found even where the import runs lazily, and
nothing is imported to find it. ``from a import b`` counts as importing ``a`` and ``a.b``.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3] / "src"
PACKAGE = SRC / "sluiceway"
STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}
IO_LIBRARIES = ("aiohttp", "redis", "hiredis", "starlette", "uvicorn", "httpx")
# Leaf modules of the package that import only the standard library themselves.
LIGHT = ("sluiceway.wire", "sluiceway.errors", "sluiceway.clock")

Allowed = Callable[[Path, str], bool]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, *, is_package: bool = False) -> Iterator[str]:
    """Every module that ``source`` (the text of ``module``) imports, as absolute names."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _imports(path: Path) -> Iterator[str]:
    source = path.read_text(encoding="utf-8")
    yield from imports_of(source, _module_name(path), is_package=path.name == "__init__.py")


def _top(name: str) -> str:
    return name.split(".", 1)[0]


def _within(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _breaches(package: str, allowed: Allowed) -> list[str]:
    """``file: module`` for each import in ``package`` that ``allowed(file, module)`` refuses."""
    found = {
        f"{path.relative_to(SRC)}: {name}"
        for path in (PACKAGE / package).rglob("*.py")
        for name in _imports(path)
        if name != "sluiceway" and not allowed(path, name)
    }
    return sorted(found)


def test_the_parser_sees_relative_lazy_and_type_checking_imports() -> None:
    source = (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "from . import sibling\n"
        "from ..wire import headers\n"
        "if TYPE_CHECKING:\n    import redis\n"
        "def f():\n    import aiohttp\n"
    )
    got = set(imports_of(source, "sluiceway.flowcontrol.probe"))
    assert {"sluiceway.flowcontrol.sibling", "sluiceway.wire.headers", "redis", "aiohttp"} <= got
    in_package = set(imports_of("from .base import X", "sluiceway.gates", is_package=True))
    assert in_package == {"sluiceway.gates.base", "sluiceway.gates.base.X"}


def test_the_check_finds_a_breach() -> None:
    everything = _breaches("wire", lambda _, n: False)
    assert any(line.endswith(": sluiceway.wire.codes") for line in everything)


def test_wire_imports_only_the_standard_library() -> None:
    """Anything can read the wire formats without pulling in servers or clients (the error root
    it raises from is standard library only too)."""

    def allowed(_: Path, name: str) -> bool:
        return _top(name) in STDLIB or _within(name, "sluiceway.wire", *LIGHT)

    assert _breaches("wire", allowed) == []


@pytest.mark.parametrize("package", ["broker", "gates", "flowcontrol"])
def test_protocol_modules_import_only_the_standard_library(package: str) -> None:
    """Each package's ``base.py`` holds its protocols; implementing one costs no heavy import."""
    path = PACKAGE / package / "base.py"
    own = f"sluiceway.{package}"
    heavy = [
        n
        for n in _imports(path)
        if n != "sluiceway" and _top(n) not in STDLIB and not _within(n, *LIGHT, own)
    ]
    assert heavy == []


def test_flowcontrol_is_a_pure_engine() -> None:
    """Only the standard library and light package modules; configuration is read by
    ``flowcontrol/configure.py`` alone, the engine's one door to ``sluiceway.config``."""
    door = PACKAGE / "flowcontrol" / "configure.py"

    def allowed(path: Path, name: str) -> bool:
        if path == door and _within(name, "sluiceway.config"):
            return True
        return _top(name) in STDLIB or _within(name, "sluiceway.flowcontrol", *LIGHT)

    assert _breaches("flowcontrol", allowed) == []


def test_flowcontrol_names_no_io_library_and_no_pydantic() -> None:
    """The narrower promise, kept even if the allow-list above is widened one day."""
    banned = (*IO_LIBRARIES, "pydantic")
    assert _breaches("flowcontrol", lambda _, n: _top(n) not in banned) == []


@pytest.mark.parametrize("module", ["errors.py", "clock.py"])
def test_leaf_modules_import_only_the_standard_library(module: str) -> None:
    """Every layer may use these two, so they must not drag anything in."""
    names = [n for n in _imports(PACKAGE / module) if n != "sluiceway"]
    assert [n for n in names if _top(n) not in STDLIB] == []


def test_config_reads_documents_with_pydantic_and_yaml_only() -> None:
    """Third-party imports of ``config/``: the model and document libraries (typer for the
    ``check-config`` command)."""
    libraries = {"pydantic", "pydantic_core", "yaml", "typer"}
    assert _breaches("config", lambda _, n: _top(n) in STDLIB | libraries | {"sluiceway"}) == []


def test_config_knows_no_component() -> None:
    """Config models describe documents; components read them, never the other way round."""
    components = [
        f"sluiceway.{c}"
        for c in (
            "broker",
            "processor",
            "flowcontrol",
            "gates",
            "signals",
            "sim",
            "router",
            "coordinator",
            "demo",
        )
    ]
    assert _breaches("config", lambda _, n: not _within(n, *components)) == []


def test_gates_use_only_the_broker_protocols() -> None:
    """Gate logic depends on protocols; Redis and SQL code lives in ``broker/``."""

    def allowed(_: Path, name: str) -> bool:
        broker = _within(name, "sluiceway.broker")
        return not broker or name == "sluiceway.broker" or _within(name, "sluiceway.broker.base")

    assert _breaches("gates", allowed) == []


def test_gates_and_signals_know_no_component_above_them() -> None:
    """Gates decide and signals measure; the processor, router and coordinator use them, never
    the other way round, and signals know nothing of the gates that read them."""
    above = ("processor", "router", "coordinator", "flowcontrol", "sim", "demo", "serving")
    banned = tuple(f"sluiceway.{c}" for c in above)
    assert _breaches("gates", lambda _, n: not _within(n, *banned)) == []
    assert _breaches("signals", lambda _, n: not _within(n, *banned, "sluiceway.gates")) == []


def test_gate_modules_do_not_import_the_gate_registry() -> None:
    """The registry (``gates/factory.py``) imports every gate module; a gate module that
    imported it back would make a cycle (combinators build nested gates through
    ``ctx.build``)."""

    def allowed(path: Path, name: str) -> bool:
        return path.name == "factory.py" or not _within(name, "sluiceway.gates.factory")

    assert _breaches("gates", allowed) == []


def test_sim_stands_apart() -> None:
    """The simulator is a model server: it knows nothing of the processor, router or engine."""
    banned = ("sluiceway.processor", "sluiceway.router", "sluiceway.flowcontrol")
    assert _breaches("sim", lambda _, n: not _within(n, *banned)) == []


BATCH_PURE = ("base", "grouping", "lines", "multipart", "output", "status")


def test_the_batch_apis_pure_parts_import_no_io() -> None:
    """Line checks, the status machine, output shapes, the multipart reader and the store
    protocols stay testable without a broker, a server or a disk."""
    pure = tuple(f"sluiceway.batch.{name}" for name in BATCH_PURE)

    def allowed(path: Path, name: str) -> bool:
        if path.stem not in BATCH_PURE:
            return True
        return _top(name) in STDLIB or _within(name, *LIGHT, *pure)

    assert _breaches("batch", allowed) == []
