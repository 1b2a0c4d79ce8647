"""The embedded plane calls rayop's validating webhooks: kubectl apply shows the errors."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.webhooks.configuration import webhook_configuration
from rayop.controllers.webhooks.serving import WebhookSettings, serving
from rayop.controllers.webhooks.validators import handlers
from rayop.kube.errors import ApiError, Invalid
from rayop.kube.resource import Resource
from rayop.kube.resources import RAY_CLUSTERS, RAY_JOBS
from rayop.runtime.serving.admission_server import AdmissionServer
from rayop.runtime.serving.serving_cert import ca_bundle, ensure_serving_cert
from rayop.testing import open_control_plane

WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)
CONTAINERS = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}


def _cluster(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": copy.deepcopy(CONTAINERS)},
            "workerGroupSpecs": [
                {
                    "groupName": "small",
                    "minReplicas": 0,
                    "maxReplicas": 2,
                    "rayStartParams": {},
                    "template": copy.deepcopy(CONTAINERS),
                }
            ],
        },
    }


async def test_invalid_objects_are_refused_at_admission(tmp_path: Path) -> None:
    cert_dir = ensure_serving_cert(tmp_path, ("127.0.0.1", "localhost"))
    server = AdmissionServer(handlers(FeatureGates()), cert_dir, "127.0.0.1", 0)
    await server.start()
    try:
        async with open_control_plane() as plane:
            config = webhook_configuration(
                ca_bundle(cert_dir), url=f"https://127.0.0.1:{server.port}"
            )
            await plane.client.create(WEBHOOK_CONFIGURATIONS, config)
            await plane.client.create(RAY_CLUSTERS, _cluster("good"), namespace="default")

            name = "x" * 54
            with pytest.raises(Invalid) as refused:
                await plane.client.create(RAY_CLUSTERS, _cluster(name), namespace="default")
            assert refused.value.status["message"] == (
                'admission webhook "vraycluster.kb.io" denied the request: '
                f'RayCluster.ray.io "{name}" is invalid: metadata.name: Invalid value: '
                f'"{name}": RayCluster name should be no more than 53 characters'
            )

            bad = _cluster("bad")
            bad["spec"]["workerGroupSpecs"][0]["minReplicas"] = 5
            with pytest.raises(Invalid) as refused:
                await plane.client.create(RAY_CLUSTERS, bad, namespace="default")
            assert refused.value.status["message"].endswith(
                'RayCluster.ray.io "bad" is invalid: spec: Invalid value: worker group small has '
                "minReplicas 5 greater than maxReplicas 2"
            )
            assert plane.stored(RAY_CLUSTERS, "default", "bad") is None

            await server.stop()
            with pytest.raises(ApiError) as failed:
                await plane.client.create(RAY_CLUSTERS, _cluster("later"), namespace="default")
            assert failed.value.status["code"] == 500
            assert failed.value.status["message"].startswith(
                'Internal error occurred: failed calling webhook "vraycluster.kb.io": failed '
                'to call webhook: Post "https://127.0.0.1:'
            )
            # A broken webhook never locks itself in: its configuration can still go.
            await plane.client.delete(
                WEBHOOK_CONFIGURATIONS, "validating-webhook-configuration", namespace=None
            )
            await plane.client.create(RAY_CLUSTERS, _cluster("later"), namespace="default")
    finally:
        await server.stop()


async def test_the_operator_serves_and_registers_its_webhooks(tmp_path: Path) -> None:
    settings = WebhookSettings(
        host="127.0.0.1", port=0, cert_dir=tmp_path, register_url="https://127.0.0.1:0"
    )
    async with open_control_plane() as plane:
        async with serving(plane.client, FeatureGates(), settings) as server:
            config = await plane.client.get(
                WEBHOOK_CONFIGURATIONS, "validating-webhook-configuration"
            )
            url = config["webhooks"][1]["clientConfig"]["url"]
            assert url == f"https://127.0.0.1:{server.port}/validate-ray-io-v1-rayjob"
            spec = {"entrypoint": "python x.py", "suspend": True, "rayClusterSpec": {}}
            spec["rayClusterSpec"] = _cluster("c")["spec"]
            job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "job"}}
            job["spec"] = spec
            with pytest.raises(Invalid) as refused:
                await plane.client.create(RAY_JOBS, job, namespace="default")
            assert refused.value.status["message"] == (
                'admission webhook "vrayjob.kb.io" denied the request: RayJob.ray.io "job" is '
                "invalid: spec: Invalid value: The RayJob spec is invalid: a RayJob with "
                "shutdownAfterJobFinishes set to false is not allowed to be suspended"
            )
        # Registered again by the next start, with the new port.
        async with serving(plane.client, FeatureGates(), settings) as server:
            config = await plane.client.get(
                WEBHOOK_CONFIGURATIONS, "validating-webhook-configuration"
            )
            assert f":{server.port}/" in config["webhooks"][0]["clientConfig"]["url"]
