"""CRD ``x-kubernetes-validations`` (CEL) on the embedded API server, through HTTP: ray.io's own
rules (managedBy, deletion rules) and a test CRD for messages, fieldPath, reason, transition
rules on status, ratcheting and the cost limit."""

from __future__ import annotations

import copy
import functools
from typing import Any

import orjson

from rayop.api.crds import build_crds

from .admission_bodies import raycluster
from .server_harness import Harness, open_harness

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CLUSTERS = "/apis/ray.io/v1/namespaces/default/rayclusters"
JOBS = "/apis/ray.io/v1/namespaces/default/rayjobs"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
KUBERAY = "ray.io/kuberay-operator"
MUST_BE = (
    "the managedBy field value must be either 'ray.io/kuberay-operator' or "
    "'kueue.x-k8s.io/multikueue'"
)


@functools.cache
def _ray_crds() -> bytes:
    return orjson.dumps(build_crds())


async def _install(h: Harness, *crds: dict[str, Any]) -> None:
    for crd in crds or orjson.loads(_ray_crds()):
        code, body = await h.call("POST", CRD_PATH, crd)
        assert code == 201, body


def _causes(err: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["field"], c["reason"], c["message"]) for c in err["details"]["causes"]]


async def test_a_managed_by_outside_the_allowed_values_is_refused() -> None:
    async with open_harness() as h:
        await _install(h)
        code, err = await h.call("POST", CLUSTERS, raycluster(managedBy="someone-else"))
        ok, _ = await h.call("POST", CLUSTERS, raycluster("fine", managedBy=KUBERAY))
    assert (code, err["reason"], ok) == (422, "Invalid", 201)
    assert err["message"] == (
        f'RayCluster.ray.io "rc" is invalid: spec.managedBy: Invalid value: "someone-else": {MUST_BE}'
    )
    assert _causes(err) == [
        ("spec.managedBy", "FieldValueInvalid", f'Invalid value: "someone-else": {MUST_BE}')
    ]


async def test_a_change_of_managed_by_is_refused_and_an_unchanged_one_passes() -> None:
    async with open_harness() as h:
        await _install(h)
        code, made = await h.call("POST", CLUSTERS, raycluster(managedBy=KUBERAY))
        assert code == 201, made
        changed = copy.deepcopy(made)
        changed["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
        code, err = await h.call("PUT", f"{CLUSTERS}/rc", changed)
        made["metadata"]["labels"] = {"a": "b"}
        same, _ = await h.call("PUT", f"{CLUSTERS}/rc", made)
        patched, perr = await h.call(
            "PATCH",
            f"{CLUSTERS}/rc",
            {"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}},
            ctype="application/merge-patch+json",
        )
    assert (code, same, patched) == (422, 200, 422)
    message = (
        'RayCluster.ray.io "rc" is invalid: spec.managedBy: '
        'Invalid value: "kueue.x-k8s.io/multikueue": '
        "the managedBy field is immutable"
    )
    assert err["message"] == message
    assert perr["message"] == message


async def test_a_rayjob_deletion_condition_with_both_statuses_is_refused() -> None:
    condition = {"jobStatus": "SUCCEEDED", "jobDeploymentStatus": "Failed", "ttlSeconds": 0}
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "job"},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "deletionStrategy": {
                "deletionRules": [{"policy": "DeleteCluster", "condition": condition}]
            },
        },
    }
    async with open_harness() as h:
        await _install(h)
        code, err = await h.call("POST", JOBS, job)
        del condition["jobDeploymentStatus"]
        ok, body = await h.call("POST", JOBS, job)
    assert (code, ok) == (422, 201), body
    where = "spec.deletionStrategy.deletionRules[0].condition"
    said = "JobStatus and JobDeploymentStatus cannot be used together within the same deletion condition."
    assert _causes(err) == [(where, "FieldValueInvalid", f"Invalid value: {said}")]


# ------------------------------------------------------------------------ a CRD of our own
def _widget_crd() -> dict[str, Any]:
    spec_rules = [
        {
            "rule": "self.replicas <= self.max",
            "messageExpression": "'replicas ' + string(self.replicas) + ' above ' + string(self.max)",
        },
        {
            "rule": "self.replicas >= 0",
            "fieldPath": ".replicas",
            "reason": "FieldValueForbidden",
            "message": "no negative replicas",
        },
        {"rule": "!has(self.mode) || self.mode.lowerAscii() == self.mode"},
        {
            "rule": "self.replicas >= oldSelf.replicas",
            "message": "may not shrink",
        },
    ]
    status_rules = [
        {
            "rule": "self.phase == oldSelf.phase || oldSelf.phase != 'Done'",
            "message": "Done is final",
        }
    ]
    items_rule = [{"rule": "self.all(a, self.all(b, self.all(c, a + b + c != 'xyz')))"}]
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": spec_rules,
                "properties": {
                    "replicas": {"type": "integer"},
                    "max": {"type": "integer"},
                    "mode": {"type": "string"},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "x-kubernetes-validations": items_rule,
                    },
                    "broken": {
                        "type": "string",
                        "x-kubernetes-validations": [{"rule": "self ==", "message": "x"}],
                    },
                },
            },
            "status": {
                "type": "object",
                "x-kubernetes-validations": status_rules,
                "properties": {"phase": {"type": "string"}},
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def _widget(name: str = "w", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "max": 3, **spec},
    }


