"""The pods step uses scale expectations as KubeRay does (kuberay-v1.md §2).

A group whose expectations are unsatisfied is skipped whole; an unsatisfied head group skips
only the head; creates are recorded under the name the server generated; a delete answered
NotFound for an unhealthy pod records nothing.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from typing import Any

import pytest

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import KUBERAY_VERSION
from rayop.controllers.raycluster.context import ReconcilerDeps
from rayop.controllers.raycluster.pod_sync import reconcile_pods
from rayop.controllers.raycluster.status import ReplicaFailureError
from rayop.kube.errors import ApiError, Forbidden
from rayop.runtime.expectations import CREATE, DELETE, HEAD_GROUP, ScaleExpectations

from ._fakes import NS, Fakes, context, pod
from ._fixtures import minimal_cluster


def _two_groups() -> dict[str, Any]:
    cluster = minimal_cluster()
    first = cluster["spec"]["workerGroupSpecs"][0]
    first.update(groupName="a", replicas=1)
    cluster["spec"]["workerGroupSpecs"].append({**copy.deepcopy(first), "groupName": "b"})
    return cluster


def _created(fakes: Fakes) -> list[str]:
    return [c.name for c in fakes.api.calls_of("create", "Pod")]


def _deleted(fakes: Fakes) -> list[str]:
    return [c.name for c in fakes.api.calls_of("delete", "Pod")]


async def test_unsatisfied_group_is_skipped_and_creates_are_recorded_by_generated_name() -> None:
    fakes = Fakes()
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    fakes.pods.put(pod("old-a", "worker", "a"))
    ctx = context(_two_groups(), fakes)
    expectations = ctx.deps.expectations
    # Group "a" deleted old-a, which the cache still holds: the whole group waits.
    expectations.expect_scale_pod(NS, "rc", "a", "old-a", DELETE)
    # The head group waits for a create the cache has not seen; the workers go on.
    expectations.expect_scale_pod(NS, "rc", HEAD_GROUP, "rc-head-new", CREATE)
    del fakes.pods.objects["rc-head-1"]

    assert await reconcile_pods(ctx) is None

    assert _created(fakes) == ["rc-b-worker-00001"], "only group b acted; no head, nothing for a"
    assert not expectations.is_satisfied(NS, "rc", "b"), "recorded under the generated name"
    fakes.pods.put(pod("rc-b-worker-00001", "worker", "b"))
    assert expectations.is_satisfied(NS, "rc", "b")

    del fakes.pods.objects["old-a"]
    fakes.add_pod(pod("rc-head-new", "head", "headgroup"))
    await reconcile_pods(ctx)  # the same expectations, now satisfied for "a" and the head
    assert _created(fakes)[1:] == ["rc-a-worker-00002"]


async def test_unhealthy_pod_already_gone_records_no_expectation() -> None:
    fakes = Fakes()
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    fakes.pods.put(pod("dead-a", "worker", "a", phase="Failed"))  # gone from the server
    ctx = context(_two_groups(), fakes)

    with pytest.raises(ReplicaFailureError):
        await reconcile_pods(ctx)

    assert ctx.deps.expectations.is_satisfied(NS, "rc", "a"), "NotFound recorded nothing"
    assert _created(fakes) == [], "no creates in a pass that met an unhealthy pod"


async def test_missing_head_is_created_with_the_spec_hash_and_an_event() -> None:
    fakes = Fakes()
    ctx = context(minimal_cluster(workerGroupSpecs=[]), fakes)

    await reconcile_pods(ctx)

    (call,) = fakes.api.calls_of("create", "Pod")
    annotations = call.body["metadata"]["annotations"]
    assert annotations["ray.io/upgrade-strategy-recreate-hash"] == ctx.spec_hash()
    assert fakes.events.reasons() == ["CreatedHeadPod"]
    assert not ctx.deps.expectations.is_satisfied(NS, "rc", HEAD_GROUP)


async def test_failed_head_create_is_a_replica_failure_with_a_warning() -> None:
    fakes = Fakes()
    fakes.api.fail_every("create", ApiError({"code": 500, "message": "boom"}), kind="Pod")
    ctx = context(minimal_cluster(workerGroupSpecs=[]), fakes)

    with pytest.raises(ReplicaFailureError) as caught:
        await reconcile_pods(ctx)

    assert caught.value.reason == "FailedCreateHeadPod"
    assert fakes.events.reasons() == ["FailedToCreateHeadPod"]


async def test_scale_up_creates_the_missing_workers_and_down_deletes_the_oldest() -> None:
    fakes = Fakes()
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    cluster = minimal_cluster()  # group g wants 2
    await reconcile_pods(context(cluster, fakes))
    assert _created(fakes) == ["rc-g-worker-00001", "rc-g-worker-00002"]
    assert fakes.events.reasons() == ["CreatedWorkerPod"] * 2

    fakes = Fakes()
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    for name in ("w1", "w2", "w3"):
        fakes.add_pod(pod(name, "worker", "g"))
    await reconcile_pods(context(cluster, fakes))
    assert _deleted(fakes) == ["w1"]
    assert fakes.events.reasons() == ["DeletedWorkerPod"]


async def test_suspend_deletes_every_pod_and_stops() -> None:
    fakes = Fakes()
    fakes.options = dataclasses.replace(
        fakes.options,
        feature_gates=dataclasses.replace(
            fakes.options.feature_gates, ray_cluster_status_conditions=False
        ),
    )
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    fakes.add_pod(pod("w1", "worker", "g"))

    await reconcile_pods(context(minimal_cluster(suspend=True), fakes))

    assert sorted(_deleted(fakes)) == ["rc-head-1", "w1"]
    assert _created(fakes) == []


async def test_recreate_upgrade_deletes_pods_whose_hash_is_stale() -> None:
    fakes = Fakes()
    cluster = minimal_cluster(upgradeStrategy={"type": "Recreate"})
    head = pod("rc-head-1", "head", "headgroup")
    head["metadata"]["annotations"] = {
        "ray.io/kuberay-version": KUBERAY_VERSION,
        "ray.io/upgrade-strategy-recreate-hash": "stale",
    }
    fakes.add_pod(head)
    fakes.add_pod(pod("w1", "worker", "g"))

    await reconcile_pods(context(cluster, fakes))

    assert sorted(_deleted(fakes)) == ["rc-head-1", "w1"]
    assert _created(fakes) == [], "the pass stops after the deletions"


async def test_recreate_upgrade_first_annotates_a_head_of_another_operator_version() -> None:
    fakes = Fakes()
    cluster = minimal_cluster(upgradeStrategy={"type": "Recreate"}, workerGroupSpecs=[])
    head = pod("rc-head-1", "head", "headgroup")
    head["metadata"]["annotations"] = {
        "ray.io/kuberay-version": "v1.6.0",
        "ray.io/upgrade-strategy-recreate-hash": "from-another-version",
    }
    fakes.add_pod(head)
    ctx = context(cluster, fakes)

    await reconcile_pods(ctx)

    (patch,) = fakes.api.calls_of("patch", "Pod")
    annotations = patch.body["metadata"]["annotations"]
    assert annotations["ray.io/upgrade-strategy-recreate-hash"] == ctx.spec_hash()
    assert _deleted(fakes) == []


async def test_recreate_upgrade_leaves_a_head_without_hash_or_version_alone() -> None:
    fakes = Fakes()
    cluster = minimal_cluster(upgradeStrategy={"type": "Recreate"}, workerGroupSpecs=[])
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))

    await reconcile_pods(context(cluster, fakes))

    assert fakes.api.calls_of("patch", "Pod") == [] and _deleted(fakes) == []


_TERMINATING = Forbidden(
    {
        "code": 403,
        "reason": "Forbidden",
        "message": 'pods "rc-g-worker-x" is forbidden: unable to create new content in '
        "namespace ns because it is being terminated",
        "details": {"causes": [{"type": "NamespaceTerminating", "field": "metadata.namespace"}]},
    }
)


def _three_missing_workers(fakes: Fakes) -> dict[str, Any]:
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    cluster = minimal_cluster()
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = 3
    return cluster


async def test_a_namespace_that_refused_a_pod_create_gets_one_create_per_pass_as_kuberay() -> None:
    # A terminating namespace answers every create 403; KubeRay creates one worker and stops at
    # the first failure, so each pass costs it one refused create and one Warning event.
    fakes = Fakes()
    cluster = _three_missing_workers(fakes)
    fakes.api.fail_every("create", _TERMINATING, kind="Pod")
    deps = fakes.deps()

    with pytest.raises(ReplicaFailureError):
        await reconcile_pods(context(cluster, deps=deps))  # the first refusal: learnt here
    first = len(_created(fakes))
    for _ in range(3):
        with pytest.raises(ReplicaFailureError) as caught:
            await reconcile_pods(context(cluster, deps=deps))
        assert caught.value.reason == "FailedCreateWorkerPod"

    assert len(_created(fakes)) - first == 3, "one refused create per later pass"
    assert fakes.events.reasons()[-3:] == ["FailedToCreateWorkerPod"] * 3
    assert len(fakes.events.reasons()) == first + 3
    assert deps.refusing_namespaces == {NS}


async def test_a_refused_head_create_also_makes_the_next_passes_create_one_at_a_time() -> None:
    fakes = Fakes()
    fakes.api.fail_every("create", _TERMINATING, kind="Pod")
    deps = fakes.deps()
    cluster = minimal_cluster()
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = 3

    with pytest.raises(ReplicaFailureError) as caught:
        await reconcile_pods(context(cluster, deps=deps))
    assert caught.value.reason == "FailedCreateHeadPod"
    assert _created(fakes) == ["rc-head-00001"], "no worker create after a failed head create"

    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    with pytest.raises(ReplicaFailureError):
        await reconcile_pods(context(cluster, deps=deps))
    assert len(_created(fakes)) == 2, "one worker create, then the pass stops"


async def test_a_pod_create_that_succeeds_there_again_restores_concurrent_creates() -> None:
    fakes = Fakes()
    cluster = _three_missing_workers(fakes)
    deps = fakes.deps()
    deps.refusing_namespaces.add(NS)  # an earlier pass was refused, the namespace then came back
    seen: list[int] = []
    in_flight = 0
    create = fakes.api.create

    async def counting_create(res: Any, obj: Any, *, namespace: str | None = None) -> Any:
        nonlocal in_flight
        in_flight += 1
        seen.append(in_flight)
        await asyncio.sleep(0)
        try:
            return await create(res, obj, namespace=namespace)
        finally:
            in_flight -= 1

    fakes.api.create = counting_create  # type: ignore[method-assign]
    await reconcile_pods(context(cluster, deps=deps))
    assert len(_created(fakes)) == 3 and max(seen) == 1, "one at a time while refused"
    assert deps.refusing_namespaces == set(), "the first success forgets the refusal"

    fakes.pods.objects = {k: v for k, v in fakes.pods.objects.items() if "head" in k}
    await reconcile_pods(context(cluster, deps=fresh_expectations(deps)))
    assert len(_created(fakes)) == 6 and max(seen) == 3, "concurrent again"


async def test_other_create_failures_keep_creates_concurrent() -> None:
    fakes = Fakes()
    cluster = _three_missing_workers(fakes)
    fakes.api.fail_every("create", ApiError({"code": 500, "message": "boom"}), kind="Pod")
    deps = fakes.deps()
    for _ in range(2):
        with pytest.raises(ReplicaFailureError):
            await reconcile_pods(context(cluster, deps=deps))
    assert len(_created(fakes)) == 6, "every missing worker tried in each pass"
    assert deps.refusing_namespaces == set()


def fresh_expectations(deps: ReconcilerDeps) -> ReconcilerDeps:
    """The same dependencies with new scale expectations (the cache shows no pods any more)."""
    pods = deps.pods
    return dataclasses.replace(deps, expectations=ScaleExpectations(pods.get, clock=deps.clock))


async def test_a_groups_missing_workers_share_one_built_body(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pods a pass creates for one group differ only in their replica index label, so the
    body is built once; each create sends it with its own index, as a fresh build would."""
    from rayop.api import keys
    from rayop.api.raycluster import RayCluster
    from rayop.controllers.raycluster import pods

    cluster = minimal_cluster()
    cluster["spec"]["workerGroupSpecs"][0].update(groupName="a", replicas=4)
    fakes = Fakes()
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    ctx = context(cluster, fakes)
    built = []
    real = pods.build_worker_pod

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append(kwargs["replica_index"])
        return real(*args, **kwargs)

    monkeypatch.setattr("rayop.controllers.raycluster.pod_sync.build_worker_pod", counting)
    await reconcile_pods(ctx)

    bodies = [c.body for c in fakes.api.calls_of("create", "Pod")]
    assert len(bodies) == 4 and len(set(_created(fakes))) == 4
    assert len(built) == 1
    index = keys.RAY_WORKER_REPLICA_INDEX
    assert sorted(b["metadata"]["labels"][index] for b in bodies) == ["0", "1", "2", "3"]
    rc = RayCluster.model_validate(cluster)
    assert rc.spec.worker_group_specs is not None
    group = rc.spec.worker_group_specs[0]
    for b in bodies:  # each as a build with its own index makes it (batch metadata: none here)
        i = int(b["metadata"]["labels"][index])
        assert b == real(rc, group, options=ctx.deps.options, replica_index=i)


