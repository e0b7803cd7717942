"""The cancellation-check cache: never a stale "clear" across events or subscription changes."""

from __future__ import annotations

from sluiceway.broker.cancel_cache import CancelCache

TOKEN = "1" * 32


def _live() -> CancelCache:
    cache = CancelCache()
    cache.set_live(True)
    return cache


def test_a_clear_read_is_remembered_while_live() -> None:
    cache = _live()
    cache.remember_clear("a", TOKEN, since=cache.mark())
    assert cache.known_clear("a", TOKEN)
    assert not cache.known_clear("a", "2" * 32)


def test_nothing_is_remembered_before_the_subscription_is_live() -> None:
    cache = CancelCache()
    cache.remember_clear("a", TOKEN, since=cache.mark())
    assert not cache.known_clear("a", TOKEN)


def test_a_read_started_before_the_subscription_went_live_is_not_trusted() -> None:
    cache = CancelCache()
    since = cache.mark()
    cache.set_live(True)
    cache.remember_clear("a", TOKEN, since=since)
    assert not cache.known_clear("a", TOKEN)


def test_an_event_during_the_read_prevents_remembering() -> None:
    cache = _live()
    since = cache.mark()
    cache.invalidate("a")
    cache.remember_clear("a", TOKEN, since=since)
    assert not cache.known_clear("a", TOKEN)


def test_an_event_after_remembering_invalidates() -> None:
    cache = _live()
    cache.remember_clear("a", TOKEN, since=cache.mark())
    cache.invalidate("a")
    assert not cache.known_clear("a", TOKEN)
    cache.remember_clear("a", TOKEN, since=cache.mark())
    assert cache.known_clear("a", TOKEN)


def test_losing_the_subscription_forgets_everything() -> None:
    cache = _live()
    cache.remember_clear("a", TOKEN, since=cache.mark())
    cache.set_live(False)
    assert not cache.known_clear("a", TOKEN)
    cache.set_live(True)
    assert not cache.known_clear("a", TOKEN)


def test_size_is_bounded() -> None:
    cache = CancelCache(max_entries=2)
    cache.set_live(True)
    for request_id in ("a", "b", "c"):
        cache.remember_clear(request_id, TOKEN, since=cache.mark())
    assert cache.known_clear("c", TOKEN)
    assert not cache.known_clear("a", TOKEN)


def test_forget_drops_a_finished_request() -> None:
    cache = _live()
    cache.remember_clear("a", TOKEN, since=cache.mark())
    cache.forget("a")
    assert not cache.known_clear("a", TOKEN)
