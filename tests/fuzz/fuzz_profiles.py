"""The two hypothesis profiles of the fuzz tests, and how many examples each surface runs.

``fast`` runs in every ``make test``: few examples per surface, derandomized so a CI failure
replays the same inputs; ``fuzz`` is the nightly run, many examples and random ones. The
counts live here, in one table, so docs/operations.md ("Fuzzing") can list them as they are.
The profiles are applied per test (:func:`for_surface`), not loaded globally, so the other
hypothesis tests of a session keep their own settings whichever profile is chosen.
"""

from __future__ import annotations

from typing import Final

from hypothesis import HealthCheck, settings

__all__ = ["EXAMPLES", "FAST", "FUZZ", "active_profile", "for_surface", "register_profiles"]

FAST: Final = "fast"
FUZZ: Final = "fuzz"

# surface -> (examples in fast, examples in fuzz); a parametrized test runs its count per case.
EXAMPLES: Final[dict[str, tuple[int, int]]] = {
    "router-bodies": (150, 3000),
    "router-headers": (60, 2000),
    "router-paths": (60, 2000),
    "coordinator-requests": (40, 2000),  # per front (standalone, mounted) and mode header
    "coordinator-request-ids": (30, 2000),  # per front
    "sim-bodies": (100, 3000),  # per kind (completions, chat)
    "sim-headers": (30, 2000),
    "config-documents": (60, 2000),  # per document kind
    "config-command": (30, 1000),
}

# Examples talk to servers of the test module (shared across examples, so function-scoped
# fixtures such as caplog are fine), and a loaded machine must not fail a test on timing.
_COMMON = settings(
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
    print_blob=True,
)


def register_profiles() -> None:
    """Register ``fast`` and ``fuzz`` (tests/fuzz/conftest.py calls this at import)."""
    settings.register_profile(FAST, _COMMON, derandomize=True, database=None)
    settings.register_profile(FUZZ, _COMMON)


def active_profile() -> str:
    """``fuzz`` when ``--hypothesis-profile=fuzz`` chose it, else ``fast``."""
    return FUZZ if settings.get_current_profile_name() == FUZZ else FAST


def for_surface(surface: str) -> settings:
    """The active profile's settings with ``surface``'s number of examples."""
    fast, fuzz = EXAMPLES[surface]
    profile = active_profile()
    return settings(settings.get_profile(profile), max_examples=fuzz if profile == FUZZ else fast)
