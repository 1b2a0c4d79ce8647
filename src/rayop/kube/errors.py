"""Exceptions for failed API requests, each keeping the Kubernetes ``Status`` it came from.

Every failure of a :class:`rayop.kube.client.KubeClient` call is an :class:`ApiError`; no aiohttp
or socket exception crosses the client (the transport exception is chained as ``__cause__``).
The tree, chosen by the Status ``reason`` first and the HTTP code second::

    ApiError                      .status (the Status dict), .code, .reason, .message
    ├── ClientError               4xx
    │   ├── BadRequest            400
    │   ├── Unauthorized          401
    │   ├── Forbidden             403
    │   ├── NotFound              404
    │   ├── MethodNotAllowed      405
    │   ├── AlreadyExists         409, reason AlreadyExists (and any non-Status 409 on POST)
    │   ├── Conflict              409, any other reason (stale resourceVersion)
    │   ├── Gone                  410, reason Gone or Expired (too old resourceVersion/continue)
    │   ├── UnsupportedMediaType  415
    │   ├── Invalid               422
    │   └── TooManyRequests       429 (left after the client's 10 retries)
    ├── ServerError               5xx
    │   ├── InternalError         500
    │   ├── ServiceUnavailable    503
    │   └── ServerTimeout         504, or reason Timeout / ServerTimeout
    └── TransportError            no HTTP response: refused, reset, TLS, DNS or credential
        │                         plugin failure (code 0)
        └── RequestTimeout        the client-side per-request timeout expired (code 0)

A :class:`TransportError` carries a synthesised Status with code 0 and reason ``""`` (Kubernetes'
``StatusReasonUnknown``); callers that retry on server trouble should catch
``(ServerError, TransportError)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

_DEFAULT_MESSAGES: dict[int, tuple[str, str]] = {
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    403: ("Forbidden", "the server does not allow access to the requested resource"),
    404: ("NotFound", "the server could not find the requested resource"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    406: (
        "NotAcceptable",
        "the server was unable to respond with a content type that the client supports",
    ),
    409: ("Conflict", "the server reported a conflict"),
    410: ("Gone", "the server no longer has the requested resource"),
    413: ("RequestEntityTooLarge", "the server has rejected the request because it is too large"),
    415: (
        "UnsupportedMediaType",
        "the server was unable to handle the content type of the request",
    ),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    429: (
        "TooManyRequests",
        "the server has received too many requests and has asked us to try again later",
    ),
    500: ("InternalError", "an error on the server has prevented the request from succeeding"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "the server was unable to return a response in the time allotted"),
}


class ApiError(Exception):
    """A request that failed; keeps the Kubernetes Status that describes why.

    Attributes:
        status: The Status object as a dict (decoded from the response, or synthesised by the
            client when the body was not a Status).
    """

    def __init__(self, status: Mapping[str, Any]) -> None:
        self.status: dict[str, Any] = dict(status)
        super().__init__(self.message or self.reason or f"HTTP {self.code}")

    @property
    def code(self) -> int:
        """The HTTP status code (0 when there was no response)."""
        code = self.status.get("code", 0)
        return code if isinstance(code, int) else 0

    @property
    def reason(self) -> str:
        """The Status reason, such as ``"NotFound"`` or ``"Expired"``."""
        return str(self.status.get("reason") or "")

    @property
    def message(self) -> str:
        """The human-readable Status message."""
        return str(self.status.get("message") or "")

    @property
    def details(self) -> dict[str, Any]:
        """The Status details (name, group, kind, causes, retryAfterSeconds); may be empty."""
        details = self.status.get("details")
        return details if isinstance(details, dict) else {}

    @property
    def retry_after(self) -> int | None:
        """The server's ``details.retryAfterSeconds``, if it sent one."""
        value = self.details.get("retryAfterSeconds")
        return value if isinstance(value, int) else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, reason={self.reason!r}, message={self.message!r})"


class ClientError(ApiError):
    """The server refused the request as the client's fault (HTTP 4xx)."""


class ServerError(ApiError):
    """The server failed to handle the request (HTTP 5xx)."""


class BadRequest(ClientError):
    """HTTP 400: the request was malformed."""


class Unauthorized(ClientError):
    """HTTP 401: the credentials were missing or not accepted."""


class Forbidden(ClientError):
    """HTTP 403: the credentials do not allow this request."""


class NotFound(ClientError):
    """HTTP 404: the object or resource does not exist."""


class MethodNotAllowed(ClientError):
    """HTTP 405: the resource does not support the verb."""


class AlreadyExists(ClientError):
    """HTTP 409 on create: an object with that name already exists."""


