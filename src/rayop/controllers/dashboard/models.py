"""Typed answers and requests of the Ray dashboard API, with the JSON names KubeRay reads.

Decoding follows KubeRay's Go structs (v1.7.0: ``ray-operator/controllers/ray/utils/types/``
``dashboard_httpclient.go`` and ``serve_api_models.go``, read by Go's ``encoding/json``): unknown
keys are ignored,
``null`` becomes the zero value ("" or 0), ``start_time``/``end_time`` must be non-negative
integers (milliseconds) and ``metadata`` values strings; anything else is a
:class:`DecodeError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rayop.api.rayjob import JobStatus

__all__ = [
    "DecodeError",
    "JobInfo",
    "JobStatus",
    "JobSubmitRequest",
    "ServeApplicationDetails",
    "ServeDeploymentDetails",
    "ServeDetails",
    "is_terminal",
]


class DecodeError(ValueError):
    """A dashboard answer does not have the shape KubeRay decodes."""


_TERMINAL = frozenset({JobStatus.STOPPED, JobStatus.SUCCEEDED, JobStatus.FAILED})


def is_terminal(status: str) -> bool:
    """Tells whether a job status is final (STOPPED, SUCCEEDED or FAILED)."""
    return status in _TERMINAL


def _str(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DecodeError(f"{key} must be a string, got {type(value).__name__}")
    return value


def _uint(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DecodeError(f"{key} must be a non-negative integer, got {value!r}")
    return value


def _object(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DecodeError(f"{what} must be an object")
    return value


@dataclass(frozen=True, kw_only=True)
class JobInfo:
    """GET /api/jobs/<id> (KubeRay's RayJobInfo). Times are epoch milliseconds, 0 when unset."""

    status: str = ""
    message: str = ""
    start_time: int = 0
    end_time: int = 0
    entrypoint: str = ""
    job_id: str = ""
    submission_id: str = ""
    error_type: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    runtime_env: dict[str, Any] = field(default_factory=dict)
    driver_exit_code: int | None = None

    @property
    def terminal(self) -> bool:
        """True when ``status`` is STOPPED, SUCCEEDED or FAILED."""
        return is_terminal(self.status)

    @classmethod
    def from_json(cls, obj: Any) -> JobInfo:
        """Decodes one JobDetails object.

        Raises:
            DecodeError: a field has a type KubeRay could not decode.
        """
        obj = _object(obj, "job info")
        metadata = _object(obj.get("metadata"), "metadata")
        if any(not isinstance(v, str) for v in metadata.values()):
            raise DecodeError("metadata values must be strings")
        error_type = obj.get("error_type")
        exit_code = obj.get("driver_exit_code")
        return cls(
            status=_str(obj, "status"),
            message=_str(obj, "message"),
            start_time=_uint(obj, "start_time"),
            end_time=_uint(obj, "end_time"),
            entrypoint=_str(obj, "entrypoint"),
            job_id=_str(obj, "job_id"),
            submission_id=_str(obj, "submission_id"),
            error_type=str(error_type) if error_type is not None else None,
            metadata=dict(metadata),
            runtime_env=dict(_object(obj.get("runtime_env"), "runtime_env")),
            driver_exit_code=exit_code if isinstance(exit_code, int) else None,
        )


@dataclass(frozen=True, kw_only=True)
class JobSubmitRequest:
    """POST /api/jobs/ body (KubeRay's RayJobRequest); empty fields are left out."""

    entrypoint: str
    submission_id: str = ""
    runtime_env: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    entrypoint_num_cpus: float = 0.0
    entrypoint_num_gpus: float = 0.0
    entrypoint_resources: dict[str, float] | None = None

    def to_json(self) -> dict[str, Any]:
        """Returns the JSON object to send (``entrypoint`` always, the rest when non-empty)."""
        body: dict[str, Any] = {"entrypoint": self.entrypoint}
        if self.runtime_env:
            body["runtime_env"] = self.runtime_env
        if self.metadata:
            body["metadata"] = self.metadata
        if self.entrypoint_resources:
            body["entrypoint_resources"] = self.entrypoint_resources
        if self.submission_id:
            body["submission_id"] = self.submission_id
        if self.entrypoint_num_cpus:
            body["entrypoint_num_cpus"] = self.entrypoint_num_cpus
        if self.entrypoint_num_gpus:
            body["entrypoint_num_gpus"] = self.entrypoint_num_gpus
        return body


@dataclass(frozen=True, kw_only=True)
class ServeDeploymentDetails:
    """One deployment of an application (only name, status and message are used)."""

    name: str = ""
    status: str = ""
    message: str = ""

    @classmethod
    def from_json(cls, obj: Any) -> ServeDeploymentDetails:
        """Decodes a DeploymentDetails object."""
        obj = _object(obj, "deployment")
        return cls(name=_str(obj, "name"), status=_str(obj, "status"), message=_str(obj, "message"))


@dataclass(frozen=True, kw_only=True)
class ServeApplicationDetails:
    """One Serve application as KubeRay reads it."""

    name: str = ""
    status: str = ""
    message: str = ""
    route_prefix: str = ""
    docs_path: str = ""
    deployments: dict[str, ServeDeploymentDetails] = field(default_factory=dict)

    @classmethod
    def from_json(cls, obj: Any) -> ServeApplicationDetails:
        """Decodes an ApplicationDetails object."""
        obj = _object(obj, "application")
        deps = _object(obj.get("deployments"), "deployments")
        return cls(
            name=_str(obj, "name"),
            status=_str(obj, "status"),
            message=_str(obj, "message"),
            route_prefix=_str(obj, "route_prefix"),
            docs_path=_str(obj, "docs_path"),
            deployments={k: ServeDeploymentDetails.from_json(v) for k, v in deps.items()},
        )


@dataclass(frozen=True, kw_only=True)
class ServeDetails:
    """GET /api/serve/applications/ (KubeRay's ServeDetails), keyed by application name."""

    applications: dict[str, ServeApplicationDetails] = field(default_factory=dict)
    deploy_mode: str = ""
    target_capacity: float | None = None

    @property
    def all_running(self) -> bool:
        """KubeRay's readiness rule: at least one application and every one RUNNING."""
        return bool(self.applications) and all(
            a.status == "RUNNING" for a in self.applications.values()
        )

    @classmethod
    def from_json(cls, obj: Any) -> ServeDetails:
        """Decodes a ServeInstanceDetails object."""
        obj = _object(obj, "serve details")
        apps = _object(obj.get("applications"), "applications")
        capacity = obj.get("target_capacity")
        if capacity is not None and not isinstance(capacity, (int, float)):
            raise DecodeError("target_capacity must be a number")
        return cls(
            applications={k: ServeApplicationDetails.from_json(v) for k, v in apps.items()},
            deploy_mode=_str(obj, "deploy_mode"),
            target_capacity=None if capacity is None else float(capacity),
        )
