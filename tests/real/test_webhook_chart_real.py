"""The chart's webhook.enabled installed by real Helm into a real kube-apiserver.

kube-apiserver accepts the ValidatingWebhookConfiguration, the webhook Service and the TLS
Secret Helm generates; the configuration's caBundle is the Secret's CA, and ``helm upgrade``
keeps the same certificate (the chart looks the Secret up instead of generating a new one).
The webhooks' answers themselves are tests/real/test_webhooks_real.py's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from tests.deploy import helm_cli

from .real_support import build, create_namespace, unique_namespace, user_client

pytestmark = [pytest.mark.real, pytest.mark.timeout(240, func_only=True)]

VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


async def _get(client: Any, path: str) -> dict[str, Any]:
    status, raw = await client.request("GET", path)
    assert status == 200, raw
    body: dict[str, Any] = orjson.loads(raw)
    return body


async def test_the_chart_installs_its_webhooks_and_keeps_the_certificate_on_upgrade(
    real_kubeconfig: str,
) -> None:
    ok, why = build("helm")
    if not ok:
        pytest.fail(f"helm is required in the real tier: {why}")
    # Ignore: nothing serves the webhooks here, and other tests' writes must not be refused.
    values = {"webhook": {"enabled": True, "failurePolicy": "Ignore"}}
    async with user_client(real_kubeconfig) as client:
        namespace = await create_namespace(client, unique_namespace("webhook-chart"))
        release = "rayop-webhooks"
        args = ["--kubeconfig", real_kubeconfig, "--namespace", namespace, "--skip-crds"]
        install = ("install", release, str(helm_cli.CHART), *args)
        await asyncio.to_thread(helm_cli.run_helm, *install, values=values)
        try:
            rendered = helm_cli.template(values, release=release, namespace=namespace)
            (service,) = [o for o in rendered if o["metadata"]["name"].endswith("-webhook-service")]
            prefix = service["metadata"]["name"].removesuffix("-webhook-service")
            name = f"{prefix}-validating-webhook-configuration"
            configuration = await _get(client, f"{VWC}/{name}")
            secret_path = f"/api/v1/namespaces/{namespace}/secrets/{prefix}-webhook-server-cert"
            secret = await _get(client, secret_path)
            bundles = {w["clientConfig"]["caBundle"] for w in configuration["webhooks"]}
            assert bundles == {secret["data"]["ca.crt"]}
            services = {w["clientConfig"]["service"]["name"] for w in configuration["webhooks"]}
            assert services == {f"{prefix}-webhook-service"}
            await _get(client, f"/api/v1/namespaces/{namespace}/services/{prefix}-webhook-service")
            upgrade = ("upgrade", release, str(helm_cli.CHART), *args)
            await asyncio.to_thread(helm_cli.run_helm, *upgrade, values=values)
            assert (await _get(client, secret_path))["data"] == secret["data"]
            upgraded = await _get(client, f"{VWC}/{name}")
            assert {w["clientConfig"]["caBundle"] for w in upgraded["webhooks"]} == bundles
        finally:
            uninstall = ("uninstall", release, "--wait", *args[:4])
            await asyncio.to_thread(helm_cli.run_helm, *uninstall)
