"""Retires the RayClusters of a RayService that are neither active nor pending.

Each such cluster is deleted ``spec.rayClusterDeletionDelaySeconds`` (60 s by default) after it was
first seen retired (KubeRay v1.7.0: ``cleanUpRayClusterInstance`` in
``ray-operator/controllers/ray/rayservice_controller.go``). Unlike KubeRay, which keeps the schedule
in memory, the due time is stored on the cluster itself, in the annotation
``ray.io/rayservice-deletion-timestamp`` (RFC 3339 MicroTime, UTC, from the injected clock's wall
time), so an operator restart neither forgets a deletion nor restarts its delay. A cluster that
becomes active or pending again loses the annotation. Deletion uses Background propagation; a
RayService being deleted (or suspended) has all its clusters deleted at once by
:func:`delete_owned_clusters`.

One guard KubeRay does not have: a retired cluster that the RayService's head or serve Service
still selects (in the services cache) is not deleted until the Service has moved off it; its
deletion is looked at again after :data:`SELECTED_RECHECK_SECONDS`. In a normal pass the
Services move to the new cluster before the old one retires, so this never waits; it matters
when an operator was stopped between moving a Service and recording the move in status (a
status write lost, a process killed), where deleting would leave the Service selecting nothing.
The chaos campaign (``benchmarks/chaos.py``) found that case.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from rayop.api.common import format_time, parse_time
from rayop.api.rayservice import DEFAULT_RAY_CLUSTER_DELETION_DELAY_SECONDS, RayServiceSpec
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.kit.recorded_write import write_with_events
from rayop.controllers.rayservice import service_builders, settings
from rayop.controllers.rayservice.context import PassContext
from rayop.kube.clock import micro_time
from rayop.kube.errors import Conflict, NotFound
from rayop.kube.resources import RAY_CLUSTERS
from rayop.runtime.informers.indexer import controller_owner
from rayop.runtime.steps import Stop

log = logging.getLogger(__name__)

SELECTED_RECHECK_SECONDS = 2.0
"""How soon a due deletion held back by a Service that still selects the cluster is looked at
again."""


def deletion_delay(spec: RayServiceSpec) -> timedelta:
    """Returns how long a retired cluster is kept: the spec's delay, 60 s when unset."""
    seconds = spec.ray_cluster_deletion_delay_seconds
    if seconds is None:
        seconds = DEFAULT_RAY_CLUSTER_DELETION_DELAY_SECONDS
    return timedelta(seconds=max(0, seconds))


def scheduled_deletion(cluster: Obj) -> datetime | None:
    """Returns the cluster's due time from its annotation, or None (absent or unparsable)."""
    annotations = (cluster.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(settings.DELETION_TIMESTAMP_ANNOTATION)
    if not text:
        return None
    try:
        return parse_time(str(text))
    except ValueError:
        return None


def _annotate(value: str | None) -> dict[str, Any]:
    return {"metadata": {"annotations": {settings.DELETION_TIMESTAMP_ANNOTATION: value}}}


async def cleanup_retired_clusters(ctx: PassContext) -> Stop | None:
    """Schedules, unschedules and deletes retired clusters; notes when the next one is due.

    Blocks on the patches and deletes; never ends the pass.

    Raises:
        rayop.kube.errors.ApiError: a patch or delete failed.
    """
    keep = {ctx.active_name, ctx.pending_name} - {""}
    now = ctx.deps.clock.wall()
    for cluster in ctx.owned_clusters():
        meta = cluster["metadata"]
        name = meta["name"]
        due = scheduled_deletion(cluster)
        if name in keep:
            if due is not None:
                await _patch(ctx, name, _annotate(None))
            continue
        if meta.get("deletionTimestamp"):
            continue
        if due is None:
            due = now + deletion_delay(ctx.spec)
            patched = await _patch(ctx, name, _annotate(micro_time(due)))
            if patched is None or not controlled_by_service(ctx, patched):
                continue  # gone, or taken over since the cache's copy: not this one's to delete
            cluster = patched  # a delete in this pass names the version just written
            log.info(
                "RayService %s: cluster %s to be deleted at %s", ctx.request, name, format_time(due)
            )
        if now >= due and name in _selected_by_services(ctx):
            log.info(
                "RayService %s: cluster %s is due but a Service still selects it", ctx.request, name
            )
            due = now + timedelta(seconds=SELECTED_RECHECK_SECONDS)
        elif now >= due:
            await delete_cluster(ctx, cluster)
            continue
        wait = (due - now).total_seconds()
        ctx.next_deletion_in = (
            wait if ctx.next_deletion_in is None else min(wait, ctx.next_deletion_in)
        )
    return None


def controlled_by_service(ctx: PassContext, obj: Obj) -> bool:
    """Tells whether this RayService is ``obj``'s controlling owner."""
    uid = ctx.service.metadata.get("uid")
    return bool(uid) and (controller_owner(obj) or {}).get("uid") == uid


def _selected_by_services(ctx: PassContext) -> set[str]:
    """Returns the clusters the RayService's head and serve Services select (in the cache)."""
    names = (
        service_builders.head_service_name(ctx.service),
        service_builders.serve_service_name(ctx.service),
    )
    cached = (ctx.deps.services.get(ctx.namespace, name) for name in names)
    return {service_builders.selected_cluster(service) for service in cached} - {""}


async def _patch(ctx: PassContext, name: str, body: dict[str, Any]) -> Obj | None:
    """Patches one cluster; returns the server's answer (None: the cluster is gone)."""
    try:
        return await ctx.deps.client.patch(RAY_CLUSTERS, name, body, namespace=ctx.namespace)
    except NotFound:
        return None


async def delete_owned_clusters(ctx: PassContext) -> bool:
    """Deletes every cluster the RayService created (not already being deleted); blocks on the
    deletes and returns whether any cluster was still cached.

    Raises:
        rayop.kube.errors.ApiError: a delete failed.
    """
    clusters = ctx.owned_clusters()
    for cluster in clusters:
        if not cluster["metadata"].get("deletionTimestamp"):
            await delete_cluster(ctx, cluster)
    return bool(clusters)


async def delete_cluster(ctx: PassContext, cluster: Obj) -> None:
    """Deletes one RayCluster (the cache's copy of one this RayService owns) with Background
    propagation (gone already is fine). The cached uid and resourceVersion are preconditions: a
    cluster that changed since the cache's copy (a user may have taken it over by removing its
    ownerReference) gets a 409 and is not deleted; the retry decides from a newer copy.

    Raises:
        rayop.kube.errors.Conflict: the cluster changed since the cache's copy (no event).
        rayop.kube.errors.ApiError: the delete failed otherwise (a Warning event says so).
    """
    meta = cluster["metadata"]
    name = str(meta["name"])
    preconditions = {k: str(meta[k]) for k in ("uid", "resourceVersion") if meta.get(k)}
    delete = ctx.deps.client.delete(
        RAY_CLUSTERS, name, namespace=ctx.namespace, propagation_policy="Background",
        preconditions=preconditions or None,
    )  # fmt: skip
    try:
        await write_with_events(
            ctx,
            delete,
            done=(settings.DELETED_RAY_CLUSTER, f"Deleted RayCluster {ctx.namespace}/{name}"),
            failed=(settings.FAILED_TO_DELETE_RAY_CLUSTER, f"Failed to delete {name}: "),
            passing=(NotFound, Conflict),
        )
    except NotFound:
        return
    log.info("RayService %s: deleted cluster %s", ctx.request, name)
