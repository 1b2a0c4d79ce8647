"""One simulated Ray head's HTTP surface: the dashboard (8265), the agent (52365), Serve (8000).

A :class:`SimDashboard` holds the state a real head keeps in memory (jobs, Serve applications) and
answers HTTP requests for it with the paths, JSON shapes, status codes and text bodies of Ray 2.60's
dashboard: its Jobs REST API
(https://docs.ray.io/en/latest/cluster/running-applications/job-submission/rest.html), its Serve
REST API (https://docs.ray.io/en/latest/serve/api/) and the health endpoints KubeRay's probes call
(``ray-operator/controllers/ray/common/pod.go``). It is created by the
:class:`~rayop.sim.dashboard.registry.DashboardRegistry` when a head pod is ready and dropped when
the head goes away, so a new head starts empty.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from rayop.sim.dashboard.clock import SimClock
from rayop.sim.dashboard.job_cli import JobCliEndpoints
from rayop.sim.dashboard.jobs import TERMINAL, DashboardHttpError, JobTable, JobTimings, SimJob
from rayop.sim.dashboard.serve import ServeState

__all__ = ["DashboardConfig", "DashboardFaults", "SimDashboard"]

_PUBLIC = frozenset(
    {
        "",
        "favicon.ico",
        "api/authentication_mode",
        "api/authenticate",
        "api/healthz",
        "api/gcs_healthz",
        "api/local_raylet_healthz",
        "-/healthz",
    }
)
_JSON_CT = "application/json"
_HEALTH_CT = "application/text"


@dataclass(frozen=True, kw_only=True)
class DashboardConfig:
    """Settings of every simulated dashboard (seconds unless stated)."""

    job_pending_seconds: float = 0.2
    """How long a submitted job stays PENDING."""
    job_run_seconds: float | None = 1.0
    """How long a job RUNs before its entrypoint exits; None: until SimDashboard.finish_job."""
    job_stop_seconds: float = 0.1
    """From a stop request until the job is STOPPED."""
    serve_deploy_seconds: float = 0.5
    """How long an application stays DEPLOYING after its config changed."""
    ray_version: str = "2.60.0"
    """Reported by GET /api/version."""
    submitter_poll_seconds: float = 0.2
    """How often a simulated submitter pod re-checks the dashboard and its job."""


@dataclass
class DashboardFaults:
    """Mutable fault knobs (per dashboard, plus one set shared by all in the registry).

    Attributes:
        delay: Seconds every answer is held back (real time, to exercise client timeouts).
        errors: Endpoint name -> HTTP status to answer instead (e.g. {"get_job": 500}).
            Names: version, submit_job, list_jobs, get_job, job_logs, stop_job, delete_job,
            get_serve, put_serve, delete_serve, gcs_healthz, serve_healthz, or "*".
        gcs_healthy: False makes /api/gcs_healthz answer 503 (submitters keep waiting).
        answers: Endpoint name (as in ``errors``, or "*") -> a body answered with 200 and a JSON
            content type instead, unchecked: malformed JSON, wrong types, a wrong shape. The
            request is not acted on (a submit_job answered so submits nothing).
    """

    delay: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    gcs_healthy: bool = True
    answers: dict[str, str] = field(default_factory=dict)


class _InjectedAnswer(Exception):
    """A fault: the endpoint answers ``body`` with 200 instead of acting on the request."""

    def __init__(self, body: str) -> None:
        super().__init__(body)
        self.body = body


def _text(status: int, body: str, content_type: str = "text/plain") -> web.Response:
    return web.Response(status=status, text=body, content_type=content_type, charset="utf-8")


def _json(body: Any) -> web.Response:
    return web.Response(status=200, text=json.dumps(body), content_type=_JSON_CT, charset="utf-8")


def _fault_body(endpoint: str, status: int, tail: str) -> str:
    if status == 404 and endpoint in ("get_job", "job_logs", "stop_job", "delete_job"):
        return f"Job {tail.split('/')[2] if tail.count('/') >= 2 else ''} does not exist"
    if status == 503 and endpoint == "get_serve":
        return (
            "Failed to get a response from the controller. The GCS may be down, please retry "
            "later: injected fault"
        )
    if status == 503 and endpoint == "serve_healthz":
        return "Route table is not populated yet."
    if status >= 500:
        return "Traceback (most recent call last):\nRuntimeError: injected fault"
    return f"{status}: injected fault"


class SimDashboard:
    """The in-memory state and HTTP handlers of one simulated head node.

    Args:
        namespace, cluster, pod_name, pod_uid, pod_ip: Which head this is.
        token: The cluster's auth token when it runs with ``RAY_AUTH_MODE=token``.
        config: Timings; clock: time source; shared_faults: the registry-wide fault knobs.
        on_submit: Called with (dashboard, job) after each accepted submission.
    """

    def __init__(
        self,
        *,
        namespace: str,
        cluster: str,
        pod_name: str,
        pod_uid: str,
        pod_ip: str,
        token: str | None,
        config: DashboardConfig,
        clock: SimClock,
        shared_faults: DashboardFaults | None = None,
        on_submit: Callable[[SimDashboard, SimJob], None] | None = None,
    ) -> None:
        self.namespace, self.cluster = namespace, cluster
        self.pod_name, self.pod_uid, self.pod_ip = pod_name, pod_uid, pod_ip
        self.token = token
        self.config = config
        self.clock = clock
        self.faults = DashboardFaults()
        self._shared = shared_faults or DashboardFaults()
        self._on_submit = on_submit
        self.restarts = 0
        timings = JobTimings(
            pending=config.job_pending_seconds,
            run=config.job_run_seconds,
            stop_delay=config.job_stop_seconds,
        )
        self.jobs = JobTable(clock=clock, timings=timings, node_ip=pod_ip, node_seed=pod_uid)
        self.cli = JobCliEndpoints(self.jobs, clock, pod_name)
        self.serve = ServeState(
            clock=clock,
            deploy_seconds=config.serve_deploy_seconds,
            node_id=self.jobs.node_id,
            node_ip=pod_ip,
        )
        self.closed = False

    # -- in-process API (tests and the simulated submitter) ------------------------------

    def submit_job(self, body: dict[str, Any]) -> SimJob:
        """Submits like POST /api/jobs/ (raises DashboardHttpError on a refusal)."""
        job = self.jobs.submit(body)
        if self._on_submit is not None:
            self._on_submit(self, job)
        return job

    def job_status(self, job_or_submission_id: str) -> str | None:
        """Returns the job's status now, or None when no such job exists."""
        job = self.jobs.find(job_or_submission_id)
        return None if job is None else job.status_at(self.clock.time())

    def finish_job(self, submission_id: str, *, exit_code: int = 0) -> None:
        """Makes the job's entrypoint exit now with ``exit_code``."""
        self.jobs.finish(self.jobs.require(submission_id), exit_code=exit_code)

    def gcs_healthy(self) -> bool:
        """Tells whether /api/gcs_healthz answers success."""
        return not self.closed and self.faults.gcs_healthy and self._shared.gcs_healthy

    # -- HTTP ----------------------------------------------------------------------------

    async def handle(self, kind: str, tail: str, request: web.Request) -> web.StreamResponse:
        """Answers one request for ``kind`` ("dashboard", "serve" or "agent"); blocks for delays."""
        delay = max(self.faults.delay, self._shared.delay)
        if delay > 0:
            await asyncio.sleep(delay)
        tail = tail.lstrip("/")
        try:
            if kind == "serve":
                return self._serve_port(tail, request)
            if kind == "agent":
                return self._agent_port(tail)
            denied = self._check_auth(tail, request)
            if denied is not None:
                return denied
            return await self._dashboard_port(tail, request)
        except DashboardHttpError as err:
            return _text(err.status, err.text)
        except _InjectedAnswer as answer:
            return _text(200, answer.body, _JSON_CT)

    def _injected(self, endpoint: str, tail: str) -> None:
        for faults in (self.faults, self._shared):
            status = faults.errors.get(endpoint) or faults.errors.get("*")
            if status:
                raise DashboardHttpError(status, _fault_body(endpoint, status, tail))
            body = faults.answers.get(endpoint, faults.answers.get("*"))
            if body is not None:
                raise _InjectedAnswer(body)

    def _check_auth(self, tail: str, request: web.Request) -> web.Response | None:
        if not self.token or tail in _PUBLIC or tail.startswith("static/"):
            return None
        cred = request.headers.get("Authorization") or request.headers.get("X-Ray-Authorization")
        if cred is None:
            cookie = request.cookies.get("ray-authentication-token")
            cred = f"Bearer {cookie}" if cookie is not None else None
        if cred is None:
            return _text(401, "Unauthorized: Missing authentication token")
        if not cred.startswith("Bearer ") or not hmac.compare_digest(cred[7:].strip(), self.token):
            return _text(403, "Forbidden: Invalid authentication token")
        return None

    async def _dashboard_port(self, tail: str, request: web.Request) -> web.StreamResponse:
        method = request.method
        parts = tail.split("/")
        if tail == "" and method == "GET":
            return self.cli.page()
        if len(parts) == 4 and parts[:2] == ["api", "packages"]:
            return await self.cli.package(method, parts[2], parts[3], request)
        if len(parts) == 5 and parts[:2] == ["api", "jobs"] and parts[3:] == ["logs", "tail"]:
            return await self.cli.tail_logs(parts[2], request)
        if tail == "api/gcs_healthz" and method == "GET":
            self._injected("gcs_healthz", tail)
            if self.gcs_healthy():
                return _text(200, "success", _HEALTH_CT)
            return _text(503, "503: Health check failed", _HEALTH_CT)
        if tail == "api/local_raylet_healthz" and method == "GET":
            return _text(200, "success", _HEALTH_CT)
        if tail == "api/version" and method == "GET":
            self._injected("version", tail)
            return _json(
                {
                    "version": "4",
                    "ray_version": self.config.ray_version,
                    "ray_commit": "b7f4259",
                    "session_name": f"session_sim_{self.pod_uid[:8]}",
                }
            )
        if tail == "api/jobs/":
            return await self._jobs_collection(method, request)
        if len(parts) >= 3 and parts[:2] == ["api", "jobs"] and parts[2]:
            return self._job_item(method, parts[2], "/".join(parts[3:]), tail)
        if tail == "api/serve/applications/":
            return await self._serve_api(method, request, tail)
        return _text(404, "404: Not Found")

    async def _jobs_collection(self, method: str, request: web.Request) -> web.Response:
        if method == "GET":
            self._injected("list_jobs", "api/jobs/")
            return _json([self.jobs.details(j) for j in self.jobs.jobs.values()])
        if method == "POST":
            self._injected("submit_job", "api/jobs/")
            try:
                body = json.loads(await request.read() or b"null")
            except ValueError:
                return _text(500, "500 Internal Server Error\n\nServer got itself in trouble")
            job = self.submit_job(body)
            return _json({"job_id": job.submission_id, "submission_id": job.submission_id})
        return _text(405, "405: Method Not Allowed")

    def _job_item(self, method: str, job_id: str, sub: str, tail: str) -> web.Response:
        endpoint = {
            ("GET", ""): "get_job",
            ("DELETE", ""): "delete_job",
            ("GET", "logs"): "job_logs",
            ("POST", "stop"): "stop_job",
        }.get((method, sub))
        if endpoint is None:
            return _text(
                404 if sub not in ("", "logs", "stop") else 405,
                "404: Not Found" if sub not in ("", "logs", "stop") else "405: Method Not Allowed",
            )
        self._injected(endpoint, tail)
        job = self.jobs.require(job_id)
        if endpoint == "get_job":
            return _json(self.jobs.details(job))
        if endpoint == "job_logs":
            return _json({"logs": self.jobs.logs(job)})
        if endpoint == "stop_job":
            return _json({"stopped": self.jobs.stop(job)})
        self.jobs.delete(job)
        return _json({"deleted": True})

    async def _serve_api(self, method: str, request: web.Request, tail: str) -> web.Response:
        if method == "GET":
            self._injected("get_serve", tail)
            return _json(self.serve.details(request.query.get("api_type")))
        if method == "PUT":
            self._injected("put_serve", tail)
            try:
                body = json.loads(await request.read() or b"null")
            except ValueError:
                return _text(500, "500 Internal Server Error\n\nServer got itself in trouble")
            self.serve.put(body)
            return web.Response(status=200)
        if method == "DELETE":
            self._injected("delete_serve", tail)
            self.serve.shutdown()
            return web.Response(status=200)
        return _text(405, "405: Method Not Allowed")

    def _serve_port(self, tail: str, request: web.Request) -> web.Response:
        routes = self.serve.routes()
        if tail == "-/healthz":
            self._injected("serve_healthz", tail)
            if routes:
                return _text(200, "success")
            return _text(503, "Route table is not populated yet.")
        if tail == "-/routes":
            if not routes:
                return _text(503, "Route table is not populated yet.")
            return web.Response(
                status=200, text=json.dumps(routes, separators=(",", ":")), content_type=_JSON_CT
            )
        path = "/" + tail
        best = max(
            (p for p in routes if path == p or path.startswith(p.rstrip("/") + "/")),
            key=len,
            default=None,
        )
        if best is None:
            return _text(
                404, f"Path '{path}' not found. Ping http://.../-/routes for available routes."
            )
        app = self.serve.apps.get(routes[best])
        if app is None or self.serve.app_status(app) != "RUNNING":
            return _text(503, "No replicas are available yet.")
        return _text(200, f"simulated response from application {routes[best]!r}")

    def _agent_port(self, tail: str) -> web.Response:
        if tail == "api/local_raylet_healthz":
            return _text(200, "success", _HEALTH_CT)
        if tail == "api/healthz":
            return _text(200, "raylet: success\ngcs: success", _HEALTH_CT)
        return _text(404, "404: Not Found")

    def summary(self) -> dict[str, Any]:
        """Returns job statuses and application statuses now (for logs and tests)."""
        now = self.clock.time()
        return {
            "jobs": {sid: j.status_at(now) for sid, j in self.jobs.jobs.items()},
            "applications": {a.name: self.serve.app_status(a) for a in self.serve.apps.values()},
            "terminal": sorted(
                s for s, j in self.jobs.jobs.items() if j.status_at(now) in TERMINAL
            ),
        }
