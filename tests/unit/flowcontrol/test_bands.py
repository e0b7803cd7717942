"""Bands: caps on queued bytes and requests, flows created on use, idle flows collected."""

from __future__ import annotations

from sluiceway.flowcontrol.bands import Band
from sluiceway.flowcontrol.base import FlowKey
from sluiceway.flowcontrol.settings import BandSettings


def test_fits_within_both_caps() -> None:
    band = Band(BandSettings(10, max_bytes=1000, max_requests=2), static=True)
    assert band.fits(1000) and not band.fits(1001)
    band.queued, band.bytes = 1, 600
    assert band.fits(400) and not band.fits(401)
    band.queued = 2
    assert not band.fits(0)


def test_flows_are_created_once_per_tenant() -> None:
    band = Band(BandSettings(5), static=False)
    flow = band.flow("a", 1.0)
    assert band.flow("a", 2.0) is flow and flow.key == FlowKey("a", 5)
    assert band.priority == 5 and band.idle


def test_collect_forgets_only_flows_idle_long_enough() -> None:
    band = Band(BandSettings(0), static=True)
    old, busy, recent = band.flow("old", 0.0), band.flow("busy", 0.0), band.flow("new", 0.0)
    busy.queued = 1
    recent.idle_since = 50.0
    assert band.collect(now=100.0, idle_for=60.0) == 1
    assert set(band.flows) == {"busy", "new"} and old not in band.flows.values()