async def test_an_incomplete_multi_host_replica_is_replaced_in_the_pass_that_deletes_it() -> None:
    """3 replicas x 4 hosts, one host deleted from outside: one pass deletes the other three
    hosts and creates the four of a new replica (fresh name, the freed index), as KubeRay ends
    up doing a pass later; the group then waits until the cache shows both (expectations)."""
    gates = FeatureGates().with_overrides({"RayMultiHostIndexing": True})
    fakes = Fakes(options=dataclasses.replace(Fakes().options, feature_gates=gates))
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    for index, replica in enumerate(("g-aaaaa", "g-bbbbb", "g-ccccc")):
        for host in range(4):
            if (index, host) == (1, 2):
                continue  # deleted from outside
            labels = {
                "ray.io/worker-group-replica-name": replica,
                "ray.io/worker-group-replica-index": str(index),
                "ray.io/replica-host-index": str(host),
            }
            fakes.add_pod(pod(f"{replica}-{host}", "worker", "g", labels=labels))
    cluster = minimal_cluster()
    cluster["spec"]["workerGroupSpecs"][0].update(replicas=3, numOfHosts=4)
    ctx = context(cluster, fakes)

    assert await reconcile_pods(ctx) is None  # no requeue error

    assert _deleted(fakes) == ["g-bbbbb-0", "g-bbbbb-1", "g-bbbbb-3"]
    created = [c.body for c in fakes.api.calls_of("create", "Pod")]
    created_labels = [c["metadata"]["labels"] for c in created]
    assert [lb["ray.io/replica-host-index"] for lb in created_labels] == ["0", "1", "2", "3"]
    assert {lb["ray.io/worker-group-replica-index"] for lb in created_labels} == {"1"}
    (fresh,) = {lb["ray.io/worker-group-replica-name"] for lb in created_labels}
    assert fresh not in ("g-aaaaa", "g-bbbbb", "g-ccccc")
    expectations = ctx.deps.expectations
    assert not expectations.is_satisfied(NS, "rc", "g")
    for name in ("g-bbbbb-0", "g-bbbbb-1", "g-bbbbb-3"):
        del fakes.pods.objects[name]
    assert not expectations.is_satisfied(NS, "rc", "g"), "the new hosts are not cached yet"
    for name in _created(fakes):
        fakes.pods.put(pod(name, "worker", "g"))
    assert expectations.is_satisfied(NS, "rc", "g")
