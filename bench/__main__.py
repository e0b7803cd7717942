"""Run every benchmark module in this folder (each exposes ``main(argv) -> int``).

``python -m bench`` runs them all; ``python -m bench NAME [ARGS...]`` runs one.
Each benchmark prints its figures beside a baseline measured in the same run.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def _modules() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_"))


def main(argv: list[str]) -> int:
    names = _modules()
    if argv:
        if argv[0] not in names:
            print(f"unknown benchmark {argv[0]!r}; known: {', '.join(names)}", file=sys.stderr)
            return 2
        return int(importlib.import_module(f"bench.{argv[0]}").main(argv[1:]))
    status = 0
    for name in names:
        print(f"\n=== bench {name} ===", flush=True)
        status |= int(importlib.import_module(f"bench.{name}").main([]))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
