"""The RayCluster reconciler: KubeRay v1.7's reconcile as two ordered lists of small async steps.

One pass (KubeRay v1.7.0: ``rayClusterReconcile`` in
``ray-operator/controllers/ray/raycluster_controller.go``):

1. read the RayCluster from the informer cache; gone -> drop its scale expectations, done;
   otherwise parse it once into the pass's context;
2. gate steps (:data:`GATE_STEPS`), each of which may end the pass with a
   :class:`~rayop.runtime.steps.Stop`: managedBy, validation (a spec that does not parse
   included: Warning event + ``status.reason``, no requeue), the GCS FT Redis cleanup finalizer,
   deletion;
3. resource steps (:data:`RESOURCE_STEPS`), stopping at the first error: autoscaler RBAC,
   ingress (or the OpenShift Route), auth secret, head service, headless worker service, serve service, the embedded GCS
   storage PVC, pods;
4. the status is computed from the caches with that error and written only when it changed;
5. the error (resource step, then status computation, then status write) is raised, so the
   controller requeues with backoff; otherwise requeue after 2 s when the status changed (or
   must wait for the cache to show our last write), else after
   ``options.default_requeue_seconds``.

KubeRay's ``setDefaults`` (nil ``rayStartParams`` become ``{}``) has no step: the model reads a
missing map as empty. A step that ends the pass says with its :class:`Stop` whether the status
step still runs (``after_status_write``) or not (``discarding_status``); every gate step of
KubeRay's pass discards it. Every step is idempotent: it compares the cache with the spec and
acts only on the difference, and pod steps respect the scale expectations, so a pass interrupted
anywhere is simply run again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from rayop.controllers.kit import settings
from rayop.controllers.raycluster import (
    gcs_storage,
    ingress_sync,
    pod_sync,
    reconcile_steps,
    redis_cleanup,
    route,
)
from rayop.controllers.raycluster.context import (
    PassContext,
    ReconcilerDeps,
)
from rayop.controllers.raycluster.status_sync import sync_status
from rayop.runtime.decisions import current_account
from rayop.runtime.reconcile import Request, Result
from rayop.runtime.steps import StatusEdits, Step, Stop, run_steps
from rayop.runtime.unchanged_passes import counting_requests

log = logging.getLogger(__name__)

GATE_STEPS: tuple[Step[PassContext], ...] = (
    reconcile_steps.check_managed_by,
    reconcile_steps.validate,
    redis_cleanup.reconcile_redis_cleanup,
    reconcile_steps.stop_if_deleting,
)
"""Steps that decide whether the pass goes on; an error here skips the status step."""

RESOURCE_STEPS: tuple[Step[PassContext], ...] = (
    reconcile_steps.reconcile_autoscaler_rbac,
    ingress_sync.reconcile_ingress,
    route.reconcile_route,
    reconcile_steps.reconcile_auth_secret,
    reconcile_steps.reconcile_head_service,
    reconcile_steps.reconcile_headless_worker_service,
    reconcile_steps.reconcile_serve_service,
    gcs_storage.reconcile_gcs_storage_pvc,
    pod_sync.reconcile_pods,
)
"""Steps that create or delete what the spec asks for; their error is recorded in the status."""


class RayClusterReconciler:
    """Reconciles RayClusters; pass :meth:`reconcile` to a :class:`~rayop.runtime.controller.Controller`.

    Args:
        deps: Client, caches, expectations, event recorder, operator settings and clock.
        gate_steps: The gate steps, in order (KubeRay's by default).
        resource_steps: The resource steps, in order (KubeRay's by default).
    """

    def __init__(
        self,
        deps: ReconcilerDeps,
        *,
        gate_steps: Sequence[Step[PassContext]] = GATE_STEPS,
        resource_steps: Sequence[Step[PassContext]] = RESOURCE_STEPS,
    ) -> None:
        self.deps = deps
        self.gate_steps = tuple(gate_steps)
        self.resource_steps = tuple(resource_steps)

    async def reconcile(self, request: Request) -> Result:
        """Runs one pass for ``request``; blocks on API calls (see the module docstring).

        A periodic pass that could only repeat the cluster's last one (nothing in the caches
        changed since, and that pass sent no request, noted nothing and asked only for the
        periodic requeue: :mod:`rayop.runtime.unchanged_passes`) is answered with the periodic
        requeue without running. Only a pass that ran every step (no gate or step stopped it:
        not a cluster being deleted, not one another controller manages) may be followed by
        one. The steps keep that module's rule: what they read outside the caches (a batch
        scheduler's PodGroup) they read with a request, and the clock only stamps the status
        and its conditions.

        Raises:
            Exception: any step's error, a status that cannot be computed yet, or a failed
                status write (409 included): the controller requeues with backoff.
        """
        unchanged = self.deps.unchanged
        if unchanged is None:
            return (await self._pass(request))[0]
        stamp = unchanged.begin(request)
        if stamp is None:
            return self._periodic()
        try:
            with counting_requests() as requests:
                result, every_step = await self._pass(request)
        except BaseException:
            unchanged.forget(request)
            raise
        account = current_account()
        quiet = (
            every_step
            and requests.sent == 0
            and account is not None
            and account.quiet  # no write, wait or Event noted
            and result == self._periodic()
            and result.requeue_after is not None
        )
        unchanged.settle(request, stamp, quiet=quiet)
        return result

    async def _pass(self, request: Request) -> tuple[Result, bool]:
        """Runs the pass; returns its result and whether every step ran and none stopped it
        (no gate, no cluster being deleted, no step's Stop)."""
        cached = self.deps.clusters.get(request.namespace or None, request.name)
        if cached is None:
            await pod_sync.forget_cluster(self.deps, request.namespace, request.name)
            return Result(), False
        ctx = PassContext.open(request, self.deps, cached)
        stop = await run_steps(self.gate_steps, ctx)
        error: Exception | None = None
        if stop is None:
            try:
                stop = await run_steps(self.resource_steps, ctx)
            except Exception as err:
                error = err
        if stop is not None and stop.status is StatusEdits.DISCARD:
            return stop.result, False
        changed = await self._sync_status(ctx, error)
        if error is not None:
            raise error
        return self._result(stop, changed=changed), stop is None

    async def _sync_status(self, ctx: PassContext, error: Exception | None) -> bool:
        """Writes the status; a failure is raised unless a step's error is raised anyway."""
        try:
            return await sync_status(ctx, error)
        except Exception as status_error:
            if error is None:
                raise
            log.info("RayCluster %s: status not written: %s", ctx.request, status_error)
            return False

    def _result(self, stop: Stop | None, *, changed: bool) -> Result:
        if stop is not None:
            return stop.result
        if changed:
            return Result(requeue_after=settings.RAYCLUSTER_STATUS_CHANGED_REQUEUE)
        return self._periodic()

    def _periodic(self) -> Result:
        """The result of a pass that found nothing to do: look again after
        ``default_requeue_seconds`` (0: no timed look)."""
        periodic = float(self.deps.options.default_requeue_seconds)
        return Result(requeue_after=periodic if periodic > 0 else None)
