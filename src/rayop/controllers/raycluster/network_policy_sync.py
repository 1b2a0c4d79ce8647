"""KubeRay v1.7.0's ``networkpolicy`` controller: the NetworkPolicies of each RayCluster.

It runs only with the ``RayClusterNetworkPolicy`` gate on, beside the ``raycluster``
controller and independent of it, as KubeRay's does: it watches RayClusters (generation
changes only) and the NetworkPolicies they control, and its events carry the reporting
controller ``networkpolicy-controller``. One pass over a RayCluster:

- gone, being deleted, or managed by another controller (``spec.managedBy``): nothing (garbage
  collection removes the policies of a deleted cluster); the opening is the small controllers'
  one (:class:`~rayop.controllers.kit.opening.Opening`);
- no ``spec.networkPolicy``: the policies it controls are deleted (the feature turned off);
- otherwise the head policy and one per worker group
  (:mod:`rayop.controllers.raycluster.network_policy`) are created when absent (Normal
  ``CreatedNetworkPolicy``) and brought back to the desired ``spec`` and labels when they
  drifted (Normal ``UpdatedNetworkPolicy``); a policy of that name the cluster does not control
  is never touched: Warning ``NetworkPolicyNameCollision`` and the pass fails (requeued with
  backoff until the user renames one of them). Then the policies it controls and no longer
  wants (a removed worker group) are deleted (Normal ``DeletedNetworkPolicy``).

Failed writes are Warning ``FailedToCreateNetworkPolicy``, ``FailedToUpdateNetworkPolicy`` and
``FailedToDeleteNetworkPolicy`` with KubeRay's messages. Unlike KubeRay, a spec rayop cannot
parse is skipped here (the ``raycluster`` controller reports it).
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from rayop.api import keys
from rayop.api.raycluster import RayCluster
from rayop.api.validation.raycluster import parse_raycluster
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit.opening import Opened, Opening
from rayop.controllers.kit.ownership import uid_precondition
from rayop.controllers.kit.recorded_write import write_with_events
from rayop.controllers.raycluster.ingress_sync import controlled_by
from rayop.controllers.raycluster.network_policy import (
    NETWORK_POLICIES,
    build_network_policies,
    normalize_ports,
)
from rayop.controllers.raycluster.pods import owner_reference
from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists, Conflict, NotFound
from rayop.runtime.events.recorder import EventRecorder, EventType
from rayop.runtime.informers.cache_reader import CacheReader
from rayop.runtime.reconcile import Request, Result

__all__ = [
    "CONTROLLER_NAME",
    "REPORTING_CONTROLLER",
    "NetworkPolicySync",
]

log = logging.getLogger(__name__)

CONTROLLER_NAME: Final = "networkpolicy"
REPORTING_CONTROLLER: Final = "networkpolicy-controller"

CREATED: Final = "CreatedNetworkPolicy"
UPDATED: Final = "UpdatedNetworkPolicy"
DELETED: Final = "DeletedNetworkPolicy"
FAILED_TO_CREATE: Final = "FailedToCreateNetworkPolicy"
FAILED_TO_UPDATE: Final = "FailedToUpdateNetworkPolicy"
FAILED_TO_DELETE: Final = "FailedToDeleteNetworkPolicy"
NAME_COLLISION: Final = "NetworkPolicyNameCollision"


class NetworkPolicyCollisionError(Exception):
    """A NetworkPolicy with the operator's name exists and the RayCluster does not control it."""


