"""KubeRay v1.7.0's own `kubectl ray` plugin against `rayop up`: every command of its root.

The plugin is built from KubeRay's source by ``scripts/controlplane-build kuberay-tools``
(``kuberay_tools``); `rayop up` runs as a process (the embedded plane, its simulated kubelet and
dashboards, and the operator), and each command runs as a user would run it, with the plane's
kubeconfig. The commands and what they need of the plane:

- ``create cluster|workergroup``, ``get cluster|nodes|workergroups|token``, ``scale cluster``,
  ``delete``: the ray.io API, Pods and Secrets.
- ``session``: `kubectl port-forward` to the head Service's 8265 and 10001: the simulated head's
  dashboard answers through it; Ray's client port (10001) is not simulated, so a connection to
  it is refused in the kubelet's words and the plugin reconnects.
- ``log``: ``pods/log`` of every Ray container and ``pods/exec`` of ``tar`` over
  ``/tmp/ray/session_latest/logs`` (the simulated head keeps each job's driver log there).
- ``job submit``: a RayJob in InteractiveMode, port-forward to 8265, then Ray 2.60's own
  ``ray job submit`` (from ``scripts/ray-env``) uploads the working directory and tails the
  driver log; the RayJob ends SUCCEEDED.
- ``version``: the plugin's version, and the operator's image tag from a Deployment labelled
  ``app.kubernetes.io/name`` kuberay-operator or kuberay (rayop's chart with KubeRay's names).

`session` and `job submit` forward the fixed local ports 8265 and 10001 (the plugin has no flag
for them), so `rayop up`, the plugin and every request of the tests run in a private network
namespace (:class:`~tests.real.netns.NetNs`).
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from rayop.cli.realcluster_http import wait_until
from tests.deploy import helm_cli
from tests.kuberay_compat import samples_dir
from tests.sim.apiserver_process import kubectl_env, stop_apiserver

from .netns import NetNs
from .real_support import build

pytestmark = pytest.mark.real

REPO = Path(__file__).resolve().parents[2]
KUBECTL = "/usr/bin/kubectl"
COVERED = {"create", "delete", "get", "job", "log", "scale", "session", "version"}
"""The commands of the plugin's root these tests run (cobra adds ``help`` and ``completion``)."""


@dataclass
class Plugin:
    """Runs `kubectl ray` against one `rayop up`."""

    binary: Path
    env: dict[str, str]
    workdir: Path
    ns: NetNs

    def run(self, *args: str, check: bool = True, timeout: float = 120) -> str:
        proc = self.ns.run(
            [str(self.binary), *args], env=self.env, timeout=timeout, cwd=self.workdir, check=False
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl ray {' '.join(args)}: {proc.stdout}\n{proc.stderr}")
        return proc.stdout + proc.stderr

    def kubectl(self, *args: str, input_text: str | None = None) -> str:
        proc = self.ns.run([KUBECTL, *args], env=self.env, input=input_text, check=False)
        assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    def table(self, *args: str) -> list[dict[str, str]]:
        """The rows of a `kubectl ray get` table, by column name."""
        lines = [ln for ln in self.run(*args).splitlines() if ln.strip()]
        header = re.split(r"\s{2,}", lines[0].strip())
        return [dict(zip(header, re.split(r"\s{2,}", ln.strip()), strict=True)) for ln in lines[1:]]


def _ray_bin() -> Path:
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "ray-env")], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        pytest.fail(f"scripts/ray-env failed (Ray's CLI is needed by job submit): {proc.stderr}")
    return Path(proc.stdout.strip()) / "bin"


@pytest.fixture(scope="module")
def plugin(kuberay_tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plugin]:
    """`rayop up` (fast pods) for the module, and the plugin pointed at it, in a private network
    namespace (`session` and `job submit` forward the fixed local ports 8265 and 10001)."""
    workdir = tmp_path_factory.mktemp("kubectl-ray")
    kubeconfig = workdir / "kubeconfig.yaml"
    try:
        ns = NetNs()
    except RuntimeError as err:
        pytest.fail(f"kubectl ray's fixed ports need a private network namespace: {err}")
    cmd = [
        sys.executable, "-m", "rayop", "up", "--kubeconfig-out", str(kubeconfig),
        "--metrics-addr", "0", "--health-probe-bind-address", "0", "--pod-ready-delay", "0.05",
    ]  # fmt: skip
    with (workdir / "up.log").open("a") as stderr:
        proc = ns.popen(cmd, stdout=subprocess.PIPE, stderr=stderr)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("rayop is up"), (workdir / "up.log").read_text()
        env = kubectl_env(kubeconfig, workdir)
        env["PATH"] = f"{_ray_bin()}:/usr/local/bin:/usr/bin:/bin"
        yield Plugin(kuberay_tools / "kubectl-ray", env, workdir, ns)
    finally:
        stop_apiserver(proc)
        ns.close()


