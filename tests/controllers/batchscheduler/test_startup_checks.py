"""KubeRay's startup checks: the API server version for SidecarSubmitterRestart, the
scheduling.k8s.io/v1alpha2 API for KubernetesWAS."""

from __future__ import annotations

import json
from typing import cast

import pytest

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.config.startup_checks import StartupCheckError, run_startup_checks
from rayop.kube.client import KubeClient

pytestmark = pytest.mark.asyncio


class FakeServer:
    """Answers raw GETs from a table of path -> (status, JSON body)."""

    def __init__(self, answers: dict[str, tuple[int, object]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def request(self, method: str, path: str, **_: object) -> tuple[int, bytes]:
        assert method == "GET"
        self.asked.append(path)
        status, body = self.answers.get(path, (404, {}))
        return status, json.dumps(body).encode()


def options(**gates: bool) -> OperatorOptions:
    return OperatorOptions(feature_gates=FeatureGates(**gates))


async def run(server: FakeServer, opts: OperatorOptions) -> None:
    await run_startup_checks(cast(KubeClient, server), opts)


async def test_nothing_is_asked_with_the_gates_off() -> None:
    server = FakeServer({})
    await run(server, options())
    assert server.asked == []


async def test_sidecar_submitter_restart_needs_kubernetes_1_35() -> None:
    await run(
        FakeServer({"/version": (200, {"gitVersion": "v1.35.0"})}),
        options(sidecar_submitter_restart=True),
    )
    old = FakeServer({"/version": (200, {"gitVersion": "v1.34.2"})})
    with pytest.raises(StartupCheckError) as refused:
        await run(old, options(sidecar_submitter_restart=True))
    assert str(refused.value) == (
        "SidecarSubmitterRestart feature gate requires K8s 1.35+: current version v1.34.2 is "
        "below 1.35"
    )
    with pytest.raises(StartupCheckError, match="unable to detect K8s version"):
        await run(FakeServer({}), options(sidecar_submitter_restart=True))


async def test_kubernetes_was_needs_scheduling_v1alpha2_served() -> None:
    served = FakeServer({"/apis/scheduling.k8s.io/v1alpha2": (200, {"kind": "APIResourceList"})})
    await run(served, options(kubernetes_was=True))
    with pytest.raises(StartupCheckError, match=r"no served scheduling\.k8s\.io API version"):
        await run(FakeServer({}), options(kubernetes_was=True))
