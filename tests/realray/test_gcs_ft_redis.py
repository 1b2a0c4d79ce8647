"""GCS fault tolerance with Redis on ``rayop up --real-ray``: KubeRay's samples
ray-cluster.external-redis.yaml (Redis as a Deployment) and ray-cluster.persistent-redis.yaml
(a StatefulSet on a PersistentVolumeClaim), applied as they are. Redis is the machine's
``redis-server`` (``scripts/redis-install``, Debian's package) running the samples' own commands
under the loopback shim. The head gets ``RAY_REDIS_ADDRESS`` naming the Redis Service; a
detached named actor created on the worker answers, the head pod is deleted, and once the new
head is up the same actor answers again with its state (the GCS read the cluster back from
Redis). The samples' redis.conf says ``dir /data``, so Redis needs its in-pod paths (issue 36
part 1: containers in mount namespaces)."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator

import pytest

from tests.kuberay_compat import samples_dir

from .realray_support import Kubectl, rayop_up

pytestmark = pytest.mark.realray

CREATE = """
import ray
ray.init(namespace="ft")

@ray.remote(num_cpus=1)
class Counter:
    def __init__(self):
        self.value = 0

    def increment(self):
        self.value += 1
        return self.value

Counter.options(name="counter", lifetime="detached").remote()
print("created")
"""

INCREMENT = """
import ray
ray.init(namespace="ft")
print("counter", ray.get(ray.get_actor("counter").increment.remote(), timeout=60))
"""


@pytest.fixture
def up(tmp_path_factory: pytest.TempPathFactory, ray_env: str) -> Iterator[Kubectl]:
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not on PATH (scripts/redis-install installs it)")
    workdir = tmp_path_factory.mktemp("realray-gcs-ft")
    with rayop_up(workdir, ray_env) as (_proc, kubectl):
        yield kubectl


def _python(kubectl: Kubectl, pod: str, script: str, *, attempts: int = 1) -> str:
    """Runs a Python script in the head container; retries while the GCS is coming back."""
    for attempt in range(attempts):
        proc = kubectl.run(
            "exec", pod, "-c", "ray-head", "--", "python", "-c", script, check=False, timeout=180
        )
        if proc.returncode == 0:
            return proc.stdout
        if attempt == attempts - 1:
            raise AssertionError(f"python in {pod} failed: {proc.stderr}{proc.stdout}")
        time.sleep(5)
    raise AssertionError("unreachable")


def _head(kubectl: Kubectl) -> str:
    [head] = kubectl.pod_names("ray.io/node-type=head")
    return head


def _ready_head(kubectl: Kubectl, other_than: str, timeout: float) -> str:
    """Waits for a head pod other than ``other_than`` to be Ready; returns its name."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pod in kubectl.json("pods", "-l", "ray.io/node-type=head")["items"]:
            conditions = {c["type"]: c["status"] for c in pod["status"].get("conditions") or []}
            if pod["metadata"]["name"] != other_than and conditions.get("Ready") == "True":
                return str(pod["metadata"]["name"])
        time.sleep(2)
    heads = kubectl.pod_names("ray.io/node-type=head")
    logs = "".join(
        kubectl.run("logs", h, "-c", "ray-head", check=False).stdout[-3000:] for h in heads
    )
    events = [
        f"{e['involvedObject']['name']}: {e['reason']}: {e['message']}"
        for e in kubectl.json("events")["items"]
        if e["type"] == "Warning"
    ]
    raise AssertionError(f"no new ready head pod after {timeout} s: {heads} {events[-8:]}\n{logs}")


@pytest.mark.parametrize(
    ("sample", "redis_pod"),
    [
        ("ray-cluster.external-redis.yaml", "app=redis"),
        ("ray-cluster.persistent-redis.yaml", "statefulset.kubernetes.io/pod-name=redis-0"),
    ],
)
def test_a_detached_actor_survives_a_head_restart(up: Kubectl, sample: str, redis_pod: str) -> None:
    start = time.monotonic()
    up.run("apply", "-f", str(samples_dir() / sample))
    up.wait_for("raycluster/raycluster-external-redis", ".status.state", "ready", timeout=300)
    print(f"\n{sample}: apply -> ready in {time.monotonic() - start:.1f} s")
    assert len(up.pod_names(redis_pod)) == 1
    head = _head(up)
    env = {
        e["name"]: e.get("value")
        for e in up.json("pod", head)["spec"]["containers"][0].get("env") or []
    }
    assert env["RAY_REDIS_ADDRESS"] == "redis:6379", env
    assert "created" in _python(up, head, CREATE, attempts=3)
    assert "counter 1" in _python(up, head, INCREMENT)

    restart = time.monotonic()
    up.run("delete", "pod", head, "--wait=true")
    new_head = _ready_head(up, head, timeout=240)
    out = _python(up, new_head, INCREMENT, attempts=12)
    print(f"{sample}: head deleted -> actor answers again in {time.monotonic() - restart:.1f} s")
    assert "counter 2" in out, out  # the same actor, its state kept
    cluster = json.loads(
        up.run("get", "raycluster", "raycluster-external-redis", "-o", "json").stdout
    )
    assert cluster["status"]["state"] == "ready"
