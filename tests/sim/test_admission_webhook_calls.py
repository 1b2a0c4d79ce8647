"""The embedded plane calls validating webhooks as kube-apiserver does (messages, failurePolicy)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from rayop.runtime.serving.admission_server import AdmissionServer, AdmissionVerdict
from rayop.runtime.serving.serving_cert import ca_bundle, ensure_serving_cert
from rayop.sim.admission.webhooks import AdmissionAttributes, call_validating_webhooks
from rayop.sim.machinery.errors import StatusError


def _no_odd(request: Mapping[str, Any]) -> AdmissionVerdict:
    if int(((request.get("object") or {}).get("spec") or {}).get("n", 0)) % 2:
        status = {"code": 422, "reason": "Invalid", "message": 'Widget "w" is invalid: odd'}
        return AdmissionVerdict(allowed=False, status=status)
    return AdmissionVerdict(allowed=True)


@pytest.fixture
async def webhook(tmp_path: Path) -> AsyncIterator[tuple[str, str]]:
    cert_dir = ensure_serving_cert(tmp_path, ("localhost", "127.0.0.1"))
    server = AdmissionServer({"/validate": _no_odd}, cert_dir, "127.0.0.1", 0)
    await server.start()
    try:
        yield f"https://127.0.0.1:{server.port}/validate", ca_bundle(cert_dir)
    finally:
        await server.stop()


def _config(url: str, ca: str, *, policy: str = "Fail", resources: Any = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "c"},
        "webhooks": [
            {
                "name": "vwidget.example.com",
                "clientConfig": {"url": url, "caBundle": ca},
                "failurePolicy": policy,
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "rules": [
                    {
                        "apiGroups": ["example.com"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": resources or ["widgets"],
                    }
                ],
            }
        ],
    }


def _attrs(n: int, operation: str = "CREATE") -> AdmissionAttributes:
    return AdmissionAttributes(
        group="example.com",
        version="v1",
        resource="widgets",
        kind="Widget",
        operation=operation,
        namespace="default",
        name="w",
        obj={"metadata": {"name": "w"}, "spec": {"n": n}},
    )


async def test_an_allowed_request_goes_on_and_a_refusal_is_the_webhooks_status(
    webhook: tuple[str, str],
) -> None:
    url, ca = webhook
    await call_validating_webhooks([_config(url, ca)], _attrs(2))
    with pytest.raises(StatusError) as refused:
        await call_validating_webhooks([_config(url, ca)], _attrs(3))
    assert refused.value.code == 422
    assert refused.value.status["message"] == (
        'admission webhook "vwidget.example.com" denied the request: Widget "w" is invalid: odd'
    )


async def test_requests_the_rules_do_not_name_are_not_sent(webhook: tuple[str, str]) -> None:
    url, ca = webhook
    await call_validating_webhooks([_config(url, ca, resources=["gadgets"])], _attrs(3))
    await call_validating_webhooks([_config(url, ca)], _attrs(3, "DELETE"))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_webhook_that_is_down_fails_closed_unless_told_to_ignore(tmp_path: Path) -> None:
    url = f"https://127.0.0.1:{_closed_port()}/validate"
    ca = ca_bundle(ensure_serving_cert(tmp_path, ("127.0.0.1",)))
    with pytest.raises(StatusError) as failed:
        await call_validating_webhooks([_config(url, ca)], _attrs(2))
    assert failed.value.code == 500
    assert failed.value.status["message"].startswith(
        'Internal error occurred: failed calling webhook "vwidget.example.com": failed to call '
        f'webhook: Post "{url}?timeout=10s": dial tcp 127.0.0.1:'
    )
    await call_validating_webhooks([_config(url, ca, policy="Ignore")], _attrs(2))


async def test_an_untrusted_certificate_fails_the_call(
    webhook: tuple[str, str], tmp_path: Path
) -> None:
    url, _ = webhook
    other = ca_bundle(ensure_serving_cert(tmp_path / "other", ("127.0.0.1",)))
    with pytest.raises(StatusError) as failed:
        await call_validating_webhooks([_config(url, other)], _attrs(2))
    assert "tls: failed to verify certificate" in failed.value.status["message"]
