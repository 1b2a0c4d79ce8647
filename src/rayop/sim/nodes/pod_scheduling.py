"""Schedules one pod as kube-scheduler would, retrying until it fits; used by the kubelet.

A pod whose claims or whose fit on every node refuses it stays Pending: its PodScheduled
condition turns False (reason Unschedulable, kube-scheduler's message) and a Warning event
``FailedScheduling`` is recorded by ``default-scheduler`` (once per distinct message). It is
tried again when something it may depend on changes (a claim, a StorageClass, a node, a pod
that ends) or after a back-off (1 s doubling to 10 s), as kube-scheduler requeues unschedulable
pods. A pod whose unbound claims wait for their first consumer gets its node written on them
(``volume.kubernetes.io/selected-node``) and is bound once the provisioner bound them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.apimachinery.scheduling import ClaimState, claim_problem, pod_claims, prefilter_message
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.machinery.timestamps import now_rfc3339
from rayop.sim.nodes import pod_status as ps
from rayop.sim.nodes.scheduler import Placement
from rayop.sim.storage.controller_base import StoreController, meta
from rayop.sim.storage.store import Store

__all__ = ["PodScheduler"]

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
BIND_TIMEOUT = 600.0
"""How long a placed pod waits for its claims to be provisioned (kube-scheduler's bind timeout)."""
SELECTED_NODE = "volume.kubernetes.io/selected-node"
_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
_WATCHED = {
    ("", "pods"),
    ("", "nodes"),
    ("", "persistentvolumeclaims"),
    ("storage.k8s.io", "storageclasses"),
}


class PodScheduler:
    """Places pods on the :class:`Placement`'s nodes (see the module docstring).

    Args:
        store: The object store (claims, classes and events are read and written there).
        placement: The nodes and what they hold.
    """

    def __init__(self, store: Store, placement: Placement) -> None:
        self.store = store
        self.placement = placement
        self.writer: StoreController | None = None
        """The controller whose ``mutate`` writes statuses (the kubelet sets itself)."""
        self._claims: dict[tuple[str, str], Obj] = {}
        self._classes: dict[str, Obj] = {}
        self._placed: dict[str, str] = {}
        self._reported: dict[str, str] = {}
        self._changed = asyncio.Event()

    # -- what the filters depend on ------------------------------------------------------

    def wants(self, info: ResourceInfo) -> bool:
        """Tells whether the scheduler follows events of this resource."""
        return (info.group, info.plural) in _WATCHED

    def observe(self, event_type: str, info: ResourceInfo, obj: Obj) -> None:
        """Updates the indexes from a store event (runs inside the store's write path)."""
        md = meta(obj)
        if info.plural == "pods":
            self.placement.observe_pod(event_type, obj)
            phase = (obj.get("status") or {}).get("phase")
            if event_type == "DELETED":
                uid = str(md.get("uid") or "")
                self._placed.pop(uid, None)
                self._reported.pop(uid, None)
            if event_type == "DELETED" or phase in ("Succeeded", "Failed"):
                self._wake()
            return
        if info.plural == "nodes":
            self.placement.observe_node(event_type, obj)
        elif info.plural == "persistentvolumeclaims":
            key = (str(md.get("namespace") or ""), str(md.get("name") or ""))
            if event_type == "DELETED":
                self._claims.pop(key, None)
            else:
                self._claims[key] = obj
        else:
            name = str(md.get("name") or "")
            if event_type == "DELETED":
                self._classes.pop(name, None)
            else:
                self._classes[name] = obj
        self._wake()

    def prime(self) -> None:
        """Reads the claims and StorageClasses stored before the kubelet subscribed."""
        for group, plural in (("", "persistentvolumeclaims"), ("storage.k8s.io", "storageclasses")):
            info = self.store.resources.get(group, "v1", plural)
            if info is not None:
                for obj in self.store.list(info)[0]:
                    self.observe("ADDED", info, obj)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _class_of(self, claim: Obj) -> Obj | None:
        name = (claim.get("spec") or {}).get("storageClassName")
        if name is None:  # the DefaultStorageClass admission plugin would have set it
            for cls_name, cls in sorted(self._classes.items()):
                if (meta(cls).get("annotations") or {}).get(_DEFAULT_CLASS) == "true":
                    return self._classes[cls_name]
            return None
        return self._classes.get(str(name))

    def claim_state(self, namespace: str, name: str) -> ClaimState:
        """Returns what VolumeBinding's PreFilter sees of one claim."""
        claim = self._claims.get((namespace, name))
        if claim is None:
            return ClaimState(exists=False)
        cls = self._class_of(claim)
        return ClaimState(
            exists=True,
            deleting=bool(meta(claim).get("deletionTimestamp")),
            bound=bool((claim.get("spec") or {}).get("volumeName")),
            delayed=cls is not None and cls.get("volumeBindingMode") == "WaitForFirstConsumer",
        )

    # -- scheduling ----------------------------------------------------------------------

    def placed(self, uid: str) -> str:
        """Returns the node :meth:`schedule` chose for a pod ("" when none)."""
        return self._placed.get(uid, "")

    async def schedule(self, info: ResourceInfo, pod: Obj) -> str | None:
        """Blocks until the pod is placed; returns its node, or None when the pod went away."""
        md = meta(pod)
        ns, name, uid = str(md.get("namespace") or ""), str(md["name"]), str(md.get("uid"))
        backoff = INITIAL_BACKOFF
        while True:
            current = self.store.peek(info, ns, name)
            if current is None or meta(current).get("uid") != uid:
                self.placement.release(uid)
                return None
            bound_to = (current.get("spec") or {}).get("nodeName")
            if bound_to:
                return str(bound_to)
            changed = self._changed
            claims = {c: self.claim_state(ns, c) for c in pod_claims(current)}
            problem = claim_problem(claims)
            if problem is not None:
                message = prefilter_message(len(self.placement.nodes), problem)
            else:
                node, message = self.placement.choose(current)
                if node is not None:
                    if await self._volumes_ready(ns, claims, node):
                        self._placed[uid] = node
                        return node
                    self.placement.release(uid)
                    message = f"binding volumes: timed out waiting for the condition on {node}"
            await self._report(info, current, message)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)

    async def _volumes_ready(self, ns: str, claims: dict[str, ClaimState], node: str) -> bool:
        """Asks for the delayed claims to be provisioned on ``node``; waits until all are bound."""
        delayed = [c for c, state in claims.items() if state.delayed and not state.bound]
        if not delayed:
            return True
        pvcs = self.store.resources.get("", "v1", "persistentvolumeclaims")
        if pvcs is None or self.writer is None:
            return False
        for claim in delayed:

            def select(c: Obj) -> bool:
                annotations = dict(meta(c).get("annotations") or {})
                if annotations.get(SELECTED_NODE) == node:
                    return False
                annotations[SELECTED_NODE] = node
                meta(c)["annotations"] = annotations
                return True

            await self.writer.mutate(pvcs, ns, claim, select)
        deadline = time.monotonic() + BIND_TIMEOUT
        while not all(self.claim_state(ns, c).bound for c in delayed):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, MAX_BACKOFF))
        return True

    async def _report(self, info: ResourceInfo, pod: Obj, message: str) -> None:
        """Writes PodScheduled False and a FailedScheduling event (once per distinct message)."""
        md = meta(pod)
        ns, name, uid = str(md.get("namespace") or ""), str(md["name"]), str(md.get("uid"))
        if self._reported.get(uid) == message or self.writer is None:
            return
        self._reported[uid] = message
        nodes = len(self.placement.nodes)

        def unschedulable(p: Obj) -> bool:
            if meta(p).get("deletionTimestamp") or (p.get("spec") or {}).get("nodeName"):
                return False
            ps.mark_unschedulable(p, now_rfc3339(), nodes=nodes, message=message)
            return True

        await self.writer.mutate(info, ns, name, unschedulable, subresource="status", uid=uid)
        await self._event(pod, message)

    async def _event(self, pod: Obj, message: str) -> None:
        events = self.store.resources.get("", "v1", "events")
        if events is None:
            return
        md = meta(pod)
        now = time.time()
        stamp = now_rfc3339()
        event: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{md['name']}.{time.time_ns():x}", "namespace": md["namespace"]},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": md["namespace"],
                "name": md["name"],
                "uid": md.get("uid"),
                "resourceVersion": md.get("resourceVersion"),
            },
            "reason": "FailedScheduling",
            "message": message,
            "type": "Warning",
            "source": {},
            "action": "Scheduling",
            "reportingComponent": "default-scheduler",
            "reportingInstance": "default-scheduler-rayop-sim",
            "eventTime": stamp.replace("Z", f".{int(now * 1e6) % 1_000_000:06d}Z"),
            "firstTimestamp": None,
            "lastTimestamp": None,
        }
        with contextlib.suppress(Exception):
            await self.store.create(events, str(md["namespace"]), event)
