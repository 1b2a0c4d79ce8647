"""One whole pass: gate steps, resource steps, the status step and the requeue (§3.1)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from rayop.api.raycluster import RayCluster
from rayop.controllers.raycluster.context import PassContext
from rayop.controllers.raycluster.reconciler import GATE_STEPS, RESOURCE_STEPS, RayClusterReconciler
from rayop.runtime.decisions import DecisionLog, PassAccount, note_wait
from rayop.runtime.reconcile import Request, Result
from rayop.runtime.steps import Stop
from rayop.runtime.unchanged_passes import UnchangedPasses, note_request

from ._fakes import NS, UID, Fakes, pod
from ._fixtures import minimal_cluster

REQUEST = Request(NS, "rc")


def _fakes(cluster: dict[str, Any] | None = None) -> Fakes:
    fakes = Fakes()
    fakes.clusters.put(cluster or minimal_cluster())
    return fakes


async def _go(ctx: PassContext) -> None:
    return None


async def test_a_gone_cluster_drops_its_expectations() -> None:
    fakes = Fakes()
    deps = fakes.deps()
    deps.expectations.expect_scale_pod(NS, "rc", "g", "p", "create")
    assert await RayClusterReconciler(deps).reconcile(REQUEST) == Result()
    assert deps.expectations.is_satisfied(NS, "rc", "g")


async def test_a_new_cluster_gets_services_and_pods_and_no_status_without_a_head_ip() -> None:
    fakes = _fakes()
    with pytest.raises(Exception, match="head service"):
        await RayClusterReconciler(fakes.deps()).reconcile(REQUEST)
    created = [(c.kind, c.name) for c in fakes.api.calls_of("create")]
    assert created[0] == ("Service", "rc-head-svc")
    assert [k for k, _ in created[1:]] == ["Pod"] * 3, "head and two workers"
    assert fakes.api.calls_of("update/status") == []


def _with_head_service(fakes: Fakes) -> Fakes:
    labels = {"ray.io/cluster": "rc", "ray.io/node-type": "head", "ray.io/identifier": "rc-head"}
    owner = [{"uid": UID, "controller": True}]
    metadata = {"name": "rc-head-svc", "labels": labels, "ownerReferences": owner}
    fakes.services.put({"metadata": metadata, "spec": {"clusterIP": "10.0.0.1"}})
    return fakes


@pytest.mark.parametrize(("periodic", "then"), [(300, Result(requeue_after=300.0)), (0, Result())])
async def test_a_changed_status_requeues_after_two_seconds_an_unchanged_one_periodically(
    periodic: int, then: Result
) -> None:
    fakes = _with_head_service(_fakes())
    fakes.options = dataclasses.replace(fakes.options, default_requeue_seconds=periodic)
    reconciler = RayClusterReconciler(fakes.deps(), resource_steps=[_go])
    assert await reconciler.reconcile(REQUEST) == Result(requeue_after=2.0)
    fakes.clusters.put(fakes.api.calls_of("update/status")[0].body)  # the cache shows our write
    assert await reconciler.reconcile(REQUEST) == then, "0 s: no timed requeue"


async def test_a_gate_stop_skips_resources_and_status() -> None:
    fakes = _fakes(minimal_cluster(managedBy="kueue.x-k8s.io/multikueue"))
    assert await RayClusterReconciler(fakes.deps()).reconcile(REQUEST) == Result()
    assert fakes.api.calls == []


async def test_a_stop_after_status_write_writes_the_status_then_returns_its_result() -> None:
    fakes = _fakes()
    calls: list[str] = []

    async def stop_here(ctx: PassContext) -> Stop | None:
        calls.append("stop")
        return Stop.after_status_write(Result(requeue_after=7.0))

    async def never(ctx: PassContext) -> Stop | None:
        calls.append("never")
        return None

    reconciler = RayClusterReconciler(fakes.deps(), gate_steps=[stop_here], resource_steps=[never])
    with pytest.raises(Exception, match="head service"):
        await reconciler.reconcile(REQUEST)  # the status step ran (and had no head service)
    assert calls == ["stop"]


async def test_a_resource_error_is_raised_after_the_status_step() -> None:
    fakes = _fakes()
    seen: list[str] = []

    async def broken(ctx: PassContext) -> Stop | None:
        raise RuntimeError("broken step")

    async def after(ctx: PassContext) -> Stop | None:
        seen.append("after")
        return None

    reconciler = RayClusterReconciler(fakes.deps(), resource_steps=[broken, after])
    with pytest.raises(RuntimeError, match="broken step"):
        await reconciler.reconcile(REQUEST)  # the status failure (no head service) is only logged
    assert seen == [], "the first error stops the resource steps"


def test_the_step_lists_are_kuberay_s_order() -> None:
    assert [s.__name__ for s in GATE_STEPS] == [
        "check_managed_by",
        "validate",
        "reconcile_redis_cleanup",
        "stop_if_deleting",
    ]
    assert [s.__name__ for s in RESOURCE_STEPS] == [
        "reconcile_autoscaler_rbac",
        "reconcile_ingress",
        "reconcile_route",
        "reconcile_auth_secret",
        "reconcile_head_service",
        "reconcile_headless_worker_service",
        "reconcile_serve_service",
        "reconcile_gcs_storage_pvc",
        "reconcile_pods",
    ]


async def test_a_pass_parses_the_cluster_once(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[object] = []
    original = RayCluster.model_validate

    def counting(obj: Any, **kw: Any) -> RayCluster:
        parsed.append(obj)
        return original(obj, **kw)

    monkeypatch.setattr(RayCluster, "model_validate", counting)
    fakes = _with_head_service(_fakes())
    await RayClusterReconciler(fakes.deps()).reconcile(REQUEST)  # builds a head and two workers
    assert len(fakes.api.calls_of("create", "Pod")) == 3
    assert len(parsed) == 1


class _Passes:
    """Runs reconciles as the controller does: each inside a pass account of a decision log."""

    def __init__(self, reconciler: RayClusterReconciler) -> None:
        self.reconciler = reconciler
        self.log = DecisionLog()

    async def run(self) -> Result:
        account = PassAccount("raycluster", "RayCluster", NS, "rc", 0.0)
        token = self.log.open(account)
        try:
            return await self.reconciler.reconcile(REQUEST)
        finally:
            self.log.close(account, token)


def _skipping(fakes: Fakes, step: Any) -> tuple[_Passes, UnchangedPasses[Request]]:
    unchanged: UnchangedPasses[Request] = UnchangedPasses(
        lambda: fakes.clusters.changes + fakes.pods.changes + fakes.services.changes
    )
    deps = dataclasses.replace(fakes.deps(), unchanged=unchanged)
    return _Passes(RayClusterReconciler(deps, resource_steps=[step])), unchanged


async def test_a_periodic_pass_that_could_only_repeat_a_quiet_one_is_not_run() -> None:
    fakes = _with_head_service(_fakes())
    runs: list[int] = []

    async def step(ctx: PassContext) -> None:
        runs.append(1)

    passes, unchanged = _skipping(fakes, step)
    assert await passes.run() == Result(requeue_after=2.0)  # wrote the status: not quiet
    fakes.clusters.put(fakes.api.calls_of("update/status")[0].body)
    periodic = Result(requeue_after=300.0)
    assert await passes.run() == periodic and len(runs) == 2  # quiet
    assert await passes.run() == periodic and len(runs) == 2, "nothing changed: not run"
    assert unchanged.skipped == 1
    fakes.pods.put(pod("rc-worker-x", "worker", "small-group"))
    await passes.run()
    assert len(runs) == 3, "a cache changed: run"


@pytest.mark.parametrize("noise", ["request", "wait"])
async def test_a_pass_that_read_the_api_or_waited_is_run_again(noise: str) -> None:
    fakes = _with_head_service(_fakes())
    runs: list[int] = []
    noisy = [False]

    async def step(ctx: PassContext) -> None:
        runs.append(1)
        if noisy[0] and noise == "request":
            note_request("GET", "/api/v1/namespaces/ns/secrets/s")  # the client's hook
        elif noisy[0]:
            note_wait("something the caches do not show")

    passes, unchanged = _skipping(fakes, step)
    await passes.run()
    fakes.clusters.put(fakes.api.calls_of("update/status")[0].body)  # converged
    noisy[0] = True
    for _ in range(2):
        assert await passes.run() == Result(requeue_after=300.0)
    assert len(runs) == 3 and unchanged.skipped == 0
    noisy[0] = False  # the same passes without it: the second is not run
    await passes.run()
    await passes.run()
    assert len(runs) == 4 and unchanged.skipped == 1


async def test_a_failed_pass_is_run_again() -> None:
    fakes = _with_head_service(_fakes())
    runs: list[int] = []

    async def step(ctx: PassContext) -> None:
        runs.append(1)
        raise RuntimeError("boom")

    passes, unchanged = _skipping(fakes, step)
    for _ in range(2):
        with pytest.raises(RuntimeError):
            await passes.run()
    assert len(runs) == 2 and len(unchanged) == 0


@pytest.mark.parametrize("status", ["written", "discarded"])
async def test_a_pass_a_step_stopped_is_run_again_even_with_the_periodic_result(
    status: str,
) -> None:
    fakes = _with_head_service(_fakes())
    runs: list[int] = []
    stopping = [False]
    periodic = Result(requeue_after=300.0)

    async def step(ctx: PassContext) -> Stop | None:
        runs.append(1)
        if not stopping[0]:
            return None
        if status == "written":
            return Stop.after_status_write(periodic)
        return Stop.discarding_status(periodic)

    passes, unchanged = _skipping(fakes, step)
    await passes.run()
    fakes.clusters.put(fakes.api.calls_of("update/status")[0].body)  # converged
    stopping[0] = True
    for _ in range(2):
        assert await passes.run() == periodic
    assert len(runs) == 3 and unchanged.skipped == 0
