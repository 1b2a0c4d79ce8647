"""OwnWrites: a controller knows when its cache has not yet shown its own last write."""

from __future__ import annotations

from typing import Any

from rayop.runtime.own_writes import OwnWrites
from rayop.testing.clock import FakeClock


def obj(rv: str, name: str = "rc") -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv}}


def test_cache_is_behind_until_the_written_version_arrives() -> None:
    writes = OwnWrites(clock=FakeClock())
    handler = writes.event_handler()
    writes.record(obj("7"))
    assert writes.cache_behind(obj("5"))  # the cache still holds the version we wrote over
    assert not writes.cache_behind(obj("5", name="other"))  # other objects are unaffected
    handler.on_update(obj("5"), obj("7"))  # the watch delivers our write
    assert not writes.cache_behind(obj("5"))
    assert len(writes) == 0


def test_a_later_version_seen_after_ours_is_not_behind() -> None:
    writes = OwnWrites(clock=FakeClock())
    handler = writes.event_handler()
    writes.record(obj("7"))
    handler.on_update(obj("5"), obj("7"))
    handler.on_update(obj("7"), obj("9"))  # someone else wrote after us
    assert not writes.cache_behind(obj("9"))


def test_the_cache_showing_our_version_directly_ends_the_record() -> None:
    writes = OwnWrites(clock=FakeClock())
    writes.record(obj("7"))
    assert not writes.cache_behind(obj("7"))  # cache updated before the handler ran
    assert len(writes) == 0


def test_an_unobserved_write_is_forgotten_after_the_timeout() -> None:
    clock = FakeClock()
    writes = OwnWrites(timeout=10.0, clock=clock)
    writes.record(obj("7"))
    clock.step(9.9)
    assert writes.cache_behind(obj("5"))
    clock.step(0.2)  # a relist may have skipped straight past our version
    assert not writes.cache_behind(obj("8"))


def test_deletion_forgets_the_record() -> None:
    writes = OwnWrites(clock=FakeClock())
    writes.record(obj("7"))
    writes.event_handler().on_delete(obj("6"))
    assert not writes.cache_behind(obj("6"))


def test_whoever_waited_is_told_when_the_cache_catches_up() -> None:
    writes = OwnWrites(clock=FakeClock())
    caught_up: list[str] = []
    writes.on_caught_up = lambda cached: caught_up.append(cached["metadata"]["resourceVersion"])
    handler = writes.event_handler()
    writes.record(obj("7"))
    handler.on_update(obj("5"), obj("7"))
    assert caught_up == []  # nobody waited: no callback
    writes.record(obj("9"))
    assert writes.cache_behind(obj("7"))
    handler.on_update(obj("7"), obj("9"))
    assert caught_up == ["9"]


def test_a_write_the_watch_showed_before_its_answer_came_back_is_not_waited_for() -> None:
    # The watch event of our write is handled before the write's answer: then a user's edit
    # lands on top. The cache is not behind; before, every pass waited for the 10 s timeout.
    clock = FakeClock()
    writes = OwnWrites(timeout=10.0, clock=clock)
    handler = writes.event_handler()
    handler.on_update(obj("5"), obj("7"))  # our write, seen first
    handler.on_update(obj("7"), obj("9"))  # someone else's, before our answer is handled
    writes.record(obj("7"))
    assert not writes.cache_behind(obj("9"))
    assert len(writes) == 0


def test_versions_seen_long_ago_are_forgotten() -> None:
    clock = FakeClock()
    writes = OwnWrites(timeout=10.0, clock=clock)
    handler = writes.event_handler()
    handler.on_update(obj("5"), obj("7"))
    clock.step(10.5)
    handler.on_update(obj("1", name="other"), obj("2", name="other"))  # expires the old ones
    writes.record(obj("7"))  # not remembered any more: waited for as before
    assert writes.cache_behind(obj("6"))


def test_only_the_latest_versions_of_an_object_are_kept() -> None:
    writes = OwnWrites(clock=FakeClock())
    handler = writes.event_handler()
    for rv in range(1, 10):
        handler.on_update(obj(str(rv - 1)), obj(str(rv)))
    writes.record(obj("6"))  # among the last four seen
    assert not writes.cache_behind(obj("9"))
    writes.record(obj("5"))  # too old to be remembered: waited for
    assert writes.cache_behind(obj("9"))
    handler.on_delete(obj("9"))
    writes.record(obj("9"))  # a deletion forgets what was seen
    assert writes.cache_behind(obj("8"))
