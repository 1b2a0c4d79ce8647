"""A RayService on ``rayop up --real-ray`` whose Serve app is code in a mounted ConfigMap (no
remote working_dir: there is no internet here) reaches Ready and answers HTTP through its serve
Service."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from rayop.kube.client import KubeClient
from rayop.kube.config import load_config

from .realray_support import Kubectl, rayop_up

pytestmark = pytest.mark.realray

SERVICE = """
apiVersion: v1
kind: ConfigMap
metadata: {name: hello-app}
data:
  hello.py: |
    from ray import serve

    @serve.deployment
    class Hello:
        def __call__(self, request):
            return "hello from real ray"

    app = Hello.bind()
---
apiVersion: ray.io/v1
kind: RayService
metadata: {name: hello}
spec:
  serveConfigV2: |
    applications:
      - name: hello
        import_path: hello:app
        route_prefix: /
        deployments:
          - name: Hello
            num_replicas: 1
            ray_actor_options: {num_cpus: 0.1}
  rayClusterConfig:
    rayVersion: "2.60.0"
    headGroupSpec:
      rayStartParams: {num-cpus: "2"}
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.60.0
            env: [{name: PYTHONPATH, value: /home/ray/app}]
            volumeMounts: [{name: app, mountPath: /home/ray/app}]
          volumes: [{name: app, configMap: {name: hello-app}}]
    workerGroupSpecs: []
"""


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory, ray_env: str) -> Iterator[Kubectl]:
    """One ``rayop up --real-ray`` with the RayService ``hello`` applied."""
    workdir = tmp_path_factory.mktemp("realray-service")
    with rayop_up(workdir, ray_env) as (_proc, kubectl):
        yield kubectl


def test_the_serve_app_from_a_configmap_gets_ready_and_answers(up: Kubectl) -> None:
    start = time.monotonic()
    up.apply(SERVICE)
    up.wait_for("rayservice/hello", '.status.conditions[?(@.type=="Ready")].status', "True", 360)
    print(f"\nRayService: apply -> Ready in {time.monotonic() - start:.1f} s")
    path = "/api/v1/namespaces/default/services/hello-serve-svc:8000/proxy/"
    deadline = time.monotonic() + 60
    while True:
        answer = up.run("get", "--raw", path, check=False)
        if answer.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert answer.stdout == "hello from real ray", answer.stderr


UPGRADE = """
apiVersion: v1
kind: ConfigMap
metadata: {name: hello-app-v2}
data:
  hello.py: |
    from ray import serve

    @serve.deployment
    class Hello:
        def __call__(self, request):
            return "hello v2"

    app = Hello.bind()
"""


async def test_an_upgrade_switches_traffic_with_no_failed_request(up: Kubectl) -> None:
    old = up.json("rayservice", "hello")["status"]["activeServiceStatus"]["rayClusterName"]
    up.apply(UPGRADE)
    patch = '[{"op":"replace","path":"/spec/rayClusterConfig/headGroupSpec/template/spec/volumes/0/configMap/name","value":"hello-app-v2"}]'
    path = "/api/v1/namespaces/default/services/hello-serve-svc:8000/proxy/"
    answers: list[tuple[int, str]] = []
    config = await load_config(kubeconfig=str(up.kubeconfig))
    async with KubeClient(config, qps=-1) as kube:
        await asyncio.to_thread(up.run, "patch", "rayservice", "hello", "--type=json", "-p", patch)
        start = time.monotonic()
        switched_at: float | None = None
        while time.monotonic() - start < 420:
            status, body = await kube.request("GET", path, timeout=10)
            answers.append((status, body.decode(errors="replace")))
            if switched_at is None and answers[-1] == (200, "hello v2"):
                switched_at = time.monotonic()
                print(
                    f"\nRayService upgrade: traffic on the new cluster after {switched_at - start:.1f} s"
                )
            if switched_at is not None and time.monotonic() - switched_at > 10:
                break
            await asyncio.sleep(0.5)
    failed = [a for a in answers if a[0] != 200]
    assert switched_at is not None, answers[-3:]
    assert failed == [], failed[:3]
    assert {body for _, body in answers} <= {"hello from real ray", "hello v2"}
    new = up.json("rayservice", "hello")["status"]["activeServiceStatus"]["rayClusterName"]
    assert new != old
