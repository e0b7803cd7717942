"""The CRD-to-JSON-Schema conversion behind tests/fixtures/crds, and the fixtures themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .crd_schema import crd_schema, strict

CRDS = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "crds"


def test_objects_take_no_unknown_field_unless_the_crd_keeps_them() -> None:
    node = {
        "type": "object",
        "description": "dropped",
        "properties": {"a": {"type": "string", "x-kubernetes-map-type": "atomic"}},
    }
    assert strict(node) == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": False,
    }
    kept = strict({**node, "x-kubernetes-preserve-unknown-fields": True})
    assert "additionalProperties" not in kept


def test_int_or_string_nullable_and_go_flag_patterns() -> None:
    node = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    assert strict(node) == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert strict({"type": "string", "nullable": True}) == {"type": ["string", "null"]}
    assert strict({"pattern": "^(?i)(abort|warn)?$"}) == {"pattern": "(?i)^(abort|warn)?$"}


def test_the_version_kind_and_metadata_are_pinned() -> None:
    crd = {
        "spec": {
            "group": "example.com",
            "names": {"kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": {"type": "object"},
                            },
                        }
                    },
                }
            ],
        }
    }
    schema = crd_schema(crd, "v1", "a test")
    assert schema["properties"]["apiVersion"] == {"const": "example.com/v1"}
    assert schema["properties"]["kind"] == {"const": "Thing"}
    assert schema["required"] == ["apiVersion", "kind", "metadata", "spec"]
    assert schema["properties"]["metadata"]["required"] == ["name"]


@pytest.mark.parametrize("path", sorted(CRDS.glob("*.schema.json")), ids=lambda p: p.name)
def test_every_fixture_is_a_valid_json_schema(path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="needs jsonschema (deploy-test extra)")
    jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text(encoding="utf-8")))
