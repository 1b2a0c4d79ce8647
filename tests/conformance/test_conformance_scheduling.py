"""Scheduling refusals: a pod that cannot be placed stays Pending with FailedScheduling.

The messages are kube-scheduler v1.37.2's, as the real tier runs them; a refusal before any
node is tried (the pod's claims) ends with the preemption post-filter's "not found".
"""

from __future__ import annotations

from typing import Any

from rayop.testing import eventually

from .kubehttp import Kube

NOT_HELPFUL = "Preemption is not helpful for scheduling"


async def _nodes(kube: Kube) -> int:
    code, nodes = await kube.get("/api/v1/nodes")
    assert code == 200
    return len(nodes["items"])


async def _refusal(kube: Kube, ns: str, pod: str) -> str:
    """Waits for the scheduler's FailedScheduling event about ``pod``; returns its message."""
    found: list[str] = []

    async def reported() -> bool:
        code, events = await kube.get(
            f"/api/v1/namespaces/{ns}/events",
            fieldSelector=f"involvedObject.name={pod},reason=FailedScheduling",
        )
        assert code == 200
        found[:] = [e["message"] for e in events["items"]]
        if not found:
            return False
        # The scheduler records the event and writes the PodScheduled condition separately.
        code, current = await kube.get(f"/api/v1/namespaces/{ns}/pods/{pod}")
        conditions = (current.get("status") or {}).get("conditions") or []
        return any(c["type"] == "PodScheduled" for c in conditions)

    await eventually(reported, timeout=60, interval=0.5, what=f"FailedScheduling for {pod}")
    code, obj = await kube.get(f"/api/v1/namespaces/{ns}/pods/{pod}")
    assert code == 200 and not obj["spec"].get("nodeName")
    assert obj["status"]["phase"] == "Pending"
    (cond,) = [c for c in obj["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert cond["message"] == found[-1], (cond, found)
    return found[-1]


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


async def test_a_missing_claim_leaves_the_pod_pending(kube: Kube, ns: str) -> None:
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "absent"}}]
    code, body = await kube.post(f"/api/v1/namespaces/{ns}/pods", _pod("claims", volumes=volumes))
    assert code == 201, body
    n = await _nodes(kube)
    message = await _refusal(kube, ns, "claims")
    assert message == (
        f'0/{n} nodes are available: persistentvolumeclaim "absent" not found. not found'
    ), message


async def test_a_node_selector_no_node_matches_leaves_the_pod_pending(kube: Kube, ns: str) -> None:
    selector = {"conformance.rayop.dev/nowhere": "true"}
    code, body = await kube.post(
        f"/api/v1/namespaces/{ns}/pods", _pod("nowhere", nodeSelector=selector)
    )
    assert code == 201, body
    n = await _nodes(kube)
    message = await _refusal(kube, ns, "nowhere")
    assert message == (
        f"0/{n} nodes are available: {n} node(s) didn't match Pod's node affinity/selector. "
        f"preemption: 0/{n} nodes are available: {n} {NOT_HELPFUL}."
    ), message


async def test_an_unbound_immediate_claim_leaves_the_pod_pending(kube: Kube, ns: str) -> None:
    claim = {
        "metadata": {"name": "unbound"},
        "spec": {
            "storageClassName": "",
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    code, body = await kube.post(f"/api/v1/namespaces/{ns}/persistentvolumeclaims", claim)
    assert code == 201, body
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "unbound"}}]
    code, body = await kube.post(f"/api/v1/namespaces/{ns}/pods", _pod("waits", volumes=volumes))
    assert code == 201, body
    n = await _nodes(kube)
    message = await _refusal(kube, ns, "waits")
    assert message == (
        f"0/{n} nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"
    ), message
