"""The simulated Ray Jobs API state: submissions, their timeline, details, logs, stop and delete.

A job's status is computed from the clock instead of being driven by tasks: it is PENDING for
``pending`` seconds after submission, then RUNNING for ``run`` seconds (or, when the entrypoint
sleeps, ``sleep <n>`` or ``time.sleep(<n>)``, for at least those ``n`` seconds, as a real driver),
then SUCCEEDED or FAILED by its exit code (``sys.exit(<n>)``, ``exit <n>`` or ``false`` in the
entrypoint give a non-zero code). A stop request makes it STOPPED ``stop_delay`` seconds later
unless it ended first. Field names, messages and status codes follow Ray 2.60's Jobs REST API
(https://docs.ray.io/en/latest/cluster/running-applications/job-submission/rest.html; in Ray's
source, ``python/ray/dashboard/modules/job/job_head.py`` and ``common.py``).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from rayop.sim.dashboard.clock import SimClock

__all__ = [
    "TERMINAL",
    "DashboardHttpError",
    "JobTable",
    "JobTimings",
    "SimJob",
    "entrypoint_exit_code",
    "entrypoint_sleep_seconds",
]

TERMINAL = frozenset({"STOPPED", "SUCCEEDED", "FAILED"})
_ID_ALPHABET = "".join(
    c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789" if c not in "IloO0"
)
_EXIT_PATTERNS = (
    re.compile(r"sys\.exit\(\s*(\d+)\s*\)"),
    re.compile(r"""(?:^|[;&|\s'"])exit\s+(\d+)"""),
    re.compile(r"os\._exit\(\s*(\d+)\s*\)"),
)
_SLEEP_PATTERNS = (
    re.compile(r"""(?:^|[;&|\s'"(])sleep\s+(\d+(?:\.\d+)?)"""),
    re.compile(r"time\.sleep\(\s*(\d+(?:\.\d+)?)\s*\)"),
)
_FIELDS = {
    "entrypoint",
    "submission_id",
    "job_id",
    "runtime_env",
    "metadata",
    "entrypoint_num_cpus",
    "entrypoint_num_gpus",
    "entrypoint_memory",
    "entrypoint_resources",
    "entrypoint_label_selector",
}


_STATUS_MESSAGES = {
    "RUNNING": "Job is currently running.",
    "SUCCEEDED": "Job finished successfully.",
    "STOPPED": "Job was intentionally stopped.",
}


class DashboardHttpError(Exception):
    """An error answer of the simulated dashboard: HTTP status and its text/plain body."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"{status}: {text}")
        self.status = status
        self.text = text


def _traceback(*lines: str) -> str:
    head = 'Traceback (most recent call last):\n  File "job_head.py", line 1, in submit_job\n'
    return head + "\n".join(lines)


def _type_error(message: str) -> DashboardHttpError:
    return DashboardHttpError(400, _traceback(f"TypeError: {message}"))


def entrypoint_exit_code(entrypoint: str) -> int:
    """Returns the exit code a simulated entrypoint ends with (0 unless it exits non-zero)."""
    for pattern in _EXIT_PATTERNS:
        match = pattern.search(entrypoint)
        if match:
            return int(match.group(1))
    return 1 if re.search(r"(?:^|[;&|\s])false(?:$|[;&|\s])", entrypoint) else 0


def entrypoint_sleep_seconds(entrypoint: str) -> float | None:
    """Returns how long a simulated entrypoint sleeps (the sum of its ``sleep <n>`` and
    ``time.sleep(<n>)`` calls), or None when it does not sleep."""
    found = [float(m.group(1)) for p in _SLEEP_PATTERNS for m in p.finditer(entrypoint)]
    return sum(found) if found else None


@dataclass(frozen=True, kw_only=True)
class JobTimings:
    """How long simulated jobs take (seconds)."""

    pending: float = 0.2
    """From submission until RUNNING."""
    run: float | None = 1.0
    """From RUNNING until the entrypoint exits, unless it sleeps longer
    (:func:`entrypoint_sleep_seconds`); None: until :meth:`JobTable.finish`."""
    stop_delay: float = 0.1
    """From a stop request until STOPPED."""


@dataclass
class SimJob:
    """One submission and its timeline (times in epoch seconds)."""

    submission_id: str
    entrypoint: str
    submitted_at: float
    start_at: float
    end_at: float | None
    exit_code: int
    ray_job_id: str
    runtime_env: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    resources_requested: bool = False
    stop_at: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def terminal_at(self) -> tuple[float, str] | None:
        """Returns when and how the job ends, if known."""
        if self.stop_at is not None and (self.end_at is None or self.stop_at < self.end_at):
            return self.stop_at, "STOPPED"
        if self.end_at is not None:
            return self.end_at, "SUCCEEDED" if self.exit_code == 0 else "FAILED"
        return None

    def status_at(self, now: float) -> str:
        """Returns the job status at ``now``."""
        end = self.terminal_at()
        if end is not None and now >= end[0]:
            return end[1]
        return "RUNNING" if now >= self.start_at else "PENDING"

    def ran(self, now: float) -> bool:
        """Tells whether the entrypoint started (the driver fields are set from then on)."""
        end = self.terminal_at()
        return now >= self.start_at and (end is None or end[0] >= self.start_at)


class JobTable:
    """The jobs of one simulated dashboard (lost with the dashboard, as with a real head).

    Args:
        clock: Time source.
        timings: Durations of the job phases.
        node_ip: The head pod IP (for driver fields).
        node_seed: Seeds the 56-hex-digit node id.
    """

    def __init__(
        self, *, clock: SimClock, timings: JobTimings, node_ip: str, node_seed: str
    ) -> None:
        self.clock = clock
        self.timings = timings
        self.node_ip = node_ip or "127.0.0.1"
        self.node_id = hashlib.sha224(node_seed.encode()).hexdigest()
        self.jobs: dict[str, SimJob] = {}
        self.submissions = 0
        """Every accepted submission so far (duplicates excluded)."""
        self._drivers = 0

    # -- queries -------------------------------------------------------------------------

    def find(self, job_or_submission_id: str) -> SimJob | None:
        """Finds a job by Ray job id (once its driver ran) or by submission id."""
        now = self.clock.time()
        for job in self.jobs.values():
            if job.ray_job_id == job_or_submission_id and job.ran(now):
                return job
        return self.jobs.get(job_or_submission_id)

    def require(self, job_or_submission_id: str) -> SimJob:
        """Like :meth:`find`, but a missing job is the 404 answer."""
        job = self.find(job_or_submission_id)
        if job is None:
            raise DashboardHttpError(404, f"Job {job_or_submission_id} does not exist")
        return job

    def details(self, job: SimJob) -> dict[str, Any]:
        """Returns the 15-key JobDetails JSON object of ``job`` as of now."""
        now = self.clock.time()
        status = job.status_at(now)
        ran = job.ran(now)
        end = job.terminal_at()
        terminal = status in TERMINAL
        is_python = job.entrypoint.lstrip().startswith("python")
        driver = ran and is_python
        exit_code = job.exit_code if terminal and status != "STOPPED" and ran else None
        return {
            "type": "SUBMISSION",
            "job_id": job.ray_job_id if driver else None,
            "submission_id": job.submission_id,
            "driver_info": (
                {
                    "id": job.ray_job_id,
                    "node_ip_address": self.node_ip,
                    "pid": str(4000 + len(job.ray_job_id)),
                }
                if driver
                else None
            ),
            "status": status,
            "entrypoint": job.entrypoint,
            "message": self._message(job, status),
            "error_type": "JOB_ENTRYPOINT_COMMAND_ERROR" if status == "FAILED" else None,
            "start_time": int(job.submitted_at * 1000),
            "end_time": int(end[0] * 1000) if terminal and end is not None else None,
            "metadata": job.metadata,
            "runtime_env": job.runtime_env,
            "driver_agent_http_address": f"http://{self.node_ip}:52365" if ran else None,
            "driver_node_id": self.node_id if ran else None,
            "driver_exit_code": exit_code,
        }

    def _message(self, job: SimJob, status: str) -> str:
        if status == "PENDING":
            text = "Job has not started yet."
            if job.resources_requested:
                text += (
                    " It may be waiting for resources (CPUs, GPUs, memory, custom resources)"
                    " to become available."
                )
            if job.runtime_env:
                text += " It may be waiting for the runtime environment to be set up."
            return text
        fixed = _STATUS_MESSAGES.get(status)
        if fixed is not None:
            return fixed
        tail = "\n".join(self.logs(job).splitlines()[-10:])
        return (
            f"Job entrypoint command failed with exit code {job.exit_code}, last available "
            f"logs (truncated to 20,000 chars):\n{tail}"
        )

    def logs(self, job: SimJob) -> str:
        """Returns the driver log text so far ("" before the entrypoint ran)."""
        now = self.clock.time()
        if not job.ran(now):
            return ""
        lines = [f"Running entrypoint for job {job.submission_id}: {job.entrypoint}"]
        status = job.status_at(now)
        if status == "SUCCEEDED":
            lines.append("Simulated entrypoint finished.")
        elif status == "FAILED":
            lines.append(f"Simulated entrypoint exited with code {job.exit_code}.")
        elif status == "STOPPED":
            lines.append("Simulated entrypoint received SIGTERM.")
        return "\n".join(lines) + "\n"

    # -- commands ------------------------------------------------------------------------

    def submit(self, body: Any) -> SimJob:
        """Validates a POST /api/jobs/ body and stores the job as PENDING.

        Raises:
            DashboardHttpError: 400 for a bad field, 500 for a duplicate submission id.
        """
        if not isinstance(body, dict):
            raise DashboardHttpError(
                500, "500 Internal Server Error\n\nServer got itself in trouble"
            )
        req = {k: v for k, v in body.items() if v is not None}
        for key in req:
            if key not in _FIELDS:
                raise _type_error(
                    f"JobSubmitRequest.__init__() got an unexpected keyword argument '{key}'"
                )
        _validate(req)
        sid = req.get("submission_id") or req.get("job_id") or self._new_id()
        if sid in self.jobs:
            inner = _traceback(
                f"ValueError: Job with submission_id {sid} already exists. "
                "Please use a different submission_id."
            )
            raise DashboardHttpError(
                500, _traceback(f"RuntimeError: Request failed with status code 400: {inner}", ".")
            )
        now = self.clock.time()
        start = now + max(0.0, self.timings.pending)
        run = self.timings.run
        slept = entrypoint_sleep_seconds(req["entrypoint"])
        if run is not None and slept is not None:
            run = max(run, slept)
        self._drivers += 1
        job = SimJob(
            submission_id=sid,
            entrypoint=req["entrypoint"],
            submitted_at=now,
            start_at=start,
            end_at=None if run is None else start + max(0.0, run),
            exit_code=entrypoint_exit_code(req["entrypoint"]),
            ray_job_id=f"{self._drivers % 256:02x}{self._drivers // 256:06x}",
            runtime_env=req.get("runtime_env"),
            metadata=req.get("metadata"),
            resources_requested=bool(
                req.get("entrypoint_num_cpus")
                or req.get("entrypoint_num_gpus")
                or req.get("entrypoint_memory")
                or req.get("entrypoint_resources")
            ),
        )
        self.jobs[sid] = job
        self.submissions += 1
        return job

    def stop(self, job: SimJob) -> bool:
        """Requests a stop; returns False when the job had already finished."""
        now = self.clock.time()
        if job.status_at(now) in TERMINAL:
            return False
        if job.stop_at is None:
            job.stop_at = now + max(0.0, self.timings.stop_delay)
        return True

    def delete(self, job: SimJob) -> None:
        """Forgets a terminal job.

        Raises:
            DashboardHttpError: 500 when the job has not finished.
        """
        status = job.status_at(self.clock.time())
        if status not in TERMINAL:
            raise DashboardHttpError(
                500,
                _traceback(
                    f"RuntimeError: Attempted to delete job '{job.submission_id}', but it is in a "
                    f"non-terminal state {status}."
                ),
            )
        del self.jobs[job.submission_id]

    def finish(self, job: SimJob, *, exit_code: int = 0) -> None:
        """Makes a running (or pending) job's entrypoint exit now with ``exit_code``."""
        now = self.clock.time()
        if job.status_at(now) in TERMINAL:
            return
        job.start_at = min(job.start_at, now)
        job.end_at = now
        job.exit_code = exit_code

    def _new_id(self) -> str:
        while True:
            sid = "raysubmit_" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(16))
            if sid not in self.jobs:
                return sid


