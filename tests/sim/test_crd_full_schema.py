"""rayop's CRDs on the embedded plane: full pod-template validation, fieldValidation, v1alpha1.

The messages and paths are kube-apiserver's (tests/real/test_crd_schema_differential.py checks
the same cases against a real one).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import orjson

from rayop.api.crds import build_crds

from .server_harness import TOKEN, Harness, open_harness

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
V1 = "/apis/ray.io/v1/namespaces/default/rayclusters"
ALPHA = "/apis/ray.io/v1alpha1/namespaces/default/rayclusters"
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]"
    r"|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


@functools.cache
def _crd() -> bytes:
    (crd,) = [c for c in build_crds() if c["metadata"]["name"] == "rayclusters.ray.io"]
    return orjson.dumps(crd)


def _cluster(name: str = "rc", api_version: str = "ray.io/v1") -> dict[str, Any]:
    container = {"name": "ray", "image": "rayproject/ray:2.52.0"}
    template = {"spec": {"containers": [container]}}
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


def _malformed() -> dict[str, Any]:
    body = _cluster("bad")
    head = body["spec"]["headGroupSpec"]["template"]["spec"]
    head["contianers"] = head.pop("containers")
    worker = body["spec"]["workerGroupSpecs"][0]
    worker["replicas"] = "two"
    worker["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1x"}}
    return body


async def _install(h: Harness) -> None:
    code, body = await h.call("POST", CRD_PATH, orjson.loads(_crd()))
    assert code == 201, body


async def test_a_malformed_pod_template_is_refused_with_the_field_paths() -> None:
    async with open_harness() as h:
        await _install(h)
        code, err = await h.call("POST", V1, _malformed())
    assert (code, err["reason"]) == (422, "Invalid")
    causes = {(c["field"], c["reason"], c["message"]) for c in err["details"]["causes"]}
    replicas = "spec.workerGroupSpecs[0].replicas"
    cpu = "spec.workerGroupSpecs[0].template.spec.containers[0].resources.limits.cpu"
    assert causes == {
        ("spec.headGroupSpec.template.spec.containers", "FieldValueRequired", "Required value"),
        (
            replicas,
            "FieldValueTypeInvalid",
            f'Invalid value: "string": {replicas} in body must be of type integer: "string"',
        ),
        (
            cpu,
            "FieldValueInvalid",
            f"Invalid value: \"1x\": {cpu} in body should match '{QUANTITY}'",
        ),
        (  # the CRD has CEL rules, which a Required or a type error keeps from running
            "<nil>",
            "FieldValueInvalid",
            "Invalid value: null: some validation rules were not checked because the object "
            "was invalid; correct the existing errors to complete validation",
        ),
    }


async def test_strict_field_validation_refuses_the_unknown_field_by_its_path() -> None:
    async with open_harness() as h:
        await _install(h)
        code, err = await h.call("POST", V1, _malformed(), fieldValidation="Strict")
        assert (code, err["reason"]) == (400, "BadRequest")
        assert err["message"] == (
            'RayCluster in version "v1" cannot be handled as a RayCluster: strict decoding '
            'error: unknown field "spec.headGroupSpec.template.spec.contianers"'
        )
        code, err = await h.call("POST", V1, _cluster(), fieldValidation="Loose")
        assert code == 400
        assert err["message"] == (
            'fieldValidation "Loose" is invalid: valid values are Ignore, Warn, and Strict'
        )


async def test_warn_answers_a_warning_per_pruned_field_and_ignore_says_nothing() -> None:
    async with open_harness() as h:
        await _install(h)
        body = _cluster("warned")
        body["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["imgae"] = "x"
        body["spec"]["bogus"] = True
        warnings = sorted(await _warnings(h, body, "Warn"))
        assert warnings == [
            '299 - "unknown field \\"spec.bogus\\""',
            '299 - "unknown field \\"spec.workerGroupSpecs[0].template.spec.containers[0].imgae\\""',
        ]
        body["metadata"]["name"] = "ignored"
        assert await _warnings(h, body, "Ignore") == []
        _, stored = await h.call("GET", V1 + "/warned")
    assert "bogus" not in stored["spec"]
    assert "imgae" not in stored["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]


async def _warnings(h: Harness, body: dict[str, Any], mode: str) -> list[str]:
    headers = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    async with h.client.post(
        V1, data=orjson.dumps(body), headers=headers, params={"fieldValidation": mode}
    ) as response:
        assert response.status == 201, await response.text()
        return response.headers.getall("Warning", [])


async def test_a_null_where_the_schema_is_not_nullable_is_dropped() -> None:
    async with open_harness() as h:
        await _install(h)
        body = _cluster()
        body["spec"]["workerGroupSpecs"][0]["template"]["metadata"] = None
        code, stored = await h.call("POST", V1, body)
    assert code == 201, stored
    assert "metadata" not in stored["spec"]["workerGroupSpecs"][0]["template"]


async def test_v1alpha1_is_served_and_stored_as_v1_with_only_the_api_version_changed() -> None:
    async with open_harness() as h:
        await _install(h)
        code, made = await h.call("POST", ALPHA, _cluster("old", "ray.io/v1alpha1"))
        assert code == 201, made
        assert made["apiVersion"] == "ray.io/v1alpha1"
        _, as_v1 = await h.call("GET", V1 + "/old")
        assert as_v1["apiVersion"] == "ray.io/v1"
        v1_worker, alpha_worker = (o["spec"]["workerGroupSpecs"][0] for o in (as_v1, made))
        assert v1_worker == {**alpha_worker, "numOfHosts": 1, "priority": 0}  # v1 defaults
        assert as_v1["spec"]["headGroupSpec"] == made["spec"]["headGroupSpec"]
        new = _cluster("new")
        new["spec"]["managedBy"] = "ray.io/kuberay-operator"
        code, made = await h.call("POST", V1, new)
        assert code == 201, made
        _, as_alpha = await h.call("GET", ALPHA + "/new")
        assert as_alpha["apiVersion"] == "ray.io/v1alpha1"
        assert "managedBy" not in as_alpha["spec"]  # a v1 field v1alpha1 never had
        _, stored = await h.call("GET", V1 + "/new")
        assert stored["spec"]["managedBy"] == "ray.io/kuberay-operator"  # still stored
        _, listed = await h.call("GET", ALPHA)
        assert {(o["metadata"]["name"], o["apiVersion"]) for o in listed["items"]} == {
            ("old", "ray.io/v1alpha1"),
            ("new", "ray.io/v1alpha1"),
        }
        assert len(h.store.list(_rayclusters(h))[0]) == 2  # one object each, not one per version


def _rayclusters(h: Harness) -> Any:
    return h.store.resources.get("ray.io", "v1", "rayclusters")


async def test_v1alpha1_keeps_its_own_schema_rayStartParams_required() -> None:
    async with open_harness() as h:
        await _install(h)
        body = _cluster("old", "ray.io/v1alpha1")
        del body["spec"]["headGroupSpec"]["rayStartParams"]
        code, err = await h.call("POST", ALPHA, body)
        assert code == 422
        assert [c["field"] for c in err["details"]["causes"]] == [
            "spec.headGroupSpec.rayStartParams"
        ]
        body["apiVersion"] = "ray.io/v1"
        code, made = await h.call("POST", V1, body)
        assert code == 201, made


async def test_each_version_watches_the_same_objects_in_its_own_version() -> None:
    async with open_harness() as h:
        await _install(h)
        await h.call("POST", V1, _cluster("watched"))
        for path, api_version in ((V1, "ray.io/v1"), (ALPHA, "ray.io/v1alpha1")):
            headers = {"Authorization": "Bearer " + TOKEN}
            async with h.client.get(path, params={"watch": "1"}, headers=headers) as response:
                event = orjson.loads(await response.content.readline())
            assert event["type"] == "ADDED"
            assert (event["object"]["metadata"]["name"], event["object"]["apiVersion"]) == (
                "watched",
                api_version,
            )


async def test_discovery_lists_both_versions_with_v1_preferred() -> None:
    async with open_harness() as h:
        await _install(h)
        _, group = await h.call("GET", "/apis/ray.io")
        _, alpha = await h.call("GET", "/apis/ray.io/v1alpha1")
    assert [v["version"] for v in group["versions"]] == ["v1", "v1alpha1"]
    assert group["preferredVersion"]["version"] == "v1"
    assert {r["name"] for r in alpha["resources"]} == {"rayclusters", "rayclusters/status"}


async def test_a_v1alpha1_request_gets_the_deprecation_warning() -> None:
    async with open_harness() as h:
        await _install(h)
        headers = {"Authorization": "Bearer " + TOKEN}
        async with h.client.get(ALPHA, headers=headers) as response:
            warnings = response.headers.getall("Warning", [])
    assert warnings == [
        '299 - "ray.io/v1alpha1 RayCluster is deprecated; use ray.io/v1 RayCluster. v1alpha1 '
        'receives no new fields and will be unavailable in KubeRay 1.9."'
    ]
