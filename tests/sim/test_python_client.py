"""The official ``kubernetes`` Python client works against ``rayop apiserver``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from .apiserver_process import running_apiserver


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    workdir: Path = tmp_path_factory.mktemp("pyclient")
    with running_apiserver(workdir) as kubeconfig:
        api_client = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]  # kubernetes.config is untyped
        yield client.CoreV1Api(api_client)
        api_client.close()


def _pod(name: str, app: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels={"app": app}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]),
    )


def test_list_and_watch_pods_with_a_label_selector(core: Any) -> None:
    core.create_namespaced_pod("default", _pod("a1", "a"))
    core.create_namespaced_pod("default", _pod("b1", "b"))
    listed = core.list_namespaced_pod("default", label_selector="app=a")
    assert [p.metadata.name for p in listed.items] == ["a1"]
    assert listed.metadata.resource_version

    core.create_namespaced_pod("default", _pod("b2", "b"))
    core.create_namespaced_pod("default", _pod("a2", "a"))
    seen: list[tuple[str, str]] = []
    w = watch.Watch()  # type: ignore[no-untyped-call]  # kubernetes.watch is untyped
    for event in w.stream(  # type: ignore[no-untyped-call]  # kubernetes.watch is untyped
        core.list_namespaced_pod,
        "default",
        label_selector="app in (a)",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=30,
    ):
        pod = event["object"]
        seen.append((event["type"], pod.metadata.name))
        ready = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
        if pod.metadata.name == "a2" and ready:
            w.stop()  # type: ignore[no-untyped-call]  # kubernetes.watch is untyped
    assert ("ADDED", "a2") in seen
    assert {name for _, name in seen} <= {"a1", "a2"}
    assert ("MODIFIED", "a2") in seen


def test_replace_with_a_stale_resource_version_is_a_conflict(core: Any) -> None:
    core.create_namespaced_config_map(
        "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cfg"), data={"k": "1"})
    )
    stale = core.read_namespaced_config_map("cfg", "default")
    core.patch_namespaced_config_map("cfg", "default", {"data": {"k": "2"}})
    stale.data = {"k": "3"}
    with pytest.raises(ApiException) as caught:
        core.replace_namespaced_config_map("cfg", "default", stale)
    assert caught.value.status == 409
    assert '"reason":"Conflict"' in str(caught.value.body).replace(" ", "")
    fresh = core.read_namespaced_config_map("cfg", "default")
    assert fresh.data == {"k": "2"}
    fresh.data = {"k": "4"}
    assert core.replace_namespaced_config_map("cfg", "default", fresh).data == {"k": "4"}


def test_not_found_is_a_404_status(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod("missing", "default")
    assert caught.value.status == 404
    assert '"reason":"NotFound"' in str(caught.value.body).replace(" ", "")
