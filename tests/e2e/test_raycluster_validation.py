"""Invalid RayClusters are refused by the API server or reported, never crash-looped on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rayop.kube.errors import Invalid
from rayop.runtime.reconcile import Request
from rayop.testing import eventually

from .raycluster_env import OperatorEnv, simple_cluster

NS = "invalid"


def _min_over_max(obj: dict[str, Any]) -> None:
    group = obj["spec"]["workerGroupSpecs"][0]
    group["minReplicas"], group["maxReplicas"] = 5, 2


def _long_name(obj: dict[str, Any]) -> None:
    obj["metadata"]["name"] = "x" * 54


def _no_group_name(obj: dict[str, Any]) -> None:
    del obj["spec"]["workerGroupSpecs"][0]["groupName"]


def _duplicate_group(obj: dict[str, Any]) -> None:
    groups = obj["spec"]["workerGroupSpecs"]
    groups.append(dict(groups[0]))


def _embedded_gcs_ft(obj: dict[str, Any]) -> None:
    obj["spec"]["gcsFaultToleranceOptions"] = {"backend": "rocksdb"}  # alpha gate, off by default


def _network_policy(obj: dict[str, Any]) -> None:
    obj["spec"]["networkPolicy"] = {"mode": "DenyAllIngress"}  # alpha gate, off by default


CASES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "min-over-max": (_min_over_max, "minReplicas"),
    "long-name": (_long_name, "name"),
    "no-group-name": (_no_group_name, "groupName"),
    "duplicate-group": (_duplicate_group, "groupName"),
    "gate-off-embedded-gcs-ft": (_embedded_gcs_ft, "GCSFaultToleranceEmbeddedStorage"),
    "gate-off-network-policy": (_network_policy, "RayClusterNetworkPolicy"),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_invalid_raycluster_is_refused_or_reported(env: OperatorEnv, case: str) -> None:
    mutate, field = CASES[case]
    obj = simple_cluster(f"bad-{case}", workers=1)
    mutate(obj)
    name = obj["metadata"]["name"]
    try:
        await env.apply(obj, NS)
    except Invalid as err:
        assert field in str(err), f"the API server's message names the field: {err}"
    else:
        await eventually(
            lambda: (
                any(
                    e["regarding"].get("name") == name
                    for e in env.events(NS, "InvalidRayClusterSpec")
                )
                or any(
                    e["regarding"].get("name") == name
                    for e in env.events(NS, "InvalidRayClusterMetadata")
                )
            ),
            what="a Warning event",
        )
        await eventually(
            lambda: (
                field in ((env.raycluster(NS, name) or {}).get("status") or {}).get("reason", "")
            ),
            what="a status reason naming the field",
        )
        warning = [e for e in env.events(NS) if e["regarding"].get("name") == name]
        assert all(e["type"] == "Warning" for e in warning)
    # The operator keeps serving other clusters, and never made a pod for the invalid one.
    await env.apply(simple_cluster(f"good-{case}", workers=1), NS)
    await eventually(lambda: env.converged(NS, f"good-{case}"), what="a valid cluster beside it")
    assert env.pods(NS, name, live_only=False) == []
    assert env.controller.queue.num_requeues(Request(NS, name)) == 0, "no error requeues"
    reconciles_of_bad = [
        r
        for r in env.cp.audit.writes
        if r.resource == "rayclusters" and r.name == name and r.subresource == "status"
    ]
    assert len(reconciles_of_bad) <= 1, "the status reason is written once, not in a loop"
