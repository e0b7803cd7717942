"""The alert rules: ``promtool check rules`` and ``promtool test rules`` pass, names are ours."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from sluiceway.localservices import services_required

from .metric_names import defined_names, metric_names

RULES_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
ALERTS = (
    "SluicewayGateBlind",
    "SluicewayQuotaSlotHeldPastLease",
    "SluicewayDeadlineExceeded",
    "SluicewayDeadLetterGrowth",
    "SluicewayEvictionsHigh",
    "SluicewayEvictionNotConfirmed",
    "SluicewayRouterSaturatedLong",
)


def _rules() -> list[dict[str, Any]]:
    data = yaml.safe_load((RULES_DIR / "alerts.yaml").read_text(encoding="utf-8"))
    return [rule for group in data["groups"] for rule in group["rules"]]


def _promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        reason = "promtool is not installed (apt-get install prometheus)"
        if services_required():
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_promtool(), *args], cwd=RULES_DIR, capture_output=True, text=True, timeout=60
    )


def test_every_named_alert_is_defined_once() -> None:
    names = [rule["alert"] for rule in _rules()]
    assert sorted(names) == sorted(ALERTS)


def test_alerts_read_only_names_sluiceway_defines() -> None:
    known = defined_names()
    for rule in _rules():
        assert metric_names(rule["expr"]) <= known, rule["alert"]


def test_promtool_check_rules_passes() -> None:
    done = _run("check", "rules", "alerts.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(ALERTS)} rules found" in done.stdout


def test_promtool_unit_tests_pass() -> None:
    done = _run("test", "rules", "alerts_test.yaml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_unit_tests_can_fail(tmp_path: Path) -> None:
    """A test expecting the blind-gate alert on a healthy gate must fail."""
    text = (RULES_DIR / "alerts_test.yaml").read_text(encoding="utf-8")
    broken = text.replace("values: '1 1 0 0 0 0 0'", "values: '1 1 1 1 1 1 1'", 1)
    assert broken != text
    (tmp_path / "alerts.yaml").write_text((RULES_DIR / "alerts.yaml").read_text())
    (tmp_path / "alerts_test.yaml").write_text(broken)
    done = subprocess.run(
        [_promtool(), "test", "rules", "alerts_test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
