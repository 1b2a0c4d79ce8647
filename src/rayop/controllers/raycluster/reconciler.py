"""The RayCluster reconciler: KubeRay v1.7's reconcile as an ordered list of small async steps.

One pass (kuberay-v1.md §3.1):

1. read the RayCluster from the informer cache; gone -> drop its scale expectations, done;
2. gate steps, each of which may end the pass with a Result: managedBy, defaults, validation
   (Warning event + ``status.reason``, no requeue), the GCS FT Redis cleanup finalizer, deletion;
3. resource steps, stopping at the first error: autoscaler RBAC, ingress, auth secret, head
   service, headless worker service, serve service, pods;
4. the status is computed from the caches with that error and written only when it changed;
5. the error (resource step, then status computation, then status write) is raised, so the
   controller requeues with backoff; otherwise requeue after 2 s when the status changed, else
   after ``options.default_requeue_seconds``.

Every step is idempotent: it compares the cache with the spec and acts only on the difference,
and pod steps respect the scale expectations, so a pass interrupted anywhere is simply run again.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable, Sequence

from rayop.controllers.common import settings
from rayop.controllers.raycluster import pod_sync, reconcile_steps, redis_cleanup
from rayop.controllers.raycluster.reconcile_context import ReconcileContext, ReconcilerDeps
from rayop.controllers.raycluster.status_sync import sync_status
from rayop.runtime.reconcile import Request, Result

log = logging.getLogger(__name__)

GateStep = Callable[[ReconcileContext], Awaitable[Result | None]]
"""A step that may end the pass by returning a Result (None: go on)."""

ResourceStep = Callable[[ReconcileContext], Awaitable[None]]
"""A step that creates or deletes what the spec asks for; raises to stop the pass."""

GATE_STEPS: tuple[GateStep, ...] = (
    reconcile_steps.check_managed_by,
    reconcile_steps.apply_defaults,
    reconcile_steps.validate,
    redis_cleanup.reconcile_redis_cleanup,
    reconcile_steps.stop_if_deleting,
)

RESOURCE_STEPS: tuple[ResourceStep, ...] = (
    reconcile_steps.reconcile_autoscaler_rbac,
    reconcile_steps.reconcile_ingress,
    reconcile_steps.reconcile_auth_secret,
    reconcile_steps.reconcile_head_service,
    reconcile_steps.reconcile_headless_worker_service,
    reconcile_steps.reconcile_serve_service,
    pod_sync.reconcile_pods,
)


class RayClusterReconciler:
    """Reconciles RayClusters; pass :meth:`reconcile` to a :class:`~rayop.runtime.controller.Controller`.

    Args:
        deps: Client, caches, expectations, event recorder and operator settings.
        gate_steps: The gate steps, in order (KubeRay's by default).
        resource_steps: The resource steps, in order (KubeRay's by default).
    """

    def __init__(
        self,
        deps: ReconcilerDeps,
        *,
        gate_steps: Sequence[GateStep] = GATE_STEPS,
        resource_steps: Sequence[ResourceStep] = RESOURCE_STEPS,
    ) -> None:
        self.deps = deps
        self.gate_steps = tuple(gate_steps)
        self.resource_steps = tuple(resource_steps)

    async def reconcile(self, request: Request) -> Result:
        """Runs one pass for ``request``; blocks on API calls (see the module docstring).

        Raises:
            Exception: any step's error, a status that cannot be computed yet, or a failed
                status write (409 included): the controller requeues with backoff.
        """
        cached = self.deps.clusters.get(request.namespace or None, request.name)
        if cached is None:
            self.deps.expectations.delete(request.namespace, request.name)
            return Result()
        ctx = ReconcileContext(
            request=request, deps=self.deps, cached=cached, cluster=copy.deepcopy(dict(cached))
        )
        for gate in self.gate_steps:
            result = await gate(ctx)
            if result is not None:
                return result
        error: Exception | None = None
        try:
            for step in self.resource_steps:
                await step(ctx)
        except Exception as err:
            error = err
        try:
            changed = await sync_status(ctx, error)
        except Exception as status_error:
            if error is None:
                raise
            log.info("RayCluster %s: status not written: %s", request, status_error)
        if error is not None:
            raise error
        if changed:
            return Result(requeue_after=settings.RAYCLUSTER_STATUS_CHANGED_REQUEUE)
        periodic = float(self.deps.options.default_requeue_seconds)  # <= 0: none, as KubeRay
        return Result(requeue_after=periodic) if periodic > 0 else Result()
