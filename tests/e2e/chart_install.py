"""Installing the rendered Helm chart on the embedded control plane, and running its operator.

``render_release`` renders helm/rayop with real Helm (tests/deploy/helm_cli.py; the test is
skipped, saying how to build helm, when it is not built) into files; ``kubectl_install``
applies them with the real kubectl, as ``helm install --create-namespace`` would (CRDs first,
then the templates); ``operator_command`` turns the rendered Deployment's container into the
argv and environment a kubelet would start, with the downward-API variables resolved and
``$(VAR)`` references in args expanded.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from rayop.sim.controlplane import EmbeddedControlPlane
from tests.deploy import helm_cli as helm

REPO = Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
RELEASE = "rayop"
NAMESPACE = "rayop-system"

Obj = dict[str, Any]


@dataclass(frozen=True)
class RenderedRelease:
    """The chart rendered into files, and the objects it holds."""

    crds: Path
    manifests: Path
    docs: list[Obj]

    def one(self, kind: str) -> Obj:
        """Returns the one rendered object of ``kind``."""
        (found,) = [d for d in self.docs if d["kind"] == kind]
        return found

    @property
    def pod_spec(self) -> Obj:
        """The operator Deployment's pod template spec."""
        spec: Obj = self.one("Deployment")["spec"]["template"]["spec"]
        return spec

    @property
    def service_account(self) -> str:
        """The ServiceAccount the operator pod runs as."""
        return str(self.pod_spec["serviceAccountName"])


def render_release(directory: Path, overrides: Obj | None = None) -> RenderedRelease:
    """Renders the chart (release ``rayop`` in ``rayop-system``) into ``directory``."""
    if helm.missing_helm_reason():
        pytest.skip(helm.missing_helm_reason())
    manifests = directory / "manifests.yaml"
    manifests.write_text(helm.template_text(overrides, release=RELEASE, namespace=NAMESPACE))
    crds = directory / "crds"
    shutil.copytree(helm.CHART / "crds", crds)
    docs = [d for d in yaml.safe_load_all(manifests.read_text()) if d]
    return RenderedRelease(crds, manifests, docs)


async def kubectl(kubeconfig: str, home: Path, *args: str) -> str:
    """Runs the real kubectl without blocking the event loop; returns stdout, fails on error."""
    env = {**os.environ, "KUBECONFIG": kubeconfig, "HOME": str(home)}
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, f"kubectl {' '.join(args)}: {err.decode()}"
    return out.decode()


async def kubectl_install(cp: EmbeddedControlPlane, release: RenderedRelease, home: Path) -> None:
    """Applies the CRDs, the namespace and the rendered templates as the cluster admin."""
    admin = cp.kubeconfig_path
    await kubectl(admin, home, "apply", "-f", str(release.crds))
    await kubectl(
        admin, home, "wait", "--for=condition=Established", "--timeout=30s", "crd", "--all"
    )
    await kubectl(admin, home, "create", "namespace", NAMESPACE)
    await kubectl(admin, home, "apply", "-f", str(release.manifests))


def free_port() -> int:
    """Returns a loopback TCP port that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _field_ref(path: str, namespace: str, pod_name: str, service_account: str) -> str:
    values = {
        "metadata.namespace": namespace,
        "metadata.name": pod_name,
        "spec.serviceAccountName": service_account,
    }
    assert path in values, f"downward API field {path} is not simulated"
    return values[path]


def container_env(release: RenderedRelease, container: Obj) -> dict[str, str]:
    """Resolves the container's ``env`` as the kubelet would (values and downward API)."""
    env: dict[str, str] = {}
    for var in container.get("env") or []:
        if "value" in var:
            env[var["name"]] = _expand(str(var["value"]), env)
        else:
            ref = var["valueFrom"]["fieldRef"]["fieldPath"]
            env[var["name"]] = _field_ref(ref, NAMESPACE, "rayop-0", release.service_account)
    return env


def _expand(text: str, env: dict[str, str]) -> str:
    """Expands ``$(VAR)`` from ``env`` (unknown ones stay as written, ``$$`` escapes)."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", sub, text)


@dataclass(frozen=True)
class OperatorCommand:
    """What the kubelet would run: argv and the container's own environment."""

    argv: list[str]
    env: dict[str, str]
    metrics_port: int
    health_port: int


def operator_command(release: RenderedRelease) -> OperatorCommand:
    """Returns the operator's argv (command + args, $(VAR) expanded) and environment.

    ``--metrics-addr`` and ``--health-probe-bind-address`` get free loopback ports instead of
    :8080/:8082, which other processes on a shared test machine may hold (added when the chart
    leaves them at their default), and ``--leader-election-namespace`` stands in for the
    service-account namespace file a pod has (the chart's leader-election Role is there). The
    ``rayop`` executable is the one installed beside this Python.
    """
    (container,) = [c for c in release.pod_spec["containers"] if c["name"] == "rayop"]
    env = container_env(release, container)
    metrics_port, health_port = free_port(), free_port()
    ports = {"--metrics-addr": metrics_port, "--health-probe-bind-address": health_port}
    args = []
    for arg in container.get("args") or []:
        flag = arg.split("=", 1)[0]
        args.append(f"{flag}=127.0.0.1:{ports.pop(flag)}" if flag in ports else _expand(arg, env))
    args += [f"{flag}=127.0.0.1:{port}" for flag, port in ports.items()]
    args.append(f"--leader-election-namespace={NAMESPACE}")
    command = list(container["command"])
    command[0] = str(Path(sys.executable).parent / command[0])
    return OperatorCommand(command + args, env, metrics_port, health_port)
