"""``rayop apiserver``: token, SIGTERM, and state that survives SIGKILL."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from .apiserver_process import start_apiserver, stop_apiserver


def _core(kubeconfig: Path) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))  # type: ignore[no-untyped-call]


def _meta(obj: client.V1Namespace | client.V1ConfigMap) -> client.V1ObjectMeta:
    """Returns the metadata of an object the server returned (the server always sets it)."""
    assert obj.metadata is not None
    return obj.metadata


def _rv(obj: client.V1ConfigMap) -> int:
    """Returns the resourceVersion of an object the server returned, as a number."""
    rv = _meta(obj).resource_version
    assert rv is not None
    return int(rv)


def test_sigterm_stops_the_server_cleanly(tmp_path: Path) -> None:
    proc, kubeconfig = start_apiserver(tmp_path, "--token", "fixed-token")
    doc = yaml.safe_load(kubeconfig.read_text())
    assert doc["users"][0]["user"]["token"] == "fixed-token"
    assert doc["clusters"][0]["cluster"]["server"].startswith("https://127.0.0.1:")
    assert _meta(_core(kubeconfig).read_namespace("default")).name == "default"
    assert stop_apiserver(proc) == 0


def test_state_survives_sigkill(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    proc, kubeconfig = start_apiserver(tmp_path, "--state", str(state))
    try:
        core = _core(kubeconfig)
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="keep"), data={"a": "1"})
        created = core.create_namespaced_config_map("default", body)
        patched = core.patch_namespaced_config_map("keep", "default", {"data": {"a": "2"}})
    finally:
        stop_apiserver(proc, signal.SIGKILL)
    proc, kubeconfig = start_apiserver(tmp_path, "--state", str(state))
    try:
        core = _core(kubeconfig)
        got = core.read_namespaced_config_map("keep", "default")
        assert _meta(got).uid == _meta(created).uid and got.data == {"a": "2"}
        assert _meta(got).resource_version == _meta(patched).resource_version
        later = core.create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="later"))
        )
        assert _rv(later) > _rv(patched)
    finally:
        stop_apiserver(proc)


def test_fault_and_kubelet_options_reach_the_server(tmp_path: Path) -> None:
    args = ("--conflict-rate", "1.0", "--pod-failure-rate", "1.0", "--no-tls")
    proc, kubeconfig = start_apiserver(tmp_path, *args)
    try:
        doc = yaml.safe_load(kubeconfig.read_text())
        assert doc["clusters"][0]["cluster"]["server"].startswith("http://127.0.0.1:")
        core = _core(kubeconfig)
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"a": "1"})
        fresh = core.create_namespaced_config_map("default", body)
        with pytest.raises(ApiException) as caught:
            core.replace_namespaced_config_map("c", "default", fresh)
        assert caught.value.status == 409
        pod = client.V1Pod(
            metadata=client.V1ObjectMeta(name="doomed"),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="x")]),
        )
        core.create_namespaced_pod("default", pod)
        w = watch.Watch()  # type: ignore[no-untyped-call]
        phases = []
        for event in w.stream(  # type: ignore[no-untyped-call]
            core.list_namespaced_pod,
            "default",
            field_selector="metadata.name=doomed",
            timeout_seconds=30,
        ):
            phases.append(event["object"].status.phase)
            if phases[-1] == "Failed":
                w.stop()  # type: ignore[no-untyped-call]
        assert phases[-1] == "Failed"
    finally:
        stop_apiserver(proc)
