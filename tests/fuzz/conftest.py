"""Fuzz tests: hypothesis profiles ``fast`` (the default, in ``make test``) and ``fuzz``
(nightly: ``.venv/bin/pytest tests/fuzz --hypothesis-profile=fuzz``); see fuzz_profiles.py."""

from __future__ import annotations

from fuzz_profiles import register_profiles

register_profiles()
