"""Retires the RayClusters of a RayService that are neither active nor pending.

Each such cluster is deleted ``spec.rayClusterDeletionDelaySeconds`` (60 s by default) after it
was first seen retired, or at once when the RayService is being deleted (kuberay-v1.md §6
step 3). Unlike KubeRay, which keeps the schedule in memory, the due time is stored on the
cluster itself, in the annotation ``ray.io/rayservice-deletion-timestamp`` (RFC 3339, UTC), so
an operator restart neither forgets a deletion nor restarts its delay. A cluster that becomes
active or pending again loses the annotation. Deletion uses Background propagation.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from rayop.api.rayservice import DEFAULT_RAY_CLUSTER_DELETION_DELAY_SECONDS
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.context import ServiceContext, parse_rfc3339, rfc3339
from rayop.kube.errors import NotFound
from rayop.kube.resources import RAY_CLUSTERS
from rayop.runtime.reconcile import Result

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]


def deletion_delay(rayservice: Obj) -> float:
    """Returns ``spec.rayClusterDeletionDelaySeconds``, 60 when unset (negative counts as 0)."""
    value = (rayservice.get("spec") or {}).get("rayClusterDeletionDelaySeconds")
    if value is None:
        return float(DEFAULT_RAY_CLUSTER_DELETION_DELAY_SECONDS)
    return max(0.0, float(value))


def scheduled_deletion(cluster: Obj) -> float | None:
    """Returns the cluster's due time (epoch seconds) from its annotation, or None."""
    annotations = (cluster.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(settings.DELETION_TIMESTAMP_ANNOTATION)
    return parse_rfc3339(str(text)) if text else None


def _annotate(value: str | None) -> dict[str, Any]:
    return {"metadata": {"annotations": {settings.DELETION_TIMESTAMP_ANNOTATION: value}}}


async def cleanup_retired_clusters(ctx: ServiceContext) -> Result | None:
    """Schedules, unschedules and deletes retired clusters; notes when the next one is due.

    Raises:
        rayop.kube.errors.ApiError: a patch or delete failed.
    """
    keep = {ctx.active_name, ctx.pending_name} - {""}
    deleting = bool(ctx.cached["metadata"].get("deletionTimestamp"))
    now = ctx.deps.wall.now()
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
        if due is None and not deleting:
            due = now + deletion_delay(ctx.cached)
            await _patch(ctx, name, _annotate(rfc3339(due, fraction=True)))
            log.info(
                "RayService %s: cluster %s to be deleted at %s", ctx.request, name, rfc3339(due)
            )
        if deleting or (due is not None and now >= due):
            await delete_cluster(ctx, name)
            continue
        assert due is not None
        wait = due - now
        ctx.next_deletion_in = (
            wait if ctx.next_deletion_in is None else min(wait, ctx.next_deletion_in)
        )
    return None


async def _patch(ctx: ServiceContext, name: str, body: dict[str, Any]) -> None:
    try:
        await ctx.deps.client.patch(RAY_CLUSTERS, name, body, namespace=ctx.namespace)
    except NotFound:
        return


async def delete_cluster(ctx: ServiceContext, name: str) -> None:
    """Deletes one RayCluster with Background propagation (gone already is fine).

    Raises:
        rayop.kube.errors.ApiError: the delete failed.
    """
    try:
        await ctx.deps.client.delete(
            RAY_CLUSTERS, name, namespace=ctx.namespace, propagation_policy="Background"
        )
    except NotFound:
        return
    except Exception as exc:
        ctx.event(
            "Warning", settings.FAILED_TO_DELETE_RAY_CLUSTER, f"Failed to delete {name}: {exc}"
        )
        raise
    log.info("RayService %s: deleted cluster %s", ctx.request, name)
    ctx.event("Normal", settings.DELETED_RAY_CLUSTER, f"Deleted RayCluster {ctx.namespace}/{name}")
