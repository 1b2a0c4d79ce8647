"""The real kubectl reads head, worker and submitter pod logs from ``rayop up`` (logs and -f)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.kuberay_compat import needs_material, samples_dir

from .apiserver_process import kubectl_env, stop_apiserver

KUBECTL = "/usr/bin/kubectl"
pytestmark = needs_material


class Kubectl:
    """Runs kubectl against one server."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def run(
        self, *args: str, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [KUBECTL, *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    def pod(self, selector: str) -> str:
        names = self.run("get", "pods", "-l", selector, "-o", "name").stdout.split()
        assert len(names) == 1, names
        return names[0]


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    workdir = tmp_path_factory.mktemp("kubectl-logs")
    kubeconfig = workdir / "kubeconfig.yaml"
    cmd = [
        sys.executable, "-m", "rayop", "up", "--kubeconfig-out", str(kubeconfig),
        "--metrics-addr", "0", "--health-probe-bind-address", "0", "--pod-ready-delay", "0.05",
    ]  # fmt: skip
    with (workdir / "up.log").open("a") as stderr:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("rayop is up"), (workdir / "up.log").read_text()
        client = Kubectl(kubectl_env(kubeconfig, workdir))
        client.run("apply", "-f", str(samples_dir() / "ray-job.sample.yaml"))
        client.run(
            "wait",
            "--for=jsonpath={.status.jobStatus}=SUCCEEDED",
            "rayjob/rayjob-sample",
            "--timeout=120s",
            timeout=150,
        )
        yield client
    finally:
        stop_apiserver(proc)


def test_kubectl_logs_of_head_worker_and_submitter(kubectl: Kubectl) -> None:
    head = kubectl.run("logs", kubectl.pod("ray.io/node-type=head")).stdout
    assert "ray start --head" in head and "Ray runtime started." in head
    worker = kubectl.run("logs", kubectl.pod("ray.io/node-type=worker"))
    assert "ray start" in worker.stdout and "--address=" in worker.stdout
    assert 'Defaulted container "ray-worker"' in worker.stderr  # its init container is second
    submitter_pod = kubectl.pod("job-name=rayjob-sample")
    submitter = kubectl.run("logs", submitter_pod).stdout
    job_id = json.loads(kubectl.run("get", "rayjob", "rayjob-sample", "-o", "json").stdout)[
        "status"
    ]["jobId"]
    assert f"Job '{job_id}' submitted successfully" in submitter
    assert f"Job '{job_id}' succeeded" in submitter
    assert submitter.endswith('container "ray-job-submitter" exited with code 0 (Completed)\n')
    tail = kubectl.run("logs", submitter_pod, "--tail=1", "--timestamps").stdout
    assert tail.split(" ", 1)[1] == submitter.splitlines(keepends=True)[-1]


def test_kubectl_logs_follow(kubectl: Kubectl) -> None:
    submitter_pod = kubectl.pod("job-name=rayjob-sample")
    followed = kubectl.run("logs", "-f", submitter_pod, timeout=30)  # ends with the container
    assert followed.stdout == kubectl.run("logs", submitter_pod).stdout
    head_pod = kubectl.pod("ray.io/node-type=head")
    with subprocess.Popen(
        [KUBECTL, "logs", "-f", head_pod],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as follower:
        assert follower.stdout is not None
        try:
            first = follower.stdout.readline()
            assert first.startswith('[rayop simulated kubelet] container "ray-head" started')
            time.sleep(0.5)  # an absence is the behaviour: no EOF while the container runs
            assert follower.poll() is None  # a running container's log stays open
        finally:
            follower.terminate()
            follower.wait(timeout=10)
            follower.stdout.close()


def test_kubectl_exec_says_it_is_not_supported(kubectl: Kubectl) -> None:
    head_pod = kubectl.pod("ray.io/node-type=head")
    result = kubectl.run("exec", head_pod, "--", "ray", "status", check=False)
    assert result.returncode != 0
    assert "exec is not supported on the simulated kubelet" in result.stderr
