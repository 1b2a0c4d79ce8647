"""The cache made on its first read (:class:`OnDemandCache`), as controller-runtime's is."""

from __future__ import annotations

import pytest

from rayop.runtime.informers.on_demand import CacheNotSynced, OnDemandCache
from rayop.testing import FakeCache


class _NeverSyncs(FakeCache):
    """A cache whose first list never ends (an API server that refuses the list)."""

    def __init__(self) -> None:
        super().__init__()
        self.waited: list[float | None] = []

    def has_synced(self) -> bool:
        return False

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        self.waited.append(timeout)
        return False


async def test_nothing_is_made_before_the_first_read_and_one_cache_after_it() -> None:
    made: list[FakeCache] = []

    def make() -> FakeCache:
        made.append(FakeCache({"metadata": {"namespace": "ns", "name": "a"}}))
        return made[-1]

    cache = OnDemandCache(make, "endpointslices")
    assert not made and not cache.started
    first = await cache.reader()
    second = await cache.reader()
    assert len(made) == 1 and cache.started
    assert first is second is made[0]
    assert [obj["metadata"]["name"] for obj in first.list("ns")] == ["a"]


async def test_a_first_list_that_does_not_end_fails_the_read_with_the_resource_named() -> None:
    never = _NeverSyncs()
    cache = OnDemandCache(lambda: never, "endpointslices.discovery.k8s.io", sync_timeout=3)
    with pytest.raises(CacheNotSynced, match=r"endpointslices\.discovery\.k8s\.io.*3 s"):
        await cache.reader()
    with pytest.raises(CacheNotSynced):
        await cache.reader()  # the next pass waits again on the same informer
    assert never.waited == [3, 3]
