"""Every configuration document kind through ``check_file`` and ``sluiceway check-config``,
mutated from valid documents (issue 26).

A mutation replaces, drops or adds one node anywhere in a valid document (a value of the wrong
type, an edge number, an unknown key), or damages the file's text; the document is written as
YAML or JSON. The only outcomes allowed are a valid document or a ``ConfigError``: never
another exception, which ``check-config`` would print as a traceback instead of one line.
"""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from fuzz_profiles import for_surface
from fuzz_strategies import hostile_values
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from integration.router.router_harness import fc_config
from sluiceway.cli import app, register_all
from sluiceway.config.documents import read_documents
from sluiceway.config.kinds import KINDS, check_file
from sluiceway.errors import ConfigError

ROOT: Final = Path(__file__).resolve().parents[2]
GUIDE: Final = ROOT / "tests" / "fixtures" / "guide"
EXAMPLES: Final = ROOT / "deploy" / "examples"
# A valid document of each kind: a file of the repository, or one written here.
SEEDS: Final[dict[str, list[Any]]] = {
    "transport-config": [{"queues": [{"queue_name": "team-batch", "igw_base_url": "http://r:80/"}]}],
    "pools": [[{"id": "qwen-pool", "workers": 4, "gate_type": "local-max-concurrency",
                "gate_params": {"limit": "2"}}]],
    "merge-policy": [{"type": "tier-priority",
                      "parameters": {"lane_objectives": {"overflow-batch": "be"}}}],
    "helm-values": read_documents(GUIDE / "values-redis-tier-priority-admission.yaml"),
    "router-values": read_documents(EXAMPLES / "f-eviction" / "router-values.yaml"),
    "endpoint-picker-config": [yaml.safe_load(fc_config())],
    "llm-inference-service": read_documents(
        ROOT / "tests" / "fixtures" / "kserve" / "llminferenceservice-inline.yaml"
    ),
    "inference-objectives": read_documents(GUIDE / "inferenceobjectives.yaml"),
    "coordinator": read_documents(GUIDE / "coordinator-config.yaml"),
    "kubernetes-manifest": read_documents(GUIDE / "coordinator-deployment.yaml"),
}  # fmt: skip
OPERATIONS: Final = ("replace", "drop", "add", "wrap")
_keys = st.sampled_from(("type", "kind", "id", "url", "queues", "extra", "", "0")) | st.text(
    max_size=8
)


def _mutate(data: st.DataObject, node: Any) -> Any:
    """``node`` with one descendant (or itself) replaced, dropped, added to or wrapped."""
    children = (
        list(node)
        if isinstance(node, dict)
        else list(range(len(node)))
        if isinstance(node, list)
        else []
    )
    if children and data.draw(st.integers(0, 3), label="descend") > 0:
        key = data.draw(st.sampled_from(children), label="key")
        node[key] = _mutate(data, node[key])
        return node
    operation = data.draw(st.sampled_from(OPERATIONS), label="operation")
    if operation == "drop" and children:
        del node[data.draw(st.sampled_from(children), label="dropped")]
        return node
    if operation == "add" and isinstance(node, dict):
        node[data.draw(_keys, label="added")] = data.draw(hostile_values, label="value")
        return node
    if operation == "wrap":
        return [node] if data.draw(st.booleans(), label="as list") else {"x": node}
    return data.draw(hostile_values, label="value")


def _written(data: st.DataObject, documents: list[Any], folder: Path) -> Path:
    """The mutated documents written as YAML or JSON, perhaps with their text damaged."""
    as_json = len(documents) == 1 and data.draw(st.booleans(), label="json")
    if as_json:
        text = json.dumps(documents[0], allow_nan=True)
    else:
        text = yaml.safe_dump_all(documents, allow_unicode=data.draw(st.booleans()))
    if data.draw(st.integers(0, 4), label="damage") == 0 and text:
        at = data.draw(st.integers(0, len(text) - 1), label="at")
        text = text[:at] + data.draw(st.text(max_size=4), label="inserted") + text[at + 1 :]
    path = folder / ("doc.json" if as_json else "doc.yaml")
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


def _mutated_file(data: st.DataObject, kind: str, folder: Path) -> Path:
    documents = copy.deepcopy(SEEDS[kind])
    index = data.draw(st.integers(0, len(documents) - 1), label="document")
    documents[index] = _mutate(data, documents[index])
    return _written(data, documents, folder)


def test_the_seeds_are_valid_and_cover_every_kind(tmp_path: Path) -> None:
    assert sorted(SEEDS) == sorted(KINDS)
    for kind, documents in SEEDS.items():
        path = tmp_path / f"{kind}.yaml"
        path.write_text(yaml.safe_dump_all(documents))
        assert check_file(path).kind == kind


@pytest.mark.parametrize("kind", KINDS)
@for_surface("config-documents")
@given(data=st.data(), given_kind=st.booleans())
def test_documents(tmp_path: Path, kind: str, data: st.DataObject, given_kind: bool) -> None:
    path = _mutated_file(data, kind, tmp_path)
    with contextlib.suppress(ConfigError):  # the one refusal allowed; anything else fails
        check_file(path, kind=kind if given_kind else None)


@for_surface("config-command")
@given(data=st.data(), kind=st.sampled_from(KINDS))
def test_check_config_prints_ok_or_one_error_line(
    tmp_path: Path, data: st.DataObject, kind: str
) -> None:
    path = _mutated_file(data, kind, tmp_path)
    result = CliRunner().invoke(register_all(app), ["check-config", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    if result.exit_code:
        errors = [line for line in result.output.splitlines() if line.startswith("error:")]
        assert result.exit_code == 1 and len(errors) == 1, result.output
    else:
        assert result.output.rstrip().splitlines()[-1].startswith("ok: "), result.output
