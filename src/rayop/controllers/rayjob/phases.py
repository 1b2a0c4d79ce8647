"""The RayJob state machine: one async handler per ``jobDeploymentStatus`` (kuberay-v1.md §5).

A handler is a :data:`~rayop.runtime.steps.Step` over the pass context: it edits ``ctx.status``
and returns None to end the pass the usual way (count retries, write the status if it changed,
requeue in 3 s), or a :class:`~rayop.runtime.steps.Stop` for KubeRay's early ``return``s, which
drop the pass's status edits (:data:`WAIT`: look again in 3 s; :data:`IDLE`: no requeue; the
Complete/Failed handler: at the next deletion deadline). Raising is the error path (rate-limited
requeue). :data:`PHASES` is the dispatch table the reconciler uses.
"""

from __future__ import annotations

import logging

from rayop.api.common import format_time
from rayop.api.rayjob import JobDeploymentStatus, JobFailedReason, JobSubmissionMode
from rayop.controllers.common import settings
from rayop.controllers.dashboard.client import (
    DashboardError,
    JobNotFound,
    SubmissionIdConflict,
)
from rayop.controllers.rayjob import actions, checks, deletion
from rayop.controllers.rayjob import cluster as rc
from rayop.controllers.rayjob.context import JobDashboard, Obj, PassContext
from rayop.controllers.rayjob.status import (
    apply_job_info,
    failure_reason,
    init_status,
    mark_failed,
    reset_attempt,
)
from rayop.controllers.rayjob.submitter import (
    SubmitterOutcome,
    sidecar_outcome,
    submit_request,
    submitter_job_outcome,
)
from rayop.runtime.reconcile import Result
from rayop.runtime.steps import Step, Stop

log = logging.getLogger(__name__)

REQUEUE = Result(requeue_after=settings.RAYJOB_REQUEUE)
"""``RayJobDefaultRequeueDuration``: how a pass that is not finished with the RayJob ends."""
WAIT = Stop.discarding_status(REQUEUE)
"""Look again in 3 s; this pass's status edits are dropped (KubeRay returns before writing)."""
IDLE = Stop.discarding_status()
"""Nothing to do until the RayJob changes; nothing is written."""

Phase = Step[PassContext]


async def on_new(ctx: PassContext) -> Stop | None:
    """New: add the finalizer, fix the job id and cluster name, go to Initializing."""
    await actions.ensure_finalizer(ctx)
    init_status(ctx.status, ctx.job, rng=ctx.deps.rng, now=ctx.now)
    return None


async def on_initializing(ctx: PassContext) -> Stop | None:
    """Initializing: create (or find) the cluster, wait until it is ready, then start the
    submission (Waiting in InteractiveMode; the submitter Job in K8sJobMode) and go Running."""
    if (
        checks.suspend_if_requested(ctx.job, ctx.status)
        or checks.active_deadline_exceeded(ctx.job, ctx.status, ctx.now)
        or checks.pre_running_deadline_exceeded(ctx.job, ctx.status, ctx.now)
    ):
        return None
    await actions.submit_to_batch_scheduler(ctx)
    cluster = await actions.get_or_create_cluster(ctx)
    ctx.status.ray_cluster_status = actions.cluster_status(cluster)
    if not ctx.status.dashboard_url:
        if (cluster.get("status") or {}).get("state") != "ready":
            return None
        service = ctx.deps.services.get(ctx.namespace, rc.head_service_name(cluster))
        if service is None:
            return WAIT
        ctx.status.dashboard_url = rc.dashboard_url(cluster, service, options=ctx.deps.options)
    mode = ctx.job.spec.submission_mode
    if mode == JobSubmissionMode.INTERACTIVE_MODE:
        ctx.status.job_deployment_status = JobDeploymentStatus.WAITING
        return None
    if mode == JobSubmissionMode.K8S_JOB_MODE:
        await actions.create_submitter_job_if_needed(ctx, cluster)
    ctx.status.job_deployment_status = JobDeploymentStatus.RUNNING
    return None


