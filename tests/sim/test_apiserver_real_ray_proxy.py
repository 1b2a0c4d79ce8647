"""``rayop apiserver --real-ray --http-proxy-port``: the forward proxy runs on a plane whose pods
are processes (it used to die at start: it asked for the simulated dashboards, which a
``--real-ray`` plane does not have), and relays to a pod's process by Service DNS name and pod IP.

No Ray is needed: the pod runs Python's ``http.server``, and ``RAYOP_RAY_ENV`` names a stand-in
environment that answers the plane's Ray probe.
"""

from __future__ import annotations

import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from kubernetes import client, config

from .apiserver_process import start_apiserver, stop_apiserver

pytestmark = pytest.mark.timeout(90)
PROXY_LINE = re.compile(r"^cluster network proxy on (http://[0-9.]+:[0-9]+)", re.MULTILINE)


def _fake_ray_env(root: Path) -> Path:
    """Returns a directory whose ``bin`` has a ``ray`` command and a ``python`` that reports a
    Ray version (all the plane checks before it runs pods)."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (("ray", "#!/bin/sh\nexit 1\n"), ("python", "#!/bin/sh\necho 2.60.0\n")):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return root


def _proxy_url(log: Path, deadline: float) -> str:
    while time.monotonic() < deadline:
        found = PROXY_LINE.search(log.read_text())
        if found:
            return found.group(1)
        time.sleep(0.1)
    raise AssertionError(f"no proxy line in the server's log:\n{log.read_text()}")


def _get(url: str, proxy: str) -> tuple[int, str]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
    try:
        with opener.open(url, timeout=5) as resp:
            return int(resp.status), resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _eventually_ok(url: str, proxy: str, deadline: float) -> str:
    status, text = 0, ""
    while time.monotonic() < deadline:
        status, text = _get(url, proxy)
        if status == 200:
            return text
        time.sleep(0.2)
    raise AssertionError(f"GET {url} through {proxy}: {status} {text}")


def test_the_proxy_serves_a_real_ray_plane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAYOP_RAY_ENV", str(_fake_ray_env(tmp_path / "ray")))
    proc, kubeconfig = start_apiserver(tmp_path, "--real-ray", "--http-proxy-port", "0", "--no-tls")
    try:
        deadline = time.monotonic() + 60
        proxy = _proxy_url(tmp_path / "apiserver.log", deadline)
        assert proc.poll() is None, (tmp_path / "apiserver.log").read_text()
        core = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))  # type: ignore[no-untyped-call]
        (tmp_path / "www").mkdir()
        (tmp_path / "www" / "hello.txt").write_text("hello from the pod\n")
        serve = f"cd {tmp_path / 'www'} && exec {sys.executable} -m http.server 8265"
        labels = {"app": "web"}
        core.create_namespaced_pod(
            "default",
            client.V1Pod(
                metadata=client.V1ObjectMeta(name="web", labels=labels),
                spec=client.V1PodSpec(
                    containers=[
                        client.V1Container(name="c", image="busybox", command=["sh", "-c", serve])
                    ]
                ),
            ),
        )
        core.create_namespaced_service(
            "default",
            client.V1Service(
                metadata=client.V1ObjectMeta(name="web-svc"),
                spec=client.V1ServiceSpec(
                    selector=labels, ports=[client.V1ServicePort(port=8265, target_port=8265)]
                ),
            ),
        )
        by_name = "http://web-svc.default.svc.cluster.local:8265/hello.txt"
        assert _eventually_ok(by_name, proxy, deadline) == "hello from the pod\n"
        pod_status = core.read_namespaced_pod("web", "default").status
        pod_ip = pod_status.pod_ip if pod_status is not None else None
        assert pod_ip and pod_ip.startswith("127.")
        assert _eventually_ok(f"http://{pod_ip}:8265/hello.txt", proxy, deadline).startswith(
            "hello"
        )
        status, text = _get("http://nothing.default.svc.cluster.local:8265/", proxy)
        assert status == 502 and "nothing in the embedded plane serves" in text
    finally:
        stop_apiserver(proc)
