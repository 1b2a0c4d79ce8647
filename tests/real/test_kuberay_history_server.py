"""KubeRay v1.7.0's history server against `rayop up`.

The server (built from KubeRay's source by ``scripts/controlplane-build kuberay-tools``) lists
the RayClusters of the Kubernetes API it is given (``--kubeconfigs``) as live clusters beside
the dead sessions its collectors stored, and serves a live cluster's dashboard API by proxying
to the head Service through the API server (``--use-kubernetes-proxy``). Here the API is
rayop's embedded plane and the object store an S3 server (gofakes3, built by the same script;
the server needs one to start). Everything runs in a private network namespace
(:class:`~tests.real.netns.NetNs`): the history server listens on ``:8080``, which it does not
let you change.

The collector needs a real Ray node (the node id from ``/api/v0/nodes``, the raylet's socket,
Ray's log files), which `rayop up`'s simulated pods do not have; it is run beside a
``--real-ray`` head, and the server replays what it stored, in
``tests/realray/test_kuberay_history_server.py``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from rayop.cli.realcluster_http import wait_until
from tests.kuberay_compat import samples_dir

from .kuberay_tools import HISTORY_URL, S3_ENV, S3_URL, stop
from .netns import NetNs

pytestmark = pytest.mark.real

KUBECTL = "/usr/bin/kubectl"


@dataclass
class Stack:
    """rayop up, the object store and the history server, in one network namespace."""

    ns: NetNs
    workdir: Path
    kubeconfig: Path

    def kubectl(self, *args: str) -> str:
        env = {
            "KUBECONFIG": str(self.kubeconfig),
            "HOME": str(self.workdir),
            "PATH": "/usr/bin:/bin",
        }
        return self.ns.run([KUBECTL, *args], env=env).stdout

    def get(self, path: str) -> tuple[int, str]:
        return self.ns.get(HISTORY_URL + path, cookies=str(self.workdir / "cookies.txt"))

    def get_json(self, path: str) -> Any:
        status, body = self.get(path)
        assert status == 200, f"GET {path}: {status} {body}"
        return json.loads(body)


def _wait(what: str, check: Callable[[], bool], timeout: float = 120) -> None:
    wait_until(check, timeout=timeout, what=what, interval=0.5)


@pytest.fixture(scope="module")
def stack(kuberay_tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("history-server")
    try:
        ns = NetNs()
    except RuntimeError as err:
        pytest.fail(f"the history server needs a private network namespace for :8080: {err}")
    procs: list[subprocess.Popen[str]] = []
    with contextlib.ExitStack() as files:

        def log(name: str) -> IO[str]:
            return files.enter_context((workdir / name).open("a"))

        try:
            kubeconfig = workdir / "kubeconfig.yaml"
            up_argv = [sys.executable, "-m", "rayop", "up", "--kubeconfig-out", str(kubeconfig)]
            up_argv += ["--metrics-addr", "0", "--health-probe-bind-address", "0"]
            up = ns.popen(
                [*up_argv, "--pod-ready-delay", "0.05"],
                stdout=subprocess.PIPE,
                stderr=log("up.log"),
            )
            procs.append(up)
            assert up.stdout is not None
            assert up.stdout.readline().startswith("rayop is up"), (workdir / "up.log").read_text()
            s3_argv = [str(kuberay_tools / "gofakes3"), "-host", "127.0.0.1:9000"]
            s3_log = log("s3.log")
            procs.append(ns.popen([*s3_argv, "-backend", "memory"], stdout=s3_log, stderr=s3_log))
            _wait("the S3 server", lambda: ns.get(S3_URL + "/")[0] == 200, timeout=30)
            hs_argv = [str(kuberay_tools / "historyserver"), "--storage-backend", "s3"]
            hs_argv += ["--storage-root-dir", "rayop", "--kubeconfigs", str(kubeconfig)]
            hs_argv += ["--use-kubernetes-proxy", "--dashboard-dir", str(workdir)]
            hs_log = log("historyserver.log")
            env = {**S3_ENV, "HOME": str(workdir)}
            procs.append(ns.popen(hs_argv, stdout=hs_log, stderr=hs_log, env=env))
            _wait(
                "the history server", lambda: ns.get(HISTORY_URL + "/livez")[0] == 200, timeout=60
            )
            yield Stack(ns, workdir, kubeconfig)
        finally:
            for proc in reversed(procs):
                stop(proc)
            if procs and procs[0].stdout is not None:
                procs[0].stdout.close()
            ns.close()


def test_the_server_created_its_bucket_in_the_store(stack: Stack) -> None:
    status, body = stack.ns.get(S3_URL + "/")
    assert status == 200 and "<Name>ray-historyserver</Name>" in body


def test_live_clusters_are_listed_and_their_dashboard_served_through_the_plane(
    stack: Stack,
) -> None:
    assert stack.get_json("/clusters") == []  # nothing live, nothing stored
    stack.kubectl("apply", "-f", str(samples_dir() / "ray-job.sample.yaml"))
    _wait(
        "rayjob-sample SUCCEEDED",
        lambda: (
            stack.kubectl("get", "rayjob", "rayjob-sample", "-o", "jsonpath={.status.jobStatus}")
            == "SUCCEEDED"
        ),
    )
    job = json.loads(stack.kubectl("get", "rayjob", "rayjob-sample", "-o", "json"))
    cluster, job_id = job["status"]["rayClusterName"], job["status"]["jobId"]
    (listed,) = stack.get_json("/clusters")
    assert {
        k: listed[k] for k in ("name", "namespace", "sessionName", "ownerKind", "ownerName")
    } == {
        "name": cluster,
        "namespace": "default",
        "sessionName": "live",
        "ownerKind": "rayjob",
        "ownerName": "rayjob-sample",
    }
    entered = stack.get_json(f"/enter_cluster/default/raycluster/{cluster}")
    assert entered == {
        "name": cluster,
        "namespace": "default",
        "result": "success",
        "session": "live",
    }
    jobs = stack.get_json("/api/jobs/")
    assert [(j["submission_id"], j["status"]) for j in jobs] == [(job_id, "SUCCEEDED")]
    one = stack.get_json(f"/api/jobs/{job_id}")
    assert one["entrypoint"] == "python /home/ray/samples/sample_code.py"
    version = stack.get_json("/api/version")
    assert version["ray_version"] == "2.60.0"
    # The simulated dashboard answers only what it simulates; the rest is its 404, relayed.
    assert stack.get("/nodes?view=summary")[0] == 404


def test_a_deleted_cluster_leaves_the_list(stack: Stack) -> None:
    stack.kubectl("delete", "rayjob", "rayjob-sample", "--wait=true")
    _wait(
        "the RayCluster gone", lambda: not stack.kubectl("get", "rayclusters", "-o", "name").strip()
    )
    assert stack.get_json("/clusters") == []  # no collector ran: no stored session replaces it