def _wait(what: str, check: Callable[[], bool], timeout: float = 120) -> None:
    wait_until(check, timeout=timeout, what=what, interval=0.5)


def _get(plugin: Plugin, url: str) -> tuple[int, str]:
    return plugin.ns.get(url)


def test_the_tests_cover_every_command_of_the_plugins_root(plugin: Plugin) -> None:
    text = plugin.run("--help")
    listed = text.split("Available Commands:", 1)[1].split("Flags:", 1)[0]
    commands = {line.split()[0] for line in listed.splitlines() if line.strip()}
    assert commands - {"help", "completion"} == COVERED


def test_version_finds_rayop_under_kuberays_deployment_name(plugin: Plugin) -> None:
    before = plugin.run("version")
    assert "kubectl ray plugin version: v1.7.0" in before
    assert "KubeRay operator installation cannot be found" in before
    ok, why = build("helm")
    assert ok, why
    values = {"nameOverride": "kuberay-operator", "fullnameOverride": "kuberay-operator"}
    deployment = next(
        obj for obj in helm_cli.template(values, namespace="default") if obj["kind"] == "Deployment"
    )
    plugin.kubectl("create", "-f", "-", input_text=yaml.safe_dump(deployment))
    chart = yaml.safe_load((REPO / "helm" / "rayop" / "Chart.yaml").read_text())
    after = plugin.run("version")
    assert f"KubeRay operator version: {chart['appVersion']}" in after
    plugin.kubectl("delete", "deployment", "kuberay-operator")


def test_create_get_scale_and_delete_a_cluster(plugin: Plugin) -> None:
    out = plugin.run("create", "cluster", "demo", "--worker-replicas", "2", "--wait")
    assert "Created Ray cluster: demo" in out
    (row,) = plugin.table("get", "cluster", "demo")
    assert (row["NAME"], row["DESIRED WORKERS"], row["STATUS"]) == ("demo", "2", "ready")
    nodes = plugin.table("get", "nodes", "--ray-cluster", "demo")
    assert sorted(n["TYPE"] for n in nodes) == ["head", "worker", "worker"]
    plugin.run("create", "workergroup", "extra", "--ray-cluster", "demo", "--worker-replicas", "1")
    plugin.run("scale", "cluster", "demo", "--worker-group", "default-group", "--replicas", "3")

    def scaled() -> bool:
        groups = {
            g["NAME"]: g["REPLICAS"] for g in plugin.table("get", "workergroups", "-c", "demo")
        }
        return groups == {"default-group": "3/3", "extra": "1/1"}

    _wait("3 + 1 ready workers", scaled)
    assert len(plugin.table("get", "nodes", "--ray-cluster", "demo")) == 5
    assert "Deleted raycluster demo" in plugin.run("delete", "raycluster/demo", "--yes")
    _wait("demo gone", lambda: "demo" not in plugin.kubectl("get", "rayclusters", "-o", "name"))


def test_get_token_of_a_token_auth_cluster(plugin: Plugin) -> None:
    plugin.kubectl("apply", "-f", str(samples_dir() / "ray-cluster.auth.yaml"))
    name = "ray-cluster-with-auth"

    def secret() -> str:
        out = plugin.kubectl("get", "secrets", "-o", "json")
        found = [s for s in json.loads(out)["items"] if s["metadata"]["name"] == name]
        return found[0]["data"]["auth_token"] if found else ""

    _wait("the auth token Secret", lambda: bool(secret()))
    assert plugin.run("get", "token", name).strip() == base64.b64decode(secret()).decode()
    refused = plugin.run("get", "token", "nope", check=False)
    assert 'rayclusters.ray.io "nope" not found' in refused
    plugin.run("delete", name, "--yes")


@pytest.fixture(scope="module")
def submitted(plugin: Plugin) -> str:
    """`kubectl ray job submit` of a working directory; returns the RayJob's name."""
    workdir = plugin.workdir / "job"
    workdir.mkdir()
    (workdir / "main.py").write_text("print('hello from kubectl ray')\n")
    out = plugin.run(
        "job", "submit", "--name", "plugin-job", "--working-dir", str(workdir),
        "--", "python", "main.py", timeout=300,
    )  # fmt: skip
    assert "Uploading package gcs://_ray_pkg_" in out
    assert re.search(r"Job 'raysubmit_\w+' submitted successfully", out), out
    assert "Running entrypoint for job raysubmit_" in out  # the tailed driver log
    assert re.search(r"Job raysubmit_\w+ finished with status SUCCEEDED\.", out), out
    return "plugin-job"


