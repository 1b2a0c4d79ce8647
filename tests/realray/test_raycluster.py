"""A RayCluster on ``rayop up --real-ray``: jobs in HTTPMode and K8sJobMode on it (one failing
with Ray's own message), scaling from 1 to 3 workers seen by ``ray status`` in the head
(``kubectl exec``), pods whose command cannot run, and no process left once it is deleted."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest

from .realray_support import Kubectl, pod_pids, rayop_up, rss_bytes

pytestmark = pytest.mark.realray

CLUSTER = """
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: real
spec:
  rayVersion: "2.60.0"
  headGroupSpec:
    rayStartParams: {num-cpus: "1"}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.60.0
          resources: {limits: {cpu: "1", memory: 2Gi}}
  workerGroupSpecs:
  - groupName: small
    replicas: 1
    minReplicas: 0
    maxReplicas: 5
    rayStartParams: {num-cpus: "1"}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.60.0
          resources: {limits: {cpu: "1", memory: 1Gi}}
"""

JOB = """
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: {name}
spec:
  submissionMode: {mode}
  clusterSelector: {{ray.io/cluster: real}}
  entrypoint: {entrypoint}
"""


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory, ray_env: str) -> Iterator[Kubectl]:
    """One ``rayop up --real-ray`` with the RayCluster ``real`` ready."""
    workdir = tmp_path_factory.mktemp("realray-cluster")
    with rayop_up(workdir, ray_env) as (_proc, kubectl):
        start = time.monotonic()
        kubectl.apply(CLUSTER)
        kubectl.wait_for("raycluster/real", ".status.state", "ready", timeout=300)
        print(f"\nRayCluster head + 1 worker: apply -> ready in {time.monotonic() - start:.1f} s")
        yield kubectl


def test_an_http_mode_job_succeeds(up: Kubectl) -> None:
    entrypoint = "python -c \"import ray; ray.init(); print('nodes', len(ray.nodes()))\""
    up.apply(JOB.format(name="http-job", mode="HTTPMode", entrypoint=json.dumps(entrypoint)))
    up.wait_for("rayjob/http-job", ".status.jobStatus", "SUCCEEDED", timeout=240)
    assert up.pod_names("job-name=http-job") == []  # no submitter pod in HTTPMode


def test_a_failing_entrypoint_fails_with_rays_message(up: Kubectl) -> None:
    entrypoint = "python -c \"import sys; print('about to fail'); sys.exit(3)\""
    up.apply(JOB.format(name="failing-job", mode="K8sJobMode", entrypoint=json.dumps(entrypoint)))
    up.wait_for("rayjob/failing-job", ".status.jobDeploymentStatus", "Failed", timeout=240)
    status = up.json("rayjob", "failing-job")["status"]
    assert status["jobStatus"] == "FAILED", status
    assert "exit code 3" in status["message"] and "about to fail" in status["message"], status


def test_scaling_to_3_workers_shows_4_nodes_in_ray_status(up: Kubectl) -> None:
    def scale(replicas: int) -> None:
        patch = (
            f'[{{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":{replicas}}}]'
        )
        up.run("patch", "raycluster", "real", "--type=json", "-p", patch)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            pods = up.json("pods", "-l", "ray.io/group=small")["items"]
            ready = [p for p in pods if _ready(p)]
            if len(ready) == replicas and len(pods) == replicas:
                return
            time.sleep(2)
        raise AssertionError(f"{replicas} workers not ready")

    scale(2)
    pods = up.json("pods", "-l", "ray.io/cluster=real")["items"]
    rss = sum(rss_bytes(pod_pids(p["metadata"]["uid"])) for p in pods)
    print(f"\nRSS of head + 2 workers: {rss / 2**20:.0f} MiB over {len(pods)} pods")
    scale(3)
    [head] = up.pod_names("ray.io/node-type=head")
    deadline = time.monotonic() + 180
    while True:
        out = up.run("exec", head, "--", "ray", "status", check=False, timeout=150).stdout
        if _ray_status_nodes(out) == 4 or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert _ray_status_nodes(out) == 4, out


def _ray_status_nodes(out: str) -> int:
    """Counts the active and idle nodes ``ray status`` lists (`` 3 small``, `` 1 node_ab..``)."""
    status = out.split("Node status")[-1].split("Pending:")[0]
    return sum(int(n) for n in re.findall(r"^\s*(\d+) \S+$", status, flags=re.M))


def _ready(pod: dict[str, object]) -> bool:
    status = pod.get("status") or {}
    assert isinstance(status, dict)
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def test_an_unknown_binary_crash_loops_with_the_error_in_its_log(up: Kubectl) -> None:
    up.apply(
        """
apiVersion: v1
kind: Pod
metadata: {name: unknown-binary}
spec:
  containers:
  - {name: main, image: busybox, command: [no-such-binary-rayop]}
"""
    )
    up.wait_for(
        "pod/unknown-binary",
        ".status.containerStatuses[0].state.waiting.reason",
        "CrashLoopBackOff",
        60,
    )
    logs = up.run("logs", "unknown-binary", "--previous", check=False).stdout
    logs += up.run("logs", "unknown-binary", check=False).stdout
    assert 'exec: "no-such-binary-rayop"' in logs, logs


def test_a_shell_command_not_found_ends_in_error(up: Kubectl) -> None:
    up.apply(
        """
apiVersion: v1
kind: Pod
metadata: {name: not-found}
spec:
  restartPolicy: Never
  containers:
  - {name: main, image: busybox, command: [sh, -c, "echo starting; no-such-command-rayop"]}
"""
    )
    up.wait_for("pod/not-found", ".status.phase", "Failed", 60)
    state = up.json("pod", "not-found")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert state["exitCode"] == 127 and state["reason"] == "Error", state
    logs = up.run("logs", "not-found").stdout
    assert "starting" in logs and "no-such-command-rayop: not found" in logs, logs


def test_deleting_the_raycluster_leaves_no_ray_process(up: Kubectl) -> None:
    uids = [p["metadata"]["uid"] for p in up.json("pods", "-l", "ray.io/cluster=real")["items"]]
    assert uids and all(pod_pids(uid) for uid in uids)
    up.run("delete", "raycluster", "real", "--wait=true", timeout=180)
    deadline = time.monotonic() + 60
    while any(pod_pids(uid) for uid in uids) and time.monotonic() < deadline:
        time.sleep(1)
    assert [pid for uid in uids for pid in pod_pids(uid)] == []
