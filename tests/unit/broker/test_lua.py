"""The Lua scripts: each name has its file, and no script reads Redis's own clock."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest

from sluiceway.broker import lua


def test_every_script_file_is_named_and_every_name_has_a_file() -> None:
    on_disk = {p.name.removesuffix(".lua") for p in files(lua).iterdir() if p.name.endswith(".lua")}
    assert on_disk == set(lua.SCRIPT_NAMES)
    assert all(lua.source(name).strip() for name in lua.SCRIPT_NAMES)


def test_an_unknown_name_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="no_such"):
        lua.source("no_such")


@pytest.mark.parametrize("name", lua.SCRIPT_NAMES)
def test_scripts_take_now_from_the_caller(name: str) -> None:
    """Redis does not know the time scale (docs/design-rules.md rule 1)."""
    code = "\n".join(line.split("--", 1)[0] for line in lua.source(name).splitlines())
    assert not re.search(r"['\"]TIME['\"]", code, re.IGNORECASE)
