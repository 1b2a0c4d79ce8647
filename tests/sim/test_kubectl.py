"""The real kubectl works against ``rayop apiserver`` started as a subprocess."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from .apiserver_process import kubectl_env, running_apiserver

KUBECTL = "/usr/bin/kubectl"

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string, enum: [red, blue]}
          status:
            type: object
            properties:
              ready: {type: boolean}
"""

WIDGET = """
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
spec:
  size: 1
  color: red
"""


class Kubectl:
    """Runs kubectl against one server with a private home (discovery cache)."""

    def __init__(self, env: dict[str, str], workdir: Path) -> None:
        self.env = env
        self.workdir = workdir

    def run(
        self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [KUBECTL, *args],
            input=stdin,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.workdir,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    def apply(self, manifest: str) -> None:
        self.run("apply", "-f", "-", stdin=manifest)


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    workdir = tmp_path_factory.mktemp("kubectl")
    with running_apiserver(workdir) as kubeconfig:
        yield Kubectl(kubectl_env(kubeconfig, workdir), workdir)


def test_apply_crd_and_custom_resource_then_get_yaml_and_table(kubectl: Kubectl) -> None:
    kubectl.apply(CRD)
    kubectl.run("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=30s")
    kubectl.apply(WIDGET)
    got = yaml.safe_load(kubectl.run("get", "widget", "w1", "-o", "yaml").stdout)
    assert got["kind"] == "Widget" and got["spec"] == {"size": 1, "color": "red"}
    assert got["metadata"]["generation"] == 1 and got["metadata"]["uid"]
    table = kubectl.run("get", "widgets").stdout.splitlines()
    assert table[0].split() == ["NAME", "SIZE"] and table[1].split() == ["w1", "1"]
    resources = kubectl.run("api-resources").stdout
    assert "widgets" in resources and "pods" in resources


def test_watch_patch_stale_replace_and_delete(kubectl: Kubectl) -> None:
    kubectl.apply(WIDGET.replace("w1", "w2"))
    stale = kubectl.run("get", "widget", "w2", "-o", "json").stdout
    with subprocess.Popen(
        [KUBECTL, "get", "widget", "w2", "-w", "-o", 'jsonpath={.spec.size}{"\\n"}'],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as watcher:
        lines: queue.Queue[str] = queue.Queue()
        assert watcher.stdout is not None

        def read() -> None:
            for line in watcher.stdout or []:
                lines.put(line.strip())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            assert lines.get(timeout=30) == "1"
            kubectl.run("patch", "widget", "w2", "--type=merge", "-p", '{"spec":{"size":5}}')
            assert lines.get(timeout=30) == "5"
        finally:
            watcher.terminate()
            watcher.wait(timeout=10)
            reader.join(timeout=10)
    assert json.loads(kubectl.run("get", "widget", "w2", "-o", "json").stdout)["spec"]["size"] == 5

    conflict = kubectl.run("replace", "-f", "-", stdin=stale, check=False)
    assert conflict.returncode != 0
    assert "the object has been modified" in conflict.stderr or "Conflict" in conflict.stderr

    invalid = kubectl.run(
        "patch", "widget", "w2", "--type=merge", "-p", '{"spec":{"color":"green"}}', check=False
    )
    assert invalid.returncode != 0 and "spec.color" in invalid.stderr

    kubectl.run("delete", "widget", "w2")
    missing = kubectl.run("get", "widget", "w2", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr


def test_kubectl_run_makes_a_pod_that_becomes_ready(kubectl: Kubectl) -> None:
    kubectl.run("run", "web", "--image=nginx", "--port=80", "--labels=app=web")
    kubectl.run("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
    pod = json.loads(kubectl.run("get", "pod", "web", "-o", "json").stdout)
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"]
    describe = kubectl.run("describe", "pod", "web").stdout
    assert "Node:" in describe and "Ready" in describe
    kubectl.run("delete", "pod", "web", "--wait=true", "--timeout=30s")
    assert kubectl.run("get", "pod", "web", check=False).returncode != 0
