"""A takeover from KubeRay (or back) keeps the spec hash of a pod template with an azureDisk
volume, whichever operator's CRDs were applied first.

kube-apiserver applies a CRD's schema defaults when it stores an object and again when it reads
one from storage (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#defaulting),
so after the other operator's CRDs are applied, that operator hashes the stored spec defaulted by
its own schema. The hash stored by the first operator (a RayService's cluster annotation, a
Recreate RayCluster's head pod annotation) must equal the one the second computes, or the second
rebuilds the cluster at cut-over. Schema defaulting is the embedded plane's (the same rules).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest
import yaml

from rayop.api.crds import build_crds
from rayop.controllers.gocompat.spec_hash import raycluster_pod_hash, rayservice_cluster_hash
from rayop.sim.admission.crd_schema import apply_defaults
from tests.kuberay_compat import crds_dir

Obj = dict[str, Any]
AZURE_DISK = {"diskName": "data", "diskURI": "/subscriptions/s/disks/data"}


def _schema(crd: Obj) -> Obj:
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema: Obj = version["schema"]["openAPIV3Schema"]
    return schema


@functools.cache
def _kuberay_schemas() -> dict[str, Obj]:
    out: dict[str, Obj] = {}
    for path in crds_dir().glob("ray.io_*.yaml"):
        crd = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
        out[crd["spec"]["names"]["kind"]] = _schema(crd)
    return out


@functools.cache
def _rayop_schemas() -> dict[str, Obj]:
    return {crd["spec"]["names"]["kind"]: _schema(crd) for crd in build_crds()}


def _schemas(which: str) -> dict[str, Obj]:
    return _kuberay_schemas() if which == "kuberay" else _rayop_schemas()


def _template(container: str) -> Obj:
    return {
        "spec": {
            "containers": [
                {
                    "name": container,
                    "image": "rayproject/ray:2.52.0",
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "azureDisk": dict(AZURE_DISK)}],
        }
    }


def _cluster_spec() -> Obj:
    return {
        "rayVersion": "2.52.0",
        "headGroupSpec": {"rayStartParams": {}, "template": _template("ray-head")},
        "workerGroupSpecs": [
            {
                "groupName": "small",
                "replicas": 1,
                "minReplicas": 1,
                "maxReplicas": 3,
                "rayStartParams": {},
                "template": _template("ray-worker"),
            }
        ],
    }


def _object(kind: str) -> Obj:
    meta = {"name": "disk", "namespace": "default"}
    if kind == "RayService":
        spec: Obj = {"rayClusterConfig": _cluster_spec()}
    else:
        spec = {**_cluster_spec(), "upgradeStrategy": {"type": "Recreate"}}
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": meta, "spec": spec}


def _stored_hash(obj: Obj) -> str:
    """The hash the operator writes for the object: the RayService's cluster annotation, or the
    Recreate RayCluster's head pod annotation."""
    if obj["kind"] == "RayService":
        return rayservice_cluster_hash(obj["spec"]["rayClusterConfig"])
    return raycluster_pod_hash(obj["spec"])


def _volumes(obj: Obj) -> list[Obj]:
    spec = obj["spec"].get("rayClusterConfig", obj["spec"])
    groups = [spec["headGroupSpec"], *spec["workerGroupSpecs"]]
    return [v for g in groups for v in g["template"]["spec"]["volumes"]]


@pytest.mark.parametrize("kind", ["RayService", "RayCluster"])
@pytest.mark.parametrize(("first", "second"), [("kuberay", "rayop"), ("rayop", "kuberay")])
def test_the_hash_survives_a_takeover_whichever_crds_came_first(
    kind: str, first: str, second: str
) -> None:
    stored = apply_defaults(_object(kind), _schemas(first)[kind])
    written_by_first = _stored_hash(stored)
    read_by_second = apply_defaults(copy.deepcopy(stored), _schemas(second)[kind])
    assert _stored_hash(read_by_second) == written_by_first
    assert read_by_second == stored


@pytest.mark.parametrize("which", ["kuberay", "rayop"])
def test_azure_disk_keeps_only_the_defaults_kuberays_crds_give(which: str) -> None:
    stored = apply_defaults(_object("RayService"), _schemas(which)["RayService"])
    for volume in _volumes(stored):
        assert volume["azureDisk"] == {**AZURE_DISK, "fsType": "ext4", "readOnly": False}
