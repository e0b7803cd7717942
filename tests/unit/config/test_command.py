"""``sluiceway check-config`` via the CLI: every guide file passes, bad ones name the field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from sluiceway.config.command import register

GUIDE = Path(__file__).resolve().parents[2] / "fixtures" / "guide"
GUIDE_FILES = sorted(GUIDE.glob("*.yaml"))


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Test root, so check-config stays a subcommand."""

    register(app)
    return app


def _run(app: typer.Typer, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["check-config", *args])
    return result.exit_code, result.output


def test_the_guide_has_all_its_files() -> None:
    assert len(GUIDE_FILES) >= 15


@pytest.mark.parametrize("path", GUIDE_FILES, ids=lambda p: p.name)
def test_every_guide_file_is_valid(app: typer.Typer, path: Path) -> None:
    code, output = _run(app, str(path))
    assert code == 0, output
    assert "ok:" in output


def test_not_yet_implemented_types_are_warnings(app: typer.Typer, tmp_path: Path) -> None:
    text = (GUIDE / "router-flow-control-evictable.yaml").read_text()
    assert "round-robin-fairness-policy" in text
    changed = text.replace("round-robin-fairness-policy", "program-aware-fairness")
    code, output = _run(app, _write(tmp_path, "epp.yaml", changed))
    assert code == 0, output
    assert "'program-aware-fairness' is known but not implemented yet" in output


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "pools.json",
            '[{"id": "teams", "workers": 4, "gate_type": "magic-gate"}]',
            "[0].gate_type: unknown gate type 'magic-gate'",
        ),
        (
            "pools-nested.json",
            '[{"id": "p", "workers": 2, "gate_type": "wait-on-refuse",'
            ' "gate_params": {"gate": "{\\"gate_type\\": \\"nope\\"}"}}]',
            "[0].gate_params.gate.gate_type: unknown gate type 'nope'",
        ),
        (
            "transport.json",
            '{"queues": [{"queue_name": "q", "igw_base_url": "http://x", "colour": "red"}]}',
            "queues[0].colour: unknown key",
        ),
        (
            "policy.json",
            '{"type": "tier-priority", "parameters": {"lane_objectives": {"gold": "x"}}}',
            "parameters.lane_objectives",
        ),
        (
            "epp.yaml",
            "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nplugins:\n- type: best-scorer\n",
            "plugins[0].type: unknown plugin type 'best-scorer'",
        ),
        (
            "epp-ref.yaml",
            "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nfeatureGates: [flowControl]\n"
            "flowControl:\n  priorityBands:\n  - priority: 1\n"
            "    fairnessPolicyRef: fcfs-ordering-policy\n",
            "flowControl.priorityBands[0].fairnessPolicyRef",
        ),
        ("unknown.yaml", "colour: red\n", "not a configuration document"),
        ("broken.yaml", "a: [1, 2\n", "not valid YAML"),
    ],
)
def test_bad_documents_fail_naming_the_field(
    app: typer.Typer, tmp_path: Path, name: str, text: str, expected: str
) -> None:
    code, output = _run(app, _write(tmp_path, name, text))
    assert code == 1
    assert expected in output


def test_bad_field_inside_guide_values(app: typer.Typer, tmp_path: Path) -> None:
    text = (GUIDE / "values-redis-quota-only.yaml").read_text()
    bad = text.replace("batch_size: 10", "batch_size: ten", 1)
    code, output = _run(app, _write(tmp_path, "values.yaml", bad))
    assert code == 1
    assert "ap.transportConfig.batch_size" in output


def test_installed_command_is_wired() -> None:
    guide_file = GUIDE / "inferenceobjectives.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "sluiceway", "check-config", str(guide_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "inference-objectives" in done.stdout
