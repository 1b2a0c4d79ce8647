"""The ``networkpolicy`` controller on the embedded plane, with ``RayClusterNetworkPolicy`` on.

A cluster gets its head and group policies, owned by it; a policy edited by hand is put back;
a removed worker group loses its policy; a user's policy with the operator's name is never
touched (Warning ``NetworkPolicyNameCollision``); removing ``spec.networkPolicy`` deletes the
policies; and with the gate off no policy is made at all.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.network_policy import NETWORK_POLICIES
from rayop.testing import eventually

from .raycluster_env import OperatorEnv, running_operator, simple_cluster

GATE_ON = OperatorOptions(
    feature_gates=FeatureGates().with_overrides({"RayClusterNetworkPolicy": True})
)
Obj = dict[str, Any]


@pytest.fixture
async def env() -> AsyncIterator[OperatorEnv]:
    """A control plane with the operator, RayClusterNetworkPolicy on."""
    async with running_operator(options=GATE_ON) as running:
        yield running


def _names(env: OperatorEnv, ns: str) -> set[str]:
    return {p["metadata"]["name"] for p in env.objects(NETWORK_POLICIES, ns)}


def _notes(env: OperatorEnv, ns: str, reason: str) -> list[str]:
    return [e["note"] for e in env.events(ns, reason)]


async def _event(env: OperatorEnv, ns: str, reason: str, note: str) -> None:
    await eventually(lambda: note in _notes(env, ns, reason), what=f"{reason}: {note}")


def _two_groups(name: str) -> Obj:
    cluster = simple_cluster(name, workers=1, networkPolicy={"mode": "DenyAllIngress"})
    second = dict(cluster["spec"]["workerGroupSpecs"][0], groupName="second")
    cluster["spec"]["workerGroupSpecs"].append(second)
    return cluster


async def test_policies_are_created_repaired_and_pruned(env: OperatorEnv) -> None:
    ns = await env.namespace("np")
    created = await env.apply(_two_groups("c"), ns)
    want = {"c-head", "c-workers-workergroup", "c-workers-second"}
    await eventually(lambda: _names(env, ns) == want, what="three policies")
    head = env.stored(NETWORK_POLICIES, ns, "c-head") or {}
    (ref,) = head["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["uid"], ref["controller"]) == (
        "RayCluster",
        created["metadata"]["uid"],
        True,
    )
    assert head["spec"]["policyTypes"] == ["Ingress"] and "egress" not in head["spec"]
    await _event(env, ns, "CreatedNetworkPolicy", f"Created NetworkPolicy {ns}/c-head")
    events = env.events(ns, "CreatedNetworkPolicy")
    reporters = {e.get("reportingController") or e.get("reportingComponent") for e in events}
    assert reporters == {"networkpolicy-controller"}

    def drop_second(rc: Obj) -> None:  # a generation change makes the controller look again
        rc["spec"]["workerGroupSpecs"] = rc["spec"]["workerGroupSpecs"][:1]

    await env.edit(ns, "c", drop_second)
    await eventually(lambda: _names(env, ns) == {"c-head", "c-workers-workergroup"}, what="pruned")
    await _event(env, ns, "DeletedNetworkPolicy", f"Deleted NetworkPolicy {ns}/c-workers-second")

    live = copy.deepcopy(env.stored(NETWORK_POLICIES, ns, "c-head") or {})
    live["spec"]["ingress"] = []
    live["metadata"]["labels"]["by-hand"] = "x"
    await env.client.update(NETWORK_POLICIES, live)  # the owned watch enqueues the cluster

    def repaired() -> bool:
        policy = env.stored(NETWORK_POLICIES, ns, "c-head") or {}
        labels = policy.get("metadata", {}).get("labels") or {}
        return bool(policy.get("spec", {}).get("ingress")) and "by-hand" not in labels

    await eventually(repaired, what="head policy repaired")
    await _event(env, ns, "UpdatedNetworkPolicy", f"Updated NetworkPolicy {ns}/c-head")

    def remove(rc: Obj) -> None:
        del rc["spec"]["networkPolicy"]

    await env.edit(ns, "c", remove)
    await eventually(lambda: _names(env, ns) == set(), what="all policies deleted")


async def test_a_user_policy_with_the_operator_s_name_is_left_alone(env: OperatorEnv) -> None:
    ns = await env.namespace("np-user")
    user = {
        "metadata": {"name": "theirs-head", "labels": {"owner": "me"}},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
    }
    await env.client.create(NETWORK_POLICIES, user, namespace=ns)
    await env.apply(simple_cluster("theirs", workers=1, networkPolicy={}), ns)
    note = (
        f"NetworkPolicy {ns}/theirs-head already exists and is not owned by this RayCluster, "
        "network isolation will not be applied. Rename the existing NetworkPolicy or use a "
        "different RayCluster name to avoid the collision"
    )
    await eventually(
        lambda: note in _notes(env, ns, "NetworkPolicyNameCollision"), what="collision event"
    )
    stored = env.stored(NETWORK_POLICIES, ns, "theirs-head") or {}
    assert stored["metadata"]["labels"] == {"owner": "me"}
    assert "ownerReferences" not in stored["metadata"]
    assert stored["spec"]["podSelector"] == {}


async def test_with_the_gate_off_no_policy_is_made() -> None:
    async with running_operator() as env:
        ns = await env.namespace("np-off")
        await env.apply(simple_cluster("off", workers=1), ns)
        await eventually(lambda: env.converged(ns, "off"), what="converged")
        assert env.objects(NETWORK_POLICIES, ns) == []
