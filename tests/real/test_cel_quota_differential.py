"""CRD CEL rules and ResourceQuota on a real kube-apiserver and on the embedded plane: the same
refusals, word for word.

CEL: rayop's own rules (a managedBy outside the allowed values, a change of managedBy, a RayJob
deletion condition with both statuses) and a small CRD of the test's (messageExpression,
fieldPath with reason, the default message with a Kubernetes string function, a transition rule
on the status subresource). Quota: a pod over a ``pods`` count, one without the requests a
compute quota needs, one over ``requests.cpu``, one over an extended resource, a ConfigMap over
``count/configmaps``. Each Status (code, reason, message, causes) must be the same.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import orjson
import pytest

from rayop.kube.client import KubeClient
from rayop.testing import open_control_plane
from tests.sim.admission_bodies import pod, raycluster, resource_quota

from .real_support import create_namespace, unique_namespace, user_client

pytestmark = [pytest.mark.real, pytest.mark.timeout(240, func_only=True)]

Obj = dict[str, Any]
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
KUBERAY = "ray.io/kuberay-operator"


def _job(name: str) -> Obj:
    condition = {"jobStatus": "SUCCEEDED", "jobDeploymentStatus": "Failed", "ttlSeconds": 0}
    rule = {"policy": "DeleteCluster", "condition": condition}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "deletionStrategy": {"deletionRules": [rule]},
        },
    }


def _gadget_crd() -> Obj:
    spec_rules = [
        {
            "rule": "self.replicas <= self.max",
            "messageExpression": "self.replicas < -3 ? 'replicas far below max' : 'replicas above max'",
        },
        {
            "rule": "self.replicas >= 0",
            "fieldPath": ".replicas",
            "reason": "FieldValueForbidden",
            "message": "no negative replicas",
        },
        {"rule": "!has(self.mode) || self.mode.lowerAscii() == self.mode"},
    ]
    status_rules = [
        {
            "rule": "self.phase == oldSelf.phase || oldSelf.phase != 'Done'",
            "message": "Done is final",
        }
    ]
    spec_props = {
        "replicas": {"type": "integer"},
        "max": {"type": "integer"},
        "mode": {"type": "string", "maxLength": 16},
    }
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": spec_rules,
                "properties": spec_props,
            },
            "status": {
                "type": "object",
                "x-kubernetes-validations": status_rules,
                "properties": {"phase": {"type": "string", "maxLength": 16}},
            },
        },
    }
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
        "subresources": {"status": {}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.celtest.rayop.io"},
        "spec": {
            "group": "celtest.rayop.io",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [version],
        },
    }


def _outcome(status: int, raw: bytes) -> Obj:
    reply: Obj = orjson.loads(raw)
    causes = [
        (c.get("field", ""), c.get("reason", ""), c.get("message", ""))
        for c in (reply.get("details") or {}).get("causes", [])
    ]
    return {
        "code": status,
        "reason": reply.get("reason"),
        "message": reply.get("message"),
        "causes": causes,
    }


async def _call(
    client: KubeClient, method: str, path: str, body: Obj | None = None
) -> tuple[int, Obj]:
    status, raw = await client.request(method, path, json=body)
    try:
        return status, orjson.loads(raw)
    except orjson.JSONDecodeError:  # kube-apiserver's plain-text 404 for an unknown path
        return status, {}


async def _cel_refusals(client: KubeClient, ns: str) -> dict[str, Obj]:
    out: dict[str, Obj] = {}
    clusters = f"/apis/ray.io/v1/namespaces/{ns}/rayclusters"
    out["managedBy value"] = _outcome(
        *await client.request("POST", clusters, json=raycluster("bad", managedBy="someone"))
    )
    code, made = await _call(client, "POST", clusters, raycluster("rc", managedBy=KUBERAY))
    assert code == 201, made
    made["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    out["managedBy change"] = _outcome(*await client.request("PUT", f"{clusters}/rc", json=made))
    jobs = f"/apis/ray.io/v1/namespaces/{ns}/rayjobs"
    out["deletion condition"] = _outcome(*await client.request("POST", jobs, json=_job("job")))
    gadgets = f"/apis/celtest.rayop.io/v1/namespaces/{ns}/gadgets"
    bad = {"metadata": {"name": "bad"}, "spec": {"replicas": -5, "max": -6, "mode": "Fast"}}
    bad.update(apiVersion="celtest.rayop.io/v1", kind="Gadget")
    out["gadget rules"] = _outcome(*await client.request("POST", gadgets, json=bad))
    good = {**copy.deepcopy(bad), "metadata": {"name": "good"}, "spec": {"replicas": 1, "max": 2}}
    code, made = await _call(client, "POST", gadgets, good)
    assert code == 201, made
    made["status"] = {"phase": "Done"}
    code, done = await _call(client, "PUT", f"{gadgets}/good/status", made)
    assert code == 200, done
    done["status"] = {"phase": "Running"}
    out["status transition"] = _outcome(
        *await client.request("PUT", f"{gadgets}/good/status", json=done)
    )
    return out


async def _quota(client: KubeClient, ns: str, name: str, hard: dict[str, str]) -> None:
    body = resource_quota(name, **hard)
    code, made = await _call(client, "POST", f"/api/v1/namespaces/{ns}/resourcequotas", body)
    assert code == 201, made
    for _ in range(300):  # the quota controller fills the status
        code, got = await _call(client, "GET", f"/api/v1/namespaces/{ns}/resourcequotas/{name}")
        if set((got.get("status") or {}).get("used") or {}) == set(hard):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"quota {name} got no status")


async def _quota_refusals(client: KubeClient, base: str) -> dict[str, Obj]:
    out: dict[str, Obj] = {}
    count = await create_namespace(client, f"{base}-count")
    await _quota(client, count, "count", {"pods": "1", "count/configmaps": "0"})
    pods = f"/api/v1/namespaces/{count}/pods"
    for _ in range(100):  # a fresh namespace's default ServiceAccount may not be there yet
        code, made = await _call(client, "POST", pods, pod("p1"))
        if code != 403 or "service account" not in str(made.get("message")):
            break
        await asyncio.sleep(0.1)
    assert code == 201, made
    out["pods count"] = _outcome(*await client.request("POST", pods, json=pod("p2")))
    cms = f"/api/v1/namespaces/{count}/configmaps"
    out["count/configmaps"] = _outcome(
        *await client.request("POST", cms, json={"metadata": {"name": "cm"}})
    )
    compute = await create_namespace(client, f"{base}-compute")
    hard = {
        "requests.cpu": "1",
        "requests.memory": "1Gi",
        "requests.nvidia.com/gpu": "1",
        "limits.cpu": "2",
    }
    await _quota(client, compute, "compute", hard)
    pods = f"/api/v1/namespaces/{compute}/pods"
    out["must specify"] = _outcome(*await client.request("POST", pods, json=pod("bare")))
    over = pod("big", requests={"cpu": "1500m", "memory": "1Gi"}, limits={"cpu": "3"})
    out["requests.cpu"] = _outcome(*await client.request("POST", pods, json=over))
    gpus = pod(
        "gpu", requests={"cpu": "1", "memory": "512Mi"}, limits={"cpu": "1", "nvidia.com/gpu": "2"}
    )
    out["extended resource"] = _outcome(*await client.request("POST", pods, json=gpus))
    return out


def _named(outcomes: dict[str, Obj], ns: str, base: str) -> dict[str, Obj]:
    """The outcomes with the run's namespaces replaced by fixed names."""
    text = orjson.dumps(outcomes).decode().replace(base, "<ns>").replace(ns, "<ns>")
    named: dict[str, Obj] = orjson.loads(text)
    return named


