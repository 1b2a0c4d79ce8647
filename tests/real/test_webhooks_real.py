"""rayop's validating webhooks called by a real kube-apiserver, and by the embedded plane alike.

The same requests go to both API servers with rayop's webhooks registered as rayop up registers
them (a URL and the self-managed CA): a refusal, and a webhook that is down (failurePolicy
Fail), must give the same Status on both.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.webhooks.configuration import CONFIGURATION_NAME
from rayop.controllers.webhooks.serving import (
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    WebhookSettings,
    serving,
)
from rayop.kube.client import KubeClient
from rayop.kube.errors import ApiError, NotFound
from rayop.kube.resources import RAY_CLUSTERS
from rayop.testing import open_control_plane

from .real_support import create_namespace, unique_namespace, user_client

pytestmark = [pytest.mark.real, pytest.mark.timeout(180, func_only=True)]

CONTAINERS = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}


def _cluster(name: str, min_replicas: int = 0) -> dict[str, Any]:
    group = {
        "groupName": "small",
        "minReplicas": min_replicas,
        "maxReplicas": 2,
        "rayStartParams": {},
        "template": copy.deepcopy(CONTAINERS),
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": copy.deepcopy(CONTAINERS)},
            "workerGroupSpecs": [group],
        },
    }


async def _outcomes(client: KubeClient, cert_dir: Path) -> list[dict[str, Any]]:
    """Creates a valid and an invalid cluster with the webhooks up, then one with them down;
    returns the Status of each refusal (code, reason, message)."""
    namespace = await create_namespace(client, unique_namespace("webhooks"))
    settings = WebhookSettings(
        host="127.0.0.1", port=0, cert_dir=cert_dir, register_url="https://127.0.0.1:0"
    )
    statuses = []
    try:
        async with serving(client, FeatureGates(), settings) as server:
            await client.create(RAY_CLUSTERS, _cluster("good"), namespace=namespace)
            statuses.append(await _refused_once_registered(client, namespace))
            port = server.port
        try:
            await client.create(RAY_CLUSTERS, _cluster("later"), namespace=namespace)
        except ApiError as err:
            status = dict(err.status)
            status["message"] = str(status.get("message", "")).replace(str(port), "<port>")
            statuses.append(status)
    finally:
        await client.delete(VALIDATING_WEBHOOK_CONFIGURATIONS, CONFIGURATION_NAME)
    return [{k: s.get(k) for k in ("code", "reason", "message")} for s in statuses]


async def _refused_once_registered(client: KubeClient, namespace: str) -> dict[str, Any]:
    """Creates the invalid cluster until the webhook refuses it; returns the refusal's Status.

    kube-apiserver calls a webhook once its own informer has seen the new
    ValidatingWebhookConfiguration, which on a loaded machine can be after the first create
    (admitted, then deleted here): the refusal compared is the first one the webhook gives."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while True:
        try:
            await client.create(RAY_CLUSTERS, _cluster("bad", 5), namespace=namespace)
        except ApiError as err:
            return dict(err.status)
        await client.delete(RAY_CLUSTERS, "bad", namespace=namespace)
        assert loop.time() < deadline, "the webhook was not called within 60 s of registering"
        await _wait_gone(client, namespace, "bad")


async def _wait_gone(client: KubeClient, namespace: str, name: str) -> None:
    """Waits until the named RayCluster no longer exists."""
    while True:
        try:
            await client.get(RAY_CLUSTERS, name, namespace=namespace)
        except NotFound:
            return
        await asyncio.sleep(0.2)


@pytest.fixture
async def real_client(real_kubeconfig: str) -> AsyncIterator[KubeClient]:
    async with user_client(real_kubeconfig) as client:
        yield client


async def test_refusals_are_the_same_on_a_real_and_the_embedded_api_server(
    real_client: KubeClient, tmp_path: Path
) -> None:
    real = await _outcomes(real_client, tmp_path / "real")
    async with open_control_plane() as plane:
        embedded = await _outcomes(plane.client, tmp_path / "embedded")
    assert real[0] == {
        "code": 422,
        "reason": "Invalid",
        "message": 'admission webhook "vraycluster.kb.io" denied the request: RayCluster.ray.io '
        '"bad" is invalid: spec: Invalid value: worker group small has minReplicas 5 greater '
        "than maxReplicas 2",
    }
    assert real[1]["code"] == 500 and real[1]["reason"] == "InternalError"
    assert _transport_error_folded(embedded) == _transport_error_folded(real)


def _transport_error_folded(outcomes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``outcomes`` with the dial error of the webhook-down call folded to one word.

    Whether kube-apiserver reports ``EOF``, ``use of closed network connection`` or ``connect:
    connection refused`` depends on whether it still held a keep-alive connection to the webhook
    server when that stopped, and on when it noticed: timing, not behaviour. Everything before it
    must be the same."""
    folded = []
    for outcome in outcomes:
        message = str(outcome.get("message") or "")
        for tail in (
            '": EOF',
            '": use of closed network connection',
            '": dial tcp 127.0.0.1:<port>: connect: connection refused',
        ):
            if message.endswith(tail):
                message = message[: -len(tail)] + '": <unreachable>'
        folded.append({**outcome, "message": message})
    return folded