def test_job_submit_runs_ray_job_submit_through_the_port_forward(
    plugin: Plugin, submitted: str
) -> None:
    job = json.loads(plugin.kubectl("get", "rayjob", submitted, "-o", "json"))
    assert job["spec"]["submissionMode"] == "InteractiveMode"
    assert job["status"]["jobStatus"] == "SUCCEEDED"
    assert job["status"]["jobDeploymentStatus"] == "Complete"


def test_log_downloads_pod_logs_and_the_simulated_ray_logs(plugin: Plugin, submitted: str) -> None:
    job = json.loads(plugin.kubectl("get", "rayjob", submitted, "-o", "json"))
    cluster, job_id = job["status"]["rayClusterName"], job["status"]["jobId"]
    out_dir = plugin.workdir / "logs"
    out_dir.mkdir()
    out = plugin.run("log", f"rayjob/{submitted}", "--out-dir", str(out_dir))
    head = next(d for d in out_dir.iterdir() if "-head-" in d.name)
    assert f"Downloading log for Ray Node {head.name}" in out
    assert "Ray runtime started." in (head / "stdout.log").read_text()
    driver = (head / f"job-driver-{job_id}.log").read_text()
    assert driver.startswith(f"Running entrypoint for job {job_id}: python main.py")
    workers = [d for d in out_dir.iterdir() if "-worker-" in d.name]
    assert workers and all((w / "stdout.log").is_file() for w in workers)
    only_workers = plugin.workdir / "worker-logs"
    only_workers.mkdir()
    plugin.run("log", cluster, "--node-type", "worker", "--out-dir", str(only_workers))
    assert sorted(d.name for d in only_workers.iterdir()) == sorted(w.name for w in workers)


def test_session_forwards_the_dashboard_and_reports_the_unsimulated_client_port(
    plugin: Plugin, submitted: str
) -> None:
    job = json.loads(plugin.kubectl("get", "rayjob", submitted, "-o", "json"))
    cluster, job_id = job["status"]["rayClusterName"], job["status"]["jobId"]
    log = (plugin.workdir / "session.log").open("w+")
    proc = plugin.ns.popen(
        [str(plugin.binary), "session", cluster], env=plugin.env, stdout=log, stderr=log
    )
    try:

        def forwarding() -> bool:
            return "ray_version" in _get(plugin, "http://localhost:8265/api/version")[1]

        _wait("the dashboard through kubectl ray session", forwarding)
        status, body = _get(plugin, "http://localhost:8265/api/jobs/")
        assert status == 200
        assert [(j["submission_id"], j["status"]) for j in json.loads(body)] == [
            (job_id, "SUCCEEDED")
        ]
        assert _get(plugin, "http://localhost:10001/")[0] == 0  # curl: the connection failed
        _wait(
            "the refused client port reported",
            lambda: "connect: connection refused" in (plugin.workdir / "session.log").read_text(),
        )
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        log.close()
    text = (plugin.workdir / "session.log").read_text()
    assert f"Forwarding ports to service {cluster}-head-svc" in text
    assert "failed to connect to" in text and ":10001 inside the pod's network namespace" in text


def test_delete_a_rayjob(plugin: Plugin, submitted: str) -> None:
    assert f"Deleted rayjob {submitted}" in plugin.run("delete", f"rayjob/{submitted}", "--yes")
    _wait("the RayJob gone", lambda: not plugin.kubectl("get", "rayjobs", "-o", "name").strip())


def test_tar_of_the_head_logs_matches_the_dashboards_job_log(plugin: Plugin) -> None:
    # A RayJob of KubeRay's samples (K8sJobMode): its driver log reaches `kubectl ray log`.
    plugin.kubectl("apply", "-f", str(samples_dir() / "ray-job.sample.yaml"))
    _wait(
        "rayjob-sample SUCCEEDED",
        lambda: (
            "SUCCEEDED"
            in plugin.kubectl(
                "get", "rayjob", "rayjob-sample", "-o", "jsonpath={.status.jobStatus}"
            )
        ),
        timeout=120,
    )
    out_dir = plugin.workdir / "sample-logs"
    out_dir.mkdir()
    plugin.run("log", "rayjob/rayjob-sample", "--node-type", "head", "--out-dir", str(out_dir))
    (head,) = out_dir.iterdir()
    job_id = plugin.kubectl("get", "rayjob", "rayjob-sample", "-o", "jsonpath={.status.jobId}")
    assert (
        (head / f"job-driver-{job_id}.log").read_text().endswith("Simulated entrypoint finished.\n")
    )
