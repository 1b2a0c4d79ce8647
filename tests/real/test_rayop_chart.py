"""rayop's chart, by real Helm on the real tier: linted and rendered in every mode, installed and run.

Helm is required here (``scripts/controlplane-build helm``; the test fails if it cannot be
built). Every values mode of tests/deploy/chart_modes.py is linted and rendered. Then, for the
install modes below, the chart is ``helm install``-ed into a fresh namespace of the real
kube-apiserver and the operator is run the way its pod would run it: the real tier has no
kubelet that runs containers (kwok only pretends the operator pod runs), so ``rayop run`` is
started as a process with the installed Deployment's args, authenticated by a token the API
server issues for the chart's ServiceAccount (TokenRequest). The real apiserver enforces RBAC,
so the operator works with exactly the chart's grants. Stand-ins for what a kubelet gives a
pod: the kubeconfig holds the service-account token (a pod has the token file), free loopback
ports are appended for /metrics and the probes (a later flag wins), and
``--leader-election-namespace`` names the release namespace (a pod reads it from the
service-account namespace file). With ``configuration.enabled`` the operator ignores flags, so
the ConfigMap's config.yaml is written to a file (a pod has it mounted) with those three
stand-ins added as ``metricsAddr``, ``probeAddr`` and ``leaderElectionNamespace``; the
Configuration's label, env var and head sidecar must be on the pods.

In each mode KubeRay's ray-cluster.sample.yaml converges in a namespace the operator watches,
while the same sample in a namespace it does not watch gets no pod and no status, and the
operator's log shows no Forbidden answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from rayop.kube.client import KubeClient
from rayop.kube.resource import Resource
from rayop.kube.resources import CONFIGMAPS, RAY_CLUSTERS
from rayop.testing import eventually
from tests.deploy import chart_modes, helm_cli

from .real_support import (
    apply_raycluster,
    build,
    cluster_pods,
    converged,
    create_namespace,
    load_sample,
    unique_namespace,
    user_client,
)

pytestmark = [pytest.mark.real, pytest.mark.timeout(240, func_only=True)]

REPO = Path(__file__).resolve().parents[2]
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def helm() -> Path:
    """The real helm binary; the real tier fails, rather than skips, without it."""
    ok, why = build("helm")
    if not ok:
        pytest.fail(f"helm is required in the real tier: {why}")
    path: Path = helm_cli.helm_path()
    return path


@pytest.mark.parametrize("mode", chart_modes.MODES)
def test_chart_lints_and_renders_in_every_mode(helm: Path, mode: str) -> None:
    values = chart_modes.MODES[mode]
    assert "0 chart(s) failed" in helm_cli.lint(values)
    objects = helm_cli.template(values)
    assert helm_cli.deployment_container(objects)["args"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


INSTALL_MODES = [
    "cluster-wide",
    "singleNamespaceInstall",
    "singleNamespaceInstall with watchNamespace",
    "watchNamespace with a ClusterRole",
    "configuration, singleNamespaceInstall",
]

CONFIGURATION = {
    "enabled": True,
    "defaultPodLabels": {"team": "ml"},
    "defaultContainerEnvs": [{"name": "RAY_enable_open_telemetry", "value": "true"}],
    "headSidecarContainers": [{"name": "fluentbit", "image": "fluent/fluent-bit:1.9"}],
}
"""The Configuration of the ``configuration`` install mode (KubeRay's field names)."""


async def layout(mode: str, client: KubeClient, release_ns: str) -> tuple[Obj, list[str]]:
    """Returns the values of an install mode and the namespaces its operator must reconcile."""

    async def fresh(prefix: str) -> str:
        return await create_namespace(client, unique_namespace(prefix))

    if mode == "cluster-wide":
        return {}, [await fresh("anywhere")]
    if mode == "singleNamespaceInstall":
        return {"singleNamespaceInstall": True}, [release_ns]
    if mode == "singleNamespaceInstall with watchNamespace":
        watched = [await fresh("team-a"), await fresh("team-b")]
        return {"singleNamespaceInstall": True, "watchNamespace": watched}, watched
    if mode == "configuration, singleNamespaceInstall":
        return {"singleNamespaceInstall": True, "configuration": CONFIGURATION}, [release_ns]
    assert mode == "watchNamespace with a ClusterRole", mode
    watched = [await fresh("team-a")]
    return {"watchNamespace": watched}, watched


async def service_account_kubeconfig(
    client: KubeClient, admin_kubeconfig: str, namespace: str, account: str, path: Path
) -> Path:
    """Writes a kubeconfig that authenticates as ``namespace/account`` (a TokenRequest)."""
    status, body = await client.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
              "spec": {"expirationSeconds": 3600}},
    )  # fmt: skip
    assert status == 201, body
    return write_token_kubeconfig(admin_kubeconfig, yaml.safe_load(body)["status"]["token"], path)


def write_token_kubeconfig(admin_kubeconfig: str, token: str, path: Path) -> Path:
    """Writes the admin kubeconfig with every user's credentials replaced by ``token``."""
    doc = yaml.safe_load(Path(admin_kubeconfig).read_text())
    for user in doc["users"]:
        user["user"] = {"token": token}
    path.write_text(yaml.safe_dump(doc))
    return path


def write_yaml(path: Path, doc: Obj) -> Path:
    """Writes ``doc`` as YAML to ``path``; returns the path."""
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


