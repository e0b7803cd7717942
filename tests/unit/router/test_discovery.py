"""The membership flags: which combinations are accepted, what the pool starts with, and the
jobs that keep it current."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluiceway.clock import VirtualClock
from sluiceway.errors import ConfigError
from sluiceway.router.build import build_router, load_picker_config
from sluiceway.router.discovery import Discovery, PodSource
from sluiceway.router.dns_discovery import DnsName
from sluiceway.router.inference_pool import PodTarget
from sluiceway.router.settings import RouterSettings


def test_the_pool_starts_with_the_flags_and_the_file(tmp_path: Path) -> None:
    listing = tmp_path / "eps"
    listing.write_text("# pool\nhttp://a:1\n\nhttp://b:2/\nhttp://c:3\n")
    found = Discovery.from_flags("http://c:3, http://d:4", listing)
    assert found.endpoints == ("http://c:3", "http://d:4", "http://a:1", "http://b:2")
    assert found.discovers


def test_at_least_one_source_is_needed() -> None:
    with pytest.raises(ConfigError) as info:
        Discovery.from_flags(None, None)
    assert info.value.field == "--endpoints"
    assert not Discovery.from_flags("http://a:1", None).discovers
    dns_only = Discovery.from_flags(None, None, "http://vllm.ns.svc:8000, https://other")
    assert dns_only.endpoints == ()
    assert dns_only.dns == (DnsName("http", "vllm.ns.svc", 8000), DnsName("https", "other", 443))
    pods = PodSource("ns", pool="p")
    assert Discovery.from_flags(None, None, pods=pods).discovers


def test_a_bad_endpoints_file_line_is_named(tmp_path: Path) -> None:
    listing = tmp_path / "eps"
    listing.write_text("http://a:1\nvllm-0:8000\n")
    with pytest.raises(ConfigError) as info:
        Discovery.from_flags(None, listing)
    assert info.value.field == "--endpoints-file line 2"
    with pytest.raises(ConfigError, match="cannot read"):
        Discovery.from_flags(None, tmp_path / "missing")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("vllm:8000", "not http://NAME:PORT"),
        ("tcp://vllm:8000", "not http://NAME:PORT"),
        ("http://vllm:99999", "bad port"),
        ("http://vllm:8000/v1", "no path"),
    ],
)
def test_a_bad_dns_name_is_named(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        Discovery.from_flags(None, None, text)
    assert info.value.field == "--endpoints-dns"


def test_dns_urls_bracket_ipv6_and_sort() -> None:
    name = DnsName.parse("http://vllm.ns.svc:8000")
    assert str(name) == "http://vllm.ns.svc:8000"
    addresses = ["10.0.0.2", "fd00::1", "10.0.0.1", "10.0.0.2"]
    assert name.urls(addresses) == [
        "http://10.0.0.1:8000",
        "http://10.0.0.2:8000",
        "http://[fd00::1]:8000",
    ]


def test_pod_flags() -> None:
    assert PodSource.from_flags(None, None, None, "ns") is None
    assert PodSource.from_flags("pool", None, None, None) == PodSource(None, pool="pool")
    direct = PodSource.from_flags(None, "app=vllm,tier=a", 8000, "ns")
    assert direct == PodSource("ns", target=PodTarget((("app", "vllm"), ("tier", "a")), (8000,)))
    cases = [
        (("pool", "app=x", None), "--pod-selector"),
        (("pool", None, 8000), "--target-port"),
        ((None, "app=x", None), "--pod-selector"),
        ((None, None, 8000), "--target-port"),
    ]
    for (pool, selector, port), field in cases:
        with pytest.raises(ConfigError) as info:
            PodSource.from_flags(pool, selector, port, None)
        assert info.value.field == field


def test_one_job_per_dynamic_source(tmp_path: Path) -> None:
    pytest.importorskip("kubernetes_asyncio")
    listing = tmp_path / "eps"
    listing.write_text("http://a:1\n")
    config, _ = load_picker_config(None)
    clock = VirtualClock()
    app, _ = build_router(config, RouterSettings(endpoints=("http://a:1",)), clock)
    assert Discovery.from_flags("http://a:1", None).jobs(app.gateway, clock) == []
    every = Discovery.from_flags(None, listing, "http://vllm:8000", pods=PodSource("ns", pool="p"))
    assert len(every.jobs(app.gateway, clock)) == 3
    with pytest.raises(ConfigError, match="> 0") as info:
        Discovery.from_flags(None, listing, dns_interval=0)
    assert info.value.field == "--dns-interval"


def test_the_chart_values_model_server_labels_select_the_pods() -> None:
    from sluiceway.router.build import chart_pod_labels

    values = Path(__file__).parents[3] / "deploy/examples/h-realtime-isolation/router-values.yaml"
    labels = chart_pod_labels(values)
    assert labels == {"llm-d.ai/guide": "async-multitenant"}
    source = PodSource.from_flags(None, None, None, "ns", chart_labels=labels)
    assert source == PodSource(
        "ns", target=PodTarget((("llm-d.ai/guide", "async-multitenant"),), (8000,))
    )
    on_port = PodSource.from_flags(None, None, 9000, None, chart_labels=labels)
    assert on_port is not None and on_port.target is not None and on_port.target.ports == (9000,)
    selector = PodSource.from_flags(None, "app=x", 1, None, chart_labels=labels)
    assert selector is not None and selector.target is not None
    assert selector.target.labels == (("app", "x"),)  # a flag wins
    assert chart_pod_labels(None) == {}
