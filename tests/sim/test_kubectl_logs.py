"""The real kubectl against ``rayop up``'s simulated pods: head, worker and submitter pod logs
(logs and -f), exec of ``tar`` over the simulated Ray logs (and nothing else), port-forward to
the simulated dashboard."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
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


def test_kubectl_exec_tar_archives_the_simulated_ray_logs(kubectl: Kubectl) -> None:
    head_pod = kubectl.pod("ray.io/node-type=head")
    job_id = json.loads(kubectl.run("get", "rayjob", "rayjob-sample", "-o", "json").stdout)[
        "status"
    ]["jobId"]
    logs = "/tmp/ray/session_latest/logs/"
    proc = subprocess.run(
        [KUBECTL, "exec", head_pod, "--", "tar", "--warning=no-file-changed", "-cf", "-",
         "-C", logs, "."],
        env=kubectl.env, capture_output=True, timeout=60, check=True,
    )  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as archive:
        names = sorted(archive.getnames())
        assert names == [".", f"./job-driver-{job_id}.log"]
        driver = archive.extractfile(f"./job-driver-{job_id}.log")
        assert driver is not None
        text = driver.read().decode()
    assert text.startswith(f"Running entrypoint for job {job_id}: python ")
    assert text.endswith("Simulated entrypoint finished.\n")
    worker = kubectl.pod("ray.io/node-type=worker")
    empty = subprocess.run(
        [KUBECTL, "exec", worker, "-c", "ray-worker", "--", "tar", "-cf", "-", "-C", logs, "."],
        env=kubectl.env, capture_output=True, timeout=60, check=True,
    )  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(empty.stdout)) as archive:
        assert archive.getnames() == ["."]


@pytest.mark.parametrize(
    ("command", "why"),
    [
        (["ls", "/"], "the simulated container runs no 'ls /'"),
        (["tar", "-cf", "-", "/etc/passwd"], "/etc/passwd does not exist in a simulated"),
        (["tar", "-xf", "-", "-C", "/tmp/ray"], "tar option -xf is not simulated"),
        (["tar", "-cf", "-", "/tmp/ray/../../etc"], "leaves /tmp/ray"),
        (["tar", "--to-command=sh", "-cf", "-", "."], "tar option --to-command=sh"),
    ],
)
def test_kubectl_exec_of_anything_else_is_refused_with_why(
    kubectl: Kubectl, command: list[str], why: str
) -> None:
    result = kubectl.run("exec", kubectl.pod("ray.io/node-type=head"), "--", *command, check=False)
    assert result.returncode != 0
    assert "exec is not supported on the simulated kubelet" in result.stderr
    assert why in result.stderr


def _port_forward(kubectl: Kubectl, pod: str, remote: int) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [KUBECTL, "port-forward", pod, f":{remote}"],
        env=kubectl.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.match(rf"Forwarding from 127\.0\.0\.1:(\d+) -> {remote}", line)
    assert match is not None, line
    return proc, int(match.group(1))


def test_kubectl_port_forward_reaches_the_simulated_dashboard(kubectl: Kubectl) -> None:
    proc, local = _port_forward(kubectl, kubectl.pod("ray.io/node-type=head"), 8265)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{local}/api/version", timeout=30) as r:
            version = json.load(r)
        assert version["ray_version"] and version["session_name"].startswith("session_")
        with urllib.request.urlopen(f"http://127.0.0.1:{local}/api/jobs/", timeout=30) as r:
            jobs = json.load(r)
        job_id = json.loads(kubectl.run("get", "rayjob", "rayjob-sample", "-o", "json").stdout)[
            "status"
        ]["jobId"]
        assert [(j["submission_id"], j["status"]) for j in jobs] == [(job_id, "SUCCEEDED")]
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_kubectl_port_forward_to_a_port_nothing_simulates_is_refused(kubectl: Kubectl) -> None:
    proc, local = _port_forward(kubectl, kubectl.pod("ray.io/node-type=head"), 10001)
    try:
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            urllib.request.urlopen(f"http://127.0.0.1:{local}/", timeout=30)
        _, stderr = proc.communicate(timeout=30)  # kubectl ends after a refused dial
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "failed to connect to" in stderr and ":10001" in stderr
    assert "connection refused" in stderr
