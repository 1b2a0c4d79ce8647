"""The namespaced install modes, measured: the chart's Roles are all the operator needs, and used.

The chart is rendered by real Helm in a namespaced mode and applied with kubectl to an
embedded control plane that enforces RBAC (tests/e2e/chart_install.py, as the default mode's
test there); ``rayop run`` runs with exactly the rendered Deployment's args under a token of
the chart's ServiceAccount. KubeRay's ray-cluster.sample.yaml converges in every watched
namespace; the same sample in a namespace the operator does not watch gets no pod and no status.
The audit then shows every request the ServiceAccount made: none was refused (no missing
grant), none went outside the watched namespaces and the Lease's, none was cluster-scoped (a
namespaced install has no ClusterRole to allow one).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.testing import FAST_KUBELET, eventually
from tests.e2e import chart_install
from tests.kuberay_compat import sample_docs, samples_dir

from .helm_cli import missing_helm_reason

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(missing_helm_reason()), reason=missing_helm_reason()),
]

REPO = Path(__file__).resolve().parents[2]
SAMPLE = "ray-cluster.sample.yaml"


NAMESPACE: str = chart_install.NAMESPACE

MODES: dict[str, tuple[dict[str, Any], list[str]]] = {
    # mode -> (values, the namespaces the operator must reconcile)
    "singleNamespaceInstall": ({"singleNamespaceInstall": True}, [NAMESPACE]),
    "singleNamespaceInstall with watchNamespace": (
        {"singleNamespaceInstall": True, "watchNamespace": ["team-a", "team-b"]},
        ["team-a", "team-b"],
    ),
}


def sample_name() -> str:
    """Returns the name of the sample's RayCluster."""
    docs = [d for d in sample_docs(SAMPLE) if d["kind"] == "RayCluster"]
    (cluster,) = docs
    return str(cluster["metadata"]["name"])


@contextlib.asynccontextmanager
async def operator_process(
    argv: list[str], env: dict[str, str], log: Path
) -> AsyncIterator[asyncio.subprocess.Process]:
    """Starts the operator as its pod would; stops it with SIGTERM on exit."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    full_env.update(env)
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            *argv, env=full_env, stdout=out, stderr=asyncio.subprocess.STDOUT, cwd=REPO
        )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 20)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def apply_sample(kubeconfig: str, home: Path, namespace: str) -> None:
    """Applies KubeRay's sample RayCluster in ``namespace`` as the admin (kubectl)."""
    sample = str(samples_dir() / SAMPLE)
    await chart_install.kubectl(kubeconfig, home, "apply", "-n", namespace, "-f", sample)


def tail(log: Path) -> str:
    """Returns the end of the operator's log (for failure messages)."""
    return log.read_text()[-3000:]


def cluster_state(cp: EmbeddedControlPlane, namespace: str, name: str) -> dict[str, Any]:
    """Returns the stored RayCluster's status ({} when it has none)."""
    info = cp.store.resources.get("ray.io", "v1", "rayclusters")
    assert info is not None
    rc = cp.store.peek(info, namespace, name) or {}
    status: dict[str, Any] = rc.get("status") or {}
    return status


@pytest.mark.parametrize("mode", MODES)
async def test_namespaced_install_needs_and_uses_only_its_roles(tmp_path: Path, mode: str) -> None:
    values, watched = MODES[mode]
    release = chart_install.render_release(tmp_path, values)
    command = chart_install.operator_command(release)
    user = f"system:serviceaccount:{NAMESPACE}:{release.service_account}"
    assert not [d for d in release.docs if d["kind"].startswith("Cluster")]
    name = sample_name()
    async with EmbeddedControlPlane(tls=True, kubelet=FAST_KUBELET) as cp:
        admin = cp.kubeconfig_path
        for namespace in [n for n in watched if n != NAMESPACE] + ["elsewhere"]:
            await chart_install.kubectl(admin, tmp_path, "create", "namespace", namespace)
        await chart_install.kubectl_install(cp, release, tmp_path)
        await apply_sample(admin, tmp_path, "elsewhere")
        token = cp.issue_service_account_token(NAMESPACE, release.service_account)
        kubeconfig = tmp_path / "operator-kubeconfig.yaml"
        kubeconfig.write_text(cp.kubeconfig_text(token, namespace=NAMESPACE))
        log = tmp_path / "operator.log"
        env = {**command.env, "KUBECONFIG": str(kubeconfig)}
        async with operator_process(command.argv, env, log) as proc, aiohttp.ClientSession() as s:

            async def ready() -> bool:
                if proc.returncode is not None:
                    pytest.fail(f"rayop run exited {proc.returncode}:\n{tail(log)}")
                with contextlib.suppress(aiohttp.ClientError):
                    async with s.get(f"http://127.0.0.1:{command.health_port}/readyz") as resp:
                        return resp.status == 200
                return False

            await eventually(ready, timeout=60, what="the operator's /readyz")
            for namespace in watched:
                await apply_sample(admin, tmp_path, namespace)
            for namespace in watched:
                await eventually(
                    lambda ns=namespace: cluster_state(cp, ns, name).get("state") == "ready",
                    timeout=60,
                    what=f"{namespace}/{name} ready",
                )
            proc.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(proc.wait(), 20) == 0, tail(log)

        assert cluster_state(cp, "elsewhere", name) == {}
        assert cp.audit.count(verb="create", resource="pods", namespace="elsewhere") == 0
        mine = [r for r in cp.audit.requests if r.user == user]
        assert mine
        denied = sorted({(r.verb, r.group, r.resource, r.namespace) for r in mine if r.code == 403})
        assert denied == [], f"the chart's Roles are missing grants: {denied}"
        outside = sorted({(r.verb, r.resource, r.namespace) for r in mine
                          if r.namespace not in {*watched, NAMESPACE}})  # fmt: skip
        assert outside == [], f"requests outside the watched namespaces: {outside}"
        assert cp.audit.count(resource="leases", namespace=NAMESPACE, user=user) > 0
        pods = sum(cp.audit.count(verb="create", resource="pods", namespace=n, user=user, code=201)
                   for n in watched)  # fmt: skip
        assert pods == 2 * len(watched)
