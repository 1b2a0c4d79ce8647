"""The errors of the Ray dashboard client; no aiohttp or kube exception escapes it.

::

    DashboardError                 any failed call (.status, .body)
    +-- DashboardUnavailable       no answer from the dashboard (refused, proxy 503, ...)
    |   +-- DashboardTimeout       the call's timeout expired
    +-- DashboardAuthError         401 / 403 (token missing or wrong)
    +-- DashboardDecodeError       the body is not the JSON KubeRay decodes
    +-- JobNotFound                404 for a job (.job_id)
    +-- SubmissionIdConflict       the submission id is already used (.submission_id)
"""

from __future__ import annotations

__all__ = [
    "DUPLICATE_SUBMISSION_MARK",
    "DashboardAuthError",
    "DashboardDecodeError",
    "DashboardError",
    "DashboardTimeout",
    "DashboardUnavailable",
    "JobNotFound",
    "SubmissionIdConflict",
    "body_text",
]

DUPLICATE_SUBMISSION_MARK = "Please use a different submission_id"
"""What the dashboard's 500 answer says when a submission id is reused."""
ERROR_BODY_LIMIT = 4096
"""At most this many bytes of an answer are kept in an error."""


def body_text(body: bytes) -> str:
    """Returns the first :data:`ERROR_BODY_LIMIT` bytes of an answer as text."""
    return body[:ERROR_BODY_LIMIT].decode("utf-8", errors="replace")


class DashboardError(Exception):
    """A dashboard call failed.

    Attributes:
        status: The HTTP status, or None when no answer arrived.
        body: The answer's text (possibly truncated), "" when none.
    """

    def __init__(self, message: str, *, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class DashboardUnavailable(DashboardError):
    """No answer from the dashboard itself (connection refused, no endpoints, proxy error)."""


class DashboardTimeout(DashboardUnavailable):
    """The call's timeout expired before the answer arrived."""


class DashboardAuthError(DashboardError):
    """The dashboard refused the token (401 missing, 403 invalid)."""


class DashboardDecodeError(DashboardError):
    """A 2xx answer whose body is not the expected JSON."""


class JobNotFound(DashboardError):
    """The dashboard has no job with this id (404)."""

    def __init__(self, job_id: str, *, body: str = "") -> None:
        super().__init__(f"Job {job_id} does not exist on the cluster", status=404, body=body)
        self.job_id = job_id


class SubmissionIdConflict(DashboardError):
    """A job with this submission id already exists (the dashboard's 500 duplicate answer)."""

    def __init__(self, submission_id: str, *, body: str = "") -> None:
        super().__init__(
            f"submission ID '{submission_id}' already used, {DUPLICATE_SUBMISSION_MARK}",
            status=500,
            body=body,
        )
        self.submission_id = submission_id
