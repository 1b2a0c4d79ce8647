"""The RayJob reconciler: one pass of KubeRay v1.7's RayJob controller
(``RayJobReconciler.Reconcile`` in ``ray-operator/controllers/ray/rayjob_controller.go``).

The pass reads the RayJob from the cache (gone: done), parses it once into a
:class:`~rayop.controllers.rayjob.context.PassContext` and runs :data:`PASS_STEPS` in order:

1. the cache still shows a version older than this controller's own last write of the RayJob:
   nothing based on it could be written, so the pass ends at once; the RayJob is enqueued again
   the moment the cache shows that write (3 s at the latest);
2. ``spec.managedBy`` names another controller: done;
3. being deleted: stop a non-terminal Ray job (best effort), remove the finalizer, done;
4. validation (including specs using a feature whose gate is off): problems give a Warning
   event and ``ValidationFailed`` (terminal; the step writes the status itself, no requeue);
5. the phase handler of ``status.jobDeploymentStatus`` (see :mod:`.phases`).

A step that ends the pass early says what happens to its status edits (a
:class:`~rayop.runtime.steps.Stop`). A phase that runs to its end finishes the pass KubeRay's
usual way: count retries (``backoffLimit``), write the status only when it changed where KubeRay
looks, requeue in 3 s.
"""

from __future__ import annotations

import logging

from rayop.api.common import MANAGED_BY_KUBERAY
from rayop.api.rayjob import JobDeploymentStatus, JobFailedReason
from rayop.controllers.dashboard.client import DashboardError
from rayop.controllers.dashboard.models import is_terminal
from rayop.controllers.rayjob import actions
from rayop.controllers.rayjob.context import PassContext, RayJobDeps
from rayop.controllers.rayjob.phases import PHASES, REQUEUE, WAIT
from rayop.controllers.rayjob.status import apply_backoff, needs_write, prepare_write
from rayop.runtime.informers.frozen import thaw
from rayop.runtime.reconcile import Request, Result
from rayop.runtime.steps import StatusEdits, Step, Stop, run_steps

log = logging.getLogger(__name__)


async def wait_for_own_write(ctx: PassContext) -> Stop | None:
    """Ends the pass when the cache predates this controller's last write of the RayJob."""
    if not ctx.deps.own_writes.cache_behind(ctx.rayjob):
        return None
    log.debug("RayJob %s: the cache has not shown our last write yet", ctx.request)
    return WAIT


async def skip_foreign(ctx: PassContext) -> Stop | None:
    """Ends the pass when ``spec.managedBy`` hands the RayJob to another controller."""
    managed_by = ctx.job.spec.managed_by
    if managed_by and managed_by != MANAGED_BY_KUBERAY:
        return Stop.discarding_status()
    return None


async def finalize_if_deleting(ctx: PassContext) -> Stop | None:
    """Deleting: stops the Ray job unless it is terminal, then drops the finalizer."""
    if not ctx.rayjob["metadata"].get("deletionTimestamp"):
        return None
    if not ctx.problems:
        await _stop_ray_job(ctx)
    await actions.remove_finalizer(ctx)
    return Stop.discarding_status()


async def _stop_ray_job(ctx: PassContext) -> None:
    job_id = ctx.status.job_id
    cluster = actions.cached_cluster(ctx)
    if not job_id or cluster is None or is_terminal(ctx.status.job_status or ""):
        return
    try:
        dashboard = await actions.open_dashboard(ctx, cluster)
        async with dashboard:
            await dashboard.stop_job(job_id)
        log.info("RayJob %s: stopped Ray job %s", ctx.request, job_id)
    except DashboardError as err:
        log.info("RayJob %s: could not stop Ray job %s: %s", ctx.request, job_id, err)


async def reject_if_invalid(ctx: PassContext) -> Stop | None:
    """Marks an invalid RayJob ValidationFailed (with a Warning event); no requeue.

    The status is written here, when it changed, without the stamps of a phase's write (no
    ``observedGeneration``, no ``endTime``), so the pass then drops nothing.
    """
    if not ctx.problems:
        return None
    first = ctx.problems[0]
    message = "; ".join(p.message for p in ctx.problems)
    note = first.event_message(ctx.request.namespace, ctx.request.name)
    ctx.event("Warning", first.reason, note, action="Validate")
    ctx.status.job_deployment_status = JobDeploymentStatus.VALIDATION_FAILED
    ctx.status.reason = JobFailedReason.VALIDATION_FAILED
    ctx.status.message = message
    if needs_write(ctx.original, ctx.status):
        await actions.write_status(ctx)
    return Stop.discarding_status()


async def run_phase(ctx: PassContext) -> Stop | None:
    """Runs the handler of ``status.jobDeploymentStatus`` (see :data:`.phases.PHASES`)."""
    phase = PHASES.get(ctx.status.job_deployment_status or "")
    if phase is None:
        log.info(
            "RayJob %s: unknown jobDeploymentStatus %r",
            ctx.request,
            ctx.status.job_deployment_status,
        )
        return WAIT
    return await phase(ctx)


PASS_STEPS: tuple[Step[PassContext], ...] = (
    wait_for_own_write,
    skip_foreign,
    finalize_if_deleting,
    reject_if_invalid,
    run_phase,
)
"""The steps of a pass, in order."""


class RayJobReconciler:
    """Reconciles RayJobs; pass :meth:`reconcile` to a :class:`~rayop.runtime.controller.Controller`.

    Args:
        deps: Client, caches, own-writes tracker, recorder, settings, dashboard factory, clock.
    """

    def __init__(self, deps: RayJobDeps) -> None:
        self.deps = deps

    async def reconcile(self, request: Request) -> Result:
        """Runs one pass for ``request``; blocks on API and dashboard calls (each bounded).

        Raises:
            Exception: an API error (a 409 on a write included) or a missing
                ``clusterSelector`` cluster: the controller requeues with backoff.
        """
        cached = self.deps.rayjobs.get(request.namespace or None, request.name)
        if cached is None:
            self._stop_polling(request)
            return Result()
        ctx = PassContext.open(request, self.deps, thaw(cached))
        try:
            stop = await run_steps(PASS_STEPS, ctx)
            if stop is None:
                apply_backoff(ctx.status, ctx.job)
                stop = Stop.after_status_write(ctx.requeue or REQUEUE)
            if stop.status is StatusEdits.WRITE:
                await write_if_changed(ctx)
        finally:
            if not _polled(ctx):
                self._stop_polling(request)
        return stop.result

    def _stop_polling(self, request: Request) -> None:
        if self.deps.poller is not None:
            self.deps.poller.stop(request)
        if self.deps.submissions is not None:
            self.deps.submissions.stop(request)


def _polled(ctx: PassContext) -> bool:
    """Tells whether the RayJob's job is still to be polled after this pass (Running, not being
    deleted); the pass's status edits count, written or not."""
    return ctx.status.job_deployment_status == JobDeploymentStatus.RUNNING and not ctx.rayjob[
        "metadata"
    ].get("deletionTimestamp")


async def write_if_changed(ctx: PassContext) -> None:
    """Writes the pass's status when it changed where KubeRay looks (``updateRayJobStatus``),
    stamping ``endTime`` on a terminal status and ``observedGeneration``; blocks on the API."""
    if not needs_write(ctx.original, ctx.status):
        return
    prepare_write(ctx.status, now=ctx.now, generation=ctx.rayjob["metadata"].get("generation"))
    await actions.write_status(ctx)
