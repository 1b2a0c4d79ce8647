"""KubeRay v1.7.0's history-server collector and server on a `rayop up --real-ray` head.

The collector and the server are built from KubeRay's source by
``scripts/controlplane-build kuberay-tools`` (with gofakes3, the S3 store between them). The head
pod runs real Ray as local processes; the collector runs beside it as a local process with the
environment KubeRay's (and rayop's) ``ray-history-collector`` sidecar gets (``POD_IP``,
``RAY_CLUSTER_NAME``, ``RAY_CLUSTER_NAMESPACE``, ``RAY_ROLE``, ``FQ_RAY_IP`` resolved to the head,
as `--real-ray` resolves Service names, ``RAY_DASHBOARD_ADDRESS``) and the head's ``/tmp/ray``,
found with ``kubectl exec <head> -- realpath /tmp/ray`` (`--real-ray` maps it to the pod's
directory here) and given as ``RAY_TMP_ROOT``. It is not the sidecar itself: `--real-ray` runs a
container only when it names its command, and the sidecar names none (its image's entrypoint).

The collector uploads the dashboard endpoints it polls to S3 while the node lives, and the
session's log files when it stops (SIGTERM, as at the pod's end); once the RayCluster is deleted the history server lists the stored
session as a dead cluster and serves its node logs. Everything runs in a private network
namespace (the server listens on ``:8080``, which it does not let you change).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest

from rayop.cli.realcluster_http import wait_until
from tests.real.kuberay_tools import HISTORY_URL, S3_ENV, S3_URL, build_tools, stop, tools_dir
from tests.real.netns import NetNs

KUBECTL = "/usr/bin/kubectl"
CLUSTER = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: hist}
spec:
  rayVersion: "2.60.0"
  headGroupSpec:
    # KubeRay exports Ray's metrics on 8080, where the history server must listen.
    rayStartParams: {metrics-export-port: "8090"}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.60.0
          resources: {limits: {cpu: "1", memory: 2Gi}}
"""


@pytest.fixture(scope="module")
def tools() -> Path:
    """KubeRay v1.7.0's collector and history server, and gofakes3 (built or reused)."""
    ok, why = build_tools()
    if not ok:
        pytest.fail(f"KubeRay's tools cannot be built here: {why}")
    return tools_dir()


def _wait(what: str, check: Callable[[], bool], timeout: float = 180) -> None:
    wait_until(check, timeout=timeout, what=what, interval=1.0)


