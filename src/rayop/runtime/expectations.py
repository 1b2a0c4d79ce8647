"""Scale expectations: pod creations and deletions a controller waits to see in its cache.

After creating or deleting a pod, a controller records an expectation; until the informer
cache reflects it, the pod's group is "unsatisfied" and the controller skips scaling that group,
so a stale cache never makes it create or delete twice.

Expectations are keyed by ``namespace/podName``: a second expectation for the same pod replaces
the first. A create is satisfied once the cache holds the pod or ``create_timeout`` seconds have
passed since it was recorded (the pod may have been deleted by someone else before the cache saw
it). A delete is satisfied only once the cache no longer holds the pod: a pod with a
``deletionTimestamp`` still counts as present, and there is no timeout. State is in memory only.
A satisfied expectation is dropped when a pass checks its group, or at once when the pod
informer's handler reports the pod (:meth:`ScaleExpectations.observed`); one the cache already
shows met when it is recorded is not kept at all.

Pod creates handed to background work (a group's many creates made outside the pass) are
counted as *pending* per group before the work starts (:meth:`ScaleExpectations.expect_creates`)
and answered when it ends (:meth:`ScaleExpectations.create_answered`; each create's own
expectation is recorded as it returns, as in a pass). While any is pending the group is
unsatisfied, so no pass plans the same pods again. The create timeout does not run for a
pending create: it runs from each create's answer, as for a create made in the pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.decisions import note_wait
from rayop.runtime.informers.shared_informer import EventHandlerFuncs

ScaleAction = Literal["create", "delete"]
"""What was done to a pod: ``"create"`` or ``"delete"``."""

CREATE: Final[ScaleAction] = "create"
DELETE: Final[ScaleAction] = "delete"
HEAD_GROUP: Final[str] = ""
"""The group name under which a cluster's head pod is expected."""

DEFAULT_CREATE_TIMEOUT: Final[float] = 30.0
"""Seconds after which an unobserved create counts as satisfied."""

PodLookup = Callable[[str, str], Mapping[str, Any] | None]
"""``(namespace, pod name) -> cached pod or None``; reads the informer cache, never blocks."""


@dataclass(frozen=True, slots=True)
class _Expectation:
    namespace: str
    cluster: str
    group: str
    pod_name: str
    action: ScaleAction
    recorded_at: float


