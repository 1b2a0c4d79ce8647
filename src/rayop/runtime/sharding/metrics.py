"""The sharding metrics, in the operator's registry: :class:`ShardMetrics`.

``rayop_shard_objects{replica}`` (roots each replica owns, as the sharder last counted them),
``rayop_shard_unassigned_objects`` (roots no live replica owns), ``rayop_shard_moves_total``
(roots the sharder asked to drain for another replica, or took from a replica that is gone) and
``rayop_shard_drain_seconds`` (from a drain request seen to its acknowledgement, per replica).
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

DRAIN_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, float("inf"))


class ShardMetrics:
    """The four families; one instance per registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.objects = Gauge(
            "rayop_shard_objects",
            "Root objects each replica owns, as the sharder last counted them",
            ["replica"],
            registry=registry,
        )
        self.unassigned = Gauge(
            "rayop_shard_unassigned_objects",
            "Root objects that no live replica owns",
            registry=registry,
        )
        self.moves = Counter(
            "rayop_shard_moves",
            "Root objects moved: drains requested for another replica, and roots taken from a gone one",
            registry=registry,
        )
        self.drain_seconds = Histogram(
            "rayop_shard_drain_seconds",
            "Seconds from a drain request seen to its acknowledgement",
            buckets=DRAIN_BUCKETS,
            registry=registry,
        )
        self._replicas: set[str] = set()

    def set_counts(self, counts: Mapping[str, int], unassigned: int) -> None:
        """Sets the per-replica gauges (dropping replicas no longer counted) and the unassigned one."""
        for gone in self._replicas - set(counts):
            self.objects.remove(gone)
        for replica, count in counts.items():
            self.objects.labels(replica=replica).set(count)
        self._replicas = set(counts)
        self.unassigned.set(unassigned)