def _comparable(value: Any) -> Any:
    """Returns ``value`` without nulls and empty lists (absent on the wire either way)."""
    if isinstance(value, Mapping):
        kept = {k: _comparable(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None and v != []}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def needs_update(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Tells whether a live policy's ``spec`` or labels differ from the desired ones."""
    want_spec = normalize_ports(desired.get("spec") or {})
    if _comparable(dict(existing.get("spec") or {})) != _comparable(want_spec):
        return True
    return dict(cs.labels_of(existing)) != dict(cs.labels_of(desired))


@dataclass(frozen=True, slots=True)
class _ClusterEvents:
    """Records Events about one RayCluster (what :func:`write_with_events` reports to)."""

    recorder: EventRecorder
    cluster: Obj

    def event(
        self, event_type: EventType, reason: str, note: str, *, action: str | None = None
    ) -> None:
        """Records one Event about the RayCluster; never blocks."""
        metadata = cs.meta(self.cluster)
        regarding = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": metadata}
        self.recorder.event(regarding, event_type, reason, note, action=action)


@dataclass(slots=True)
class NetworkPolicySync:
    """The pass of the ``networkpolicy`` controller; pass :meth:`reconcile` to a controller.

    Args:
        client: The API client.
        clusters: The RayCluster cache.
        policies: The NetworkPolicy cache.
        recorder: The event recorder (reporting controller ``networkpolicy-controller``).
    """

    client: KubeClient
    clusters: CacheReader
    policies: CacheReader
    recorder: EventRecorder

    async def reconcile(self, request: Request) -> Result:
        """Runs one pass for ``request`` (see the module docstring).

        Raises:
            NetworkPolicyCollisionError: a policy with the desired name is not the cluster's.
            ApiError: a create, update or delete failed.
        """
        opened = Opening(cache=self.clusters, parse=parse_raycluster).open(request)
        if not isinstance(opened, Opened):
            return Result()  # done, or a spec the raycluster controller reports
        cached, rc = opened.cached, opened.model
        if rc.spec.network_policy is None:
            await self._delete_stale(rc, cached, set())
            return Result()
        desired = build_network_policies(rc)
        for policy in desired:
            policy["metadata"]["ownerReferences"] = [owner_reference(rc)]
            await self._create_or_update(cached, policy)
        await self._delete_stale(rc, cached, {cs.name(p) for p in desired})
        return Result()

    async def _create_or_update(self, cluster: Obj, policy: dict[str, Any]) -> None:
        namespace, name = cs.namespace(policy), cs.name(policy)
        where = f"{namespace}/{name}"
        events = _ClusterEvents(self.recorder, cluster)
        existing = self.policies.get(namespace, name)
        if existing is None:
            try:
                await write_with_events(
                    events,
                    self.client.create(NETWORK_POLICIES, policy, namespace=namespace),
                    action="Create",
                    done=(CREATED, f"Created NetworkPolicy {where}"),
                    failed=(FAILED_TO_CREATE, f"Failed to create NetworkPolicy {where}: "),
                    passing=(AlreadyExists,),
                )
                return
            except AlreadyExists:
                existing = await self.client.get(NETWORK_POLICIES, name, namespace=namespace)
        uid = str(cs.meta(cluster).get("uid", ""))
        if not controlled_by(existing, uid):
            note = (
                f"NetworkPolicy {where} already exists and is not owned by this RayCluster, "
                "network isolation will not be applied. Rename the existing NetworkPolicy or "
                "use a different RayCluster name to avoid the collision"
            )
            events.event("Warning", NAME_COLLISION, note, action="Validate")
            raise NetworkPolicyCollisionError(
                f"NetworkPolicy {where} already exists and is not owned by this RayCluster"
            )
        if not needs_update(existing, policy):
            return
        updated = copy.deepcopy(dict(existing))
        updated.setdefault("apiVersion", "networking.k8s.io/v1")
        updated.setdefault("kind", "NetworkPolicy")
        updated["spec"] = normalize_ports(policy["spec"])
        updated.setdefault("metadata", {})["labels"] = dict(policy["metadata"]["labels"])
        await write_with_events(
            events,
            self.client.update(NETWORK_POLICIES, updated),
            action="Update",
            done=(UPDATED, f"Updated NetworkPolicy {where}"),
            failed=(FAILED_TO_UPDATE, f"Failed to update NetworkPolicy {where}: "),
        )

    async def _delete_stale(self, rc: RayCluster, cluster: Obj, keep: set[str]) -> None:
        namespace = cs.namespace(cluster)
        uid = str(cs.meta(cluster).get("uid", ""))
        for policy in self.policies.list(namespace, label_selector={keys.RAY_CLUSTER: rc.name}):
            name = cs.name(policy)
            if name in keep or not controlled_by(policy, uid):
                continue
            where = f"{namespace}/{name}"
            with contextlib.suppress(NotFound):
                await write_with_events(
                    _ClusterEvents(self.recorder, cluster),
                    self.client.delete(
                        NETWORK_POLICIES,
                        name,
                        namespace=namespace,
                        preconditions=uid_precondition(policy),
                    ),
                    action="Delete",
                    done=(DELETED, f"Deleted NetworkPolicy {where}"),
                    failed=(FAILED_TO_DELETE, f"Failed to delete NetworkPolicy {where}: "),
                    passing=(NotFound, Conflict),
                )
