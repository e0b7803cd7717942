"""Tests mirror the tree: each source module of the packages below has a test module of its
name at the same path under ``tests/unit/``, ``tests/integration/`` or ``tests/brokers/``.

A reader who opens ``flowcontrol/expiry.py`` finds its tests in ``tests/unit/flowcontrol/
test_expiry.py`` without searching. Add a package to ``MIRRORED`` once its tests are laid out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "src" / "sluiceway"
MIRRORED = ("config", "flowcontrol", "wire", "observability", "broker")
# Source module -> test module name, where the plain name would mislead.
NAMED = {
    "broker/redis.py": "test_redis_broker.py",
    "broker/sqlite.py": "test_sqlite_broker.py",
    "broker/lua/__init__.py": "test_lua.py",
    "broker/pubsub_api.py": "test_pubsub_broker.py",  # the gRPC client, against the emulator
    "broker/command.py": "test_postgres_cli.py",  # sluiceway db upgrade
    "broker/postgres.py": "test_postgres_broker.py",
    "broker/postgres_quota.py": "test_postgres_quota_store.py",
    # the pool, the ack batcher and every SQL function run under the broker's conformance suite
    "broker/postgres_db.py": "test_postgres_broker.py",
    "broker/postgres_batch.py": "test_postgres_broker.py",
    "broker/postgres_schema.py": "test_postgres_broker.py",
}
TEST_ROOTS = (ROOT / "tests" / "unit", ROOT / "tests" / "integration")


def _expected(module: Path) -> tuple[str, list[Path]]:
    relative = module.relative_to(PACKAGE)
    name = NAMED.get(relative.as_posix(), f"test_{module.stem}.py")
    folder = relative.parent
    if module.name == "__init__.py":
        folder = folder.parent
    places = [root / folder / name for root in TEST_ROOTS]
    if folder.parts[:1] == ("broker",):
        places.append(ROOT / "tests" / "brokers" / name)  # the conformance runs
    return name, places


def _modules(package: str) -> list[Path]:
    return [
        path
        for path in sorted((PACKAGE / package).rglob("*.py"))
        if path.name != "__init__.py" or path.relative_to(PACKAGE).as_posix() in NAMED
    ]


@pytest.mark.parametrize("package", MIRRORED)
def test_every_module_has_its_test_module(package: str) -> None:
    missing = [
        f"{module.relative_to(PACKAGE)} -> {name}"
        for module in _modules(package)
        for name, places in [_expected(module)]
        if not any(place.exists() for place in places)
    ]
    assert missing == []


def test_the_check_sees_a_missing_test_module() -> None:
    name, places = _expected(PACKAGE / "flowcontrol" / "usage" / "static.py")
    assert name == "test_static.py"
    assert ROOT / "tests" / "unit" / "flowcontrol" / "usage" / "test_static.py" in places
    _, nowhere = _expected(PACKAGE / "wire" / "no_such_module.py")
    assert not any(place.exists() for place in nowhere)
