"""Containers without a command under ``--real-ray``: the known images' entrypoints (redis), the
refusal for Ray and unknown images (a Warning event, the container left waiting), and a pod of
the ``redis`` image running the machine's ``redis-server`` (a stand-in script here) in the
image's working directory."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rayop.sim.nodes.kubelet import Kubelet, KubeletConfig
from rayop.sim.nodes.processes.image_entrypoint import (
    KNOWN_IMAGES,
    NoImageCommand,
    container_argv,
    image_repository,
)
from rayop.sim.nodes.processes.ray_install import RayInstall
from rayop.sim.nodes.processes.runtime import ProcessRuntime
from rayop.sim.storage.store import Store
from rayop.testing import eventually

from .sim_waiting import info, is_ready, wait_for

Obj = dict[str, Any]


def test_image_references_name_their_repository() -> None:
    assert image_repository("redis") == "redis"
    assert image_repository("redis:7.4.0") == "redis"
    assert image_repository("docker.io/library/redis:7.4.0") == "redis"
    assert image_repository("localhost:5000/redis@sha256:" + "0" * 64) == "redis"
    assert image_repository("quay.io/rayproject/ray:2.52.0-py311") == "rayproject/ray"
    assert image_repository("bitnami/redis:7") == "bitnami/redis"
    assert "redis" in KNOWN_IMAGES


def test_command_and_args_follow_kubernetes_and_the_redis_entrypoint() -> None:
    assert container_argv("redis:7", ["sh", "-c", "x"], ["y"]) == ["sh", "-c", "x", "y"]
    assert container_argv("redis:7.4.0", [], []) == ["redis-server", "--protected-mode", "no"]
    assert container_argv("redis", [], ["--port", "6380"]) == [
        "redis-server", "--port", "6380", "--protected-mode", "no",
    ]  # fmt: skip
    assert container_argv("redis", [], ["/etc/r.conf", "--protected-mode", "yes"]) == [
        "redis-server", "/etc/r.conf", "--protected-mode", "yes",
    ]  # fmt: skip
    assert container_argv("redis", [], ["redis-cli", "ping"]) == ["redis-cli", "ping"]
    assert container_argv("busybox", [], ["sleep", "5"]) == ["sleep", "5"]


def test_ray_and_unknown_images_without_a_command_are_refused_by_name() -> None:
    with pytest.raises(NoImageCommand, match=r'"rayproject/ray:2\.52\.0" is a Ray image'):
        container_argv("rayproject/ray:2.52.0", [], [])
    with pytest.raises(NoImageCommand, match=r'image "nginx:1\.27".*it knows: redis'):
        container_argv("nginx:1.27", [], [])


@pytest.fixture
async def kubelet(tmp_path: Path) -> AsyncIterator[Kubelet]:
    # A stand-in redis-server in the "Ray" bin dir (first on the pod's PATH) that prints its
    # arguments and stays up, as the real one does.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "redis-server"
    fake.write_text(
        "#!/bin/sh\n"
        'echo "agent timeout $RAY_agent_register_timeout_ms"\n'
        'echo "redis-server $* in $(pwd)"\n'
        "exec sleep 600\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    store = Store(seed=5)
    kubelet = Kubelet(store, KubeletConfig(crashloop_backoff=0.2, delete_delay=0.01))
    runtime = ProcessRuntime(
        store, kubelet.logs, ray=RayInstall(bin_dir=bin_dir, version="2.60.0"), backoff=0.2
    )
    kubelet.processes = runtime
    await kubelet.start()
    try:
        yield kubelet
    finally:
        await kubelet.stop()
        await runtime.close()


def _pod(name: str, image: str) -> Obj:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "main", "image": image}]}}


async def test_a_redis_pod_without_a_command_runs_redis_server(kubelet: Kubelet) -> None:
    pods = info(kubelet.store, "", "pods")
    await kubelet.store.create(pods, "default", _pod("redis", "redis:7.4.0"))
    pod = await wait_for(kubelet.store, pods, "default", "redis", is_ready, timeout=30)
    assert pod is not None

    def log() -> str:
        current = kubelet.logs.current(pod["metadata"]["uid"], "main")
        return "" if current is None else current.read().decode()

    await eventually(lambda: "redis-server --protected-mode no in" in log(), timeout=10, what="log")
    # the image's WORKDIR /data (a directory of the pod), where redis.conf's `dir /data` points
    assert log().split(" in ", 1)[1].strip().endswith("/data")
    # Ray's agents get 120 s to start on this shared machine (the pod's env may say otherwise)
    assert "agent timeout 120000" in log()


async def test_an_unknown_image_without_a_command_gets_a_warning_and_stays_waiting(
    kubelet: Kubelet,
) -> None:
    store = kubelet.store
    pods, events = info(store, "", "pods"), info(store, "", "events")
    await store.create(pods, "default", _pod("web", "nginx:1.27"))

    def warned() -> bool:
        items, _ = store.list(events, "default")
        return any(
            e.get("reason") == "FailedCreatePodContainer" and '"nginx:1.27"' in e["message"]
            for e in items
        )

    await eventually(warned, timeout=30, what="a FailedCreatePodContainer event")

    def waiting(pod: Obj | None) -> bool:
        statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or [{}]
        return "waiting" in statuses[0].get("state", {})

    pod = await wait_for(store, pods, "default", "web", waiting, timeout=10)
    assert pod is not None and not is_ready(pod)
    state = pod["status"]["containerStatuses"][0]["state"]["waiting"]
    assert state["reason"] == "CreateContainerError" and "nginx:1.27" in state["message"]
