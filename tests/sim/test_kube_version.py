"""The Kubernetes version the embedded plane reports is the one it serves (v1.37.2, one constant
for ``/version``, both OpenAPI documents and the nodes), so KubeRay's ``SidecarSubmitterRestart``
startup check (Kubernetes 1.35+: container restart rules, which the plane's kubelet applies)
passes against it; it used to report v1.32.0 and the operator refused to start."""

from __future__ import annotations

import orjson

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.config.startup_checks import parse_git_version, run_startup_checks
from rayop.sim.machinery import kube_version
from rayop.testing import open_control_plane


async def test_version_openapi_and_nodes_report_the_one_version() -> None:
    assert kube_version.GIT_VERSION == "v1.37.2-rayop"
    async with open_control_plane(crds=False) as plane:
        status, body = await plane.client.request("GET", "/version")
        version = orjson.loads(body)
        assert status == 200 and version["gitVersion"] == kube_version.GIT_VERSION
        assert (version["major"], version["minor"]) == ("1", "37")
        assert parse_git_version(version["gitVersion"]) == (1, 37, 2)
        for path in ("/openapi/v2", "/openapi/v3/api/v1"):
            status, body = await plane.client.request("GET", path)
            assert status == 200, path
            assert orjson.loads(body)["info"]["version"] == kube_version.GIT_VERSION, path
        status, body = await plane.client.request("GET", "/api/v1/nodes")
        nodes = orjson.loads(body)["items"]
        kubelets = {n["status"]["nodeInfo"]["kubeletVersion"] for n in nodes}
        assert status == 200 and nodes
        assert kubelets == {kube_version.GIT_VERSION}


async def test_the_sidecar_submitter_restart_startup_check_passes_on_the_plane() -> None:
    gates = FeatureGates(sidecar_submitter_restart=True)
    async with open_control_plane(crds=False) as plane:
        await run_startup_checks(plane.client, OperatorOptions(feature_gates=gates))