@pytest.mark.timeout(600)
def test_collector_uploads_a_real_ray_head_and_the_server_replays_it(
    tools: Path, ray_env: str, tmp_path: Path
) -> None:
    ns = NetNs()
    procs: list[subprocess.Popen[str]] = []
    with contextlib.ExitStack() as files:

        def log(name: str) -> IO[str]:
            return files.enter_context((tmp_path / name).open("a"))

        kubeconfig = tmp_path / "kubeconfig.yaml"
        kenv = {"KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}

        def kubectl(*args: str, stdin: str | None = None) -> str:
            return ns.run([KUBECTL, *args], env=kenv, input=stdin, timeout=300).stdout

        try:
            up_argv = [sys.executable, "-m", "rayop", "up", "--real-ray"]
            up_argv += ["--kubeconfig-out", str(kubeconfig), "--metrics-addr", "0"]
            up_argv += ["--health-probe-bind-address", "0"]
            up_env = {**os.environ, "RAYOP_RAY_ENV": ray_env}
            up = ns.popen(up_argv, stdout=subprocess.PIPE, stderr=log("up.log"), env=up_env)
            procs.append(up)
            assert up.stdout is not None
            assert up.stdout.readline().startswith("rayop is up"), (tmp_path / "up.log").read_text()
            s3_log = log("s3.log")
            s3_argv = [str(tools / "gofakes3"), "-host", "127.0.0.1:9000", "-backend", "memory"]
            procs.append(ns.popen([*s3_argv, "-autobucket"], stdout=s3_log, stderr=s3_log))
            _wait("the S3 server", lambda: ns.get(S3_URL + "/")[0] == 200, timeout=30)

            kubectl("apply", "-f", "-", stdin=CLUSTER)
            kubectl(
                "wait", "--for=jsonpath={.status.state}=ready", "raycluster/hist", "--timeout=240s"
            )
            head = kubectl("get", "pods", "-l", "ray.io/node-type=head", "-o", "name").strip()
            pod_ip = kubectl("get", head, "-o", "jsonpath={.status.podIP}")
            tmp_ray = kubectl("exec", head, "--", "realpath", "/tmp/ray").strip()
            # A driver, so the session has a job and a core-worker log.
            kubectl(
                "exec",
                head,
                "--",
                "python",
                "-c",
                "import ray; ray.init(); print(ray.get(ray.put(7)))",
            )

            collector_env = {
                **S3_ENV,
                "POD_IP": pod_ip,
                "RAY_CLUSTER_NAME": "hist",
                "RAY_CLUSTER_NAMESPACE": "default",
                "RAY_ROLE": "Head",
                "EVENTS_PORT": "8084",
                "FQ_RAY_IP": pod_ip,
                "RAY_DASHBOARD_ADDRESS": f"http://{pod_ip}:8265",
                "RAY_TMP_ROOT": tmp_ray,
                "STORAGE_BACKEND": "s3",
                "PUSH_INTERVAL": "2s",
                "HOME": str(tmp_path),
            }
            collector_log = log("collector.log")
            collector = ns.popen(
                [str(tools / "collector"), "--storage-root-dir", "rayop"],
                stdout=collector_log, stderr=collector_log, env=collector_env,
            )  # fmt: skip
            procs.append(collector)
            prefix = "rayop/cluster-history/raycluster/default/hist/"

            def stored() -> str:
                return ns.get(f"{S3_URL}/ray-historyserver?list-type=2&prefix={prefix}")[1]

            # While the node lives it uploads the dashboard endpoints it polls; on SIGTERM (the
            # pod's end) it uploads the session's log files.
            _wait("the collector's first upload", lambda: "/fetched_endpoints/" in stored())
            stop(collector)
            assert "Graceful shutdown complete" in (tmp_path / "collector.log").read_text()
            assert "/logs/gcs_server.out</Key>" in stored()

            hs_argv = [str(tools / "historyserver"), "--storage-backend", "s3"]
            hs_argv += ["--storage-root-dir", "rayop", "--kubeconfigs", str(kubeconfig)]
            hs_argv += ["--use-kubernetes-proxy", "--dashboard-dir", str(tmp_path)]
            hs_log = log("historyserver.log")
            hs_env = {**S3_ENV, "HOME": str(tmp_path)}
            procs.append(ns.popen(hs_argv, stdout=hs_log, stderr=hs_log, env=hs_env))
            _wait(
                "the history server", lambda: ns.get(HISTORY_URL + "/livez")[0] == 200, timeout=60
            )

            kubectl("delete", "raycluster", "hist", "--wait=true")
            status, body = ns.get(HISTORY_URL + "/clusters")
            assert status == 200, body
            (dead,) = json.loads(body)
            assert dead["name"] == "hist" and dead["namespace"] == "default"
            session = dead["sessionName"]
            assert session.startswith("session_") and session != "live"

            jar = str(tmp_path / "cookies.txt")
            status, body = ns.get(
                f"{HISTORY_URL}/enter_cluster/default/raycluster/hist/{session}", cookies=jar
            )
            assert json.loads(body) == {
                "name": "hist",
                "namespace": "default",
                "result": "success",
                "session": session,
            }
            keys = stored()
            node_id = keys.split(f"{prefix}{session}/", 1)[1].split("/", 1)[0]
            assert len(node_id) == 56, keys
            status, body = ns.get(f"{HISTORY_URL}/api/v0/logs?node_id={node_id}", cookies=jar)
            assert status == 200, body
            listed = json.loads(body)["data"]["result"]
            assert "gcs_server.out" in listed["gcs_server"] and "raylet.out" in listed["raylet"]
            assert listed["core_worker"], listed
            url = f"{HISTORY_URL}/api/v0/logs/file?node_id={node_id}&filename=gcs_server.out"
            status, text = ns.get(url, cookies=jar)
            assert status == 200 and "(gcs_server)" in text and "Registering job" in text
        finally:
            for proc in reversed(procs):
                stop(proc)
            if procs and procs[0].stdout is not None:
                procs[0].stdout.close()
            ns.close()
