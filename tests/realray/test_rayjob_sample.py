"""``rayop up --real-ray`` runs KubeRay's ray-job.sample.yaml for real: the head and worker run
``ray start``, the submitter runs ``ray job submit``, the entrypoint runs from the mounted
ConfigMap, and its output is in the submitter pod's log and in Ray's job log."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rayop.sim.nodes.processes.container_process import tree_pids
from tests.kuberay_compat import samples_dir

from .realray_support import Kubectl, pod_pids, rayop_up, rss_bytes, stop

pytestmark = pytest.mark.realray


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory, ray_env: str) -> Iterator[Kubectl]:
    """One ``rayop up --real-ray`` for the module, with ray-job.sample.yaml applied."""
    sample = str(samples_dir() / "ray-job.sample.yaml")
    workdir = tmp_path_factory.mktemp("realray-job")
    with rayop_up(workdir, ray_env) as (proc, kubectl):
        start = time.monotonic()
        kubectl.run("apply", "-f", sample)
        kubectl.wait_for("rayjob/rayjob-sample", ".status.jobStatus", "SUCCEEDED", timeout=360)
        print(f"\nray-job.sample.yaml: apply -> SUCCEEDED in {time.monotonic() - start:.1f} s")
        kubectl.wait_for("rayjob/rayjob-sample", ".status.jobDeploymentStatus", "Complete", 60)
        yield kubectl
        uids = [p["metadata"]["uid"] for p in kubectl.json("pods")["items"]]
        assert stop(proc) == 0
        left = [pid for uid in uids for pid in pod_pids(uid)]
        assert left == [], f"processes left after rayop up stopped: {left}"


def test_the_entrypoint_ran_and_its_output_is_in_the_submitter_log(up: Kubectl) -> None:
    job = up.json("rayjob", "rayjob-sample")
    assert job["status"]["jobDeploymentStatus"] == "Complete"
    [submitter] = up.pod_names("job-name=rayjob-sample")
    logs = up.run("logs", submitter).stdout
    assert "test_counter got 5" in logs, logs
    assert f"Job '{job['status']['jobId']}' succeeded" in logs, logs


def test_the_ray_job_log_has_the_output_too(up: Kubectl) -> None:
    job = up.json("rayjob", "rayjob-sample")
    service = job["status"]["rayClusterStatus"]["head"]["serviceName"]
    path = f"/api/v1/namespaces/default/services/{service}:dashboard/proxy/api/jobs/{job['status']['jobId']}/logs"
    body = json.loads(up.run("get", "--raw", path).stdout)
    assert "test_counter got 5" in body["logs"], body


def test_head_and_worker_logs_show_ray_start(up: Kubectl) -> None:
    [head] = up.pod_names("ray.io/node-type=head")
    assert "Ray runtime started." in up.run("logs", head).stdout
    [worker] = up.pod_names("ray.io/node-type=worker")
    assert "Ray runtime started." in up.run("logs", worker, "-c", "ray-worker").stdout
    assert "GCS is ready" in up.run("logs", worker, "-c", "wait-gcs-ready").stdout


def test_the_image_version_warning_names_the_ray_that_runs(up: Kubectl) -> None:
    events = up.json("events")["items"]
    warnings = [e["message"] for e in events if e["reason"] == "RayVersionMismatch"]
    assert warnings, [e["reason"] for e in events]
    assert all(
        "(Ray 2.52.0)" in m and "Ray 2.60.0 installed on this machine runs it" in m
        for m in warnings
    )


def test_each_pod_has_its_own_loopback_ip_and_ray_session_dir(up: Kubectl) -> None:
    pods = up.json("pods", "-l", "ray.io/cluster")["items"]
    ips = [p["status"]["podIP"] for p in pods]
    assert len(set(ips)) == len(ips) and all(ip.startswith("127.") for ip in ips), ips
    temp_dirs = set()
    for pod in pods:
        for pid in pod_pids(pod["metadata"]["uid"]):
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            temp_dirs |= {e for e in environ if e.startswith(b"RAY_TMPDIR=")}
    assert len(temp_dirs) == len(pods), temp_dirs


def test_memory_of_the_head_and_worker(up: Kubectl) -> None:
    pods = up.json("pods", "-l", "ray.io/cluster")["items"]
    sizes = {p["metadata"]["name"]: rss_bytes(pod_pids(p["metadata"]["uid"])) for p in pods}
    print("\nRSS per pod (MiB):", {k: round(v / 2**20) for k, v in sizes.items()})
    assert all(size > 0 for size in sizes.values()), sizes
    assert tree_pids("RAYOP_PLANE=nothing-runs-here") == []
