"""docs/design-rules.md rule 31: the wire contracts import only the standard library."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys
before = set(sys.modules)
import sluiceway.wire
third_party = sorted(
    name for name in set(sys.modules) - before
    if name.split(".")[0] not in sys.stdlib_module_names and name.split(".")[0] != "sluiceway"
)
print(repr((third_party, "sluiceway.wire.envelope" in sys.modules)))
"""


def test_wire_imports_only_the_standard_library() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    ).stdout
    third_party, loaded = eval(out)
    assert loaded, "the probe did not import the wire package"
    assert third_party == []