async def on_waiting(ctx: PassContext) -> Stop | None:
    """Waiting (InteractiveMode): wait for the user to set ``spec.jobId``, then go Running."""
    if checks.pre_running_deadline_exceeded(ctx.job, ctx.status, ctx.now):
        return None
    if not ctx.job.spec.job_id:
        return WAIT
    ctx.status.job_id = ctx.job.spec.job_id
    ctx.status.job_deployment_status = JobDeploymentStatus.RUNNING
    return None


def _read_submitter(ctx: PassContext) -> SubmitterOutcome | None:
    """Returns the submitter's outcome; None when the SidecarMode head pod is gone."""
    mode = ctx.job.spec.submission_mode
    if mode == JobSubmissionMode.K8S_JOB_MODE:
        batch_job = ctx.deps.jobs.get(ctx.namespace, ctx.name)
        return SubmitterOutcome() if batch_job is None else submitter_job_outcome(batch_job)
    if mode == JobSubmissionMode.SIDECAR_MODE:
        pod = actions.head_pod(ctx, ctx.status.ray_cluster_name or "")
        restarts = ctx.deps.options.feature_gates.sidecar_submitter_restart
        return None if pod is None else sidecar_outcome(pod, restarts=restarts)
    return SubmitterOutcome()


def _submitter_failed(ctx: PassContext) -> bool:
    """Reads the submitter into ``ctx.submitter``; True when it ended the job (Failed)."""
    outcome = _read_submitter(ctx)
    if outcome is None:
        mark_failed(ctx.status, JobFailedReason.SUBMISSION_FAILED, "Ray head pod not found.")
        return True
    ctx.submitter = outcome
    if outcome.failed:
        mark_failed(ctx.status, failure_reason(ctx.status), outcome.message)
        return True
    return checks.submitter_finished_timed_out(ctx.status, outcome.finished_at, ctx.now)


async def on_running(ctx: PassContext) -> Stop | None:
    """Running: deadlines and submitter checks, then the job's status from the dashboard."""
    options = ctx.deps.options
    if (
        checks.suspend_if_requested(ctx.job, ctx.status)
        or checks.active_deadline_exceeded(ctx.job, ctx.status, ctx.now)
        or checks.transition_grace_exceeded(ctx.status, ctx.now, options=options)
        or checks.status_check_timed_out(ctx.status, ctx.now, options=options)
        or _submitter_failed(ctx)
    ):
        return None
    cluster = await actions.get_or_create_cluster(ctx)
    await actions.reconcile_head_service(ctx, cluster)
    return await _check_job(ctx, cluster)


def _stamp_check_failure(ctx: PassContext, error: Exception) -> None:
    log.info("RayJob %s: job status check failed: %s", ctx.request, error)
    if ctx.status.job_status_check_failure_start_time is None:
        ctx.status.job_status_check_failure_start_time = format_time(ctx.now)


async def _check_job(ctx: PassContext, cluster: Obj) -> Stop | None:
    """GET /api/jobs/<id>; HTTPMode submits on 404; the answer goes into the status."""
    mode = ctx.job.spec.submission_mode
    job_id = ctx.status.job_id or ""
    dashboard = await actions.open_dashboard(ctx, cluster)
    async with dashboard:
        try:
            info = await dashboard.get_job_info(job_id)
        except JobNotFound:
            if mode == JobSubmissionMode.HTTP_MODE:
                await _submit(ctx, dashboard)
                return None
            if ctx.submitter.finished_at is not None:
                message = "Submitter completed but Ray job not found in RayCluster."
                mark_failed(ctx.status, JobFailedReason.APP_FAILED, message)
                return None
            return WAIT
        except DashboardError as err:
            _stamp_check_failure(ctx, err)
            return None
    submitter_finished = (
        mode in (JobSubmissionMode.HTTP_MODE, JobSubmissionMode.INTERACTIVE_MODE)
        or ctx.submitter.finished_at is not None
    )
    apply_job_info(
        ctx.status,
        info,
        submitter_finished=submitter_finished,
        cluster_status=actions.cluster_status(cluster),
    )
    return None


