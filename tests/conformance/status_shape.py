"""Assertions on metav1 Status error bodies (W4)."""

from __future__ import annotations

from typing import Any


def assert_status(code: int, body: Any, want_code: int, reason: str) -> dict[str, Any]:
    """Asserts an HTTP error carried a Kubernetes Status with this code and reason."""
    assert code == want_code, (code, body)
    assert isinstance(body, dict), body
    assert body.get("kind") == "Status" and body.get("apiVersion") == "v1", body
    assert body.get("status") == "Failure" and body.get("code") == want_code, body
    assert body.get("reason") == reason, body
    assert isinstance(body.get("message"), str) and body["message"], body
    return body
