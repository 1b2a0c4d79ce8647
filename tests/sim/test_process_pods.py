"""The ``--real-ray`` kubelet running ordinary pods as processes (no Ray needed: these pods run
``sh``): exit codes and restartPolicy, CrashLoopBackOff, logs, env and mounted ConfigMaps, exec
readiness probes, and deletion ending every process of the pod."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rayop.sim.nodes.kubelet import Kubelet, KubeletConfig
from rayop.sim.nodes.processes.container_process import tree_pids
from rayop.sim.nodes.processes.ray_install import RayInstall
from rayop.sim.nodes.processes.runtime import ProcessRuntime
from rayop.sim.nodes.processes.service_account import SERVICE_ACCOUNT_DIR, PlaneEndpoint
from rayop.sim.storage.store import Store
from rayop.testing import eventually

from .sim_waiting import info, is_ready, wait_for

Obj = dict[str, Any]
NO_RAY = RayInstall(bin_dir=Path(sys.executable).parent, version="2.60.0")
"""These pods never run ``ray``: the interpreter's directory stands in for Ray's bin dir."""


def _pod(name: str, script: str, **spec: Any) -> Obj:
    container: Obj = {"name": "main", "image": "busybox", "command": ["sh", "-c", script]}
    container.update(spec.pop("container", {}))
    return {"metadata": {"name": name}, "spec": {"containers": [container], **spec}}


@pytest.fixture
async def kubelet() -> AsyncIterator[Kubelet]:
    store = Store(seed=3)
    kubelet = Kubelet(store, KubeletConfig(crashloop_backoff=0.2, delete_delay=0.01))
    runtime = ProcessRuntime(store, kubelet.logs, ray=NO_RAY, backoff=0.2)
    kubelet.processes = runtime
    await kubelet.start()
    try:
        yield kubelet
    finally:
        await kubelet.stop()
        await runtime.close()


def _log(kubelet: Kubelet, pod: Obj | None, previous: bool = False) -> str:
    assert pod is not None
    uid = pod["metadata"]["uid"]
    log = kubelet.logs.previous(uid, "main") if previous else kubelet.logs.current(uid, "main")
    return "" if log is None else log.read().decode()


def _terminated(pod: Obj | None) -> bool:
    return pod is not None and pod["status"].get("phase") in ("Succeeded", "Failed")


async def test_exit_codes_end_the_pod_per_restart_policy(kubelet: Kubelet) -> None:
    pods = info(kubelet.store, "", "pods")
    await kubelet.store.create(pods, "default", _pod("ok", "echo fine", restartPolicy="Never"))
    await kubelet.store.create(
        pods, "default", _pod("bad", "echo oops; exit 3", restartPolicy="Never")
    )
    ok = await wait_for(kubelet.store, pods, "default", "ok", _terminated, timeout=30)
    bad = await wait_for(kubelet.store, pods, "default", "bad", _terminated, timeout=30)
    assert ok is not None and bad is not None
    assert ok["status"]["phase"] == "Succeeded" and bad["status"]["phase"] == "Failed"
    term = bad["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 3 and term["reason"] == "Error"
    assert bad["status"]["podIP"].startswith("127.") and "oops" in _log(kubelet, bad)


async def test_a_crashing_container_restarts_with_back_off(kubelet: Kubelet) -> None:
    pods = info(kubelet.store, "", "pods")
    await kubelet.store.create(pods, "default", _pod("crash", "echo run; exit 1"))

    def restarted_twice(pod: Obj | None) -> bool:
        statuses = (pod or {}).get("status", {}).get("containerStatuses") or [{}]
        return int(statuses[0].get("restartCount") or 0) >= 2

    pod = await wait_for(kubelet.store, pods, "default", "crash", restarted_twice, timeout=30)
    status = pod["status"] if pod else {}
    assert status["phase"] == "Running"
    assert status["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1
    assert "run" in _log(kubelet, pod, previous=True)


async def test_env_configmap_volume_and_readiness_probe(kubelet: Kubelet) -> None:
    store = kubelet.store
    await store.create(
        info(store, "", "configmaps"),
        "default",
        {"metadata": {"name": "cm"}, "data": {"k": "from-cm"}},
    )
    spec: Obj = {
        "volumes": [{"name": "conf", "configMap": {"name": "cm"}}],
        "container": {
            "env": [{"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
            "volumeMounts": [{"name": "conf", "mountPath": "/etc/conf"}],
            "readinessProbe": {
                "exec": {"command": ["cat", "/etc/conf/k"]},
                "periodSeconds": 1,
            },
        },
    }
    pods = info(store, "", "pods")
    await store.create(
        pods, "default", _pod("cfg", 'echo "ip=$IP k=$(cat /etc/conf/k)"; sleep 600', **spec)
    )
    pod = await wait_for(store, pods, "default", "cfg", is_ready, timeout=30)
    assert pod is not None
    # Ready comes from the probe, the log from the container's stdout pipe: either may be first.
    line = f"ip={pod['status']['podIP']} k=from-cm"
    await eventually(lambda: line in _log(kubelet, pod), timeout=10, what=f"log line {line!r}")


async def test_deleting_a_pod_ends_all_its_processes(kubelet: Kubelet) -> None:
    pods = info(kubelet.store, "", "pods")
    await kubelet.store.create(
        pods, "default", _pod("long", "sleep 600 & sleep 600", terminationGracePeriodSeconds=1)
    )
    pod = await wait_for(kubelet.store, pods, "default", "long", is_ready, timeout=30)
    assert pod is not None
    uid = pod["metadata"]["uid"]
    # Ready comes from the container's start; the shell forks its background child just after.
    await eventually(lambda: len(tree_pids(f"RAYOP_POD={uid}")) >= 2, timeout=10, what="2 pids")
    await kubelet.store.delete(pods, "default", "long")
    await wait_for(kubelet.store, pods, "default", "long", lambda p: p is None, timeout=30)
    assert tree_pids(f"RAYOP_POD={uid}") == []


async def test_a_service_publishing_not_ready_addresses_reaches_a_pod_that_is_not_ready(
    kubelet: Kubelet,
) -> None:
    """A head pod whose SidecarMode submitter exited is not Ready; KubeRay's head Service
    (``publishNotReadyAddresses``) still reaches its dashboard, a Service without it does not."""
    store = kubelet.store
    side = {"name": "side", "image": "busybox", "command": ["sh", "-c", "exit 0"]}
    pod = _pod("head", "sleep 600", restartPolicy="Never")
    pod["metadata"]["labels"] = {"app": "head"}
    pod["spec"]["containers"].append(side)
    pods = info(store, "", "pods")
    await store.create(pods, "default", pod)
    services = info(store, "", "services")
    for name, publish in (("head-svc", True), ("plain-svc", False)):
        spec: Obj = {"selector": {"app": "head"}, "ports": [{"port": 8265, "targetPort": 8265}]}
        if publish:
            spec["publishNotReadyAddresses"] = True
        await store.create(services, "default", {"metadata": {"name": name}, "spec": spec})

    def side_exited(obj: Obj | None) -> bool:
        statuses = ((obj or {}).get("status") or {}).get("containerStatuses") or []
        return any(s["name"] == "side" and "terminated" in s["state"] for s in statuses)

    running = await wait_for(store, pods, "default", "head", side_exited, timeout=30)
    assert running is not None and running["status"]["phase"] == "Running"
    assert not is_ready(running)
    runtime = kubelet.processes
    assert isinstance(runtime, ProcessRuntime)
    ip = running["status"]["podIP"]
    assert runtime.resolve_url("default", "head-svc", "8265") == f"http://{ip}:8265"
    assert runtime.resolve_url("default", "plain-svc", "8265") is None


async def test_a_containers_own_restart_policy_overrides_the_pods(kubelet: Kubelet) -> None:
    """Container restart rules (Kubernetes 1.35+): in a ``Never`` pod a container with
    ``restartPolicy: OnFailure`` restarts after a failure, as KubeRay's SidecarSubmitterRestart
    submitter does; another one that failed stays terminated."""
    store = kubelet.store
    pod = _pod("mixed", "sleep 600", restartPolicy="Never")
    pod["spec"]["containers"] += [
        {
            "name": "retried",
            "image": "busybox",
            "command": ["sh", "-c", "echo try; exit 1"],
            "restartPolicy": "OnFailure",
        },
        {"name": "once", "image": "busybox", "command": ["sh", "-c", "exit 1"]},
    ]
    pods = info(store, "", "pods")
    await store.create(pods, "default", pod)

    def statuses(obj: Obj | None) -> dict[str, Obj]:
        found = ((obj or {}).get("status") or {}).get("containerStatuses") or []
        return {s["name"]: s for s in found}

    def retried_twice(obj: Obj | None) -> bool:
        return int(statuses(obj).get("retried", {}).get("restartCount") or 0) >= 2

    seen = await wait_for(store, pods, "default", "mixed", retried_twice, timeout=30)
    assert seen is not None and seen["status"]["phase"] == "Running"
    once = statuses(seen)["once"]
    assert once["restartCount"] == 0 and once["state"]["terminated"]["exitCode"] == 1
    assert statuses(seen)["retried"]["lastState"]["terminated"]["exitCode"] == 1


async def test_processes_open_the_pods_files_at_their_in_pod_paths(kubelet: Kubelet) -> None:
    """A grandchild process (as Ray's job supervisor runs an entrypoint) opens a ConfigMap's
    file at its mountPath, which does not exist on this machine, and the service account's
    token, CA and namespace; nothing is left outside the pod's directory."""
    store, runtime = kubelet.store, kubelet.processes
    assert isinstance(runtime, ProcessRuntime) and runtime.ctx.no_namespaces is None
    issued: list[tuple[str, str]] = []

    def issue(namespace: str, name: str) -> str:
        issued.append((namespace, name))
        return f"token-of-{name}"

    runtime.endpoint = PlaneEndpoint("127.0.0.1", 6443, base64.b64encode(b"CA").decode(), issue)
    await store.create(info(store, "", "serviceaccounts"), "default", {"metadata": {"name": "sa"}})
    await store.create(
        info(store, "", "configmaps"),
        "default",
        {"metadata": {"name": "jobs"}, "data": {"job.py": "print('job ran', 6 * 7)"}},
    )
    mount_path = "/home/ray/jobs"
    elsewhere = "/etc/rayop-in-pod-test/conf"
    outside = [Path("/etc/rayop-in-pod-test"), Path(SERVICE_ACCOUNT_DIR), Path("/home/ray/jobs")]
    before = await asyncio.to_thread(lambda: [p.exists() for p in outside])
    assert before[0] is False and before[2] is False
    script = (
        f"sh -c 'python3 {mount_path}/job.py; cat {SERVICE_ACCOUNT_DIR}/token; echo; "
        f"cat {SERVICE_ACCOUNT_DIR}/namespace {SERVICE_ACCOUNT_DIR}/ca.crt; echo; "
        f"cat {elsewhere}/job.py; echo; pwd; "
        'echo "api=$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"; '
        f"touch {elsewhere}/x || echo read-only'; sleep 600"
    )
    volume = {"name": "jobs", "configMap": {"name": "jobs"}}
    spec: Obj = {
        "serviceAccountName": "sa",
        "volumes": [volume],
        "container": {
            "volumeMounts": [
                {"name": "jobs", "mountPath": mount_path},
                {"name": "jobs", "mountPath": elsewhere, "readOnly": True},
            ],
            "env": [{"name": "PATH", "value": f"{Path(sys.executable).parent}:/usr/bin:/bin"}],
        },
    }
    pods = info(store, "", "pods")
    await store.create(pods, "default", _pod("paths", script, **spec))
    pod = await wait_for(store, pods, "default", "paths", is_ready, timeout=30)
    assert pod is not None
    expected = [
        "job ran 42",
        "token-of-sa",
        "defaultCA",
        "print('job ran', 6 * 7)",
        "/home/ray",
        "api=127.0.0.1:6443",
        "read-only",
    ]
    await eventually(
        lambda: all(e in _log(kubelet, pod) for e in expected),
        timeout=10,
        what="the in-pod paths in the log",
    )
    assert issued == [("default", "sa")]
    assert await asyncio.to_thread(lambda: [p.exists() for p in outside]) == before


async def test_without_mount_namespaces_a_container_with_mounts_is_refused(
    kubelet: Kubelet,
) -> None:
    store, runtime = kubelet.store, kubelet.processes
    assert isinstance(runtime, ProcessRuntime)
    runtime.ctx = dataclasses.replace(runtime.ctx, no_namespaces="unshare: Operation not permitted")
    await store.create(
        info(store, "", "configmaps"), "default", {"metadata": {"name": "cm"}, "data": {"k": "v"}}
    )
    spec: Obj = {
        "volumes": [{"name": "conf", "configMap": {"name": "cm"}}],
        "container": {"volumeMounts": [{"name": "conf", "mountPath": "/etc/conf"}]},
    }
    pods = info(store, "", "pods")
    await store.create(pods, "default", _pod("refused", "cat /etc/conf/k", **spec))

    def refused(pod: Obj | None) -> bool:
        statuses = (pod or {}).get("status", {}).get("containerStatuses") or [{}]
        waiting = statuses[0].get("state", {}).get("waiting") or {}
        return waiting.get("reason") == "CreateContainerConfigError"

    pod = await wait_for(store, pods, "default", "refused", refused, timeout=30)
    assert pod is not None
    message = pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
    assert "private mount namespace" in message and "Operation not permitted" in message


async def test_a_missing_binary_in_the_namespace_is_a_start_error(kubelet: Kubelet) -> None:
    """The launcher reports an exec that fails inside the mount namespace through its status
    pipe: the container ends as a StartError with containerd's wording, not as exit 127."""
    pods = info(kubelet.store, "", "pods")
    pod = _pod("nope", "unused", restartPolicy="Never")
    pod["spec"]["containers"][0]["command"] = ["no-such-binary-rayop"]
    await kubelet.store.create(pods, "default", pod)
    done = await wait_for(kubelet.store, pods, "default", "nope", _terminated, timeout=30)
    assert done is not None
    term = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["reason"] == "StartError" and term["exitCode"] == 128, term
    assert 'exec: "no-such-binary-rayop": No such file or directory' in term["message"], term


async def test_mount_points_made_under_tmp_are_removed_when_the_plane_ends(
    kubelet: Kubelet,
) -> None:
    """``/tmp`` is never covered (Ray and the plane use it): a mount point missing there is made
    on this machine for the pods, and removed when the runtime closes."""
    store, runtime = kubelet.store, kubelet.processes
    assert isinstance(runtime, ProcessRuntime)
    top = Path(f"/tmp/rayop-mount-test-{runtime.plane_id}")
    await store.create(
        info(store, "", "configmaps"), "default", {"metadata": {"name": "cm"}, "data": {"k": "v"}}
    )
    spec: Obj = {
        "volumes": [{"name": "conf", "configMap": {"name": "cm"}}],
        "container": {
            "volumeMounts": [
                {"name": "conf", "mountPath": f"{top}/conf"},
                {"name": "conf", "mountPath": f"{top}/one/k", "subPath": "k"},
            ]
        },
    }
    pods = info(store, "", "pods")
    await store.create(
        pods, "default", _pod("tmp", f"cat {top}/conf/k {top}/one/k; echo; sleep 600", **spec)
    )
    pod = await wait_for(store, pods, "default", "tmp", is_ready, timeout=30)
    await eventually(lambda: "vv" in _log(kubelet, pod), timeout=10, what="both files read")
    assert await asyncio.to_thread(top.is_dir)
    await runtime.close()
    assert not await asyncio.to_thread(top.exists)