async def check_configuration_applied(client: KubeClient, namespace: str, name: str) -> None:
    """Fails unless the chart's Configuration is on the cluster's pods (label, env, sidecar)."""
    pods = await cluster_pods(client, namespace, name)
    assert pods
    for pod in pods:
        assert pod["metadata"]["labels"].get("team") == "ml", pod["metadata"]["labels"]
        ray = pod["spec"]["containers"][0]
        assert {"name": "RAY_enable_open_telemetry", "value": "true"} in ray.get("env", [])
    heads = [p for p in pods if p["metadata"]["labels"].get("ray.io/node-type") == "head"]
    assert [c["name"] for c in heads[0]["spec"]["containers"]][-1] == "fluentbit"


def tail(log: Path) -> str:
    """Returns the end of the operator's log (for failure messages)."""
    return log.read_text()[-3000:]


@contextlib.asynccontextmanager
async def helm_release(
    helm: Path, kubeconfig: str, release: str, namespace: str, values: Obj
) -> AsyncIterator[None]:
    """``helm install``s the chart (CRDs are the session's); uninstalls it on exit."""
    args = ["--kubeconfig", kubeconfig, "--namespace", namespace]
    await asyncio.to_thread(
        helm_cli.run_helm, "install", release, str(helm_cli.CHART), "--skip-crds", *args,
        values=values,
    )  # fmt: skip
    try:
        yield
    finally:
        await asyncio.to_thread(helm_cli.run_helm, "uninstall", release, "--wait", *args)


@contextlib.asynccontextmanager
async def operator_process(
    argv: list[str], kubeconfig: Path, log: Path
) -> AsyncIterator[asyncio.subprocess.Process]:
    """Runs ``argv`` with ``kubeconfig`` as a pod's operator; stops it with SIGTERM on exit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["KUBECONFIG"] = str(kubeconfig)
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            *argv, env=env, stdout=out, stderr=asyncio.subprocess.STDOUT, cwd=REPO
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
    """Blocks until /readyz answers 200; fails if the operator exits first."""

    async def ready() -> bool:
        if proc.returncode is not None:
            pytest.fail(f"rayop run exited {proc.returncode}:\n{tail(log)}")
        with contextlib.suppress(aiohttp.ClientError):
            async with session.get(f"http://127.0.0.1:{port}/readyz") as resp:
                return resp.status == 200
        return False

    async with aiohttp.ClientSession() as session:
        await eventually(ready, timeout=60, what="the operator's /readyz")


@pytest.mark.parametrize("mode", INSTALL_MODES)
async def test_installed_chart_runs_an_operator_with_only_its_rbac(
    helm: Path, real_kubeconfig: str, tmp_path: Path, mode: str
) -> None:
    (sample,) = load_sample("ray-cluster.sample.yaml")
    name = sample["metadata"]["name"]
    async with user_client(real_kubeconfig) as client:
        release_ns = await create_namespace(client, unique_namespace("rayop-chart"))
        values, targets = await layout(mode, client, release_ns)
        unwatched = None
        if mode != "cluster-wide":
            unwatched = await create_namespace(client, unique_namespace("unwatched"))
        release = f"rayop-{release_ns.rsplit('-', 1)[1]}"
        values = {**values, "fullnameOverride": release, "serviceAccount": {"name": release}}

        async with helm_release(helm, real_kubeconfig, release, release_ns, values):
            (deployment,) = (await client.list(DEPLOYMENTS, namespace=release_ns))["items"]
            container = deployment["spec"]["template"]["spec"]["containers"][0]
            metrics_port, probe_port = free_port(), free_port()
            stand_ins = {
                "metrics-addr": f"127.0.0.1:{metrics_port}",
                "health-probe-bind-address": f"127.0.0.1:{probe_port}",
                "leader-election-namespace": release_ns,
            }
            args = list(container["args"])
            if "--config" in args:  # flags are ignored: the stand-ins go into the file
                config_map = await client.get(CONFIGMAPS, f"{release}-config", namespace=release_ns)
                config = yaml.safe_load(config_map["data"]["config.yaml"])
                config.update(metricsAddr=stand_ins["metrics-addr"],
                              probeAddr=stand_ins["health-probe-bind-address"],
                              leaderElectionNamespace=release_ns)  # fmt: skip
                args[args.index("--config") + 1] = str(write_yaml(tmp_path / "config.yaml", config))
            else:
                args += [f"--{flag}={value}" for flag, value in stand_ins.items()]
            argv = [sys.executable, "-m", "rayop", *container["command"][1:], *args]
            kubeconfig = await service_account_kubeconfig(
                client, real_kubeconfig, release_ns, release, tmp_path / "sa-kubeconfig"
            )
            log = tmp_path / "operator.log"
            if unwatched:
                await apply_raycluster(client, copy.deepcopy(sample), unwatched)
            async with operator_process(argv, kubeconfig, log) as proc:
                await wait_ready(proc, probe_port, log)
                for namespace in targets:
                    await apply_raycluster(client, copy.deepcopy(sample), namespace)
                for namespace in targets:
                    await eventually(
                        lambda ns=namespace: converged(client, ns, name),
                        timeout=90,
                        what=f"{namespace}/{name} ready under the chart's RBAC ({mode})",
                    )
                if "configuration" in values:
                    await check_configuration_applied(client, targets[0], name)
                if unwatched:
                    assert await cluster_pods(client, unwatched, name) == []
                    other = await client.get(RAY_CLUSTERS, name, namespace=unwatched)
                    assert not other.get("status"), other.get("status")
                proc.send_signal(signal.SIGTERM)
                code = await asyncio.wait_for(proc.wait(), 20)
            text = log.read_text()
            assert code == 0, text[-3000:]
            assert "Forbidden" not in text, [ln for ln in text.splitlines() if "Forbidden" in ln]
