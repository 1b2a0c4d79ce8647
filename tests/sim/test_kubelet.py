"""The simulated scheduler, kubelet and Job controller drive pods and jobs like a real node."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rayop.sim.controller_manager.batch_jobs import JobController
from rayop.sim.nodes.kubelet import Kubelet, KubeletConfig
from rayop.sim.storage.store import Store

from .sim_waiting import condition, info, is_ready, wait_for

FAST = KubeletConfig(
    running_delay=0.01, ready_delay=0.01, delete_delay=0.01, job_duration=0.01, seed=7
)


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "main", "image": "rayproject/ray:2.9.0"}]}
    body.update(spec)
    return {"metadata": {"name": name, "labels": {"app": "x"}}, "spec": body}


@pytest.fixture
async def store() -> Store:
    return Store(seed=3)


async def _kubelet(store: Store, config: KubeletConfig = FAST) -> Kubelet:
    kubelet = Kubelet(store, config)
    await kubelet.start()
    return kubelet


@pytest.fixture
async def kubelet(store: Store) -> AsyncIterator[Kubelet]:
    k = await _kubelet(store)
    yield k
    await k.stop()


async def test_pod_is_scheduled_runs_and_becomes_ready(store: Store, kubelet: Kubelet) -> None:
    pods = info(store, "", "pods")
    init = [{"name": "wait-gcs-ready", "image": "busybox"}]
    await store.create(pods, "default", _pod("a", initContainers=init))
    await store.create(pods, "default", _pod("b"))
    a = await wait_for(store, pods, "default", "a", is_ready)
    b = await wait_for(store, pods, "default", "b", is_ready)
    assert a is not None and b is not None
    assert a["spec"]["nodeName"].startswith("sim-node-")
    st = a["status"]
    assert st["phase"] == "Running" and st["podIP"].startswith("10.") and st["hostIP"]
    assert st["podIP"] != b["status"]["podIP"]
    assert st["startTime"].endswith("Z")
    for ctype in ("PodScheduled", "Initialized", "ContainersReady", "Ready"):
        assert (condition(a, ctype) or {}).get("status") == "True", ctype
    (cs,) = st["containerStatuses"]
    assert cs["name"] == "main" and cs["ready"] and cs["started"] and cs["restartCount"] == 0
    assert "startedAt" in cs["state"]["running"]
    (ics,) = st["initContainerStatuses"]
    assert ics["state"]["terminated"]["reason"] == "Completed"


async def test_failed_and_crashlooping_pods(store: Store) -> None:
    pods = info(store, "", "pods")
    failing = await _kubelet(
        store, KubeletConfig(running_delay=0.0, ready_delay=0.0, failure_rate=1.0, seed=1)
    )
    await store.create(pods, "default", _pod("f"))
    f = await wait_for(
        store, pods, "default", "f", lambda p: (p or {}).get("status", {}).get("phase") == "Failed"
    )
    assert f is not None
    assert f["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1
    assert (condition(f, "Ready") or {}).get("status") == "False"
    await failing.stop()

    looping = await _kubelet(
        store, KubeletConfig(running_delay=0.0, ready_delay=0.0, crashloop_rate=1.0, seed=1)
    )
    await store.create(pods, "default", _pod("c"))

    def crashlooping(p: dict[str, Any] | None) -> bool:
        statuses = ((p or {}).get("status") or {}).get("containerStatuses") or []
        return bool(statuses) and "waiting" in statuses[0]["state"]

    c = await wait_for(store, pods, "default", "c", crashlooping)
    assert c is not None
    cs = c["status"]["containerStatuses"][0]
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cs["restartCount"] >= 1 and cs["lastState"]["terminated"]["exitCode"] == 1
    assert c["status"]["phase"] == "Running" and not is_ready(c)
    await looping.stop()


async def test_unschedulable_pods_stay_pending(store: Store) -> None:
    pods = info(store, "", "pods")
    k = await _kubelet(store, KubeletConfig(unschedulable_rate=1.0, seed=1))
    await store.create(pods, "default", _pod("u", nodeSelector={"cloud.google.com/gke-tpu": "x"}))
    u = await wait_for(
        store, pods, "default", "u", lambda p: condition(p, "PodScheduled") is not None
    )
    assert u is not None
    cond = condition(u, "PodScheduled") or {}
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert u["status"]["phase"] == "Pending" and not u["spec"].get("nodeName")
    await k.stop()


@pytest.mark.looptime
async def test_readiness_probe_delay_scales_with_the_factor(store: Store) -> None:
    pods = info(store, "", "pods")
    k = await _kubelet(
        store, KubeletConfig(running_delay=1.0, ready_delay=2.0, readiness_probe_factor=0.5, seed=1)
    )
    loop = asyncio.get_running_loop()
    probe = {"initialDelaySeconds": 100, "exec": {"command": ["true"]}}
    spec = {"containers": [{"name": "main", "image": "ray", "readinessProbe": probe}]}
    t0 = loop.time()
    await store.create(pods, "default", {"metadata": {"name": "p"}, "spec": spec})
    await wait_for(
        store,
        pods,
        "default",
        "p",
        lambda p: (p or {}).get("status", {}).get("phase") == "Running",
        timeout=1000,
    )
    running_at = loop.time()
    await wait_for(store, pods, "default", "p", is_ready, timeout=1000)
    assert running_at - t0 == pytest.approx(1.0, abs=0.01)
    assert loop.time() - running_at == pytest.approx(2.0 + 50.0, abs=0.01)
    await k.stop()


async def test_graceful_deletion_and_finalizers(store: Store, kubelet: Kubelet) -> None:
    pods = info(store, "", "pods")
    await store.create(pods, "default", _pod("g"))
    await store.create(
        pods, "default", {**_pod("h"), "metadata": {"name": "h", "finalizers": ["x/y"]}}
    )
    await wait_for(store, pods, "default", "g", is_ready)
    await wait_for(store, pods, "default", "h", is_ready)
    deleting = await store.delete(pods, "default", "g")
    assert deleting["metadata"]["deletionTimestamp"]
    assert (await store.get(pods, "default", "g"))["metadata"]["deletionGracePeriodSeconds"] == 30
    await wait_for(store, pods, "default", "g", lambda p: p is None)

    await store.delete(pods, "default", "h")
    await kubelet.wait_idle()
    held = await store.get(pods, "default", "h")
    assert held["metadata"]["deletionTimestamp"]
    held["metadata"]["finalizers"] = []
    await store.update(pods, "default", "h", held)
    await wait_for(store, pods, "default", "h", lambda p: p is None)


async def test_on_pod_running_hook_and_complete_pod(store: Store) -> None:
    pods = info(store, "", "pods")
    k = await _kubelet(store)
    seen: list[str] = []

    async def hook(pod: dict[str, Any]) -> None:
        seen.append(pod["metadata"]["name"])

    k.on_pod_running.append(hook)
    await store.create(pods, "default", _pod("r", restartPolicy="Never"))
    await wait_for(store, pods, "default", "r", is_ready)
    assert seen == ["r"]
    assert await k.complete_pod("default", "r", succeeded=False, exit_code=3, message="boom")
    r = await store.get(pods, "default", "r")
    assert r["status"]["phase"] == "Failed"
    assert r["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    assert not await k.complete_pod("default", "r")
    await k.stop()


async def _run_jobs(store: Store, config: KubeletConfig) -> tuple[Kubelet, JobController]:
    k = await _kubelet(store, config)
    jobs = JobController(store)
    await jobs.start()
    return k, jobs


def _finished(job: dict[str, Any] | None) -> bool:
    return any((condition(job, t) or {}).get("status") == "True" for t in ("Complete", "Failed"))


async def test_job_runs_its_pod_to_completion(store: Store) -> None:
    pods, jobs_info = info(store, "", "pods"), info(store, "batch", "jobs")
    k, jobs = await _run_jobs(store, FAST)
    template = {"spec": {"containers": [{"name": "submit", "image": "ray"}]}}
    job = await store.create(
        jobs_info, "default", {"metadata": {"name": "sub"}, "spec": {"template": template}}
    )
    done = await wait_for(store, jobs_info, "default", "sub", _finished)
    assert done is not None
    st = done["status"]
    assert st["succeeded"] == 1 and st["active"] == 0 and st["startTime"] and st["completionTime"]
    assert (condition(done, "Complete") or {}).get("status") == "True"
    (pod,) = store.list(pods, "default", label_selector="job-name=sub")[0]
    assert pod["status"]["phase"] == "Succeeded"
    labels = pod["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-name"] == "sub"
    assert labels["controller-uid"] == job["metadata"]["uid"]
    (ref,) = pod["metadata"]["ownerReferences"]
    assert ref["kind"] == "Job" and ref["uid"] == job["metadata"]["uid"] and ref["controller"]
    await jobs.stop()
    await k.stop()


async def test_job_fails_after_its_backoff_limit(store: Store) -> None:
    pods, jobs_info = info(store, "", "pods"), info(store, "batch", "jobs")
    cfg = KubeletConfig(
        running_delay=0.0, ready_delay=0.0, job_duration=0.0, job_failure_rate=1.0, seed=2
    )
    k, jobs = await _run_jobs(store, cfg)
    template = {"spec": {"containers": [{"name": "submit", "image": "ray"}]}}
    await store.create(
        jobs_info,
        "default",
        {"metadata": {"name": "bad"}, "spec": {"template": template, "backoffLimit": 1}},
    )
    done = await wait_for(store, jobs_info, "default", "bad", _finished)
    failed = condition(done, "Failed") or {}
    assert failed.get("status") == "True" and failed.get("reason") == "BackoffLimitExceeded"
    assert done is not None and done["status"]["failed"] == 2
    assert len(store.list(pods, "default", label_selector="job-name=bad")[0]) == 2
    await jobs.stop()
    await k.stop()


async def _outcomes(seed: int) -> dict[str, str]:
    store = Store(seed=1)
    pods = info(store, "", "pods")
    cfg = KubeletConfig(running_delay=0.0, ready_delay=0.0, failure_rate=0.5, seed=seed)
    k = await _kubelet(store, cfg)
    names = [f"p{i}" for i in range(40)]
    for name in names:
        await store.create(pods, "default", _pod(name))
    out = {}
    for name in names:
        pod = await wait_for(
            store,
            pods,
            "default",
            name,
            lambda p: (p or {}).get("status", {}).get("phase") in ("Running", "Failed"),
        )
        assert pod is not None
        out[name] = pod["status"]["phase"]
    await k.stop()
    return out


async def test_failure_rate_is_a_seeded_fraction() -> None:
    first = await _outcomes(seed=11)
    assert 8 <= sum(phase == "Failed" for phase in first.values()) <= 32
    assert await _outcomes(seed=11) == first
    assert await _outcomes(seed=12) != first


async def _writes_until_ready(config: KubeletConfig) -> list[dict[str, Any]]:
    """Runs one pod to Ready; returns the pod after each of the kubelet's writes."""
    store = Store(seed=5)
    pods = info(store, "", "pods")
    seen: list[dict[str, Any]] = []
    store.subscribe(
        lambda t, i, obj, old: seen.append(obj) if t == "MODIFIED" and i.plural == "pods" else None
    )
    k = await _kubelet(store, config)
    await store.create(pods, "default", _pod("w"))
    await wait_for(store, pods, "default", "w", is_ready)
    await k.stop()
    return seen


@pytest.mark.looptime
async def test_binding_and_the_first_status_are_one_write_and_zero_delays_fold() -> None:
    staged = await _writes_until_ready(KubeletConfig(running_delay=1.0, ready_delay=1.0))
    assert [(p["status"]["phase"], is_ready(p)) for p in staged] == [
        ("Pending", False),
        ("Running", False),
        ("Running", True),
    ]
    first = staged[0]
    assert first["spec"]["nodeName"].startswith("sim-node-") and first["status"]["podIP"]
    assert (condition(first, "PodScheduled") or {}).get("status") == "True"
    waiting = first["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "ContainerCreating"

    (only,) = await _writes_until_ready(KubeletConfig(running_delay=0.0, ready_delay=0.0))
    assert only["spec"]["nodeName"] and only["status"]["phase"] == "Running" and is_ready(only)
    assert only["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
