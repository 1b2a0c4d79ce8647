"""Watches RayClusters (or RayJobs) and times how long each takes to become ready, as a user
would see it.

A :class:`Target` says what "ready" means for one cluster right now: ``status.state == ready``
with ``desiredWorkerReplicas`` and ``readyWorkerReplicas`` equal to the wanted worker count and
``observedGeneration`` at least the generation of the user's last spec change. Its latency runs
from ``started`` (the create, or the scale request) to the first watch event that satisfies it.
For RayJobs, "ready" is ``status.jobDeploymentStatus == Complete`` (:func:`job_complete`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rayop.kube.client import KubeClient
from rayop.kube.resource import Resource
from rayop.kube.resources import RAY_CLUSTERS
from rayop.runtime.supervisor import TaskSupervisor

log = logging.getLogger(__name__)

READY_STATE = "ready"


@dataclass(slots=True)
class Target:
    """What one cluster must reach, and when it did."""

    name: str
    group: str
    started: float
    workers: int
    generation: int = 1
    ready_at: float | None = None

    @property
    def latency(self) -> float | None:
        """Seconds from ``started`` to ready (None while not ready)."""
        return None if self.ready_at is None else self.ready_at - self.started


def satisfies(obj: Mapping[str, Any], target: Target) -> bool:
    """Tells whether a RayCluster object meets ``target``."""
    status = obj.get("status") or {}
    observed = status.get("observedGeneration")
    return (
        status.get("state") == READY_STATE
        and status.get("desiredWorkerReplicas", 0) == target.workers
        and status.get("readyWorkerReplicas", 0) == target.workers
        and (observed is None or int(observed) >= target.generation)
    )


def job_complete(obj: Mapping[str, Any], target: Target) -> bool:
    """Tells whether a RayJob has completed (its target's counts are not used)."""
    del target
    return (obj.get("status") or {}).get("jobDeploymentStatus") == "Complete"


class ReadinessTracker:
    """Lists and watches one kind in one namespace, stamping targets as they are met.

    Args:
        client: A user client (the bench's, not the operator's).
        namespace: The namespace the scenario works in.
        resource: The kind watched (RayClusters by default).
        check: Whether an object meets its target (:func:`satisfies` for RayClusters).
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        *,
        resource: Resource = RAY_CLUSTERS,
        check: Callable[[Mapping[str, Any], Target], bool] = satisfies,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._namespace = namespace
        self._resource = resource
        self._satisfies = check
        self._clock = clock
        self._latest: dict[str, Mapping[str, Any]] = {}
        self.targets: dict[str, Target] = {}
        self.finished: list[Target] = []
        """Targets met or abandoned (deleted clusters), kept for the latency figures."""
        self._changed = asyncio.Event()
        self._synced = asyncio.Event()
        self._tasks = TaskSupervisor(f"bench readiness {resource.plural}")

    async def start(self) -> None:
        """Starts the watch (owned by this tracker); blocks until the first list has been read."""
        self._tasks.spawn(self._run(), name="list and watch")
        await self._synced.wait()

    async def stop(self) -> None:
        """Stops the watch; blocks until it has ended."""
        await self._tasks.stop()

    def expect(
        self,
        name: str,
        *,
        workers: int,
        generation: int = 1,
        group: str = "",
        started: float | None = None,
    ) -> Target:
        """Sets the target of cluster ``name``; a new ``started`` restarts its latency clock.

        When ``started`` is None an existing target keeps its start time (a spec edit during
        convergence does not reset the clock); a new one starts now.
        """
        old = self.targets.get(name)
        if started is None:
            started = old.started if old is not None else self._clock()
        target = Target(
            name=name,
            group=group or (old.group if old else ""),
            started=started,
            workers=workers,
            generation=generation,
        )
        self.targets[name] = target
        latest = self._latest.get(name)
        if latest is not None:
            self._check(name, latest)
        return target

    def forget(self, name: str) -> None:
        """Stops waiting for ``name`` (the scenario deleted it)."""
        self.targets.pop(name, None)
        self._changed.set()

    def ready(self, name: str) -> bool:
        """Tells whether ``name``'s current target has been met."""
        target = self.targets.get(name)
        return target is not None and target.ready_at is not None

    @property
    def pending(self) -> int:
        """How many targets are not yet met."""
        return sum(1 for t in self.targets.values() if t.ready_at is None)

    @property
    def met(self) -> list[Target]:
        """Every target met so far (current and finished)."""
        current = [t for t in self.targets.values() if t.ready_at is not None]
        return [*self.finished, *current]

    async def wait_all(self) -> None:
        """Blocks until every current target is met."""
        while self.pending:
            self._changed.clear()
            await self._changed.wait()

    async def wait_ready(self, name: str) -> None:
        """Blocks until ``name``'s current target is met."""
        while not self.ready(name):
            self._changed.clear()
            await self._changed.wait()

    def retire(self, name: str) -> None:
        """Moves a met target to :attr:`finished` (before its cluster is deleted)."""
        target = self.targets.pop(name, None)
        if target is not None:
            self.finished.append(target)
        self._changed.set()

    def _check(self, name: str, obj: Mapping[str, Any]) -> None:
        target = self.targets.get(name)
        if target is not None and target.ready_at is None and self._satisfies(obj, target):
            target.ready_at = self._clock()
            self._changed.set()

    def _observe(self, obj: Mapping[str, Any]) -> None:
        name = str((obj.get("metadata") or {}).get("name", ""))
        self._latest[name] = obj
        self._check(name, obj)

    async def _run(self) -> None:
        while True:
            try:
                listing = await self._client.list(self._resource, namespace=self._namespace)
                for item in listing.get("items") or []:
                    self._observe(item)
                self._synced.set()
                rv = (listing.get("metadata") or {}).get("resourceVersion")
                async with self._client.watch(
                    self._resource, namespace=self._namespace, resource_version=rv
                ) as events:
                    async for ev in events:
                        if ev.type in ("ADDED", "MODIFIED"):
                            self._observe(ev.object)
                        elif ev.type == "DELETED":
                            name = (ev.object.get("metadata") or {}).get("name", "")
                            self._latest.pop(name, None)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the watch ends or breaks: list again
                log.debug("readiness watch restarts: %s", exc)
                await asyncio.sleep(0.2)
