"""Issue 9's "done when": the rendered chart, applied with kubectl, runs an operator that works.

The chart is rendered (tests/deploy/helm_render.py), applied to an embedded control plane
(HTTPS, so that kubectl sends its token) with the real kubectl, and ``rayop run`` is started as a
subprocess with exactly the command, args and env of the rendered Deployment, authenticated by
a token issued for the chart's ServiceAccount. The embedded API server enforces RBAC for that
token, so the sample RayCluster only becomes ready if the chart grants enough; any 403 for the
operator's user fails the test.

Stand-ins for what a kubelet gives a pod: ``KUBECONFIG`` points at a kubeconfig holding the
service-account token (in a pod, the token file and KUBERNETES_SERVICE_HOST do that), and the
metrics and health ports are free loopback ports instead of :8080 and :8082 (the flags stay).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.testing import FAST_KUBELET, eventually
from tests.kuberay_compat import samples_dir

from .chart_install import (
    NAMESPACE,
    REPO,
    OperatorCommand,
    RenderedRelease,
    kubectl,
    kubectl_install,
    operator_command,
    render_release,
)

pytestmark = pytest.mark.slow

SAMPLE = "ray-cluster.sample.yaml"


def tail(log: Path) -> str:
    """Returns the end of the operator's log (for failure messages)."""
    return log.read_text()[-3000:]


@contextlib.asynccontextmanager
async def operator_process(
    command: OperatorCommand, kubeconfig: Path, log: Path
) -> AsyncIterator[asyncio.subprocess.Process]:
    """Starts ``rayop run`` as a pod would; stops it with SIGTERM on exit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(command.env, KUBECONFIG=str(kubeconfig))
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            *command.argv, env=env, stdout=out, stderr=asyncio.subprocess.STDOUT, cwd=REPO
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


async def wait_ready(proc: asyncio.subprocess.Process, port: int, log: Path) -> None:
    """Blocks until the operator's /readyz answers 200 (fails if the process dies first)."""
    url = f"http://127.0.0.1:{port}/readyz"
    async with aiohttp.ClientSession() as session:

        async def ready() -> bool:
            if proc.returncode is not None:
                pytest.fail(f"rayop run exited {proc.returncode}:\n{tail(log)}")
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(url) as resp:
                    return resp.status == 200
            return False

        try:
            await eventually(ready, timeout=30, what="rayop run's /readyz")
        except AssertionError:
            pytest.fail(f"rayop run never became ready:\n{tail(log)}")


def cluster_ready(cp: EmbeddedControlPlane, name: str) -> bool:
    info = cp.store.resources.get("ray.io", "v1", "rayclusters")
    rc = cp.store.peek(info, "default", name) if info is not None else None
    status = (rc or {}).get("status") or {}
    return status.get("state") == "ready" and status.get("readyWorkerReplicas", 0) >= 1


async def test_chart_installs_an_operator_that_reconciles_with_only_its_grants(
    tmp_path: Path,
) -> None:
    sample = str(samples_dir() / SAMPLE)
    release: RenderedRelease = render_release(tmp_path)
    command = operator_command(release)
    user = f"system:serviceaccount:{NAMESPACE}:{release.service_account}"
    async with EmbeddedControlPlane(tls=True, kubelet=FAST_KUBELET) as cp:
        await kubectl_install(cp, release, tmp_path)
        token = cp.issue_service_account_token(NAMESPACE, release.service_account)
        kubeconfig = tmp_path / "operator-kubeconfig.yaml"
        kubeconfig.write_text(cp.kubeconfig_text(token, namespace=NAMESPACE))
        log = tmp_path / "operator.log"
        async with operator_process(command, kubeconfig, log) as proc:
            await wait_ready(proc, command.health_port, log)
            await kubectl(cp.kubeconfig_path, tmp_path, "apply", "-f", sample)
            name = "raycluster-kuberay"
            await eventually(lambda: cluster_ready(cp, name), timeout=60, what=f"{name} ready")
            shown = await kubectl(cp.kubeconfig_path, tmp_path, "get", "rayclusters")
            assert name in shown and "ready" in shown
            async with aiohttp.ClientSession() as session:
                metrics_url = f"http://127.0.0.1:{command.metrics_port}/metrics"
                async with session.get(metrics_url) as resp:
                    assert 'controller_runtime_reconcile_total{controller="raycluster"' in (
                        await resp.text()
                    )
            proc.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(proc.wait(), 20) == 0, tail(log)

        mine = [r for r in cp.audit.requests if r.user == user]
        denied = sorted(
            {
                (r.verb, r.group, r.resource, r.subresource, r.namespace)
                for r in mine
                if r.code == 403
            }
        )
        assert denied == [], f"the chart's grants are missing: {denied}"
        # The operator really ran as the ServiceAccount: it created the pods and took the Lease
        # in its own namespace (the leader-election Role), and nothing ran as the admin.
        assert cp.audit.count(verb="create", resource="pods", user=user, code=201) == 2
        assert cp.audit.count(resource="leases", namespace=NAMESPACE, user=user) > 0
        assert not [
            r
            for r in cp.audit.requests
            if r.user == user and r.namespace not in ("", "default", NAMESPACE)
        ]
