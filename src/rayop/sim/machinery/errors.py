"""metav1 Status error bodies, as kube-apiserver sends them, and the exception that carries one."""

from __future__ import annotations

from typing import Any

__all__ = [
    "StatusError",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "forbidden",
    "internal_error",
    "invalid",
    "method_not_allowed",
    "not_found",
    "service_unavailable",
    "status_body",
    "success_status",
    "timeout",
    "too_many_requests",
    "unauthorized",
    "unsupported_media_type",
]


def status_body(
    code: int,
    reason: str,
    message: str,
    *,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Builds a failure ``Status`` dict (W4)."""
    body = _status("Failure", message=message, reason=reason, code=code)
    if details:
        body["details"] = details
    return body


def _status(outcome: str, **fields: Any) -> dict[str, Any]:
    """Returns a metav1 ``Status`` dict with ``status: <outcome>`` followed by ``fields``."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": outcome, **fields}


class StatusError(Exception):
    """An API error carrying the metav1 Status to send back.

    Attributes:
        code: The HTTP status code.
        status: The Status dict.
        headers: Extra HTTP headers (for example Retry-After).
    """

    def __init__(self, status: dict[str, Any], *, headers: dict[str, str] | None = None) -> None:
        super().__init__(status.get("message", ""))
        self.status = status
        self.code: int = int(status["code"])
        self.headers = headers or {}

    @property
    def reason(self) -> str:
        """The Status reason (NotFound, Conflict...)."""
        return str(self.status.get("reason", ""))


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "kind": kind}
    if group:
        d["group"] = group
    return d


def not_found(resource: str, group: str, name: str) -> StatusError:
    """404 NotFound: ``<resource>[.<group>] "<name>" not found``."""
    msg = f'{_qualified(resource, group)} "{name}" not found'
    return StatusError(status_body(404, "NotFound", msg, details=_details(name, group, resource)))


def already_exists(resource: str, group: str, name: str) -> StatusError:
    """409 AlreadyExists."""
    msg = f'{_qualified(resource, group)} "{name}" already exists'
    return StatusError(
        status_body(409, "AlreadyExists", msg, details=_details(name, group, resource))
    )


def conflict(resource: str, group: str, name: str, reason_text: str | None = None) -> StatusError:
    """409 Conflict, as for a stale resourceVersion (O1)."""
    text = reason_text or (
        "the object has been modified; please apply your changes to the latest version and try again"
    )
    msg = f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {text}'
    return StatusError(status_body(409, "Conflict", msg, details=_details(name, group, resource)))


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> StatusError:
    """422 Invalid with causes.

    Args:
        kind: The object's Kind.
        group: The API group ("" for core).
        name: The object's name.
        causes: ``(field, cause_type, message)`` triples; cause_type is e.g. ``FieldValueInvalid``.
    """
    parts = [f"{f}: {m}" if f else m for f, _, m in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    msg = f'{_qualified(kind, group)} "{name}" is invalid: {joined}'
    details = _details(name, group, kind)
    details["causes"] = [{"reason": t, "message": m, "field": f} for f, t, m in causes]
    return StatusError(status_body(422, "Invalid", msg, details=details))


def expired(message: str) -> StatusError:
    """410 Expired (too old resourceVersion or continue token)."""
    return StatusError(status_body(410, "Expired", message))


def bad_request(message: str) -> StatusError:
    """400 BadRequest."""
    return StatusError(status_body(400, "BadRequest", message))


def forbidden(message: str, *, resource: str = "", group: str = "", name: str = "") -> StatusError:
    """403 Forbidden."""
    details = _details(name, group, resource) if resource else None
    return StatusError(status_body(403, "Forbidden", message, details=details))


def unauthorized() -> StatusError:
    """401 Unauthorized."""
    return StatusError(status_body(401, "Unauthorized", "Unauthorized"))


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> StatusError:
    """405 MethodNotAllowed."""
    return StatusError(status_body(405, "MethodNotAllowed", message))


def unsupported_media_type(content_type: str) -> StatusError:
    """415 UnsupportedMediaType."""
    msg = f"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {content_type})"
    return StatusError(status_body(415, "UnsupportedMediaType", msg))


def too_many_requests(retry_after: int) -> StatusError:
    """429 TooManyRequests with a Retry-After header and retryAfterSeconds."""
    body = status_body(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        details={"retryAfterSeconds": retry_after},
    )
    return StatusError(body, headers={"Retry-After": str(retry_after)})


def internal_error(message: str) -> StatusError:
    """500 InternalError."""
    return StatusError(
        status_body(
            500,
            "InternalError",
            f"Internal error occurred: {message}",
            details={"causes": [{"message": message}]},
        )
    )


def service_unavailable(message: str) -> StatusError:
    """503 ServiceUnavailable."""
    return StatusError(status_body(503, "ServiceUnavailable", message))


def timeout(message: str) -> StatusError:
    """504 Timeout."""
    return StatusError(status_body(504, "Timeout", message))


def success_status(resource: str, group: str, name: str, uid: str) -> dict[str, Any]:
    """A ``Status`` with ``status: Success`` as sent for some DELETE responses."""
    return _status("Success", details={**_details(name, group, resource), "uid": uid})