class ScaleExpectations:
    """Tracks expected pod creations and deletions per (namespace, cluster, group); never blocks.

    Args:
        pod_lookup: Returns the cached pod for ``(namespace, name)``, or None when the cache
            does not hold it.
        create_timeout: Seconds after which an unobserved create counts as satisfied.
        clock: Time source for recording and expiring creates.
    """

    def __init__(
        self,
        pod_lookup: PodLookup,
        *,
        create_timeout: float = DEFAULT_CREATE_TIMEOUT,
        clock: Clock = MONOTONIC,
    ) -> None:
        self._pod_lookup = pod_lookup
        self._create_timeout = create_timeout
        self._clock = clock
        self._by_pod: dict[tuple[str, str], _Expectation] = {}
        # Insertion-ordered "sets" (dicts with None values) of (namespace, pod name) keys.
        self._by_group: dict[tuple[str, str, str], dict[tuple[str, str], None]] = {}
        self._by_cluster: dict[tuple[str, str], dict[tuple[str, str], None]] = {}
        self._pending: dict[tuple[str, str, str], int] = {}

    def expect_scale_pod(
        self, namespace: str, cluster: str, group: str, pod_name: str, action: ScaleAction
    ) -> None:
        """Records that pod ``pod_name`` of ``group`` was just created or deleted.

        Replaces any earlier expectation for the same pod.

        Raises:
            ValueError: ``action`` is neither ``"create"`` nor ``"delete"``.
        """
        if action not in (CREATE, DELETE):
            raise ValueError(f"unknown scale action {action!r}")
        key = (namespace, pod_name)
        self._remove(key)
        if (self._pod_lookup(namespace, pod_name) is not None) == (action == CREATE):
            return  # the cache shows it already (its watch event came before the answer)
        self._by_pod[key] = _Expectation(
            namespace, cluster, group, pod_name, action, self._clock.now()
        )
        self._by_group.setdefault((namespace, cluster, group), {})[key] = None
        self._by_cluster.setdefault((namespace, cluster), {})[key] = None

    def observed(self, namespace: str, pod_name: str, *, present: bool) -> None:
        """Drops the pod's expectation if the cache now shows it met: a create once the pod is
        there (``present``), a delete once it is gone.

        The pod informer's handler calls it on each add and delete, so an expectation lives from
        its write to the watch event that brings it, not to the cluster's next pass: a fleet
        created at once would otherwise hold every created pod's expectation until the queue
        came round to each cluster again (about 2.7 KB per cluster, tens of MB at 10,000).
        """
        exp = self._by_pod.get((namespace, pod_name))
        if exp is not None and (exp.action == CREATE) == present:
            self._remove((namespace, pod_name))

    def expect_creates(self, namespace: str, cluster: str, group: str, count: int) -> None:
        """Records that ``count`` more creations of the group are under way, not yet answered.

        Raises:
            ValueError: ``count`` is negative.
        """
        if count < 0:
            raise ValueError(f"negative pending creates: {count}")
        if count:
            key = (namespace, cluster, group)
            self._pending[key] = self._pending.get(key, 0) + count

    def create_answered(self, namespace: str, cluster: str, group: str, count: int = 1) -> None:
        """Records that ``count`` pending creations of the group were answered (or will never
        be sent); the count never goes below zero."""
        key = (namespace, cluster, group)
        left = self._pending.get(key, 0) - count
        if left > 0:
            self._pending[key] = left
        else:
            self._pending.pop(key, None)

    def pending_creates(self, namespace: str, cluster: str, group: str) -> int:
        """The group's creations under way and not yet answered."""
        return self._pending.get((namespace, cluster, group), 0)

    def is_satisfied(self, namespace: str, cluster: str, group: str) -> bool:
        """Tells whether every expectation of the group has been observed.

        A group with pending creates is unsatisfied. Otherwise checks the group's expectations
        in the order they were recorded, removes each satisfied one, and stops at the first
        unsatisfied one (the rest are not checked).
        """
        pending = self._pending.get((namespace, cluster, group), 0)
        if pending:
            note_wait(
                f"expectations of group {group or 'head'!r} not met: {pending} pod creates are "
                "under way; the group is left as it is"
            )
            return False
        keys = self._by_group.get((namespace, cluster, group))
        if not keys:
            return True
        for key in list(keys):
            exp = self._by_pod[key]
            if not self._satisfied(exp):
                note_wait(
                    f"expectations of group {group or 'head'!r} not met: the {exp.action} of "
                    f"pod {exp.pod_name} is not yet in the cache; the group is left as it is"
                )
                return False
            self._remove(key)
        return True

    def delete(self, namespace: str, cluster: str) -> None:
        """Drops every expectation recorded for the cluster, pending creates included."""
        for key in list(self._by_cluster.get((namespace, cluster), ())):
            self._remove(key)
        for group_key in [k for k in self._pending if k[:2] == (namespace, cluster)]:
            del self._pending[group_key]

    def __len__(self) -> int:
        """The number of pending expectations."""
        return len(self._by_pod)

    def _satisfied(self, exp: _Expectation) -> bool:
        present = self._pod_lookup(exp.namespace, exp.pod_name) is not None
        if exp.action == DELETE:
            return not present
        return present or exp.recorded_at + self._create_timeout < self._clock.now()

    def _remove(self, key: tuple[str, str]) -> None:
        exp = self._by_pod.pop(key, None)
        if exp is None:
            return
        _discard(self._by_group, (exp.namespace, exp.cluster, exp.group), key)
        _discard(self._by_cluster, (exp.namespace, exp.cluster), key)


def pod_observer(expectations: ScaleExpectations) -> EventHandlerFuncs:
    """The pod informer's handler that reports each pod added to the cache or deleted from it
    (:meth:`ScaleExpectations.observed`); register it on the informer ``pod_lookup`` reads."""

    def seen(obj: Mapping[str, Any], present: bool) -> None:
        meta = obj.get("metadata") or {}
        expectations.observed(meta.get("namespace") or "", meta.get("name") or "", present=present)

    return EventHandlerFuncs(
        add=lambda obj, _initial: seen(obj, True), delete=lambda obj: seen(obj, False)
    )


def _discard(
    index: dict[Any, dict[tuple[str, str], None]], index_key: object, key: tuple[str, str]
) -> None:
    members = index.get(index_key)
    if members is not None:
        members.pop(key, None)
        if not members:
            del index[index_key]
