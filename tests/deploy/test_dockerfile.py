"""The image and the chart agree: the chart runs ``<image> <subcommand> ...``."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "docker" / "Dockerfile"


def _instruction(name: str) -> list[str]:
    lines = DOCKERFILE.read_text(encoding="utf-8").splitlines()
    return [line.split(" ", 1)[1] for line in lines if line.startswith(name + " ")]


def test_the_entrypoint_is_the_sluiceway_command() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "sluiceway" in project["project"]["scripts"]
    assert [json.loads(e) for e in _instruction("ENTRYPOINT")] == [["sluiceway"]]


def test_the_image_installs_the_redis_extra_and_runs_unprivileged() -> None:
    assert any("'.[redis]'" in run for run in _instruction("RUN"))
    assert _instruction("USER") == ["65532:65532"]
