"""The RayService reconciler: KubeRay v1.7's reconcile as an ordered list of small async steps.

One pass (kuberay-v1.md §6):

1. read the RayService (cache; a live GET when this reconciler wrote it more recently than the
   cache shows, so a stale cache never hides the pending cluster's name); gone -> forget it;
2. gates, each of which may end the pass: managedBy, deletion and finalizer, validation, suspend;
3. cluster steps: choose and record the pending cluster, create it, retire old clusters (after
   the deletion delay, kept in an annotation), label head pods from the Serve health check,
   deploy the serve config, point the Services at the cluster that is ready;
4. fold what was learned into the status (promotion, applications, endpoints, conditions) and
   write it when it changed;
5. requeue after 2 s, or sooner when a retired cluster is due.

A step that raises ends the pass; the controller retries it with backoff. Every step compares
the caches with the spec and acts only on the difference, so any pass can simply be rerun.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from rayop.controllers.common import settings
from rayop.controllers.rayservice import (
    cleanup,
    clusters,
    gates,
    head_label,
    serve_config,
    services,
    suspend,
)
from rayop.controllers.rayservice.context import Obj, RayServiceDeps, ServiceContext
from rayop.controllers.rayservice.status import finish_status
from rayop.kube.errors import NotFound
from rayop.kube.resources import RAY_SERVICES
from rayop.runtime.reconcile import Request, Result

log = logging.getLogger(__name__)

Step = Callable[[ServiceContext], Awaitable[Result | None]]
"""A step of the pass; a Result ends the pass with it, None goes on."""

STEPS: tuple[Step, ...] = (
    gates.check_managed_by,
    gates.handle_deletion,
    gates.validate,
    suspend.handle_suspend,
    clusters.plan_clusters,
    clusters.ensure_clusters,
    cleanup.cleanup_retired_clusters,
    head_label.update_head_serve_labels,
    serve_config.reconcile_serve,
    services.reconcile_services,
)

class RayServiceReconciler:
    """Reconciles RayServices; pass :meth:`reconcile` to a Controller.

    Args:
        deps: Client, caches, dashboards, serve-config cache, clocks and settings.
        steps: The steps, in order (KubeRay's by default).
    """

    def __init__(self, deps: RayServiceDeps, *, steps: Sequence[Step] = STEPS) -> None:
        self.deps = deps
        self.steps = tuple(steps)
        self._written: dict[Request, str] = {}

    async def reconcile(self, request: Request) -> Result:
        """Runs one pass for ``request``; blocks on API and dashboard calls.

        Raises:
            Exception: any step's error or a failed status write; the controller retries it.
        """
        cached = await self._read(request)
        if cached is None:
            self._written.pop(request, None)
            self.deps.serve_cache.forget(request.namespace, request.name)
            return Result()
        ctx = ServiceContext.of(request, self.deps, cached)
        try:
            for step in self.steps:
                result = await step(ctx)
                if result is not None:
                    return result
            await finish_status(ctx)
        finally:
            self._remember(request, ctx.cached)
        return Result(requeue_after=self._requeue_after(ctx))

    async def _read(self, request: Request) -> Obj | None:
        cached = self.deps.rayservices.get(request.namespace or None, request.name)
        written = self._written.get(request)
        if cached is not None and (written is None or _rv(cached) == written):
            return cached
        if cached is None and written is None:
            return None
        try:
            return await self.deps.client.get(
                RAY_SERVICES, request.name, namespace=request.namespace
            )
        except NotFound:
            return None

    def _remember(self, request: Request, obj: Obj) -> None:
        cached = self.deps.rayservices.get(request.namespace or None, request.name)
        if cached is not None and _rv(cached) == _rv(obj):
            self._written.pop(request, None)
        else:
            self._written[request] = _rv(obj)

    @staticmethod
    def _requeue_after(ctx: ServiceContext) -> float:
        if ctx.next_deletion_in is None:
            return settings.RAYSERVICE_REQUEUE
        return max(
            settings.RAYSERVICE_MIN_REQUEUE,
            min(settings.RAYSERVICE_REQUEUE, ctx.next_deletion_in),
        )


def _rv(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
