"""Benchmark harnesses shipped to users (``sluiceway bench ...``).

Each harness runs the whole system in one process against the simulator (or, with
``--endpoints``, real model servers) and writes a report other tools can read. Micro-benchmarks
for developers live in the repository's top-level ``bench/`` instead.

- ``command``: ``sluiceway bench ...``, the harnesses' commands and their options;
- ``isolation``: ``sluiceway bench isolation``, does realtime traffic notice an async backlog on
  one pool? (and ``isolation-sample``, the sampler an external client's run needs).
"""
