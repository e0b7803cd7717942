"""The image and the chart agree: the chart runs ``<image> <subcommand> ...``, and the image
has every extra a chart value can turn on."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "docker" / "Dockerfile"
# Extras for developing, testing and demonstrating sluiceway: never needed in the image.
NOT_IN_THE_IMAGE = {"core", "bench", "demo", "deploy-test", "dev"}
# What the chart can enable: the Redis broker and gates, ap.transport postgres and gcp-pubsub,
# the router's Kubernetes discovery, tracing.
CHART_NEEDS = {"redis", "postgres", "pubsub", "k8s", "otel"}


def _instruction(name: str) -> list[str]:
    lines = DOCKERFILE.read_text(encoding="utf-8").splitlines()
    return [line.split(" ", 1)[1] for line in lines if line.startswith(name + " ")]


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras: dict[str, list[str]] = project["project"]["optional-dependencies"]
    return extras


def _installed_extras() -> set[str]:
    """The extras of the image's ``pip install '.[a,b]'``."""
    found = [re.search(r"'\.\[([a-z0-9,-]+)\]'", run) for run in _instruction("RUN")]
    (match,) = [m for m in found if m]
    return set(match.group(1).split(","))


def test_the_entrypoint_is_the_sluiceway_command() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "sluiceway" in project["project"]["scripts"]
    assert [json.loads(e) for e in _instruction("ENTRYPOINT")] == [["sluiceway"]]


def test_the_image_runs_unprivileged() -> None:
    assert _instruction("USER") == ["65532:65532"]


def test_the_image_installs_every_extra_the_chart_can_enable() -> None:
    installed = _installed_extras()
    assert installed >= CHART_NEEDS
    runtime = set(_extras()) - NOT_IN_THE_IMAGE
    assert runtime <= installed, f"extras missing from the image: {sorted(runtime - installed)}"


def test_the_image_names_only_declared_extras() -> None:
    """pip only warns about an extra the project lacks: a typo would go unnoticed."""
    unknown = _installed_extras() - set(_extras())
    assert not unknown, f"not in pyproject.toml: {sorted(unknown)}"