class Conflict(ClientError):
    """HTTP 409: the write was based on a stale resourceVersion (optimistic concurrency)."""


class Gone(ClientError):
    """HTTP 410: the resourceVersion or continue token is too old (reason Gone or Expired)."""


class UnsupportedMediaType(ClientError):
    """HTTP 415: the server cannot handle the request's content type (e.g. a patch type)."""


class Invalid(ClientError):
    """HTTP 422: the object failed validation; ``details.causes`` names the fields."""


class TooManyRequests(ClientError):
    """HTTP 429: the server kept throttling the request after every client retry."""


class InternalError(ServerError):
    """HTTP 500: an internal server error."""


class ServiceUnavailable(ServerError):
    """HTTP 503: the server cannot handle requests right now."""


class ServerTimeout(ServerError):
    """HTTP 504 (reason Timeout) or reason ServerTimeout: the server gave up on the request."""


class TransportError(ApiError):
    """No HTTP response arrived: the connection failed or was reset, TLS or DNS failed, or the
    credentials could not be obtained (an exec plugin failed)."""


class RequestTimeout(TransportError):
    """The client-side timeout of one request expired before the response arrived."""


_BY_REASON: dict[str, type[ApiError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Gone,
    "Expired": Gone,
    "UnsupportedMediaType": UnsupportedMediaType,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": InternalError,
    "ServiceUnavailable": ServiceUnavailable,
    "Timeout": ServerTimeout,
    "ServerTimeout": ServerTimeout,
}

_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: ServerTimeout,
}


def failure_status(
    code: int, reason: str, message: str, *, details: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Builds a ``Status`` dict with ``status: Failure``; never blocks."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        status["details"] = dict(details)
    return status


def error_class(code: int, reason: str) -> type[ApiError]:
    """Picks the exception class for a Status: by reason if known, else by HTTP code."""
    if reason in _BY_REASON:
        return _BY_REASON[reason]
    if code in _BY_CODE:
        return _BY_CODE[code]
    if 400 <= code < 500:
        return ClientError
    if code >= 500:
        return ServerError
    return ApiError


def _as_status(body: bytes | Mapping[str, Any] | None) -> dict[str, Any] | None:
    if isinstance(body, Mapping):
        return dict(body) if body.get("kind") == "Status" else None
    if not body:
        return None
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        return decoded
    return None


def error_from_response(
    code: int,
    body: bytes | Mapping[str, Any] | None,
    *,
    method: str | None = None,
    retry_after: int | None = None,
) -> ApiError:
    """Turns an HTTP error response into the matching :class:`ApiError`; never blocks.

    A JSON ``Status`` body is kept as is. Any other body (plain text, HTML, empty, or JSON that
    is not a Status, such as API Priority and Fairness' 429) becomes a Status whose reason is
    the one the HTTP code implies; a 409 on POST then becomes AlreadyExists.

    Args:
        code: The HTTP status code.
        body: The raw response body, or an already decoded object.
        method: The HTTP method of the request, upper-case.
        retry_after: The integer ``Retry-After`` header, copied into
            ``details.retryAfterSeconds`` when the Status lacks one.

    Returns:
        The exception to raise (it is not raised here).
    """
    status = _as_status(body)
    if status is None:
        reason, message = _DEFAULT_MESSAGES.get(
            code, ("InternalError" if code >= 500 else "", f"unexpected HTTP status {code}")
        )
        if code == 409 and (method or "").upper() == "POST":
            reason, message = "AlreadyExists", "the server reported that the object already exists"
        text = _body_text(body)
        if text and code not in (429,):
            message = f"{message} ({text})"
        status = failure_status(code, reason, message)
    else:
        status.setdefault("code", code)
    if retry_after is not None:
        details = status.setdefault("details", {})
        if isinstance(details, dict):
            details.setdefault("retryAfterSeconds", retry_after)
    return error_class(int(status.get("code") or code), str(status.get("reason") or ""))(status)


def _body_text(body: bytes | Mapping[str, Any] | None) -> str:
    if isinstance(body, bytes | bytearray):
        return body[:512].decode("utf-8", "replace").strip()
    if isinstance(body, Mapping):
        return orjson.dumps(dict(body))[:512].decode("utf-8", "replace")
    return ""


def transport_error(exc: BaseException, *, timeout: bool = False) -> TransportError:
    """Wraps a connection-level failure (no HTTP response) as a :class:`TransportError`.

    The caller raises it ``from exc``; never blocks.
    """
    message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    cls = RequestTimeout if timeout else TransportError
    return cls(failure_status(0, "", message))
