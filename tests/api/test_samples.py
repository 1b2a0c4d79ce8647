"""Every KubeRay v1.7.0 sample validates against our CRD schemas and parses into our models."""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path
from typing import Any
from unittest import mock

import jsonschema
import pytest
import yaml
from pydantic import BaseModel

import rayop.api.schema as schema_module
from rayop.api.crds import build_crds
from rayop.api.raycluster import RayCluster
from rayop.api.rayjob import RayJob
from rayop.api.rayservice import RayService

MODELS: dict[str, type[BaseModel]] = {
    "RayCluster": RayCluster,
    "RayJob": RayJob,
    "RayService": RayService,
}
SAMPLE_FILES = 71
RAY_OBJECTS = {"RayCluster": 40, "RayJob": 16, "RayService": 13}  # 69 in all


def _ray_documents(compat_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    """Returns (file name, document) for every ray.io object in the samples, in file order."""
    files = sorted((compat_dir / "samples").glob("*.yaml"))
    assert len(files) == SAMPLE_FILES
    out = []
    for path in files:
        with path.open() as f:
            for document in yaml.load_all(f, Loader=yaml.CSafeLoader):
                if document and str(document.get("apiVersion", "")).startswith("ray.io/"):
                    out.append((path.name, document))
    return out


def _schemas(*, embedded: bool = True) -> dict[str, dict[str, Any]]:
    """The v1 schemas by kind; ``embedded=False``: Kubernetes objects left open (our models'
    own defaults only, as the models keep pod templates and Services as plain data)."""
    with contextlib.ExitStack() as stack:
        if not embedded:
            stack.enter_context(mock.patch.object(schema_module, "embedded_schema", _none))
        crds = build_crds()
    return {
        crd["spec"]["names"]["kind"]: crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for crd in crds
    }


def _none(where: str) -> None:
    del where


def _apply_defaults(schema: dict[str, Any], value: Any) -> Any:
    """Fills in schema defaults in place, as the API server does before it validates.

    A null where the schema is not nullable is dropped first (then defaulted), as
    kube-apiserver prunes such nulls.
    """
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name in value and value[name] is None and not sub.get("nullable"):
                del value[name]
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            elif name in value:
                _apply_defaults(sub, value[name])
        if isinstance(schema.get("additionalProperties"), dict):
            for item in value.values():
                _apply_defaults(schema["additionalProperties"], item)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _apply_defaults(schema["items"], item)
    return value


def test_the_samples_hold_69_ray_objects_in_71_files(compat_dir: Path) -> None:
    kinds = [doc["kind"] for _, doc in _ray_documents(compat_dir)]
    assert {kind: kinds.count(kind) for kind in RAY_OBJECTS} == RAY_OBJECTS
    assert all(doc["apiVersion"] == "ray.io/v1" for _, doc in _ray_documents(compat_dir))


def test_every_ray_sample_validates_against_our_crd_schema(compat_dir: Path) -> None:
    schemas = _schemas()
    validators = {kind: jsonschema.Draft7Validator(schema) for kind, schema in schemas.items()}
    problems = []
    for name, document in _ray_documents(compat_dir):
        defaulted = _apply_defaults(schemas[document["kind"]], copy.deepcopy(document))
        for error in validators[document["kind"]].iter_errors(defaulted):
            problems.append(f"{name}: {'.'.join(map(str, error.absolute_path))}: {error.message}")
    assert problems == []


def test_every_ray_sample_parses_and_dumps_back_as_the_api_server_would_store_it(
    compat_dir: Path,
) -> None:
    """Model defaults equal schema defaults, and nothing is lost on the way through a model."""
    schemas = _schemas(embedded=False)
    for name, document in _ray_documents(compat_dir):
        model = MODELS[document["kind"]].model_validate(document)
        dumped = model.model_dump(by_alias=True, exclude_none=True)
        expected = _apply_defaults(schemas[document["kind"]], copy.deepcopy(document))
        assert dumped == expected, name


def test_a_sample_reads_through_snake_case_attributes(compat_dir: Path) -> None:
    with (compat_dir / "samples" / "ray-cluster.sample.yaml").open() as f:
        cluster = RayCluster.model_validate(yaml.safe_load(f))
    assert cluster.name == "raycluster-kuberay"
    assert cluster.spec.head_group_spec.template["spec"]["containers"][0]["name"] == "ray-head"
    (group,) = cluster.spec.worker_group_specs or []
    assert (group.group_name, group.num_of_hosts) == ("workergroup", 1)
    assert group.min_replicas <= group.replicas <= group.max_replicas


@pytest.mark.parametrize(
    ("kind", "mutate", "path"),
    [
        ("RayCluster", lambda d: d["spec"].pop("headGroupSpec"), "spec"),
        (
            "RayCluster",
            lambda d: d["spec"]["workerGroupSpecs"][0].update(replicas="two"),
            "spec.workerGroupSpecs.0.replicas",
        ),
        (
            "RayCluster",
            lambda d: d["spec"].update(upgradeStrategy={"type": "Rolling"}),
            "spec.upgradeStrategy.type",
        ),
    ],
)
def test_our_schema_refuses_what_kuberay_refuses(
    compat_dir: Path, kind: str, mutate: Any, path: str
) -> None:
    with (compat_dir / "samples" / "ray-cluster.sample.yaml").open() as f:
        document = yaml.safe_load(f)
    mutate(document)
    schema = _schemas()[kind]
    errors = list(jsonschema.Draft7Validator(schema).iter_errors(_apply_defaults(schema, document)))
    assert [".".join(map(str, e.absolute_path)) for e in errors] == [path]
