"""Micro-benchmarks and measurement scripts (decisions.md 25); run all with ``make bench``."""
