"""Reflector behaviour against an in-memory list/watch fake (I1, I2, T6)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

import pytest

from rayop.kube.errors import TooManyRequests
from rayop.kube.resources import PODS
from rayop.runtime.informers.backoff import Backoff, BackoffSettings
from rayop.runtime.informers.reflector import Reflector
from rayop.testing.clock import FakeClock

from .informer_fakes import FakeApi, pod


class RecordingStore:
    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self.replaces = 0
        self.changed = asyncio.Event()

    def _key(self, obj: dict[str, Any]) -> str:
        return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"

    def replace(self, items: list[dict[str, Any]], resource_version: str) -> None:
        self.items = {self._key(o): o for o in items}
        self.replaces += 1
        self.changed.set()

    def add(self, obj: dict[str, Any]) -> None:
        self.items[self._key(obj)] = obj
        self.changed.set()

    update = add

    def delete(self, obj: dict[str, Any]) -> None:
        self.items.pop(self._key(obj), None)
        self.changed.set()


async def until(predicate: Any, store: RecordingStore) -> None:
    """Waits (at most 30 s of loop time) for ``predicate`` to hold, re-checking on each change."""
    async with asyncio.timeout(30):
        while not predicate():
            store.changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.05):
                    await store.changed.wait()


def names(store: RecordingStore) -> set[str]:
    return {o["metadata"]["name"] for o in store.items.values()}


@pytest.fixture
def api() -> FakeApi:
    api = FakeApi()
    api.put(pod("a"))
    api.put(pod("b"))
    return api


async def run(reflector: Reflector) -> asyncio.Task[None]:
    return asyncio.get_running_loop().create_task(reflector.run())


async def test_lists_then_watches_from_the_list_resource_version(api: FakeApi) -> None:
    store = RecordingStore()
    reflector = Reflector(api, PODS, store)
    task = await run(reflector)
    try:
        await until(lambda: names(store) == {"a", "b"}, store)
        api.put(pod("c"))
        api.remove("default", "a")
        await until(lambda: names(store) == {"b", "c"}, store)
        assert api.list_calls[0]["resource_version"] == "0"
        assert api.watch_calls[0] == {"resource_version": "2", "bookmarks": True}
        assert reflector.last_sync_resource_version == "4"
    finally:
        task.cancel()


async def test_normal_watch_end_rewatches_from_last_event_without_relisting(api: FakeApi) -> None:
    store = RecordingStore()
    reflector = Reflector(api, PODS, store)
    task = await run(reflector)
    try:
        await until(lambda: len(api.watch_calls) == 1, store)
        api.put(pod("c"))
        api.bookmark()
        await until(lambda: reflector.last_sync_resource_version == "4", store)
        api.end_watches()
        api.put(pod("d"))
        await until(lambda: "d" in names(store), store)
        assert len(api.list_calls) == 1
        assert api.watch_calls[1]["resource_version"] == "4"
    finally:
        task.cancel()


@pytest.mark.looptime
async def test_gone_relists_and_the_store_converges(api: FakeApi) -> None:
    store = RecordingStore()
    reflector = Reflector(api, PODS, store)
    task = await run(reflector)
    try:
        await until(lambda: len(api.watch_calls) == 1, store)
        api.drop_after_events = 0  # the next watches see nothing...
        api.end_watches()
        api.put(pod("c"))
        api.remove("default", "a")
        api.compact()  # ...and the history they would resume from is gone
        api.drop_after_events = None
        await until(lambda: names(store) == {"b", "c"}, store)
        assert store.replaces == 2
        # The relist first asks "not older than" the last synced RV, which has expired, then "".
        assert [c["resource_version"] for c in api.list_calls] == ["0", "2", None]
    finally:
        task.cancel()


@pytest.mark.looptime
async def test_watch_errors_back_off_and_retry_the_watch_without_relisting(api: FakeApi) -> None:
    store = RecordingStore()
    too_many = TooManyRequests({"code": 429, "reason": "TooManyRequests"})
    api.watch_errors = [too_many, too_many, too_many]
    loop = asyncio.get_running_loop()
    start = loop.time()
    task = await run(Reflector(api, PODS, store, rng=random.Random(1)))
    try:
        await until(lambda: len(api.watch_calls) == 4, store)
        elapsed = loop.time() - start
        assert len(api.list_calls) == 1
        # Three backoffs: [0.8, 1.6) + [1.6, 3.2) + [3.2, 6.4) seconds.
        assert 5.6 <= elapsed < 11.2
    finally:
        task.cancel()


def test_backoff_doubles_with_jitter_caps_and_resets() -> None:
    clock = FakeClock()
    backoff = Backoff(BackoffSettings(), clock=clock, rng=random.Random(7))
    delays = [backoff.next_delay() for _ in range(8)]
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    for delay, base in zip(delays, bases, strict=True):
        assert base <= delay < 2 * base
    clock.step(121)
    assert 0.8 <= backoff.next_delay() < 1.6
