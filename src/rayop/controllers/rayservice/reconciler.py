"""The RayService reconciler: KubeRay v1.7's reconcile as an ordered list of small async steps.

One pass (KubeRay v1.7.0: ``RayServiceReconciler.Reconcile`` in
``ray-operator/controllers/ray/rayservice_controller.go``):

1. read the RayService from the cache (gone -> forget its serve configs) and parse it once
   (one that does not parse, which the CRD schema should never admit, gets a Warning event
   and no requeue, as an invalid spec does);
2. gates, each of which may end the pass: the cache still behind our own last write (wait for
   it), managedBy, deletion and finalizer, validation, suspend, the initializing timeout
   (``ray.io/initializing-timeout``: once it has expired only retired clusters are deleted);
3. cluster steps: choose and record the pending cluster, create it, retire old clusters (after
   the deletion delay, kept in an annotation), label head pods from the Serve health check,
   deploy the serve config, point the Services at the cluster that is ready; with
   NewClusterWithIncrementalUpgrade also start or cancel a rollback, move Serve
   ``target_capacity`` and keep the Gateway, HTTPRoute and per-cluster serve Services
   (:mod:`.incremental`);
4. fold what was learned into the status (promotion, applications, endpoints, conditions) and
   write it when it changed;
5. requeue after 2 s, or sooner (never under 50 ms) when a retired cluster is due. A gate that
   ends the pass chooses its own requeue: 2 s while the cache is behind or clusters of a deleted
   or suspending RayService remain, 50 ms after a suspend request, none otherwise (managedBy,
   validation, suspended, finalizer removed); KubeRay requeues every path after 2 s.

Each step is a :data:`~rayop.runtime.steps.Step`: None goes on, a
:class:`~rayop.runtime.steps.Stop` ends the pass with its result, the status edits written first
(``after_status_write``: validation, suspend) or dropped (``discarding_status``: nothing to
write). A step that raises ends the pass; the controller retries it with backoff. Every step
compares the caches with the spec and acts only on the difference, so any pass can be rerun.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import ValidationError

from rayop.api.validation import validate_rayservice
from rayop.controllers.kit import settings
from rayop.controllers.rayservice import (
    cleanup,
    clusters,
    head_label,
    initializing_timeout,
    opening_steps,
    serve_config,
    services,
    suspend,
)
from rayop.controllers.rayservice.context import PassContext, RayServiceDeps
from rayop.controllers.rayservice.incremental import rollback as incremental_rollback
from rayop.controllers.rayservice.incremental import routes as incremental_routes
from rayop.controllers.rayservice.settings import INVALID_RAYSERVICE_SPEC
from rayop.controllers.rayservice.status import finish_status, write_status_if_changed
from rayop.runtime.reconcile import Request, Result
from rayop.runtime.steps import StatusEdits, Step, run_steps

log = logging.getLogger(__name__)

ServiceStep = Step[PassContext]

STEPS: tuple[ServiceStep, ...] = (
    opening_steps.wait_for_own_writes,
    opening_steps.check_managed_by,
    opening_steps.handle_deletion,
    opening_steps.validate,
    suspend.handle_suspend,
    initializing_timeout.stop_if_timed_out,
    clusters.plan_clusters,
    clusters.ensure_clusters,
    cleanup.cleanup_retired_clusters,
    incremental_rollback.check_rollback,
    head_label.update_head_serve_labels,
    incremental_routes.read_routes,
    serve_config.reconcile_serve,
    incremental_routes.reconcile_routes,
    services.reconcile_services,
)


class RayServiceReconciler:
    """Reconciles RayServices; pass :meth:`reconcile` to a Controller.

    Args:
        deps: Client, caches, dashboards, serve-config cache, own-writes tracker, clock.
        steps: The steps, in order (KubeRay's by default).
    """

    def __init__(self, deps: RayServiceDeps, *, steps: Sequence[ServiceStep] = STEPS) -> None:
        self.deps = deps
        self.steps = tuple(steps)

    async def reconcile(self, request: Request) -> Result:
        """Runs one pass for ``request``; blocks on API and dashboard calls.

        Raises:
            Exception: any step's error or a failed status write; the controller retries it.
        """
        cached = self.deps.rayservices.get(request.namespace or None, request.name)
        if cached is None:
            self.deps.serve_cache.forget(request.namespace, request.name)
            return Result()
        try:
            ctx = PassContext.open(request, self.deps, cached)
        except ValidationError:
            message = "; ".join(p.message for p in validate_rayservice(cached))
            log.warning("RayService %s does not parse: %s", request, message)
            note = f"{request.namespace}/{request.name}: {message}"
            self.deps.recorder.event(cached, "Warning", INVALID_RAYSERVICE_SPEC, note)
            return Result()
        stop = await run_steps(self.steps, ctx)
        if stop is None:
            await finish_status(ctx)
            return Result(requeue_after=requeue_after(ctx))
        if stop.status is StatusEdits.WRITE:
            await write_status_if_changed(ctx)
        return stop.result


def requeue_after(ctx: PassContext) -> float:
    """Returns the delay of a full pass: 2 s, or when the next retired cluster is due."""
    if ctx.next_deletion_in is None:
        return settings.RAYSERVICE_REQUEUE
    return max(
        settings.RAYSERVICE_MIN_REQUEUE,
        min(settings.RAYSERVICE_REQUEUE, ctx.next_deletion_in),
    )
