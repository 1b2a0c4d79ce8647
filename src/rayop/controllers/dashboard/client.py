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
from collections.abc import Mapping
from types import TracebackType
from typing import Any

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
    DashboardTransport,
    DirectTransport,
    ProxyTransport,
)
from rayop.kube.client import KubeClient

__all__ = [
    "AUTH_HEADER",
    "DIRECT_TIMEOUT",
    "PROXY_TIMEOUT",
    "DashboardAuthError",
    "DashboardClient",
    "DashboardDecodeError",
    "DashboardError",
    "DashboardTimeout",
    "DashboardTransport",
    "DashboardUnavailable",
    "DirectTransport",
    "JobNotFound",
    "ProxyTransport",
    "SubmissionIdConflict",
]

AUTH_HEADER = "x-ray-authorization"


def _decode(body: bytes, what: str) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise DashboardDecodeError(f"{what} fail: {body_text(body)}", body=body_text(body)) from exc


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
    ) -> DashboardClient:
        """Returns a client for ``http://<host>:<port>`` (2 s per call by default)."""
        return cls(DirectTransport(base_url, timeout=timeout, session=session), token=token)

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

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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
        limit = self.transport.timeout
        try:
            async with asyncio.timeout(limit):
                status, body = await self.transport.send(
                    method, path, params=params, json=json, headers=headers
                )
        except TimeoutError as exc:
            raise DashboardTimeout(f"{method} {path}: timed out after {limit}s") from exc
        if auth and status in (401, 403):
            raise DashboardAuthError(
                f"{method} {path}: {status} {body_text(body)}", status=status, body=body_text(body)
            )
        return status, body

    @staticmethod
    def _fail(what: str, status: int, body: bytes) -> DashboardError:
        cls = DashboardUnavailable if status in (502, 503, 504) else DashboardError
        return cls(f"{what} fail: {status} {body_text(body)}", status=status, body=body_text(body))

    # -- jobs ----------------------------------------------------------------------------

    async def get_job_info(self, job_id: str) -> JobInfo:
        """GET /api/jobs/<id>: the job's details.

        Raises:
            JobNotFound: 404. DashboardError: any other failure.
        """
        status, body = await self._call("GET", f"/api/jobs/{job_id}")
        if status == 404:
            raise JobNotFound(job_id, body=body_text(body))
        if not 200 <= status < 300:
            raise self._fail("GetJobInfo", status, body)
        try:
            return JobInfo.from_json(_decode(body, "GetJobInfo"))
        except DecodeError as exc:
            raise DashboardDecodeError(f"GetJobInfo fail: {exc}", status=status) from exc

    async def list_jobs(self) -> list[JobInfo]:
        """GET /api/jobs/: every job (an empty list on 404)."""
        status, body = await self._call("GET", "/api/jobs/")
        if status == 404:
            return []
        if not 200 <= status < 300:
            raise self._fail("ListJobs", status, body)
        decoded = _decode(body, "ListJobs")
        if not isinstance(decoded, list):
            raise DashboardDecodeError("ListJobs fail: not a JSON array", status=status)
        try:
            return [JobInfo.from_json(item) for item in decoded]
        except DecodeError as exc:
            raise DashboardDecodeError(f"ListJobs fail: {exc}", status=status) from exc

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
        if not 200 <= status < 300:
            raise self._fail("SubmitJob", status, body)
        decoded = _decode(body, "SubmitJob")
        if not isinstance(decoded, dict):
            raise DashboardDecodeError("SubmitJob fail: not a JSON object", status=status)
        return str(decoded.get("submission_id") or decoded.get("job_id") or "")

    async def get_job_log(self, job_id: str) -> str | None:
        """GET /api/jobs/<id>/logs: the driver log text, or None when the job is unknown."""
        status, body = await self._call("GET", f"/api/jobs/{job_id}/logs")
        if status == 404:
            return None
        if not 200 <= status < 300:
            raise self._fail("GetJobLog", status, body)
        decoded = _decode(body, "GetJobLog")
        if not isinstance(decoded, dict):
            raise DashboardDecodeError("GetJobLog fail: not a JSON object", status=status)
        return str(decoded.get("logs") or "")

    async def stop_job(self, job_id: str) -> bool:
        """POST /api/jobs/<id>/stop; returns whether a stop was requested.

        A job that had already finished answers ``stopped: false``, which is fine; ``false``
        for a job that is not terminal is an error (as in KubeRay).

        Raises:
            JobNotFound: 404. DashboardError: any other failure.
        """
        status, body = await self._call("POST", f"/api/jobs/{job_id}/stop")
        if status == 404:
            raise JobNotFound(job_id, body=body_text(body))
        if not 200 <= status < 300:
            raise self._fail("StopJob", status, body)
        decoded = _decode(body, "StopJob")
        stopped = bool(decoded.get("stopped")) if isinstance(decoded, dict) else False
        if not stopped:
            info = await self.get_job_info(job_id)
            if not info.terminal:
                raise DashboardError(
                    f"Failed to stopped job: {job_id}, current status {info.status}", status=status
                )
        return stopped

    async def delete_job(self, job_id: str) -> None:
        """DELETE /api/jobs/<id> (only terminal jobs can be deleted).

        Raises:
            JobNotFound: 404. DashboardError: the job is not terminal (500) or other failure.
        """
        status, body = await self._call("DELETE", f"/api/jobs/{job_id}")
        if status == 404:
            raise JobNotFound(job_id, body=body_text(body))
        if not 200 <= status < 300:
            raise self._fail("DeleteJob", status, body)

    # -- serve ---------------------------------------------------------------------------

    async def get_serve_details(self) -> ServeDetails:
        """GET /api/serve/applications/?api_type=declarative."""
        status, body = await self._call(
            "GET", "/api/serve/applications/", params={"api_type": "declarative"}
        )
        if not 200 <= status < 300:
            raise self._fail("GetServeDetails", status, body)
        try:
            return ServeDetails.from_json(_decode(body, "GetServeDetails"))
        except DecodeError as exc:
            raise DashboardDecodeError(f"GetServeDetails fail: {exc}", status=status) from exc

    async def get_multi_application_status(self) -> dict[str, ServeApplicationDetails]:
        """Returns the Serve applications by name (GET /api/serve/applications/)."""
        return (await self.get_serve_details()).applications

    async def update_deployments(self, config: Mapping[str, Any]) -> None:
        """PUT /api/serve/applications/ with the serve config (serveConfigV2 as JSON)."""
        status, body = await self._call("PUT", "/api/serve/applications/", json=dict(config))
        if not 200 <= status < 300:
            raise self._fail("UpdateDeployments", status, body)

    # -- health and version ----------------------------------------------------------------

    async def get_version(self) -> dict[str, Any]:
        """GET /api/version: ``{"version", "ray_version", "ray_commit", "session_name"}``."""
        status, body = await self._call("GET", "/api/version")
        if not 200 <= status < 300:
            raise self._fail("GetVersion", status, body)
        decoded = _decode(body, "GetVersion")
        if not isinstance(decoded, dict):
            raise DashboardDecodeError("GetVersion fail: not a JSON object", status=status)
        return decoded

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
