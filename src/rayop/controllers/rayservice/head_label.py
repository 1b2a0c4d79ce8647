"""Keeps the ``ray.io/serve`` label of the active and pending clusters' head pods current.

The serve service selects pods labelled ``ray.io/serve=true``. Worker pods are created with it; the
head pod gets ``true`` only while its Serve proxy answers ``GET /-/healthz`` with 200 (KubeRay
v1.7.0: ``ray-operator/controllers/ray/utils/httpproxy_httpclient.go`` and
``updateHeadPodServeLabel`` in ``ray-operator/controllers/ray/rayservice_controller.go``), and
always ``false`` with ``spec.excludeHeadPodFromServeSvc``. Only a changed value is written (a merge
patch of the pod's labels).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from rayop.controllers.dashboard.client import DashboardError
from rayop.controllers.kit.recorded_write import write_with_events
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.context import PassContext
from rayop.controllers.rayservice.head_pods import dashboard, head_pod, is_pod_ready
from rayop.kube.resources import PODS
from rayop.runtime.steps import Stop

log = logging.getLogger(__name__)


async def update_head_serve_labels(ctx: PassContext) -> Stop | None:
    """Sets ``ray.io/serve`` on each head pod from its Serve health check.

    Blocks on the health checks and the label patches; never ends the pass.

    Raises:
        rayop.kube.errors.ApiError: a label patch failed.
    """
    exclude = bool(ctx.spec.exclude_head_pod_from_serve_svc)
    for cluster_name in (ctx.active_name, ctx.pending_name):
        cluster = ctx.cluster(cluster_name)
        pod = head_pod(ctx, cluster_name) if cluster is not None else None
        if cluster is None or pod is None:
            continue
        healthy = False
        if not exclude and is_pod_ready(pod):
            healthy = await _serve_healthy(ctx, cluster)
        want = "true" if healthy else "false"
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if labels.get(settings.SERVE_LABEL) == want:
            continue
        body = {"metadata": {"labels": {settings.SERVE_LABEL: want}}}
        pod_name = pod["metadata"]["name"]
        where = f"{ctx.namespace}/{pod_name}"
        label = f'the serve label to "{want}" for the Head Pod {where}'
        await write_with_events(
            ctx,
            ctx.deps.client.patch(PODS, pod_name, body, namespace=ctx.namespace),
            action=settings.ACTION_UPDATE,
            done=(settings.UPDATED_HEAD_POD_SERVE_LABEL, f"Updated {label}"),
            failed=(settings.FAILED_TO_UPDATE_HEAD_POD_SERVE_LABEL, f"Failed to update {label}: "),
        )
        log.info("RayService %s: head pod %s ray.io/serve=%s", ctx.request, pod_name, want)
    return None


async def _serve_healthy(ctx: PassContext, cluster: Mapping[str, Any]) -> bool:
    try:
        async with dashboard(ctx, cluster, "serve") as client:
            await client.check_serve_health()
    except DashboardError:
        return False
    return True
