"""The RayService status: application statuses, endpoints, conditions, and writing it.

What the pass learned is folded into ``ctx.status`` by :func:`finish_status` (KubeRay v1.7.0:
``calculateStatus`` and ``calculateConditions`` in
``ray-operator/controllers/ray/rayservice_controller.go``; the fields are in
``ray-operator/apis/ray/v1/rayservice_types.go``):

* **promotion**: once the serve service selects the pending cluster, it becomes the active one
  and the pending entry is cleared (an incremental upgrade promotes, counts endpoints and
  records traffic as :mod:`.incremental.status_fold` says);
* each entry gets ``applicationStatuses`` (when the dashboard was read this pass; an
  application named "" is stored as ``default``) and ``rayClusterStatus``;
* ``numServeEndpoints`` counts ready pods (unique ``targetRef.uid``) across the EndpointSlices
  of the serve service;
* ``Ready`` is True (``NonZeroServeEndpoints``) with endpoints, False (``ZeroServeEndpoints``)
  when it was True before, else ``Initializing``; ``serviceStatus`` mirrors it;
  ``UpgradeInProgress`` is True while both clusters exist.

The status is written only when something other than ``lastUpdateTime`` and
``rayClusterStatus`` changed, as KubeRay does. Every write is recorded in the own-writes tracker,
so the next pass waits for the cache to show it (see :func:`~rayop.controllers.rayservice.opening_steps.
wait_for_own_writes`) instead of writing over a stale copy and failing with 409.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from rayop.api.common import format_time
from rayop.api.conditions import find_condition, set_condition
from rayop.api.rayservice import RayServiceConditionReason as Reason
from rayop.api.rayservice import RayServiceConditionType as CondType
from rayop.api.rayservice import ServiceStatus
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.dashboard.models import ServeApplicationDetails
from rayop.controllers.rayservice.context import PassContext
from rayop.controllers.rayservice.incremental.status_fold import fold_incremental
from rayop.controllers.rayservice.initializing_timeout import mark_if_timed_out
from rayop.controllers.rayservice.service_builders import serve_service_name
from rayop.kube.resources import RAY_SERVICES

ACTIVE = "activeServiceStatus"
PENDING = "pendingServiceStatus"
_VOLATILE = ("lastUpdateTime",)


def application_statuses(apps: Mapping[str, ServeApplicationDetails]) -> dict[str, Any]:
    """Returns wire ``applicationStatuses`` for the applications a dashboard reported."""
    result: dict[str, Any] = {}
    for name, app in apps.items():
        entry: dict[str, Any] = {"status": app.status}
        if app.message:
            entry["message"] = app.message
        deployments = {
            dep_name: {k: v for k, v in (("status", d.status), ("message", d.message)) if v}
            for dep_name, d in app.deployments.items()
        }
        if deployments:
            entry["serveDeploymentStatuses"] = deployments
        result[name or "default"] = entry
    return result


def count_ready_endpoints(slices: Iterable[Obj]) -> int:
    """Returns how many distinct pods are ready across EndpointSlices (nil ready means ready)."""
    ready: set[str] = set()
    for endpoint_slice in slices:
        for endpoint in endpoint_slice.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is False:
                continue
            ref = endpoint.get("targetRef") or {}
            uid = ref.get("uid") or ref.get("name") or ",".join(endpoint.get("addresses") or [])
            ready.add(str(uid))
    return len(ready)


def promote(status: dict[str, Any], serving_cluster: str) -> bool:
    """Makes the pending cluster active when the services select it; returns whether it did."""
    pending = status.get(PENDING) or {}
    if not serving_cluster or pending.get("rayClusterName") != serving_cluster:
        return False
    status[ACTIVE] = pending
    status[PENDING] = {}
    return True


def set_conditions(status: dict[str, Any], *, generation: int, now: str) -> None:
    """Sets ``Ready``, ``serviceStatus`` and ``UpgradeInProgress`` from the rest of ``status``
    as KubeRay's ``calculateConditions`` does.

    A RayService with no conditions starts with both False/Initializing. ``Ready`` turns True
    with ready endpoints and False/ZeroServeEndpoints when they drop to none; otherwise it is
    left as it is (Initializing, InitializingTimeout, ValidationFailed, ...).
    ``UpgradeInProgress`` with no active cluster keeps Initializing or InitializingTimeout.
    """
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    if not conditions:
        initializing = ("False", Reason.INITIALIZING, "RayService is initializing")
        _set(conditions, CondType.READY, initializing, generation, now)
        _set(conditions, CondType.UPGRADE_IN_PROGRESS, initializing, generation, now)
    ready = find_condition(conditions, CondType.READY)
    if int(status.get("numServeEndpoints") or 0) > 0:
        new = (
            "True",
            Reason.NON_ZERO_SERVE_ENDPOINTS,
            "Number of serve endpoints is greater than 0",
        )
        _set(conditions, CondType.READY, new, generation, now)
    elif ready is not None and ready.get("status") == "True":
        new = ("False", Reason.ZERO_SERVE_ENDPOINTS, "Number of serve endpoints dropped to 0")
        _set(conditions, CondType.READY, new, generation, now)
    ready = find_condition(conditions, CondType.READY)
    running = ready is not None and ready.get("status") == "True"
    status["serviceStatus"] = ServiceStatus.RUNNING if running else ServiceStatus.NOT_RUNNING
    active = (status.get(ACTIVE) or {}).get("rayClusterName")
    pending = (status.get(PENDING) or {}).get("rayClusterName")
    upgrade: tuple[str, str, str] | None
    if active and pending:
        upgrade = (
            "True",
            Reason.BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
            "Both active and pending Ray clusters exist",
        )
    elif active:
        upgrade = (
            "False",
            Reason.NO_PENDING_CLUSTER,
            "Active Ray cluster exists and no pending Ray cluster",
        )
    else:
        current = find_condition(conditions, CondType.UPGRADE_IN_PROGRESS)
        keep = (Reason.INITIALIZING, Reason.INITIALIZING_TIMEOUT)
        upgrade = (
            None
            if current is not None and current.get("reason") in keep
            else (
                "Unknown",
                Reason.NO_ACTIVE_CLUSTER,
                "No active Ray cluster exists, and the RayService is not initializing. Please "
                "open a GitHub issue in the KubeRay repository.",
            )
        )
    if upgrade is not None:
        _set(conditions, CondType.UPGRADE_IN_PROGRESS, upgrade, generation, now)


def _set(
    conditions: list[dict[str, Any]],
    condition_type: str,
    value: tuple[str, str, str],
    generation: int,
    now: str,
) -> None:
    status, reason, message = value
    new = {
        "type": condition_type,
        "status": status,
        "reason": str(reason),
        "message": message,
        "observedGeneration": generation,
    }
    set_condition(conditions, new, now=now)


def mark(ctx: PassContext, condition_type: str, value: tuple[str, str, str]) -> None:
    """Sets one condition of ``ctx.status`` to (status, reason, message) at the pass's
    generation and time."""
    conditions = ctx.status.setdefault("conditions", [])
    _set(conditions, condition_type, value, ctx.generation, format_time(ctx.now))


def set_ready_false(ctx: PassContext, reason: str, message: str) -> None:
    """Sets ``Ready=False`` with ``reason`` (validation, suspend) and clears ``serviceStatus``."""
    mark(ctx, CondType.READY, ("False", reason, message))
    ctx.status["serviceStatus"] = ServiceStatus.NOT_RUNNING


def comparable(status: Obj) -> dict[str, Any]:
    """Returns ``status`` without the fields whose change alone does not warrant a write."""
    result = {k: copy.deepcopy(v) for k, v in status.items() if k not in _VOLATILE}
    for key in (ACTIVE, PENDING):
        entry = result.get(key)
        if isinstance(entry, dict):
            entry.pop("rayClusterStatus", None)
            entry.pop("lastTrafficMigratedTime", None)
        if not entry:
            result.pop(key, None)
    for condition in result.get("conditions") or []:
        condition.pop("lastTransitionTime", None)
    return result


def status_changed(old: Obj, new: Obj) -> bool:
    """Tells whether ``new`` differs from ``old`` in anything worth writing."""
    return comparable(old) != comparable(new)


async def write_status(ctx: PassContext) -> None:
    """Writes ``ctx.status`` (with a new ``lastUpdateTime``); blocks on the API call.

    The written object replaces ``ctx.cached``, so later writes in the pass use its
    resourceVersion, and is recorded in ``ctx.deps.own_writes``.

    Raises:
        rayop.kube.errors.Conflict: the RayService changed since it was read.
    """
    ctx.status["lastUpdateTime"] = format_time(ctx.now)
    body = {**copy.deepcopy(dict(ctx.cached)), "status": copy.deepcopy(ctx.status)}
    written = await ctx.deps.client.update_status(RAY_SERVICES, body)
    ctx.deps.own_writes.record(written)
    ctx.cached = written
    ctx.status = copy.deepcopy(dict(written.get("status") or {}))


async def write_status_if_changed(ctx: PassContext) -> None:
    """Writes ``ctx.status`` when it differs from the status read (see :func:`status_changed`).

    Raises:
        rayop.kube.errors.Conflict: the RayService changed since it was read.
    """
    if status_changed(ctx.cached.get("status") or {}, ctx.status):
        await write_status(ctx)


async def finish_status(ctx: PassContext) -> None:
    """Folds the pass into ``ctx.status`` and writes it when it changed (see the module doc).

    Raises:
        rayop.kube.errors.ApiError: the status write failed.
    """
    status = ctx.status
    if ctx.routes is not None:
        serve_services = fold_incremental(ctx)
    else:
        promote(status, ctx.serving_cluster)
        serve_services = [serve_service_name(ctx.service)]
    for key in (ACTIVE, PENDING):
        entry = status.get(key) or {}
        cluster_name = entry.get("rayClusterName")
        if not cluster_name:
            status[key] = {}
            continue
        if cluster_name in ctx.apps:
            entry["applicationStatuses"] = ctx.apps[cluster_name]
        cluster = ctx.cluster(cluster_name)
        if cluster is not None and cluster.get("status"):
            entry["rayClusterStatus"] = copy.deepcopy(dict(cluster["status"]))
        status[key] = entry
    status["numServeEndpoints"] = await serve_endpoints(ctx, serve_services)
    ready = find_condition(status.get("conditions") or [], CondType.READY)
    if status["numServeEndpoints"] == 0 and (ready is None or ready.get("status") != "True"):
        mark_if_timed_out(ctx)
    set_conditions(status, generation=ctx.generation, now=format_time(ctx.now))
    status["observedGeneration"] = ctx.generation
    await write_status_if_changed(ctx)


async def serve_endpoints(ctx: PassContext, service_names: Iterable[str]) -> int:
    """Returns the ready pods behind the serve Services, from the EndpointSlice cache (made
    and synced on the first call)."""
    total = 0
    names = list(service_names)
    if not names:
        return 0
    cache = await ctx.deps.endpoint_slices.reader()
    for name in names:
        selector = {"kubernetes.io/service-name": name}
        slices = cache.list(ctx.namespace, label_selector=selector)
        total += count_ready_endpoints(slices)
    return total
