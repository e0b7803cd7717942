"""The public surface is declared and honest (``__all__`` lists exactly what ``sluiceway``
exports)."""

from __future__ import annotations

import subprocess
import sys

import sluiceway


def test_every_public_name_resolves() -> None:
    for name in sluiceway.__all__:
        assert getattr(sluiceway, name) is not None, name


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        sluiceway.no_such_thing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_importing_the_package_stays_light() -> None:
    code = (
        "import sys, sluiceway; "
        "print(sorted(m for m in ('aiohttp', 'redis', 'starlette') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
