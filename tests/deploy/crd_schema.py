"""A CustomResourceDefinition's ``openAPIV3Schema`` as a strict JSON Schema, for the fixtures in
tests/fixtures/crds: the chart's custom resources are checked as ``kubectl --validate=strict``
would check them (an unknown field is an error), without a cluster.

Regenerate a fixture from a CRD file (the CRD itself is not kept in the repository):

    python -m tests.deploy.crd_schema CRD.yaml VERSION 'where it came from' > OUT.schema.json
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

__all__ = ["crd_schema", "strict"]

# Kubernetes' own keywords with no JSON Schema meaning here; CEL rules are left to the API server.
# Patterns are RE2's: a leading flag group moves to the front, where Python takes it.
_DROPPED = {
    "description",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
}

# The object metadata a chart writes (what kubectl checks for every kind).
METADATA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {
            "type": "string",
            "maxLength": 253,
            "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        },
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def _python_pattern(pattern: str) -> str:
    """Go's RE2 takes a flag group anywhere (``^(?i)...``); Python only at the start."""
    flags = re.match(r"\^(\(\?[a-z]+\))", pattern)
    return f"{flags.group(1)}^{pattern[flags.end() :]}" if flags else pattern


def _converted(key: str, value: Any) -> Any:
    if key == "properties":
        return {name: strict(sub) for name, sub in value.items()}
    if key in ("items", "additionalProperties", "anyOf", "allOf", "oneOf", "not"):
        return strict(value)
    if key == "pattern":
        return _python_pattern(value)
    return value


def strict(node: Any) -> Any:
    """One schema node: objects with declared properties take no others, unless the CRD keeps
    unknown fields; int-or-string becomes an ``anyOf``; ``nullable`` admits null."""
    if isinstance(node, list):
        return [strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _converted(key, value) for key, value in node.items() if key not in _DROPPED}
    preserve = out.pop("x-kubernetes-preserve-unknown-fields", False)
    if out.pop("x-kubernetes-int-or-string", False):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if out.pop("nullable", False) and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if "properties" in out and "additionalProperties" not in out and not preserve:
        out["additionalProperties"] = False
    return out


def crd_schema(crd: dict[str, Any], version: str, source: str) -> dict[str, Any]:
    """The JSON Schema of one served version of ``crd``: apiVersion and kind pinned, metadata
    as a chart writes it, the rest the CRD's schema made strict."""
    spec = crd["spec"]
    found = next(v for v in spec["versions"] if v["name"] == version)
    schema = strict(found["schema"]["openAPIV3Schema"])
    schema["properties"]["apiVersion"] = {"const": f"{spec['group']}/{version}"}
    schema["properties"]["kind"] = {"const": spec["names"]["kind"]}
    schema["properties"]["metadata"] = METADATA
    schema["required"] = sorted({"apiVersion", "kind", "metadata", *schema.get("required", [])})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": (
            f"{spec['names']['kind']} (group {spec['group']}, version {version}): the "
            f"openAPIV3Schema of {source}, made strict by tests/deploy/crd_schema.py "
            "(descriptions and list/map-type markers dropped, unknown fields rejected)."
        ),
        **schema,
    }


def main(argv: list[str]) -> None:
    path, version, source = argv
    crd = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    json.dump(crd_schema(crd, version, source), sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
