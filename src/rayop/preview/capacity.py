"""``rayop preview -f``'s capacity check: can the nodes hold the pods a change would create?

The room is what kube-scheduler counts (its NodeResourcesFit plugin): each node's
``status.allocatable`` minus the requests of the pods bound to it (``spec.nodeName``) that have
not finished (phase neither Succeeded nor Failed), and its pod count. The pods are those the
first passes would create: each withheld Pod create, and for a new RayCluster (a RayService's
zero-downtime upgrade, a RayJob's cluster) its head and desired workers as the RayCluster
controller builds them (:mod:`rayop.controllers.raycluster.pods`). Pods a pass deletes give
their room back first.

The pods are placed one at a time, in the order of the file's objects and, within an object, as
the operator creates them (head first), each on a node that passes kube-scheduler's filters
(:func:`rayop.apimachinery.scheduling.node_problems`: unschedulable, taints, node selector and
required affinity, resources, pod count), the one with the most room left, as kube-scheduler's
default LeastAllocated scoring prefers. The check is that of one scheduling pass over a snapshot:
it does not preempt, wait for a scale-up or foresee other pods; a pod with no node gets
kube-scheduler's FailedScheduling message, and the resources the pods need more of than all
schedulable nodes have free are named as short.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pydantic import ValidationError

from rayop.api.raycluster import RayCluster
from rayop.apimachinery.pod_requests import pod_requests
from rayop.apimachinery.quantity import Quantity
from rayop.apimachinery.scheduling import NodeView, fit_message, node_problems
from rayop.controllers.batchscheduler.gang_size import group_desired_replicas, worker_groups
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.pods import build_head_pod, build_worker_pod
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.errors import ApiError
from rayop.kube.resources import NODES, PODS
from rayop.preview.first_pass import FirstPasses
from rayop.preview.recording_client import Write
from rayop.preview.verdicts import Verdict, writes_of
from rayop.runtime.reconcile import Request

__all__ = ["ROOM_VERDICTS", "Placement", "Room", "new_pods", "place", "read_room", "with_room"]

Obj = dict[str, Any]
_FINISHED = ("Succeeded", "Failed")


@dataclass
class Room:
    """The nodes as kube-scheduler sees them now, and where each bound pod is."""

    nodes: list[NodeView]
    bound: dict[tuple[str, str], tuple[str, dict[str, Fraction]]] = field(default_factory=dict)
    """``(namespace, name) -> (node, requests)`` of each unfinished bound pod."""

    @classmethod
    def of(cls, nodes: Iterable[Obj], pods: Iterable[Obj]) -> Room:
        """Builds the room from Node and Pod objects."""
        views = {view.name: view for view in map(NodeView.of, nodes)}
        room = cls(list(views.values()))
        for pod in pods:
            node = views.get(str((pod.get("spec") or {}).get("nodeName") or ""))
            if node is None or (pod.get("status") or {}).get("phase") in _FINISHED:
                continue
            requests = pod_requests(pod)
            _take(node, requests)
            meta = pod.get("metadata") or {}
            room.bound[(str(meta.get("namespace") or ""), str(meta.get("name")))] = (
                node.name,
                requests,
            )
        return room

    def free(self, namespace: str, name: str) -> None:
        """Gives the room of a pod that is deleted back to its node (nothing if not bound)."""
        found = self.bound.pop((namespace, name), None)
        if found is None:
            return
        node_name, requests = found
        for node in self.nodes:
            if node.name == node_name:
                node.pods -= 1
                for resource, amount in requests.items():
                    node.requested[resource] = node.requested.get(resource, Fraction(0)) - amount


async def read_room(client: KubeClient) -> Room:
    """Lists the nodes and every pod; blocks on the API.

    Raises:
        ApiError: a list failed (e.g. Forbidden: no read access to nodes or pods).
    """
    nodes = (await client.list(NODES)).get("items") or []
    pods = (await client.list(PODS)).get("items") or []
    return Room.of(nodes, pods)


@dataclass
class Placement:
    """Where an object's new pods would go.

    Attributes:
        pods: How many pods were placed or tried.
        placed: ``pod label -> node`` of those that fit.
        unplaced: ``pod label -> FailedScheduling message`` of those that do not.
        short: Resources the pods need more of than all schedulable nodes have free, as
            ``name: needed, free``.
    """

    pods: int = 0
    placed: dict[str, str] = field(default_factory=dict)
    unplaced: dict[str, str] = field(default_factory=dict)
    short: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        """Tells whether every pod found a node."""
        return not self.unplaced

    def lines(self) -> list[str]:
        """The placement in words, for the verdict's effects."""
        if self.fits:
            nodes = ", ".join(sorted(set(self.placed.values())))
            return [f"room: the {self.pods} new pods fit on the nodes' free capacity ({nodes})"]
        out = [f"room: {len(self.unplaced)} of {self.pods} new pods find no node"]
        out += [f"room: pod {pod}: {message}" for pod, message in self.unplaced.items()]
        if self.short:
            out.append(f"room: short of {'; '.join(self.short)}")
        return out

    def as_dict(self) -> dict[str, Any]:
        """The placement as plain data (``--output json``)."""
        return {
            "fits": self.fits,
            "pods": self.pods,
            "placed": self.placed,
            "unplaced": self.unplaced,
            "short": self.short,
        }


