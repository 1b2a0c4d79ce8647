"""``rayop preview`` with bad input: no read access to a namespace, a file mixing ray.io objects
with other kinds, nodes that may not be listed.

On the embedded plane (RBAC applies to service-account tokens), a user who may read only the
namespace ``fleet`` previews ``fleet`` and ``secret``: ``secret`` is one line naming it and
the reason, the exit status is 2, and ``fleet``'s objects are still previewed. A file holding a
Deployment beside a RayCluster is refused in one line naming the Deployment, exit 2. With read
access to the namespace but not to nodes, ``-f``'s capacity check is one line saying so; the
verdict is still printed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from rayop.examples import sample_text
from rayop.kube.resource import Resource
from rayop.kube.resources import NAMESPACES, RAY_CLUSTERS
from rayop.testing import PlaneUnderTest, eventually, open_control_plane, open_operator

NS = "fleet"
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")


async def _reader_kubeconfig(plane: PlaneUnderTest, tmp_path: Path) -> str:
    """A kubeconfig of a service account that may read everything in ``fleet`` (and dry-run
    ray.io writes there) and nothing else."""
    await plane.create(SERVICE_ACCOUNTS, {"metadata": {"name": "reader"}}, NS)
    read = {"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}
    # -f's server-side dry run is authorized as the write it stands for
    dry_run = {"apiGroups": ["ray.io"], "resources": ["*"], "verbs": ["create", "update"]}
    await plane.create(ROLES, {"metadata": {"name": "read-all"}, "rules": [read, dry_run]}, NS)
    binding = {
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-all"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": NS}],
    }
    await plane.create(ROLE_BINDINGS, binding, NS)
    token = plane.cp.issue_service_account_token(NS, "reader")
    path = tmp_path / "reader.kubeconfig"
    path.write_text(plane.cp.kubeconfig_text(token, namespace=NS))
    return str(path)


async def _preview(kubeconfig: str, *args: str) -> tuple[int, Any, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rayop", "preview", "--kubeconfig", kubeconfig,
        "-o", "json", "--timeout", "30", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=os.environ,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, json.loads(out) if out.strip() else None, err.decode()


def _sample() -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all(sample_text("raycluster")) if d]
    doc["metadata"]["namespace"] = NS
    return dict(doc)


async def test_a_namespace_without_read_access_is_named_and_the_rest_previewed(
    tmp_path: Path,
) -> None:
    async with open_control_plane() as plane:
        await plane.namespace(NS)
        await plane.client.create(NAMESPACES, {"metadata": {"name": "secret"}})
        async with open_operator(plane):
            await plane.create(RAY_CLUSTERS, _sample(), NS)

            async def settled() -> bool:
                stored = plane.stored(RAY_CLUSTERS, NS, "raycluster-sample") or {}
                return (stored.get("status") or {}).get("state") == "ready"

            await eventually(settled, timeout=30, what="the sample ready")
            await asyncio.sleep(1.0)
        reader = await _reader_kubeconfig(plane, tmp_path)
        code, report, err = await _preview(reader, "-n", NS, "-n", "secret")
        assert code == 2, (report, err)
        assert [o["name"] for o in report["objects"]] == ["raycluster-sample"], report
        assert report["objects"][0]["verdict"] == "nothing", report
        assert "rayclusters: no read access in namespace secret" in err, err
        assert all("secret" in p for p in report["problems"]), report

        # -f with a change that creates pods: nodes are not readable, the verdict still stands
        edited = _sample()
        edited["spec"]["workerGroupSpecs"][0]["replicas"] = 2
        path = tmp_path / "more.yaml"
        path.write_text(yaml.safe_dump(edited))
        code, report, err = await _preview(reader, "-f", str(path))
        assert code == 2, (report, err)
        assert report["objects"], (report, err)
        (verdict,) = report["objects"]
        assert verdict["verdict"] == "create pods" and "room" not in verdict, verdict
        (problem,) = report["problems"]
        assert problem.startswith("room not checked: cannot list the nodes and pods:"), problem


async def test_a_file_with_another_kind_is_refused_naming_it_and_the_rest_previewed(
    tmp_path: Path,
) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS},
    }
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump_all([_sample(), deployment, {"kind": "Pod"}]))
    async with open_control_plane() as plane:
        await plane.namespace(NS)
        code, report, err = await _preview(plane.cp.kubeconfig_path, "-f", str(path))
    assert code == 2, (report, err)
    (verdict,) = report["objects"]
    assert verdict["name"] == "raycluster-sample" and verdict["verdict"] == "create pods", verdict
    assert report["problems"] == [
        f"Deployment/{NS}/web: not a ray.io object the operator renders (apps/v1 Deployment); "
        "give RayCluster, RayJob or RayService (ray.io/v1), with the ConfigMaps and Secrets "
        "they use",
        f"{path}: document 3 is not a Kubernetes object (no apiVersion and kind)",
    ], report
    assert f"rayop: Deployment/{NS}/web: not a ray.io object" in err, err
