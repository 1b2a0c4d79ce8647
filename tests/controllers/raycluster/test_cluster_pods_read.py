"""A pass reads its cluster's pods from the cache once while the cache does not change: the
upgrade check, the head, every group and the status share that read, and a pod the cache
gains or loses midway is seen by the next read."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any

from ._fakes import Cache, Fakes, Obj, context, pod
from ._fixtures import minimal_cluster


class CountingCache(Cache):
    """A pod cache that counts its owner-index lookups (each decodes what it returns)."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups = 0

    def by_index(self, index: str, value: str) -> builtins.list[Obj]:
        self.lookups += 1
        return super().by_index(index, value)


def names(pods: Sequence[Mapping[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods)


def test_the_steps_of_one_pass_share_one_read_of_an_unchanged_cache() -> None:
    fakes = Fakes(pods=CountingCache())
    for p in (
        pod("rc-head", "head", "headgroup"),
        pod("w-1", "worker", "g"),
        pod("w-2", "worker", "g"),
    ):
        fakes.pods.put(p)
    ctx = context(minimal_cluster(), fakes)
    assert names(ctx.cluster_pods()) == ["rc-head", "w-1", "w-2"]
    assert names(ctx.head_pods()) == ["rc-head"]
    assert names(ctx.group_pods("g")) == ["w-1", "w-2"]
    assert names(ctx.cluster_pods()) == ["rc-head", "w-1", "w-2"]
    assert isinstance(fakes.pods, CountingCache)
    assert fakes.pods.lookups == 1


def test_a_pod_the_cache_gains_or_loses_midway_is_seen_by_the_next_read() -> None:
    fakes = Fakes(pods=CountingCache())
    fakes.pods.put(pod("rc-head", "head", "headgroup"))
    ctx = context(minimal_cluster(), fakes)
    assert names(ctx.cluster_pods()) == ["rc-head"]
    fakes.pods.put(pod("w-1", "worker", "g"))  # the watch delivered a created worker
    assert names(ctx.group_pods("g")) == ["w-1"]
    del fakes.pods.objects["rc-head"]
    assert names(ctx.head_pods()) == []
    assert isinstance(fakes.pods, CountingCache)
    assert fakes.pods.lookups == 3


def test_a_caller_that_edits_the_returned_list_does_not_change_the_next_read() -> None:
    fakes = Fakes()
    fakes.pods.put(pod("w-1", "worker", "g"))
    ctx = context(minimal_cluster(), fakes)
    first = ctx.cluster_pods()
    first.clear()
    assert names(ctx.cluster_pods()) == ["w-1"]
