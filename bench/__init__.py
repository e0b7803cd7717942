"""Micro-benchmarks and measurement scripts (docs/design-rules.md rule 25).

Run all with ``make bench``.
"""
