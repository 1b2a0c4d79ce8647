"""An asyncio client for the Ray dashboard endpoints KubeRay uses (jobs, Serve, health).

:class:`DashboardClient` holds the API methods; where its requests go is a transport
(:mod:`rayop.controllers.dashboard.transport`): the head directly, 2 s per call, or the API
server's services proxy, 10 s per call, so a slow dashboard never holds a reconcile worker for
long (KubeRay #2646). Answers are decoded into the typed models of
:mod:`rayop.controllers.dashboard.models`; failures raise the errors of
:mod:`rayop.controllers.dashboard.errors` (re-exported here) and nothing else.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp
import orjson

from rayop.controllers.dashboard.errors import (
    DUPLICATE_SUBMISSION_MARK,
    DashboardAuthError,
    DashboardDecodeError,
    DashboardError,
    DashboardTimeout,
    DashboardUnavailable,
    JobNotFound,
    SubmissionIdConflict,
    body_text,
)
from rayop.controllers.dashboard.models import (
    DecodeError,
    JobInfo,
    JobSubmitRequest,
    ServeApplicationDetails,
    ServeDetails,
)
from rayop.controllers.dashboard.transport import (
    DIRECT_TIMEOUT,
    PROXY_TIMEOUT,
    DashboardRequest,
    DashboardTransport,
    DirectTransport,
    ProxyTransport,
    ServiceResolver,
)
from rayop.kube.client import KubeClient
from rayop.runtime.decisions import note_wait

__all__ = [
    "AUTH_HEADER",
    "DIRECT_TIMEOUT",
    "PROXY_TIMEOUT",
    "DashboardAuthError",
    "DashboardClient",
    "DashboardDecodeError",
    "DashboardError",
    "DashboardRequest",
    "DashboardTimeout",
    "DashboardTransport",
    "DashboardUnavailable",
    "DirectTransport",
    "JobNotFound",
    "ProxyTransport",
    "SubmissionIdConflict",
]

AUTH_HEADER = "x-ray-authorization"
_T = TypeVar("_T")


def _json_object(decoded: Any) -> dict[str, Any]:
    if not isinstance(decoded, dict):
        raise DecodeError("not a JSON object")
    return decoded


def _job_infos(decoded: Any) -> list[JobInfo]:
    if not isinstance(decoded, list):
        raise DecodeError("not a JSON array")
    return [JobInfo.from_json(item) for item in decoded]


@dataclass(frozen=True)
class _Answer:
    """A 2xx answer of the call named ``what`` (GetJobInfo, ListJobs...)."""

    what: str
    status: int
    body: bytes

    def decoded(self) -> Any:
        """Returns the body as JSON; raises DashboardDecodeError when it is not JSON."""
        try:
            return orjson.loads(self.body)
        except orjson.JSONDecodeError as exc:
            text = body_text(self.body)
            raise DashboardDecodeError(f"{self.what} fail: {text}", body=text) from exc

    def parse(self, parse: Callable[[Any], _T]) -> _T:
        """Returns ``parse`` of the decoded body; its DecodeError becomes DashboardDecodeError."""
        decoded = self.decoded()
        try:
            return parse(decoded)
        except DecodeError as exc:
            raise DashboardDecodeError(f"{self.what} fail: {exc}", status=self.status) from exc


class DashboardClient:
    """Calls one Ray head's dashboard (or its Serve proxy port) over a transport.

    Build it with :meth:`direct` or :meth:`via_proxy`. Every method blocks for at most the
    transport's timeout and raises only :class:`DashboardError` subclasses.

    Args:
        transport: Where requests go.
        token: The cluster's Ray auth token (sent as ``x-ray-authorization: Bearer <token>``).
    """

    def __init__(self, transport: DashboardTransport, *, token: str | None = None) -> None:
        self.transport = transport
        self.token = token

    @classmethod
    def direct(
        cls,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = DIRECT_TIMEOUT,
        session: aiohttp.ClientSession | None = None,
        resolver: ServiceResolver | None = None,
    ) -> DashboardClient:
        """Returns a client for ``http://<host>:<port>`` (2 s per call by default); a
        ``resolver`` maps that address to where it really is (see :data:`ServiceResolver`)."""
        transport = DirectTransport(base_url, timeout=timeout, session=session, resolver=resolver)
        return cls(transport, token=token)

    @classmethod
    def via_proxy(
        cls,
        kube: KubeClient,
        *,
        namespace: str,
        service: str,
        port: str | int = "dashboard",
        token: str | None = None,
        timeout: float = PROXY_TIMEOUT,
    ) -> DashboardClient:
        """Returns a client going through the API server's services proxy (10 s per call)."""
        transport = ProxyTransport(
            kube, namespace=namespace, service=service, port=port, timeout=timeout
        )
        return cls(transport, token=token)

    async def close(self) -> None:
        """Releases the transport's connections."""
        await self.transport.close()

    async def __aenter__(self) -> DashboardClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- plumbing ------------------------------------------------------------------------

    async def _call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        auth: bool = True,
    ) -> tuple[int, bytes]:
        headers: dict[str, str] = {}
        if auth and self.token:
            headers[AUTH_HEADER] = f"Bearer {self.token}"
        if method in ("PUT", "POST", "DELETE"):
            headers["Content-Type"] = "application/json"
        request = DashboardRequest(
            method=method, path=path, params=params, json=json, headers=headers
        )
        limit = self.transport.timeout
        try:
            async with asyncio.timeout(limit):
                status, body = await self.transport.send(request)
        except TimeoutError as exc:
            note_wait(f"dashboard not answering: {request} timed out after {limit:g} s")
            raise request.timed_out(limit) from exc
        except DashboardUnavailable as exc:
            note_wait(f"dashboard not answering: {exc}")
            raise
        if auth and status in (401, 403):
            raise DashboardAuthError(
                f"{request}: {status} {body_text(body)}", status=status, body=body_text(body)
            )
        return status, body

    async def _required(
        self,
        what: str,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        job_id: str | None = None,
    ) -> _Answer:
        """Sends a request and returns its 2xx answer; a 404 raises JobNotFound when about a job."""
        status, body = await self._call(method, path, params=params, json=json)
        if status == 404 and job_id is not None:
            raise JobNotFound(job_id, body=body_text(body))
        return self._answer(what, status, body)

    async def _optional(self, what: str, path: str) -> _Answer | None:
        """GETs ``path``; returns its 2xx answer, or None on 404."""
        status, body = await self._call("GET", path)
        return None if status == 404 else self._answer(what, status, body)

    @staticmethod
    def _answer(what: str, status: int, body: bytes) -> _Answer:
        """Returns a 2xx answer; raises DashboardUnavailable (502-504) or DashboardError."""
        if not 200 <= status < 300:
            cls = DashboardUnavailable if status in (502, 503, 504) else DashboardError
            text = body_text(body)
            if cls is DashboardUnavailable:
                note_wait(f"dashboard not answering: {what}: {status} {text[:200]}")
            raise cls(f"{what} fail: {status} {text}", status=status, body=text)
        return _Answer(what, status, body)

    # -- jobs ----------------------------------------------------------------------------

    async def get_job_info(self, job_id: str) -> JobInfo:
        """GET /api/jobs/<id>: the job's details.

        Raises:
            JobNotFound: 404. DashboardError: any other failure.
        """
        answer = await self._required("GetJobInfo", "GET", f"/api/jobs/{job_id}", job_id=job_id)
        return answer.parse(JobInfo.from_json)

    async def list_jobs(self) -> list[JobInfo]:
        """GET /api/jobs/: every job (an empty list on 404)."""
        answer = await self._optional("ListJobs", "/api/jobs/")
        return [] if answer is None else answer.parse(_job_infos)

    async def submit_job(self, request: JobSubmitRequest) -> str:
        """POST /api/jobs/: submits a job; returns its submission id.

        Raises:
            SubmissionIdConflict: the submission id exists already (KubeRay's duplicate check:
                a 500 whose body says "Please use a different submission_id").
            DashboardError: any other refusal.
        """
        status, body = await self._call("POST", "/api/jobs/", json=request.to_json())
        if status == 500 and DUPLICATE_SUBMISSION_MARK in body.decode("utf-8", errors="replace"):
            raise SubmissionIdConflict(request.submission_id, body=body_text(body))
        decoded = self._answer("SubmitJob", status, body).parse(_json_object)
        return str(decoded.get("submission_id") or decoded.get("job_id") or "")

    async def get_job_log(self, job_id: str) -> str | None:
        """GET /api/jobs/<id>/logs: the driver log text, or None when the job is unknown."""
        answer = await self._optional("GetJobLog", f"/api/jobs/{job_id}/logs")
        return None if answer is None else str(answer.parse(_json_object).get("logs") or "")

    async def stop_job(self, job_id: str) -> bool:
        """POST /api/jobs/<id>/stop; returns whether a stop was requested.

        A job that had already finished answers ``stopped: false``, which is fine; ``false``
        for a job that is not terminal is an error (as in KubeRay).

        Raises:
            JobNotFound: 404. DashboardError: any other failure.
        """
        answer = await self._required("StopJob", "POST", f"/api/jobs/{job_id}/stop", job_id=job_id)
        decoded = answer.decoded()
        stopped = bool(decoded.get("stopped")) if isinstance(decoded, dict) else False
        if not stopped:
            info = await self.get_job_info(job_id)
            if not info.terminal:
                raise DashboardError(
                    f"Failed to stopped job: {job_id}, current status {info.status}",
                    status=answer.status,
                )
        return stopped

    async def delete_job(self, job_id: str) -> None:
        """DELETE /api/jobs/<id> (only terminal jobs can be deleted).

        Raises:
            JobNotFound: 404. DashboardError: the job is not terminal (500) or other failure.
        """
        await self._required("DeleteJob", "DELETE", f"/api/jobs/{job_id}", job_id=job_id)

    # -- serve ---------------------------------------------------------------------------

    async def get_serve_details(self) -> ServeDetails:
        """GET /api/serve/applications/?api_type=declarative."""
        answer = await self._required(
            "GetServeDetails",
            "GET",
            "/api/serve/applications/",
            params={"api_type": "declarative"},
        )
        return answer.parse(ServeDetails.from_json)

    async def get_multi_application_status(self) -> dict[str, ServeApplicationDetails]:
        """Returns the Serve applications by name (GET /api/serve/applications/)."""
        return (await self.get_serve_details()).applications

    async def update_deployments(self, config: Mapping[str, Any]) -> None:
        """PUT /api/serve/applications/ with the serve config (serveConfigV2 as JSON)."""
        await self._required(
            "UpdateDeployments", "PUT", "/api/serve/applications/", json=dict(config)
        )

    # -- health and version ----------------------------------------------------------------

    async def get_version(self) -> dict[str, Any]:
        """GET /api/version: ``{"version", "ray_version", "ray_commit", "session_name"}``."""
        return (await self._required("GetVersion", "GET", "/api/version")).parse(_json_object)

    async def check_gcs_health(self) -> bool:
        """GET /api/gcs_healthz: True when it answers 200 ``success``; no auth header."""
        try:
            status, body = await self._call("GET", "/api/gcs_healthz", auth=False)
        except DashboardUnavailable:
            return False
        return status == 200 and b"success" in body

    async def check_serve_health(self) -> None:
        """GET /-/healthz on a Serve proxy port (use a client built for port "serve").

        Raises:
            DashboardError: not 200; it carries the first 4096 bytes of the body.
        """
        status, body = await self._call("GET", "/-/healthz", auth=False)
        if status != 200:
            raise DashboardError(
                f"serve proxy unhealthy: {status} {body_text(body)}",
                status=status,
                body=body_text(body),
            )
