"""A big worker group's pod creates outside the pass, so that it does not hold a worker.

KubeRay v1.7.0 creates a worker group's missing pods one by one inside the reconcile
(``reconcilePods`` in ``ray-operator/controllers/ray/raycluster_controller.go``); at
``--reconcile-concurrency 1`` a group scaled by a thousand holds the one RayCluster worker for
the ten seconds the client's 100/s token bucket needs, and every other cluster waits (issue 33
part 2). rayop hands a group's creations to a background task of their own when there are more
than :func:`background_threshold` of them (twice the calls a group keeps in flight):

- the pass records the creations as *pending* in the scale expectations
  (:meth:`~rayop.runtime.expectations.ScaleExpectations.expect_creates`) before the task
  starts, so the group stays unsatisfied and no pass plans the same pods again, and returns;
- the task creates them exactly as a pass would (``pod_sync.create_workers``: the same bodies,
  ``pod_call_concurrency`` calls in flight, the same Created/FailedCreate events, each pod's
  create expectation recorded as its create returns, so the 30 s create timeout runs from each
  answer), its requests spending the pods' token bucket like any other;
- when it ends, its pending creates are answered, a failure is kept, and the cluster is
  enqueued; the next pass raises the kept :class:`ReplicaFailureError` (``FailedCreateWorkerPod``)
  where the in-pass create would have raised it. Nothing created is rolled back.

The task is cancelled and awaited (its pending count dropped, nothing kept) when the cluster is
deleted or being deleted, suspended, Recreate-upgraded, when its scale expectations are dropped,
when the sharding drain lets it go, and at shutdown (:meth:`GroupCreates.close`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rayop.controllers.raycluster.status import ReplicaFailureError
from rayop.runtime.background_work import KeyedWork
from rayop.runtime.expectations import ScaleExpectations
from rayop.runtime.reconcile import Request

__all__ = ["GroupCreates", "background_threshold"]

BACKGROUND_FACTOR = 2
"""A group's creations go to the background when they are more than this many times the calls
a group keeps in flight (rayop's)."""

GroupKey = tuple[str, str, str]
"""``(namespace, cluster, group)``."""


def background_threshold(pod_call_concurrency: int) -> int:
    """The most creations of one group a pass makes itself."""
    return BACKGROUND_FACTOR * max(1, pod_call_concurrency)


class GroupCreates:
    """The background creators of a RayCluster controller, one per (cluster, group) at most.

    Args:
        expectations: The controller's scale expectations (the pending creates live there).
    """

    def __init__(self, expectations: ScaleExpectations) -> None:
        self.on_done: Callable[[Request], None] = lambda request: None
        """Called with the cluster of a creator that ended (the controller's enqueue)."""
        self._expectations = expectations
        self._work: KeyedWork[GroupKey] = KeyedWork(name="raycluster group creates")
        self._work.on_done = lambda key: self.on_done(Request(key[0], key[1]))
        self._failures: dict[GroupKey, ReplicaFailureError] = {}

    def running(self, namespace: str, cluster: str, group: str) -> bool:
        """Tells whether the group's creator runs."""
        return self._work.running((namespace, cluster, group))

    def __len__(self) -> int:
        """The number of creators running."""
        return len(self._work)

    def start(
        self,
        namespace: str,
        cluster: str,
        group: str,
        count: int,
        create: Callable[[], Awaitable[None]],
    ) -> bool:
        """Records ``count`` pending creates of the group and runs ``create()`` in the background;
        returns False (and records nothing) when the group's creator runs already.

        ``create`` raises :class:`ReplicaFailureError` when some create failed; that error is
        kept for :meth:`take_failure`.
        """
        key = (namespace, cluster, group)
        if self._work.running(key):
            return False
        self._failures.pop(key, None)
        self._expectations.expect_creates(namespace, cluster, group, count)

        async def work() -> None:
            try:
                await create()
            except ReplicaFailureError as err:
                self._failures[key] = err
            finally:
                self._expectations.create_answered(namespace, cluster, group, count)

        return self._work.start(key, work)

    def take_failure(self, namespace: str, cluster: str, group: str) -> ReplicaFailureError | None:
        """Returns (and forgets) the failure of the group's last creator, if it failed."""
        return self._failures.pop((namespace, cluster, group), None)

    async def stop(self, namespace: str, cluster: str) -> None:
        """Cancels the cluster's creators and forgets their failures; blocks until they ended."""
        await self._work.cancel(lambda key: key[:2] == (namespace, cluster))
        for key in [k for k in self._failures if k[:2] == (namespace, cluster)]:
            del self._failures[key]

    async def close(self) -> None:
        """Cancels every creator; blocks until all ended."""
        await self._work.close()
        self._failures.clear()