async def _outcomes(client: KubeClient) -> dict[str, Obj]:
    code, made = await _call(client, "POST", CRDS, _gadget_crd())
    assert code in (201, 409), made.get("message")
    for _ in range(100):
        code, _ = await _call(client, "GET", "/apis/celtest.rayop.io/v1")
        if code == 200:
            break
        await asyncio.sleep(0.1)
    ns = await create_namespace(client, unique_namespace("cel"))
    base = unique_namespace("quota")
    cel = await _cel_refusals(client, ns)
    quota = await _quota_refusals(client, base)
    return _named({**cel, **quota}, ns, base)


async def test_both_servers_refuse_cel_rule_and_quota_violations_alike(
    real_kubeconfig: str,
) -> None:
    async with user_client(real_kubeconfig) as client:
        real = await _outcomes(client)
    async with open_control_plane() as plane:
        embedded = await _outcomes(plane.client)
    assert {case: r["code"] for case, r in real.items()} == {
        "managedBy value": 422,
        "managedBy change": 422,
        "deletion condition": 422,
        "gadget rules": 422,
        "status transition": 422,
        "pods count": 403,
        "count/configmaps": 403,
        "must specify": 403,
        "requests.cpu": 403,
        "extended resource": 403,
    }
    for case in real:
        assert embedded[case] == real[case], case