def new_pods(writes: Sequence[Write], options: OperatorOptions) -> list[tuple[str, Obj]]:
    """Returns ``(label, pod)`` of each pod the writes would create, head first for a cluster.

    Raises:
        pydantic.ValidationError: a new RayCluster's spec does not parse.
    """
    pods: list[tuple[str, Obj]] = []
    for write in writes:
        if write.verb != "create" or not isinstance(write.body, Mapping):
            continue
        if write.kind == "Pod":
            pods.append((_label(write.body, write.namespace), dict(write.body)))
        elif write.kind == "RayCluster":
            pods += _cluster_pods(write.body, write.namespace, options)
    return _numbered(pods)


def _numbered(pods: list[tuple[str, Obj]]) -> list[tuple[str, Obj]]:
    """Numbers the pods that share a label (``generateName`` ones): ``label (i/n)``."""
    counts: dict[str, int] = {}
    for label, _ in pods:
        counts[label] = counts.get(label, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for label, pod in pods:
        if counts[label] > 1:
            seen[label] = seen.get(label, 0) + 1
            label = f"{label} ({seen[label]}/{counts[label]})"
        out.append((label, pod))
    return out


def _cluster_pods(
    body: Mapping[str, Any], namespace: str, options: OperatorOptions
) -> list[tuple[str, Obj]]:
    wire: Obj = {**body, "metadata": {**(body.get("metadata") or {}), "namespace": namespace}}
    rc = RayCluster.model_validate(wire)
    head = build_head_pod(rc, options=options, spec_hash="")
    out = [(_label(head, namespace), head)]
    spec = wire.get("spec") or {}
    for group_wire, group in zip(
        worker_groups(spec), rc.spec.worker_group_specs or (), strict=False
    ):
        count = group_desired_replicas(group_wire)
        if count:
            pod = build_worker_pod(rc, group, options=options)
            out += [(_label(pod, namespace), pod)] * count
    return out


def _label(pod: Mapping[str, Any], namespace: str) -> str:
    meta = pod.get("metadata") or {}
    name = meta.get("name") or f"{meta.get('generateName', '')}*"
    return f"{namespace}/{name}"


def place(
    room: Room, deleted: Iterable[tuple[str, str]], pods: Sequence[tuple[str, Obj]]
) -> Placement:
    """Frees the ``deleted`` pods' room, then places ``pods`` in order; the room keeps them."""
    for namespace, name in deleted:
        room.free(namespace, name)
    free = _total_free(room.nodes)
    out = Placement(pods=len(pods))
    needed: dict[str, Fraction] = {"pods": Fraction(len(pods))}
    for label, pod in pods:
        requests = pod_requests(pod)
        for resource, amount in requests.items():
            needed[resource] = needed.get(resource, Fraction(0)) + amount
        problems = {node.name: node_problems(pod, node, requests) for node in room.nodes}
        fitting = [node for node in room.nodes if not problems[node.name][0]]
        if not fitting:
            out.unplaced[label] = fit_message(problems)
            continue
        best = max(fitting, key=_room_left)
        _take(best, requests)
        out.placed[label] = best.name
    if out.unplaced:
        out.short = [
            f"{resource}: needed {_q(needed[resource])}, free {_q(free.get(resource, Fraction(0)))}"
            for resource in sorted(needed)
            if needed[resource] > free.get(resource, Fraction(0))
        ]
    return out


def _total_free(nodes: Sequence[NodeView]) -> dict[str, Fraction]:
    """What the schedulable nodes have free in all, by resource (``pods``: how many more)."""
    total: dict[str, Fraction] = {}
    for node in nodes:
        if node.unschedulable:
            continue
        for resource, amount in node.allocatable.items():
            used = node.pods if resource == "pods" else node.requested.get(resource, Fraction(0))
            total[resource] = total.get(resource, Fraction(0)) + max(Fraction(0), amount - used)
    return total


def _take(node: NodeView, requests: Mapping[str, Fraction]) -> None:
    node.pods += 1
    for resource, amount in requests.items():
        node.requested[resource] = node.requested.get(resource, Fraction(0)) + amount


def _room_left(node: NodeView) -> float:
    """kube-scheduler's LeastAllocated score: the mean free share of cpu and memory."""
    shares = []
    for resource in ("cpu", "memory"):
        allocatable = node.allocatable.get(resource, Fraction(0))
        if allocatable > 0:
            shares.append(float((allocatable - node.requested.get(resource, 0)) / allocatable))
    return sum(shares) / len(shares) if shares else 0.0


def _q(amount: Fraction) -> str:
    return Quantity(amount).canonical()


ROOM_VERDICTS = ("new RayCluster", "recreate pods", "create pods")
"""The verdicts whose pass creates pods: the objects the check looks at."""


async def with_room(
    config: KubeConfig, results: list[Verdict], passes: FirstPasses, options: OperatorOptions
) -> tuple[list[Verdict], list[str]]:
    """Adds to each verdict that creates pods where they would go; returns the verdicts and a
    line per problem (the nodes or pods not readable, a cluster spec that does not parse).

    Objects are placed in order on one room, so a file's objects share the nodes. Blocks on the
    API (two LISTs, only when some verdict creates pods).
    """
    if not any(v.verdict in ROOM_VERDICTS for v in results):
        return results, []
    try:
        async with KubeClient(config) as client:
            room = await read_room(client)
    except ApiError as exc:
        return results, [f"room not checked: cannot list the nodes and pods: {exc}"]
    out: list[Verdict] = []
    problems: list[str] = []
    for verdict in results:
        if verdict.verdict not in ROOM_VERDICTS:
            out.append(verdict)
            continue
        writes = writes_of(passes, verdict.kind, Request(verdict.namespace, verdict.name))
        try:
            pods = new_pods(writes, options)
        except ValidationError as exc:
            where = f"{verdict.kind} {verdict.namespace}/{verdict.name}"
            problems.append(f"{where}: room not checked: its new RayCluster does not parse: {exc}")
            out.append(verdict)
            continue
        deleted = [(w.namespace, w.name) for w in writes if w.kind == "Pod" and w.verb == "delete"]
        placement = place(room, deleted, pods)
        effects = [*verdict.effects, *placement.lines()]
        out.append(dataclasses.replace(verdict, effects=effects, room=placement.as_dict()))
    return out, problems
