"""The OpenShift Route on the embedded plane: detected as KubeRay detects OpenShift, made instead
of the head Ingress, never made when ``USE_INGRESS_ON_OPENSHIFT=true``.

The plane is not OpenShift; serving the ``route.openshift.io`` group is what makes KubeRay (and
rayop) take it for one. This test applies a minimal Route CRD of its own (the group, kind and
version of OpenShift's ``route/v1`` types, any content kept); the real tier applies OpenShift's
own CRD (tests/real/test_differential_route.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.route import ROUTES, is_openshift_cluster
from rayop.kube.resources import CRDS, INGRESSES
from rayop.testing import eventually

from .raycluster_env import running_operator, simple_cluster

Obj = dict[str, Any]

ROUTE_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "routes.route.openshift.io"},
    "spec": {
        "group": "route.openshift.io",
        "names": {
            "kind": "Route",
            "listKind": "RouteList",
            "plural": "routes",
            "singular": "route",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def _ingress_cluster(name: str) -> Obj:
    cluster = simple_cluster(name, workers=0)
    cluster["metadata"]["annotations"] = {"example.com/team": "ml"}
    cluster["spec"]["headGroupSpec"]["enableIngress"] = True
    return cluster


async def test_on_openshift_a_route_replaces_the_ingress() -> None:
    options = OperatorOptions(is_openshift=True)
    async with running_operator(options=options) as env:
        assert not await is_openshift_cluster(env.client)
        await env.client.create(CRDS, ROUTE_CRD)

        async def detected() -> bool:
            return await is_openshift_cluster(env.client)

        await eventually(detected, what="route.openshift.io served")
        ns = await env.namespace("route")
        created = await env.apply(_ingress_cluster("dash"), ns)
        await eventually(
            lambda: env.stored(ROUTES, ns, "dash-head-route") is not None, what="route made"
        )
        route = env.stored(ROUTES, ns, "dash-head-route") or {}
        assert route["spec"] == {
            "to": {"kind": "Service", "name": "dash-head-svc", "weight": 100},
            "port": {"targetPort": 8265},
            "wildcardPolicy": "None",
        }
        assert route["metadata"]["annotations"] == {"example.com/team": "ml"}
        (ref,) = route["metadata"]["ownerReferences"]
        assert (ref["uid"], ref["controller"]) == (created["metadata"]["uid"], True)
        note = f"Created route {ns}/dash-head-route"
        await eventually(
            lambda: note in [e["note"] for e in env.events(ns, "CreatedRoute")], what=note
        )
        await eventually(lambda: env.converged(ns, "dash"), what="cluster ready")
        assert env.objects(INGRESSES, ns) == []
        assert len(env.objects(ROUTES, ns)) == 1


async def test_use_ingress_on_openshift_keeps_the_ingress() -> None:
    options = dataclasses.replace(
        OperatorOptions(), is_openshift=True, use_ingress_on_openshift=True
    )
    async with running_operator(options=options) as env:
        ns = await env.namespace("ingress")
        await env.apply(_ingress_cluster("dash"), ns)
        await eventually(
            lambda: env.stored(INGRESSES, ns, "dash-head-ingress") is not None, what="ingress made"
        )
