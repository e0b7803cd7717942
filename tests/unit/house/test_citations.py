"""The repository stands alone: nothing in it cites a document kept outside the repository.

A reader who clones the project must be able to follow every reference, so code, tests, docs and
benchmarks state a rule in the project's own words or link a page under ``docs/``
(``docs/design-rules.md rule N``). This test reads every text file and fails on any citation of
the planning documents the project was built from.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCANNED = ("src", "tests", "docs", "bench")
SKIPPED_PARTS = {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
THIS_FILE = Path(__file__).resolve()

# Words split across a line break keep their comment or docstring markers between them.
_GAP = r"[\s#>*/-]+"
_CITATIONS = [
    r"\b(decisions|contracts|scenarios)\.md",
    r"\b(spec|reference|shared|seeds|design)/",
    rf"\bdecisions?{_GAP}[0-9]",
    rf"\bcontracts,?{_GAP}(sections?{_GAP})?[0-9]",
    rf"\bhouse{_GAP}style\b",
    r"\bhouse-style\b",
    r"\b(llm-d-async|router-flow-control|multitenant-guide|peers|python-ecosystem|aesthetics)\.md",
    rf"\breference{_GAP}(notes\b|[0-9]|llm-d-async|router-flow-control|multitenant-guide)",
    rf"\bthe{_GAP}seed('s)?\b",
    rf"\bguide{_GAP}[0-9]+\.[0-9]",
    rf"\bsections?{_GAP}[0-9]",
]
CITATION = re.compile("|".join(f"(?:{p})" for p in _CITATIONS), re.IGNORECASE)


def _text_files() -> list[Path]:
    files = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            parts = set(path.parts)
            generated = SKIPPED_PARTS & parts or any(p.endswith(".egg-info") for p in parts)
            if path.is_file() and not generated and path != THIS_FILE:
                files.append(path)
    return files


def _citations(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return []  # not a text file
    found = []
    for match in CITATION.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        found.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0)!r}")
    return found


def test_the_scan_sees_the_tree_and_knows_a_citation() -> None:
    files = _text_files()
    assert any(p.name == "design-rules.md" for p in files)
    assert len(files) > 100
    # Examples built from parts, so that a plain text search of the repository finds none.
    for cited in (
        "see decisions" + ".md 13",
        "(contracts" + " section 3)",
        "contracts\n    section 2",
        "reference/llm-d-async.md",
        "House style 1:",
        "the seed's legacy detector",
        "/work/shared" + "/spec/x",
        "Multi-tenant guide 3.8:",
    ):
        assert CITATION.search(cited), cited
    for fine in (
        "docs/design-rules.md rule 13",
        "[design rule 6](design-rules.md)",
        "seed=7",
        "same seed, same latencies",
        "cluster (seed URL)",
    ):
        assert not CITATION.search(fine), fine


def test_no_citation_of_outside_documents() -> None:
    found = [c for path in _text_files() for c in _citations(path)]
    assert found == [], "\n".join(found)
