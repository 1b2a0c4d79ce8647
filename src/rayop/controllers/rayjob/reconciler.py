"""The RayJob reconciler: one pass of KubeRay v1.7's RayJob controller (kuberay-v1.md §5).

1. read the RayJob from the cache (gone: done); skip it when ``spec.managedBy`` names another
   controller;
2. being deleted: stop a non-terminal Ray job (best effort), remove the finalizer, done;
3. validation (including specs using a feature whose gate is off): problems give a Warning
   event and ``ValidationFailed`` (terminal);
4. the phase handler of ``status.jobDeploymentStatus`` (see :mod:`.phases`);
5. unless the handler ended the pass: count retries (``backoffLimit``), write the status only
   when it changed where KubeRay looks, requeue in 3 s.
"""

from __future__ import annotations

import copy
import logging

from rayop.api.common import MANAGED_BY_KUBERAY
from rayop.api.rayjob import JobDeploymentStatus, JobFailedReason, RayJob, RayJobStatus
from rayop.api.validation import validate_rayjob
from rayop.controllers.common import settings
from rayop.controllers.common.gate_checks import rayjob_gate_problems
from rayop.controllers.dashboard.client import DashboardError
from rayop.controllers.dashboard.models import is_terminal
from rayop.controllers.rayjob import actions
from rayop.controllers.rayjob.context import PassContext, RayJobDeps
from rayop.controllers.rayjob.phases import PHASES
from rayop.controllers.rayjob.status import apply_backoff, needs_write, prepare_write
from rayop.kube.resources import RAY_JOBS
from rayop.runtime.frozen import thaw
from rayop.runtime.reconcile import Request, Result

log = logging.getLogger(__name__)


class RayJobReconciler:
    """Reconciles RayJobs; pass :meth:`reconcile` to a :class:`~rayop.runtime.controller.Controller`.

    Args:
        deps: Client, caches, recorder, settings, dashboard factory, clocks.
    """

    def __init__(self, deps: RayJobDeps) -> None:
        self.deps = deps

    def _context(self, request: Request, raw: dict[str, object]) -> PassContext:
        job = RayJob.model_validate(raw)
        status = job.status.model_copy(deep=True) if job.status is not None else RayJobStatus()
        return PassContext(
            deps=self.deps,
            request=request,
            rayjob=raw,
            job=job,
            status=status,
            original=status.model_copy(deep=True),
            now=self.deps.wall_clock(),
        )

    async def reconcile(self, request: Request) -> Result:
        """Runs one pass for ``request``; blocks on API and dashboard calls (each bounded).

        Raises:
            Exception: an API error (a 409 on the status write included) or a missing
                ``clusterSelector`` cluster: the controller requeues with backoff.
        """
        cached = self.deps.rayjobs.get(request.namespace or None, request.name)
        if cached is None:
            return Result()
        raw = thaw(cached)
        managed_by = (raw.get("spec") or {}).get("managedBy")
        if managed_by and managed_by != MANAGED_BY_KUBERAY:
            return Result()
        problems = validate_rayjob(raw)
        problems += rayjob_gate_problems(raw, self.deps.options.feature_gates)
        if raw["metadata"].get("deletionTimestamp"):
            return await self._finalize(request, raw, valid=not problems)
        if problems:
            return await self._reject(request, raw, problems)
        ctx = self._context(request, raw)
        phase = PHASES.get(ctx.status.job_deployment_status or "")
        if phase is None:
            log.info(
                "RayJob %s: unknown jobDeploymentStatus %r",
                request,
                ctx.status.job_deployment_status,
            )
            return Result(requeue_after=settings.RAYJOB_REQUEUE)
        result = await phase(ctx)
        if result is not None:
            return result
        apply_backoff(ctx.status, ctx.job)
        await self._write_if_changed(ctx)
        return Result(requeue_after=settings.RAYJOB_REQUEUE)

    async def _write_if_changed(self, ctx: PassContext) -> None:
        if not needs_write(ctx.original, ctx.status):
            return
        generation = ctx.rayjob["metadata"].get("generation")
        prepare_write(ctx.status, now=ctx.now, generation=generation)
        await actions.write_status(ctx)

    async def _reject(
        self, request: Request, raw: dict[str, object], problems: list[str]
    ) -> Result:
        """Marks an invalid RayJob ValidationFailed (with a Warning event); no requeue."""
        message = "; ".join(problems)
        self.deps.recorder.event(raw, "Warning", "InvalidRayJobSpec", message)
        original = RayJobStatus.model_validate(copy.deepcopy(raw.get("status") or {}))
        status = original.model_copy(deep=True)
        status.job_deployment_status = JobDeploymentStatus.VALIDATION_FAILED
        status.reason = JobFailedReason.VALIDATION_FAILED
        status.message = message
        if needs_write(original, status):
            body = dict(raw)
            body["status"] = status.model_dump(by_alias=True, exclude_none=True)
            await self.deps.client.update_status(RAY_JOBS, body)
        return Result()

    async def _finalize(self, request: Request, raw: dict[str, object], *, valid: bool) -> Result:
        """Deleting: stop the Ray job unless it is terminal, then drop the finalizer."""
        if valid:
            ctx = self._context(request, raw)
            await self._stop_job(ctx)
        metadata = raw["metadata"]
        assert isinstance(metadata, dict)
        finalizers = metadata.get("finalizers") or []
        if actions.FINALIZER in finalizers:
            metadata["finalizers"] = [f for f in finalizers if f != actions.FINALIZER]
            await self.deps.client.update(RAY_JOBS, raw)
        return Result()

    async def _stop_job(self, ctx: PassContext) -> None:
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