async def _submit(ctx: PassContext, dashboard: JobDashboard) -> None:
    """HTTPMode: POST /api/jobs/ with the persisted submission id.

    A "submission id already used" answer means an earlier pass submitted it (the id was written
    before any submission), so it counts as submitted (an improvement on KubeRay).
    """
    try:
        await dashboard.submit_job(submit_request(ctx.job, job_id=ctx.status.job_id or ""))
    except SubmissionIdConflict:
        log.info("RayJob %s: job %s was already submitted", ctx.request, ctx.status.job_id)
    except (DashboardError, ValueError) as err:
        _stamp_check_failure(ctx, err)
        return
    ctx.status.job_status_check_failure_start_time = None


async def on_suspending_or_retrying(ctx: PassContext) -> Stop | None:
    """Suspending / Retrying: delete the cluster and the submitter Job, wait until both are
    gone, reset the attempt's status; then Suspended, or New for a retry."""
    cluster_gone = await actions.delete_cluster(ctx)
    job_gone = await actions.delete_submitter_job(ctx)
    if not (cluster_gone and job_gone):
        return WAIT
    await actions.cleanup_batch_scheduler(ctx)
    reset_attempt(ctx.status)
    return None


async def on_suspended(ctx: PassContext) -> Stop | None:
    """Suspended: back to New once ``spec.suspend`` is false; otherwise nothing to do."""
    if ctx.job.spec.suspend:
        return IDLE
    ctx.status.job_deployment_status = JobDeploymentStatus.NEW
    return None


async def on_finished(ctx: PassContext) -> Stop | None:
    """Complete / Failed: apply the deletion rules, legacy policies or TTL (see ``deletion``),
    then release what the batch scheduler holds (a failure there is only logged)."""
    try:
        return await _finish(ctx)
    finally:
        try:
            await actions.cleanup_batch_scheduler(ctx)
        except Exception:
            log.exception("Failed to cleanup batch scheduler resources")


async def _finish(ctx: PassContext) -> Stop | None:
    decision = deletion.decide(
        ctx.job,
        ctx.status,
        ctx.now,
        options=ctx.deps.options,
        is_done=lambda policy: actions.deletion_done(ctx, policy),
    )
    if decision.action is not None:
        log.info("RayJob %s: deletion policy %s", ctx.request, decision.action)
        await actions.execute_deletion(ctx, decision.action)
    if decision.requeue_after is None:
        return IDLE
    return Stop.discarding_status(
        Result(requeue_after=max(decision.requeue_after, settings.MIN_REQUEUE))
    )


async def on_validation_failed(ctx: PassContext) -> Stop | None:
    """ValidationFailed: terminal; nothing to do."""
    return IDLE


PHASES: dict[str, Phase] = {
    JobDeploymentStatus.NEW: on_new,
    JobDeploymentStatus.INITIALIZING: on_initializing,
    JobDeploymentStatus.WAITING: on_waiting,
    JobDeploymentStatus.RUNNING: on_running,
    JobDeploymentStatus.SUSPENDING: on_suspending_or_retrying,
    JobDeploymentStatus.RETRYING: on_suspending_or_retrying,
    JobDeploymentStatus.SUSPENDED: on_suspended,
    JobDeploymentStatus.COMPLETE: on_finished,
    JobDeploymentStatus.FAILED: on_finished,
    JobDeploymentStatus.VALIDATION_FAILED: on_validation_failed,
}
"""The dispatch table: ``status.jobDeploymentStatus`` -> its handler."""
