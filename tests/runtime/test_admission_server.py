"""The admission webhook server: AdmissionReview v1 over HTTPS with a self-managed certificate."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp

from rayop.runtime.serving.admission_server import AdmissionServer, AdmissionVerdict
from rayop.runtime.serving.serving_cert import ca_bundle, ensure_serving_cert, service_hosts


def _refuse_odd(request: Mapping[str, Any]) -> AdmissionVerdict:
    if int((request.get("object") or {}).get("n", 0)) % 2:
        return AdmissionVerdict(allowed=False, status={"code": 422, "message": "odd"})
    return AdmissionVerdict(allowed=True)


def _broken(request: Mapping[str, Any]) -> AdmissionVerdict:
    raise RuntimeError("boom")


def _review(uid: str, n: int) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": uid, "operation": "CREATE", "object": {"n": n}},
    }


async def test_reviews_are_answered_over_tls(tmp_path: Path) -> None:
    cert_dir = ensure_serving_cert(tmp_path, ("localhost", "127.0.0.1"))
    assert ca_bundle(cert_dir)
    server = AdmissionServer({"/odd": _refuse_odd, "/broken": _broken}, cert_dir, "127.0.0.1", 0)
    await server.start()
    trust = ssl.create_default_context(cafile=str(cert_dir / "tls.crt"))
    base = f"https://localhost:{server.port}"
    try:
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{base}/odd", json=_review("u1", 2), ssl=trust) as resp:
                assert resp.status == 200
                assert await resp.json() == {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": {"uid": "u1", "allowed": True},
                }
            async with session.post(f"{base}/odd", json=_review("u2", 3), ssl=trust) as resp:
                response = (await resp.json())["response"]
                assert response == {
                    "uid": "u2",
                    "allowed": False,
                    "status": {"code": 422, "message": "odd"},
                }
            async with session.post(f"{base}/broken", json=_review("u3", 0), ssl=trust) as resp:
                response = (await resp.json())["response"]
                assert response["allowed"] is False and response["status"]["code"] == 500
            async with session.post(f"{base}/odd", data=b"{}", ssl=trust) as resp:
                assert resp.status == 400
    finally:
        await server.stop()


def test_the_certificate_is_made_once_for_the_service_names(tmp_path: Path) -> None:
    hosts = service_hosts("webhook-service", "ray-system")
    assert hosts[2] == "webhook-service.ray-system.svc"
    ensure_serving_cert(tmp_path, hosts)
    first = (tmp_path / "tls.crt").read_bytes()
    ensure_serving_cert(tmp_path, hosts)
    assert (tmp_path / "tls.crt").read_bytes() == first
    context = ssl.create_default_context(cafile=str(tmp_path / "tls.crt"))
    assert context.get_ca_certs()[0]["subject"] == ((("commonName", "webhook-service"),),)