async def test_message_expression_field_path_reason_and_the_default_message() -> None:
    async with open_harness() as h:
        await _install(h, _widget_crd())
        code, err = await h.call("POST", WIDGETS, _widget(replicas=-5, max=-6, mode="Fast"))
    assert code == 422
    assert _causes(err) == [
        ("spec", "FieldValueInvalid", "Invalid value: replicas -5 above -6"),
        ("spec.replicas", "FieldValueForbidden", "Forbidden: no negative replicas"),
        (
            "spec",
            "FieldValueInvalid",
            "Invalid value: failed rule: !has(self.mode) || self.mode.lowerAscii() == self.mode",
        ),
    ]


async def test_a_rule_that_does_not_compile_refuses_where_it_applies() -> None:
    async with open_harness() as h:
        await _install(h, _widget_crd())
        code, err = await h.call("POST", WIDGETS, _widget(broken="x"))
        ok, _ = await h.call("POST", WIDGETS, _widget("fine"))
    assert (code, ok) == (422, 201)
    ((where, reason, said),) = _causes(err)
    assert (where, reason) == ("spec.broken", "FieldValueInvalid")
    assert said.startswith(
        'Invalid value: "string": rule compile error: compilation failed: ERROR: <input>'
    )


async def test_a_rule_over_its_cost_limit_is_refused_with_kube_apiservers_wording() -> None:
    async with open_harness() as h:
        await _install(h, _widget_crd())
        code, err = await h.call("POST", WIDGETS, _widget(tags=[f"t{i}" for i in range(200)]))
        ok, body = await h.call("POST", WIDGETS, _widget("few", tags=["x", "y", "q"]))
    assert (code, ok) == (422, 201), body
    rule = "self.all(a, self.all(b, self.all(c, a + b + c != 'xyz')))"
    assert _causes(err) == [
        (
            "spec.tags",
            "FieldValueInvalid",
            "Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further "
            f"validation rules will be run due to call cost exceeds limit for rule: {rule}",
        )
    ]


async def test_transition_rules_run_on_update_only_and_on_the_status_subresource() -> None:
    async with open_harness() as h:
        await _install(h, _widget_crd())
        code, made = await h.call("POST", WIDGETS, _widget(replicas=3))
        assert code == 201, made
        shrunk = copy.deepcopy(made)
        shrunk["spec"]["replicas"] = 2
        code, err = await h.call("PUT", f"{WIDGETS}/w", shrunk)
        assert (code, _causes(err)) == (
            422,
            [("spec", "FieldValueInvalid", "Invalid value: may not shrink")],
        )
        made["status"] = {"phase": "Done"}
        code, done = await h.call("PUT", f"{WIDGETS}/w/status", made)
        assert code == 200, done
        done["status"] = {"phase": "Running"}
        code, err = await h.call("PUT", f"{WIDGETS}/w/status", done)
    assert (code, _causes(err)) == (
        422,
        [("status", "FieldValueInvalid", "Invalid value: Done is final")],
    )


async def test_an_unchanged_value_that_fails_a_rule_is_ratcheted_on_update() -> None:
    crd = _widget_crd()
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    rules = schema["properties"]["spec"]["x-kubernetes-validations"]
    lower = rules.pop(2)
    async with open_harness() as h:
        await _install(h, crd)
        code, made = await h.call("POST", WIDGETS, _widget(mode="Fast"))
        assert code == 201, made
        code, stored_crd = await h.call("GET", f"{CRD_PATH}/widgets.example.com")
        versions = stored_crd["spec"]["versions"]
        versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
            "x-kubernetes-validations"
        ].append(lower)
        code, body = await h.call("PUT", f"{CRD_PATH}/widgets.example.com", stored_crd)
        assert code == 200, body
        made["metadata"]["labels"] = {"touched": "yes"}
        kept, body = await h.call("PUT", f"{WIDGETS}/w", made)
        assert kept == 200, body
        body["spec"]["mode"] = "Faster"
        code, err = await h.call("PUT", f"{WIDGETS}/w", body)
    assert (code, _causes(err)[0][0]) == (422, "spec")
