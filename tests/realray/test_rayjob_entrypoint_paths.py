"""RayJob entrypoints read from a ConfigMap the head mounts, on ``rayop up --real-ray`` (issue 36).

In HTTPMode the operator submits ``python /home/ray/jobs/counter.py`` to the dashboard and Ray's
job supervisor, a process the head's raylet starts, runs it; in SidecarMode the submitter
container of the head pod passes the same command line to ``ray job submit``. Either way the
path (and the data file the script opens) must be the head container's ConfigMap, as in a pod:
each container runs in a mount namespace of its own with its volumes at their mountPaths, and
the command is passed on as written. Both modes run for rayop and for KubeRay v1.7.0 (on
``rayop apiserver --real-ray``, its dashboard calls through the API server).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator

import pytest

from .realray_support import KUBERAY_CONTROL, Kubectl, kuberay_on_apiserver, rayop_up_kubectl

pytestmark = pytest.mark.realray

CODE = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: job-code
data:
  data.txt: "forty-two"
  counter.py: |
    import ray
    ray.init()
    with open("/home/ray/jobs/data.txt") as f:
        word = f.read()
    print("counter.py read", word, "and got", ray.get(ray.remote(lambda: 6 * 7).remote()))
"""

JOB = """
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: {name}
spec:
  submissionMode: {mode}
  entrypoint: python /home/ray/jobs/counter.py
  rayClusterSpec:
    rayVersion: "2.60.0"
    headGroupSpec:
      rayStartParams: {{num-cpus: "1"}}
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.60.0
            resources: {{limits: {{cpu: "1", memory: 2Gi}}}}
            volumeMounts:
            - {{name: jobs, mountPath: /home/ray/jobs}}
          volumes:
          - {{name: jobs, configMap: {{name: job-code}}}}
"""

EXPECTED = "counter.py read forty-two and got 42"


@pytest.fixture(scope="module", params=["rayop", KUBERAY_CONTROL])
def up(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, ray_env: str
) -> Iterator[Kubectl]:
    """The ConfigMap ``job-code`` on ``rayop up --real-ray`` (rayop), or on ``rayop apiserver
    --real-ray`` with KubeRay v1.7.0 reaching the dashboards through the API server."""
    workdir = tmp_path_factory.mktemp(f"realray-entrypoint-paths-{request.param}")
    plane: contextlib.AbstractContextManager[Kubectl]
    if request.param == "kuberay":
        plane = kuberay_on_apiserver(
            workdir, ray_env, operator_args=["--use-kubernetes-proxy=true"]
        )
    else:
        plane = rayop_up_kubectl(workdir, ray_env)
    with plane as kubectl:
        kubectl.apply(CODE)
        yield kubectl


def _job_log(kubectl: Kubectl, name: str) -> str:
    job = kubectl.json("rayjob", name)
    service = job["status"]["rayClusterStatus"]["head"]["serviceName"]
    path = (
        f"/api/v1/namespaces/default/services/{service}:dashboard/proxy/api/jobs/"
        f"{job['status']['jobId']}/logs"
    )
    return str(json.loads(kubectl.run("get", "--raw", path).stdout)["logs"])


@pytest.mark.parametrize("mode", ["HTTPMode", "SidecarMode"])
def test_the_entrypoint_runs_from_the_heads_configmap(up: Kubectl, mode: str) -> None:
    name = f"paths-{mode.lower()}"
    start = time.monotonic()
    up.apply(JOB.format(name=name, mode=mode))
    up.wait_for(f"rayjob/{name}", ".status.jobStatus", "SUCCEEDED", timeout=300)
    print(f"\n{mode}: apply -> SUCCEEDED in {time.monotonic() - start:.1f} s")
    assert EXPECTED in _job_log(up, name)
    if mode == "SidecarMode":
        [head] = up.pod_names(f"ray.io/node-type=head,ray.io/cluster={_cluster(up, name)}")
        assert EXPECTED in _submitter_log(up, head), up.run(
            "logs", head, "-c", "ray-job-submitter"
        ).stdout


def _submitter_log(kubectl: Kubectl, head: str, timeout: float = 60.0) -> str:
    """The submitter container's log once it holds the job's output, or as it stands after
    ``timeout``. The operator writes SUCCEEDED when the dashboard reports it, and ``ray job
    submit`` may still be tailing the job's logs then: a CI run read the container's log
    ending at "Tailing logs until the job exits", before the job's own lines."""
    deadline = time.monotonic() + timeout
    while True:
        logs = kubectl.run("logs", head, "-c", "ray-job-submitter").stdout
        if EXPECTED in logs or time.monotonic() > deadline:
            return logs
        time.sleep(1.0)


def _cluster(kubectl: Kubectl, job: str) -> str:
    return str(kubectl.json("rayjob", job)["status"]["rayClusterName"])
