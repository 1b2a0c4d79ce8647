"""The RayJob state machine: one async handler per ``jobDeploymentStatus``.

KubeRay v1.7.0: the switch in ``RayJobReconciler.Reconcile``,
``ray-operator/controllers/ray/rayjob_controller.go``.

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
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.dashboard.client import (
    DashboardError,
    JobNotFound,
    SubmissionIdConflict,
)
from rayop.controllers.dashboard.job_poller import (
    JobInfoClient,
    JobInfoPoller,
    Outcome,
    PollTarget,
)
from rayop.controllers.dashboard.models import JobInfo
from rayop.controllers.kit import settings
from rayop.controllers.rayjob import actions, checks, deletion
from rayop.controllers.rayjob import cluster as rc
from rayop.controllers.rayjob.context import JobDashboard, PassContext
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
from rayop.runtime.decisions import note_wait
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


def _job_not_found(ctx: PassContext) -> Stop | None:
    """The dashboard does not know the job (a mode other than HTTPMode): the RayJob fails once
    its submitter finished, else waits for the submitter to submit it."""
    if ctx.submitter.finished_at is not None:
        message = "Submitter completed but Ray job not found in RayCluster."
        mark_failed(ctx.status, JobFailedReason.APP_FAILED, message)
        return None
    return WAIT


async def _check_job(ctx: PassContext, cluster: Obj) -> Stop | None:
    """GET /api/jobs/<id> (or the background poller's latest answer to it); HTTPMode submits on
    404; the answer goes into the status."""
    if ctx.deps.poller is not None:
        return await _check_polled_job(ctx, cluster, ctx.deps.poller)
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
            return _job_not_found(ctx)
        except DashboardError as err:
            _stamp_check_failure(ctx, err)
            return None
    _apply_answer(ctx, cluster, info)
    return None


def _apply_answer(ctx: PassContext, cluster: Obj, info: JobInfo) -> None:
    """Folds the dashboard's job info into the status (the submitter counts as finished in
    HTTPMode and InteractiveMode, which have none)."""
    mode = ctx.job.spec.submission_mode
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


async def _check_polled_job(ctx: PassContext, cluster: Obj, poller: JobInfoPoller) -> Stop | None:
    """:func:`_check_job` on the poller's latest answer: the same outcomes, and no dashboard call
    in the pass. A pass with no answer to use yet (the job's first, or a new GET's where the
    latest answer is too old to decide on: a missing job, a failing dashboard, a finished
    submitter) ends at once (:data:`WAIT`); the answer enqueues the RayJob. HTTPMode submits in
    the background (:data:`RayJobDeps.submissions`); the pass after the POST acts on its outcome.
    A job still Running is requeued at its next deadline (at most
    :data:`~rayop.controllers.kit.settings.RAYJOB_POLLED_RESYNC`); the poller enqueues it sooner
    when its answer changes."""
    mode = ctx.job.spec.submission_mode
    token = await actions.auth_token(ctx, cluster)
    url = ctx.status.dashboard_url or ""
    target = PollTarget(
        job_id=ctx.status.job_id or "",
        dashboard_url=url,
        cluster_uid=str((cluster.get("metadata") or {}).get("uid") or ""),
        token=token,
    )
    submissions = ctx.deps.submissions
    if mode == JobSubmissionMode.HTTP_MODE and submissions is not None:
        finished = submissions.take(ctx.request, target)
        if finished is not None:
            _submitted(ctx, finished.error)
            if ctx.status.job_status_check_failure_start_time is None:
                poller.refresh(ctx.request)  # submitted: read the job afresh
            return None
        if submissions.running(ctx.request, target):
            note_wait("waiting for the dashboard's answer to the job submission")
            return WAIT

    async def open_client() -> JobInfoClient:
        return _PolledClient(ctx.deps.dashboards(cluster, url, token))

    def needs_fresh(outcome: Outcome) -> bool:
        # A missing job, a failing dashboard or a finished submitter decide transitions on
        # this answer: as KubeRay, read it now, not up to one interval ago.
        return not isinstance(outcome, JobInfo) or ctx.submitter.finished_at is not None

    first = poller.polling(ctx.request) != target
    outcome = await poller.answer(ctx.request, target, open_client, needs_fresh=needs_fresh)
    if outcome is None:
        what = "first answer" if first else "answer"
        note_wait(f"waiting for the dashboard's {what} about job {target.job_id}")
        return WAIT
    if isinstance(outcome, JobNotFound):
        if mode == JobSubmissionMode.HTTP_MODE:
            return await _submit_polled(ctx, cluster, poller, target)
        return _job_not_found(ctx)
    if isinstance(outcome, DashboardError):
        _stamp_check_failure(ctx, outcome)
    else:
        _apply_answer(ctx, cluster, outcome)
    if ctx.status.job_deployment_status == JobDeploymentStatus.RUNNING:
        ctx.requeue = _polled_requeue(ctx)
    return None


async def _submit_polled(
    ctx: PassContext, cluster: Obj, poller: JobInfoPoller, target: PollTarget
) -> Stop | None:
    """HTTPMode, the job not found: submits it, in the background when
    :data:`RayJobDeps.submissions` is set (the pass ends at once), else in this pass."""
    submissions = ctx.deps.submissions
    if submissions is None:
        async with await actions.open_dashboard(ctx, cluster) as inline:
            await _submit(ctx, inline)
        poller.refresh(ctx.request)
        return None
    try:
        request = submit_request(ctx.job, job_id=ctx.status.job_id or "")
    except ValueError as err:
        _submitted(ctx, err)
        return None
    dashboards = ctx.deps.dashboards

    async def post() -> None:
        # Opened inside the task, so a submission cancelled before it first runs (its RayJob
        # deleted, its cluster changed) leaves no client session open.
        async with dashboards(cluster, target.dashboard_url, target.token) as dashboard:
            await dashboard.submit_job(request)

    submissions.start(ctx.request, target, post)
    note_wait(f"submitting job {target.job_id} to the dashboard")
    return WAIT


def _polled_requeue(ctx: PassContext) -> Result | None:
    """When a polled Running job is looked at again: at its next deadline, at most
    :data:`~rayop.controllers.kit.settings.RAYJOB_POLLED_RESYNC`; None (3 s) in SidecarMode and for a ``clusterSelector`` cluster,
    whose head pod and cluster no watch of this controller follows."""
    if (
        ctx.job.spec.submission_mode == JobSubmissionMode.SIDECAR_MODE
        or ctx.job.spec.cluster_selector
    ):
        return None
    wait = checks.next_check_in(
        ctx.job,
        ctx.status,
        ctx.now,
        submitter_finished_at=ctx.submitter.finished_at,
        options=ctx.deps.options,
    )
    if wait is None or wait > settings.RAYJOB_POLLED_RESYNC:
        wait = settings.RAYJOB_POLLED_RESYNC
    return Result(requeue_after=max(wait, settings.MIN_REQUEUE))


class _PolledClient:
    """A pass's dashboard client as the poller uses it (closed by the poller)."""

    def __init__(self, dashboard: JobDashboard) -> None:
        self._dashboard = dashboard

    async def get_job_info(self, job_id: str) -> JobInfo:
        return await self._dashboard.get_job_info(job_id)

    async def close(self) -> None:
        await self._dashboard.__aexit__(None, None, None)


async def _submit(ctx: PassContext, dashboard: JobDashboard) -> None:
    """HTTPMode: POST /api/jobs/ with the persisted submission id (see :func:`_submitted`)."""
    try:
        await dashboard.submit_job(submit_request(ctx.job, job_id=ctx.status.job_id or ""))
    except (DashboardError, ValueError) as err:
        _submitted(ctx, err)
        return
    _submitted(ctx, None)


def _submitted(ctx: PassContext, error: Exception | None) -> None:
    """Acts on how an HTTPMode submission ended (``error``: what it raised, None: accepted).

    A "submission id already used" answer means an earlier pass submitted it (the id was written
    before any submission), so it counts as submitted (an improvement on KubeRay). A dashboard
    error (or a request that cannot be built) stamps the status check failure; anything else
    is raised (the error path).
    """
    if isinstance(error, SubmissionIdConflict):
        log.info("RayJob %s: job %s was already submitted", ctx.request, ctx.status.job_id)
    elif isinstance(error, (DashboardError, ValueError)):
        _stamp_check_failure(ctx, error)
        return
    elif error is not None:
        raise error
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