def _type_name(value: Any) -> str:
    return f"<class '{type(value).__name__}'>"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _validate(req: dict[str, Any]) -> None:
    """Applies the JobSubmitRequest type checks (Ray 2.60: ``JobSubmitRequest`` in
    ``python/ray/dashboard/modules/job/common.py``)."""
    if "entrypoint" not in req:
        raise _type_error(
            "JobSubmitRequest.__init__() missing 1 required positional argument: 'entrypoint'"
        )
    for key in ("entrypoint", "submission_id", "job_id"):
        if key in req and not isinstance(req[key], str):
            raise _type_error(f"{key} must be a string, got {_type_name(req[key])}")
    env = req.get("runtime_env")
    if env is not None:
        if not isinstance(env, dict):
            raise _type_error(f"runtime_env must be a dict, got {_type_name(env)}")
        for key in env:
            if not isinstance(key, str):
                raise _type_error(f"runtime_env keys must be strings, got {_type_name(key)}")
    _validate_map(req, "metadata", lambda v: isinstance(v, str), "strings")
    _validate_map(req, "entrypoint_resources", _is_number, "numbers")
    _validate_map(req, "entrypoint_label_selector", lambda v: isinstance(v, str), "strings")
    for key in ("entrypoint_num_cpus", "entrypoint_num_gpus"):
        if key in req and not _is_number(req[key]):
            raise _type_error(f"{key} must be a number, got {_type_name(req[key])}")
    memory = req.get("entrypoint_memory")
    if memory is not None and (not isinstance(memory, int) or isinstance(memory, bool)):
        raise _type_error(f"entrypoint_memory must be an int, got {_type_name(memory)}")


def _validate_map(req: dict[str, Any], key: str, ok: Any, what: str) -> None:
    value = req.get(key)
    if value is None:
        return
    if not isinstance(value, dict):
        raise _type_error(f"{key} must be a dict, got {_type_name(value)}")
    for k, v in value.items():
        if not isinstance(k, str):
            raise _type_error(f"{key} keys must be strings, got {_type_name(k)}")
        if not ok(v):
            raise _type_error(f"{key} values must be {what}, got {_type_name(v)}")
