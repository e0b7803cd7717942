"""Port announcements: one line per server, and a ports file complete when the line appears."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluiceway.ports import PortAnnouncer, free_port


def test_file_is_written_before_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ports = tmp_path / "ports.json"
    announcer = PortAnnouncer(ports)
    announcer.announce("sim", "http://127.0.0.1:1")
    announcer.announce("metrics", "http://127.0.0.1:2")
    assert capsys.readouterr().out.splitlines() == [
        "listening sim http://127.0.0.1:1",
        "listening metrics http://127.0.0.1:2",
    ]
    assert json.loads(ports.read_text()) == {
        "metrics": "http://127.0.0.1:2",
        "sim": "http://127.0.0.1:1",
    }


def test_free_port_is_bindable() -> None:
    assert 0 < free_port() < 65536
