"""Several routers and processors: what the options accept, and how clients spread."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluiceway.bench.isolation.command import run_command
from sluiceway.bench.isolation.load import LoadTarget
from sluiceway.bench.isolation.plan import IsolationOptions, Topology


def test_one_of_each_is_the_in_process_stack() -> None:
    assert not IsolationOptions().topology.replicated
    assert Topology(routers=2).replicated and Topology(processors=2).replicated
    assert Topology(2, 3, ledger=False).describe() == {
        "router_replicas": 2,
        "processors": 3,
        "ledger": False,
    }


@pytest.mark.parametrize(("routers", "processors", "ledger"), [(0, 1, True), (1, 1, False)])
def test_bad_topologies_are_refused(routers: int, processors: int, ledger: bool) -> None:
    with pytest.raises(ValueError):
        Topology(routers, processors, ledger)


def test_the_command_says_no_ledger_needs_replicas(capsys: pytest.CaptureFixture[str]) -> None:
    code = run_command(
        modes="eviction",
        quick=True,
        full=False,
        levels="",
        output=Path("unused"),
        time_scale=1.0,
        capacity=10,
        endpoints="",
        settings=[],
        analyze=None,
        client="builtin",
        venv=None,
        ledger=False,
    )
    assert code == 2
    assert "--no-ledger needs" in capsys.readouterr().err


def test_clients_take_the_replicas_in_turn() -> None:
    target = LoadTarget("http://a", "m", replicas=("http://a", "http://b"))
    assert [target.next_url() for _ in range(4)] == ["http://a", "http://b"] * 2
    assert LoadTarget("http://only", "m").next_url() == "http://only"
