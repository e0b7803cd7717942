"""The pool as the union of its sources: stable order, applied only when it changes, one
change at a time."""

from __future__ import annotations

import asyncio

from sluiceway.router.membership import Membership, union_of


def test_union_keeps_first_appearance_and_drops_trailing_slashes() -> None:
    groups = [("http://a:1/", "http://b:1"), ("http://b:1/", "http://c:1"), ()]
    assert union_of(groups) == ("http://a:1", "http://b:1", "http://c:1")


async def test_publish_applies_the_union_only_when_it_changes() -> None:
    applied: list[list[str]] = []

    async def apply(urls: list[str]) -> None:
        applied.append(urls)

    members = Membership(apply, ["http://s:1"], {"file": ["http://f:1"]})
    assert members.urls == ("http://s:1", "http://f:1")
    await members.publish("file", ["http://f:1/"])  # as at start-up: nothing to do
    assert applied == []
    await members.publish("dns", ["http://d:1", "http://s:1"])
    await members.publish("file", [])
    assert applied == [
        ["http://s:1", "http://f:1", "http://d:1"],
        ["http://s:1", "http://d:1"],
    ]
    assert members.source("dns") == ("http://d:1", "http://s:1")
    assert members.source("pods") == ()
    await members.publish("dns", [])  # the static URL stays whatever the sources say
    assert applied[-1] == ["http://s:1"]


async def test_changes_from_two_sources_are_applied_one_at_a_time() -> None:
    """A slow apply (health checks of new endpoints) does not interleave with the next one,
    and the last applied set is the union of both sources."""
    running = 0
    most = 0
    applied: list[list[str]] = []

    async def apply(urls: list[str]) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        applied.append(urls)
        running -= 1

    members = Membership(apply)
    await asyncio.gather(members.publish("a", ["http://a:1"]), members.publish("b", ["http://b:1"]))
    assert most == 1
    assert applied[-1] == ["http://a:1", "http://b:1"]
