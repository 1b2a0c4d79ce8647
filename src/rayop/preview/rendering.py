"""``rayop render``'s run: the operator creates a file's objects' children on an API server of
its own, and every create it sends is kept.

:func:`render_objects` runs the operator (:func:`~rayop.controllers.assembly.build.build_operator`,
the one assembly path, with the settings the command line built) on a
:class:`~rayop.preview.recording_client.RecordingClient`, creates the file's objects as a user
would, waits until each has settled (a RayCluster ready or suspended, a RayJob submitted or
finished, a RayService serving) and no create has been sent for :data:`QUIET_SECONDS`, and
returns what the operator created, in order: Services, Pods, Jobs, PodGroups, Gateways and
routes, RayClusters of a RayJob or RayService, and so on (never Events or Leases). The server is
meant to be a throwaway one (``rayop render`` starts the embedded control plane); its uids are
dropped from the owner references, as they mean nothing elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from rayop.api.rayjob import JobDeploymentStatus
from rayop.controllers.assembly.build import build_operator
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.errors import AlreadyExists, ApiError
from rayop.kube.resources import NAMESPACES
from rayop.preview.manifests import CONTEXT_KINDS, RAY_KINDS, BadInput, Manifests, describe
from rayop.preview.recording_client import RecordingClient
from rayop.runtime.metrics import OperatorMetrics

__all__ = ["NOT_RENDERED", "QUIET_SECONDS", "Rendered", "render_objects", "settled"]

Obj = dict[str, Any]

QUIET_SECONDS: Final = 1.0
"""How long no create may be sent before the children are taken as complete."""
NOT_RENDERED: Final = frozenset({"Event", "Lease"})
"""Kinds the operator creates that are not the objects' children."""
_POLL_SECONDS = 0.1
_JOB_SETTLED = frozenset(
    {
        JobDeploymentStatus.RUNNING,
        JobDeploymentStatus.COMPLETE,
        JobDeploymentStatus.FAILED,
        JobDeploymentStatus.SUSPENDED,
        JobDeploymentStatus.WAITING,
        JobDeploymentStatus.VALIDATION_FAILED,
    }
)


@dataclass(frozen=True, slots=True)
class Rendered:
    """What the operator created, and the objects that had not settled when time ran out.

    Attributes:
        objects: Each create's body, in the order they were sent.
        unsettled: ``Kind/namespace/name: state`` of each object that did not settle.
    """

    objects: list[Obj]
    unsettled: list[str]


def settled(obj: Mapping[str, Any]) -> bool:
    """Tells whether the operator has created all a ray.io object's children it will create
    without further change: a RayCluster ready (or suspended), a RayJob whose job was submitted
    (or that finished, was suspended or is waiting), a RayService serving."""
    status = obj.get("status") or {}
    kind = obj.get("kind")
    if kind == "RayCluster":
        return status.get("state") in ("ready", "suspended")
    if kind == "RayJob":
        return status.get("jobDeploymentStatus") in _JOB_SETTLED
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    return conditions.get("Ready") == "True" or status.get("serviceStatus") == "Running"


def _state(obj: Mapping[str, Any]) -> str:
    status = obj.get("status") or {}
    for key in ("state", "jobDeploymentStatus", "serviceStatus"):
        if status.get(key):
            return f"{key} {status[key]}"
    return "no status yet"


def _child(body: Obj) -> Obj:
    child = copy.deepcopy(body)
    for ref in (child.get("metadata") or {}).get("ownerReferences") or []:
        ref.pop("uid", None)
    return child


async def render_objects(
    config: KubeConfig,
    settings: OperatorSettings,
    manifests: Manifests,
    *,
    timeout: float,
) -> Rendered:
    """Runs the operator against ``config``'s server, creates ``manifests`` there and returns
    what the operator created once every object settled (or ``timeout`` seconds passed).

    The operator watches every namespace, elects no leader and serves no endpoints.

    Raises:
        BadInput: the server refused an object (its schema), naming it and why.
    """
    settings = dataclasses.replace(
        settings,
        watch_namespaces=(),
        enable_leader_election=False,
        metrics_addr="0",
        health_probe_bind_address="0",
    )
    metrics = OperatorMetrics()
    client = RecordingClient(config, send=True, qps=-1)
    async with client, KubeClient(config, qps=-1) as user:
        manager = build_operator(client, settings, metrics).manager
        running = asyncio.create_task(manager.run(), name="render operator")
        try:
            await manager.wait_ready()
            created = await _create(user, manifests)
            unsettled = await _wait(user, client, created, timeout)
        finally:
            manager.request_stop()
            await asyncio.wait([running])
        if not running.cancelled() and (failure := running.exception()) is not None:
            raise failure
    objects = [
        _child(w.body)
        for w in client.writes
        if w.verb == "create" and w.kind not in NOT_RENDERED and w.resource is not None
    ]
    return Rendered(objects, unsettled)


async def _create(user: KubeClient, manifests: Manifests) -> list[Obj]:
    for ns in manifests.namespaces:
        with contextlib.suppress(AlreadyExists):
            await user.create(NAMESPACES, {"metadata": {"name": ns}})
    created = []
    for obj in manifests.context + manifests.ray:
        resource = {**RAY_KINDS, **CONTEXT_KINDS}[obj["kind"]]
        try:
            stored = await user.create(resource, obj)
        except ApiError as exc:
            raise BadInput([f"{describe(obj)}: refused by the API server: {exc}"]) from exc
        if obj["kind"] in RAY_KINDS:
            created.append(stored)
    return created


async def _wait(
    user: KubeClient, client: RecordingClient, objects: list[Obj], timeout: float
) -> list[str]:
    """Waits until every object settled and no create was sent for :data:`QUIET_SECONDS`;
    returns the objects still unsettled at ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        current = [
            await user.get(
                RAY_KINDS[o["kind"]], o["metadata"]["name"], namespace=o["metadata"]["namespace"]
            )
            for o in objects
        ]
        waiting = [o for o in current if not settled(o)]
        quiet = time.monotonic() - _last_create(client) >= QUIET_SECONDS
        if not waiting and quiet:
            return []
        if time.monotonic() >= deadline:
            return [f"{describe(o)}: {_state(o)}" for o in waiting]
        await asyncio.sleep(_POLL_SECONDS)


def _last_create(client: RecordingClient) -> float:
    return max((w.at for w in client.writes if w.verb == "create"), default=0.0)
