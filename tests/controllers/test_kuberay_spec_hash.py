"""rayop's RayCluster spec hash equals KubeRay v1.7.0's, value for value.

The expected values in ``data/kuberay_spec_hashes.json`` were computed by KubeRay's own Go code
(``GenerateHashWithoutReplicasAndWorkersToDelete``, and Go's ``resource.Quantity`` JSON round
trip). The samples are KubeRay's (tests/kuberay_compat.py), stored by the embedded control plane
first (CRD pruning and defaulting, as KubeRay reads them from an API server).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from rayop.apimachinery.quantity import QuantityError, go_round_trip
from rayop.controllers.gocompat.go_json import GoJsonError, go_string, marshal_raycluster_spec
from rayop.controllers.gocompat.spec_hash import (
    kuberay_spec_hash,
    raycluster_pod_hash,
    rayservice_cluster_hash,
)
from rayop.kube.resources import RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES
from rayop.testing import open_control_plane
from tests.kuberay_compat import sample_docs

DATA = json.loads((Path(__file__).parent / "data" / "kuberay_spec_hashes.json").read_text())
RESOURCES = {"RayCluster": RAY_CLUSTERS, "RayService": RAY_SERVICES, "RayJob": RAY_JOBS}


@pytest.mark.parametrize("name", sorted(DATA["cases"]))
def test_raw_specs_hash_as_kuberay_does(name: str) -> None:
    case = DATA["cases"][name]
    assert kuberay_spec_hash(case["spec"]) == case["hash"]


@pytest.mark.parametrize(("given", "expected"), DATA["quantities"])
def test_quantities_are_written_as_go_writes_them(given: Any, expected: str) -> None:
    assert go_round_trip(given) == expected


def _hash_of(kind: str, stored_spec: dict[str, Any]) -> str:
    if kind == "RayService":
        return rayservice_cluster_hash(stored_spec["rayClusterConfig"])
    if kind == "RayJob":
        return raycluster_pod_hash(stored_spec["rayClusterSpec"])
    return raycluster_pod_hash(stored_spec)


async def test_every_sample_hashes_as_kuberay_does() -> None:
    expected = {(e["sample"], e["index"], e["kind"]): e["hash"] for e in DATA["samples"]}
    got: dict[tuple[str, int, str], str] = {}
    files = sorted({sample for sample, _, _ in expected})
    docs = {f: [d for d in sample_docs(f) if d.get("kind") in RESOURCES] for f in files}
    async with open_control_plane() as plane:
        for i, file_name in enumerate(files):
            ns = await plane.namespace(f"hash-{i}")
            for index, doc in enumerate(docs[file_name]):
                doc["metadata"]["namespace"] = ns
                stored = await plane.create(RESOURCES[doc["kind"]], doc, ns)
                key = (file_name, index, doc["kind"])
                if key in expected:
                    got[key] = _hash_of(doc["kind"], stored["spec"])
    assert len(expected) >= 60
    assert got == expected


def _spec() -> dict[str, Any]:
    return copy.deepcopy(DATA["cases"]["worker group with muted fields"]["spec"])


@pytest.mark.parametrize(
    "edit",
    [
        "replicas",
        "minReplicas",
        "maxReplicas",
        "workersToDelete",
        "worker tolerations",
        "worker schedulingGates",
        "head tolerations",
        "head schedulingGates",
        "upgradeStrategy",
    ],
)
def test_muted_fields_do_not_change_the_hash(edit: str) -> None:
    spec = _spec()
    before = kuberay_spec_hash(spec)
    group = spec["workerGroupSpecs"][0]
    head_spec = spec["headGroupSpec"]["template"]["spec"]
    if edit in ("replicas", "minReplicas", "maxReplicas"):
        group[edit] = 7
    elif edit == "workersToDelete":
        group["scaleStrategy"]["workersToDelete"] = ["c"]
    elif edit.startswith("worker "):
        group["template"]["spec"][edit.split()[1]] = [{"name": "kueue", "key": "kueue"}]
    elif edit.startswith("head "):
        head_spec[edit.split()[1]] = [{"name": "kueue", "key": "kueue"}]
    else:
        spec["upgradeStrategy"] = {"type": "None"}
    assert kuberay_spec_hash(spec) == before


def test_other_edits_change_the_hash() -> None:
    spec = _spec()
    before = kuberay_spec_hash(spec)
    spec["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"] = "other"
    assert kuberay_spec_hash(spec) != before


def test_the_rayservice_hash_mutes_suspend_and_the_pod_hash_defaults_ray_start_params() -> None:
    spec = {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}
    assert rayservice_cluster_hash({**spec, "suspend": True}) == kuberay_spec_hash(spec)
    defaulted = copy.deepcopy(spec)
    defaulted["headGroupSpec"]["rayStartParams"] = {}
    assert raycluster_pod_hash(spec) == kuberay_spec_hash(defaulted) != kuberay_spec_hash(spec)


def test_go_field_order_and_zero_values() -> None:
    text = marshal_raycluster_spec({"headGroupSpec": {"template": {}}, "rayVersion": "2.52.0"})
    assert text == (
        '{"headGroupSpec":{"template":{"metadata":{},"spec":{"containers":null}},'
        '"rayStartParams":null},"rayVersion":"2.52.0"}'
    )


def test_strings_are_escaped_as_go_does() -> None:
    assert (
        go_string('<a href="x">&\u2028\x01\b')
        == '"\\u003ca href=\\"x\\"\\u003e\\u0026\\u2028\\u0001\\b"'
    )


def test_values_of_the_wrong_type_are_refused() -> None:
    with pytest.raises(GoJsonError, match=r"headGroupSpec\.rayStartParams"):
        marshal_raycluster_spec({"headGroupSpec": {"rayStartParams": ["x"]}})
    with pytest.raises(QuantityError):
        go_round_trip("1Xi")


def test_a_spec_go_cannot_decode_still_hashes_stably(caplog: pytest.LogCaptureFixture) -> None:
    bad = {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "c", "image": 5}]}}}}
    text = marshal_raycluster_spec(bad, lenient=True)
    assert '"image":5,' in text and text == marshal_raycluster_spec(bad, lenient=True)
    assert kuberay_spec_hash(bad) == kuberay_spec_hash(copy.deepcopy(bad))
    assert "headGroupSpec.template.spec.containers[0].image" in caplog.text
    quantity = {"headGroupSpec": {"template": {"spec": {"overhead": {"cpu": "1Xi"}}}}}
    assert '"overhead":{"cpu":"1Xi"}' in marshal_raycluster_spec(quantity, lenient=True)


def test_hashing_leaves_the_spec_as_it_was() -> None:
    spec = _spec()
    kept = copy.deepcopy(spec)
    raycluster_pod_hash(spec)
    rayservice_cluster_hash(spec)
    assert spec == kept
