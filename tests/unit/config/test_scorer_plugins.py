from __future__ import annotations

from sluiceway.config.registry import validate_params


def test_scorers_are_implemented_and_prefix_tuning_is_accepted_with_a_note() -> None:
    for name in ("queue-scorer", "kv-cache-utilization-scorer"):
        model, warnings = validate_params("plugin", name, {}, field="p")
        assert model is not None and warnings == []
    params = {"lruCapacityPerServer": 31250, "maxPrefixBlocksToMatch": 256}
    model, warnings = validate_params("plugin", "prefix-cache-scorer", params, field="p")
    assert model is not None
    assert warnings == [
        "p.lruCapacityPerServer: accepted and ignored (no effect here)",
        "p.maxPrefixBlocksToMatch: accepted and ignored (no effect here)",
    ]


def test_scorer_models_do_not_pull_in_the_http_stack() -> None:
    import subprocess
    import sys

    code = (
        "import sys, sluiceway.config.scorer_plugins; "
        "print(sorted(m for m in ('aiohttp', 'starlette', 'uvicorn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
