"""rayop's CRDs on a real kube-apiserver and on the embedded plane: the same refusals, the same
v1alpha1 round trip.

A small differential: each malformed pod template (an unknown field under ``fieldValidation``
Strict and Warn, a string where an integer belongs, a quantity that does not parse, a null
where an object belongs) goes to both servers, with ``rayop crds`` installed on each; the
Status (code, reason, message; each cause's field, reason and message) must be the same. Then
a RayCluster written as ``v1alpha1`` is read back as ``v1`` and one written as ``v1`` as
``v1alpha1``, on both, and the objects must be equal.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from rayop.kube.client import KubeClient
from rayop.testing import open_control_plane

from .real_support import create_namespace, unique_namespace, user_client

pytestmark = [pytest.mark.real, pytest.mark.timeout(180, func_only=True)]

Obj = dict[str, Any]
Mutation = Callable[[Obj], None]


def _cluster(name: str, api_version: str = "ray.io/v1") -> Obj:
    template = {"spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.52.0"}]}}
    return {
        "apiVersion": api_version,
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": copy.deepcopy(template)},
            "workerGroupSpecs": [
                {
                    "groupName": "w",
                    "replicas": 1,
                    "minReplicas": 0,
                    "maxReplicas": 2,
                    "rayStartParams": {},
                    "template": copy.deepcopy(template),
                }
            ],
        },
    }


def _head(obj: Obj) -> Obj:
    spec: Obj = obj["spec"]["headGroupSpec"]["template"]["spec"]
    return spec


def _worker(obj: Obj) -> Obj:
    group: Obj = obj["spec"]["workerGroupSpecs"][0]
    return group


def _misspelled(obj: Obj) -> None:
    _head(obj)["contianers"] = _head(obj).pop("containers")


CASES: dict[str, tuple[Mutation, str | None]] = {
    "unknown field, Strict": (_misspelled, "Strict"),
    "unknown field, Warn": (_misspelled, None),
    "string for an integer": (lambda o: _worker(o).update(replicas="two"), None),
    "port as a string": (
        lambda o: _head(o)["containers"][0].update(ports=[{"containerPort": "abc"}]),
        None,
    ),
    "a quantity that does not parse": (
        lambda o: _worker(o)["template"]["spec"]["containers"][0].update(
            resources={"limits": {"cpu": "1x"}}
        ),
        None,
    ),
    "a list where an object belongs": (
        lambda o: _worker(o)["template"]["spec"].update(securityContext=[]),
        None,
    ),
    "several at once": (lambda o: _several(o), None),
}


def _several(obj: Obj) -> None:
    _misspelled(obj)
    _worker(obj).update(replicas="two")
    obj["spec"]["headGroupSpec"].update(headService={"spec": {"ports": [{"port": "x"}]}})


async def _refusal(client: KubeClient, namespace: str, case: str) -> Obj:
    mutate, validation = CASES[case]
    body = _cluster("bad")
    mutate(body)
    params = {"fieldValidation": validation} if validation else None
    status, raw = await client.request(
        "POST", f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters", json=body, params=params
    )
    reply: Obj = orjson.loads(raw)
    causes = sorted(
        (c.get("field", ""), c.get("reason", ""), c.get("message", ""))
        for c in (reply.get("details") or {}).get("causes", [])
    )
    message = str(reply.get("message", ""))
    if causes:  # the message lists the causes in the server's own order
        message = message.split(": ", 1)[0]
    return {
        "code": status,
        "reason": reply.get("reason"),
        "message": message,
        "causes": causes,
    }


async def _round_trip(client: KubeClient, namespace: str) -> list[Obj]:
    """Writes one cluster as v1alpha1 and one as v1; reads each back in the other version."""
    base = f"/namespaces/{namespace}/rayclusters"
    old = _cluster("old", "ray.io/v1alpha1")
    new = _cluster("new")
    new["spec"]["managedBy"] = "ray.io/kuberay-operator"
    out = []
    for version, obj in (("v1alpha1", old), ("v1", new)):
        status, raw = await client.request("POST", f"/apis/ray.io/{version}{base}", json=obj)
        assert status == 201, raw
    for version, name in (("v1", "old"), ("v1alpha1", "new"), ("v1alpha1", "old"), ("v1", "new")):
        status, raw = await client.request("GET", f"/apis/ray.io/{version}{base}/{name}")
        assert status == 200, raw
        got = orjson.loads(raw)
        out.append({"apiVersion": got["apiVersion"], "spec": got["spec"]})
    return out


async def _outcomes(client: KubeClient) -> tuple[dict[str, Obj], list[Obj]]:
    namespace = await create_namespace(client, unique_namespace("crd-schema"))
    refusals = {case: await _refusal(client, namespace, case) for case in CASES}
    return refusals, await _round_trip(client, namespace)


async def test_both_servers_refuse_malformed_pod_templates_alike_and_convert_v1alpha1_alike(
    real_kubeconfig: str,
) -> None:
    async with user_client(real_kubeconfig) as client:
        real_refusals, real_trip = await _outcomes(client)
    async with open_control_plane() as plane:
        embedded_refusals, embedded_trip = await _outcomes(plane.client)
    assert real_refusals["unknown field, Strict"]["code"] == 400
    assert all(r["code"] == 422 for case, r in real_refusals.items() if "Strict" not in case)
    for case in CASES:
        assert embedded_refusals[case] == real_refusals[case], case
    assert real_trip[0]["apiVersion"] == "ray.io/v1"
    assert "managedBy" not in real_trip[1]["spec"]
    assert embedded_trip == real_trip
