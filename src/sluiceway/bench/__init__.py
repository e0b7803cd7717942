"""Benchmark harnesses shipped to users (``sluiceway bench ...``).

Each harness runs the whole system in one process against the simulator (or, with
``--endpoints``, real model servers) and writes a report other tools can read. Micro-benchmarks
for developers live in the repository's top-level ``bench/`` instead.
"""
