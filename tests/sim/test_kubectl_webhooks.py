"""``ENABLE_WEBHOOKS=true rayop up``: the real kubectl shows the webhook's error at apply."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .apiserver_process import kubectl_env, stop_apiserver

KUBECTL = "/usr/bin/kubectl"
CONTAINERS = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}


def _cluster(name: str, min_replicas: int = 0) -> str:
    group = {
        "groupName": "small",
        "minReplicas": min_replicas,
        "maxReplicas": 2,
        "template": CONTAINERS,
    }
    obj = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {"headGroupSpec": {"template": CONTAINERS}, "workerGroupSpecs": [group]},
    }
    return yaml.safe_dump(obj)


@pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")
def test_kubectl_apply_shows_the_webhook_refusal(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig.yaml"
    cmd = [
        sys.executable, "-m", "rayop", "up", "--kubeconfig-out", str(kubeconfig),
        "--metrics-addr", "0", "--health-probe-bind-address", "0",
    ]  # fmt: skip
    env = kubectl_env(kubeconfig, tmp_path) | {"ENABLE_WEBHOOKS": "true", "TMPDIR": str(tmp_path)}
    with (tmp_path / "up.log").open("a") as stderr:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("rayop is up"), (tmp_path / "up.log").read_text()

        def apply(manifest: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [KUBECTL, "apply", "-f", "-"],
                input=manifest,
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
                check=False,
            )

        assert apply(_cluster("good")).returncode == 0
        refused = apply(_cluster("bad", min_replicas=5))
        assert refused.returncode != 0
        # kubectl prints a 422 Invalid from its causes, as it does for KubeRay's webhook.
        assert refused.stderr == (
            'The RayCluster "bad" is invalid: spec: Invalid value: worker group small has '
            "minReplicas 5 greater than maxReplicas 2\n"
        )
        assert (tmp_path / "k8s-webhook-server" / "serving-certs" / "tls.crt").exists()
    finally:
        stop_apiserver(proc)
