"""The validating webhooks as deployed: deploy/webhooks (kustomize) and the chart's webhook.enabled.

Both register the operator's four webhooks exactly as ``webhook_configuration`` (KubeRay's
manifests, plus RayCronJob's) writes them, reach the operator pod's port 9443 through a Service
on 443, run the operator with ``ENABLE_WEBHOOKS=true`` and mount the serving certificate where
controller-runtime (and rayop) look for it. The chart tests use real Helm and skip without it.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from rayop.controllers.webhooks.configuration import webhook_configuration

from .helm_cli import by_kind, deployment_container, lint, missing_helm_reason, template
from .manifests import DEPLOY, find, operator_container

Obj = dict[str, Any]
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
needs_helm = pytest.mark.skipif(bool(missing_helm_reason()), reason=missing_helm_reason())


def _expected_webhooks(service: str, namespace: str) -> list[Obj]:
    expected = webhook_configuration("", service_name=service, service_namespace=namespace)
    webhooks: list[Obj] = expected["webhooks"]
    for webhook in webhooks:
        del webhook["clientConfig"]["caBundle"]
    return webhooks


def _without_ca(webhooks: list[Obj], *drop: str) -> list[Obj]:
    out = []
    for webhook in webhooks:
        client = {k: v for k, v in webhook["clientConfig"].items() if k != "caBundle"}
        out.append({**{k: v for k, v in webhook.items() if k not in drop}, "clientConfig": client})
    return out


def _kustomize_with_webhooks(tmp_path: Path) -> list[Obj]:
    base = os.path.relpath(DEPLOY, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": [base], "components": [f"{base}/webhooks"]})
    )
    proc = subprocess.run(
        [KUBECTL, "kustomize", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return [doc for doc in yaml.load_all(proc.stdout, Loader=yaml.CSafeLoader) if doc]


def _check_operator_serves_webhooks(docs: list[Obj], service: Obj, secret: str) -> None:
    deployment = find(docs, "Deployment")
    pod = deployment["spec"]["template"]
    container = operator_container(deployment)
    env = {e["name"]: e for e in container["env"]}
    assert env["ENABLE_WEBHOOKS"]["value"] == "true"
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    (port,) = service["spec"]["ports"]
    assert port["port"] == 443
    assert ports.get(port["targetPort"], port["targetPort"]) == 9443
    assert 9443 in ports.values()
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes[mounts[CERT_DIR]]["secret"]["secretName"] == secret


def test_the_kustomize_component_adds_the_webhooks_with_cert_manager(tmp_path: Path) -> None:
    docs = _kustomize_with_webhooks(tmp_path)
    service = find(docs, "Service", "rayop-webhook-service")
    assert service["metadata"]["namespace"] == "rayop-system"
    configuration = find(docs, "ValidatingWebhookConfiguration")
    assert configuration["webhooks"] == _expected_webhooks("rayop-webhook-service", "rayop-system")
    certificate = find(docs, "Certificate")
    assert configuration["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": f"rayop-system/{certificate['metadata']['name']}"
    }
    assert certificate["spec"]["dnsNames"] == [
        "rayop-webhook-service.rayop-system.svc",
        "rayop-webhook-service.rayop-system.svc.cluster.local",
    ]
    issuer = find(docs, "Issuer")
    assert certificate["spec"]["issuerRef"] == {
        "kind": "Issuer",
        "name": issuer["metadata"]["name"],
    }
    assert issuer["spec"] == {"selfSigned": {}}
    _check_operator_serves_webhooks(docs, service, certificate["spec"]["secretName"])


def test_the_plain_kustomization_has_no_webhooks() -> None:
    proc = subprocess.run(
        [KUBECTL, "kustomize", str(DEPLOY)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    docs = [doc for doc in yaml.load_all(proc.stdout, Loader=yaml.CSafeLoader) if doc]
    assert not [d for d in docs if d["kind"] in ("ValidatingWebhookConfiguration", "Certificate")]
    assert "env" not in operator_container(find(docs, "Deployment"))


@needs_helm
@pytest.mark.parametrize("cert_manager", [False, True])
def test_chart_lints_with_webhooks(cert_manager: bool) -> None:
    values = {"webhook": {"enabled": True, "certManager": {"enabled": cert_manager}}}
    assert "1 chart(s) linted, 0 chart(s) failed" in lint(values)


@needs_helm
def test_chart_renders_no_webhook_by_default() -> None:
    objects = template()
    assert not by_kind(objects, "ValidatingWebhookConfiguration")
    assert "ENABLE_WEBHOOKS" not in str(deployment_container(objects).get("env"))


@needs_helm
def test_chart_registers_the_webhooks_with_a_certificate_helm_generates() -> None:
    objects = template({"webhook": {"enabled": True}})
    service = find(objects, "Service", "rayop-webhook-service")
    configuration = find(objects, "ValidatingWebhookConfiguration")
    assert configuration["metadata"]["name"] == "rayop-validating-webhook-configuration"
    webhooks = configuration["webhooks"]
    assert {w["timeoutSeconds"] for w in webhooks} == {10}
    expected = _expected_webhooks("rayop-webhook-service", "rayop-system")
    assert _without_ca(webhooks, "timeoutSeconds") == expected
    (secret,) = by_kind(objects, "Secret")
    assert secret["type"] == "kubernetes.io/tls"
    assert {w["clientConfig"]["caBundle"] for w in webhooks} == {secret["data"]["ca.crt"]}
    _check_signed_for(secret["data"], "rayop-webhook-service.rayop-system.svc")
    _check_operator_serves_webhooks(objects, service, secret["metadata"]["name"])


def _check_signed_for(data: dict[str, str], host: str) -> None:
    """The serving certificate is signed by the bundle's CA and names the Service's host."""
    with tempfile.TemporaryDirectory() as tmp:
        for key in ("ca.crt", "tls.crt"):
            (Path(tmp) / key).write_bytes(base64.b64decode(data[key]))
        verify = subprocess.run(
            ["openssl", "verify", "-CAfile", f"{tmp}/ca.crt", f"{tmp}/tls.crt"],
            capture_output=True,
            text=True,
        )
        assert verify.returncode == 0, verify.stderr
        names = subprocess.run(
            ["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in", f"{tmp}/tls.crt"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    assert f"DNS:{host}" in names
    assert base64.b64decode(data["tls.key"]).startswith(b"-----BEGIN")


@needs_helm
def test_chart_with_cert_manager_lets_its_ca_injector_fill_the_bundle() -> None:
    objects = template({"webhook": {"enabled": True, "certManager": {"enabled": True}}})
    assert not by_kind(objects, "Secret")
    certificate = find(objects, "Certificate")
    assert certificate["spec"]["dnsNames"] == [
        "rayop-webhook-service.rayop-system.svc",
        "rayop-webhook-service.rayop-system.svc.cluster.local",
    ]
    assert certificate["spec"]["issuerRef"]["name"] == find(objects, "Issuer")["metadata"]["name"]
    configuration = find(objects, "ValidatingWebhookConfiguration")
    assert configuration["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "rayop-system/rayop-serving-cert"
    }
    assert all("caBundle" not in w["clientConfig"] for w in configuration["webhooks"])
    service = find(objects, "Service", "rayop-webhook-service")
    _check_operator_serves_webhooks(objects, service, certificate["spec"]["secretName"])


@needs_helm
def test_chart_webhook_failure_policy_is_a_value() -> None:
    objects = template({"webhook": {"enabled": True, "failurePolicy": "Ignore"}})
    configuration = find(objects, "ValidatingWebhookConfiguration")
    assert {w["failurePolicy"] for w in configuration["webhooks"]} == {"Ignore"}
