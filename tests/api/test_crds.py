"""Our generated CRDs against KubeRay v1.7.0's: names, columns, and every spec/status field."""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rayop.api.crds import build_crds

PLURALS = ("rayclusters", "rayjobs", "rayservices")

# KubeRay paths that our schema deliberately lacks or types differently, with the reason.
# Empty: every property path under spec and status is present with KubeRay's type.
DELIBERATE_GAPS: dict[str, str] = {}

Node = tuple[str | None, bool]  # (type, open): open = preserve-unknown object we do not descend


@functools.cache
def _load_kuberay(compat_dir: Path, plural: str) -> dict[str, Any]:
    with (compat_dir / "crds" / f"ray.io_{plural}.yaml").open() as f:
        crd: dict[str, Any] = yaml.load(f, Loader=yaml.CSafeLoader)
    return crd


def _ours(plural: str) -> dict[str, Any]:
    (crd,) = [c for c in build_crds() if c["spec"]["names"]["plural"] == plural]
    return crd


def _v1(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return version  # type: ignore[no-any-return]


def _root(crd: dict[str, Any]) -> dict[str, Any]:
    return _v1(crd)["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def _type_of(schema: dict[str, Any]) -> str | None:
    if schema.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return schema.get("type")


def _walk(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yields (path, schema) for every node; list items are ``[]``, map values ``{}``."""
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _walk(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _walk(schema["additionalProperties"], f"{path}{{}}")


def _nodes(root: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for top in ("spec", "status"):
        out.update(_walk(root["properties"][top], top))
    return out


def _is_open(schema: dict[str, Any]) -> bool:
    return bool(schema.get("x-kubernetes-preserve-unknown-fields")) and "properties" not in schema


def _covered_by_open_ancestor(path: str, ours: dict[str, dict[str, Any]]) -> bool:
    for i, char in enumerate(path):
        if char in ".[{" and path[:i] in ours and _is_open(ours[path[:i]]):
            return True
    return False


@pytest.mark.parametrize("plural", PLURALS)
def test_every_kuberay_spec_and_status_path_exists_in_ours_with_the_same_type(
    compat_dir: Path, plural: str
) -> None:
    theirs = _nodes(_root(_load_kuberay(compat_dir, plural)))
    ours = _nodes(_root(_ours(plural)))
    missing, mistyped, checked = [], [], 0
    for path, schema in theirs.items():
        if path in DELIBERATE_GAPS or _covered_by_open_ancestor(path, ours):
            continue
        checked += 1
        if path not in ours:
            missing.append(path)
        elif _type_of(ours[path]) != _type_of(schema):
            mistyped.append(f"{path}: ours {_type_of(ours[path])}, KubeRay {_type_of(schema)}")
    assert missing == []
    assert mistyped == []
    assert checked > 60  # the comparison really walked KubeRay's tree


@pytest.mark.parametrize("plural", PLURALS)
def test_enums_defaults_required_and_formats_match_kuberay(compat_dir: Path, plural: str) -> None:
    theirs = _nodes(_root(_load_kuberay(compat_dir, plural)))
    ours = _nodes(_root(_ours(plural)))
    differences = []
    for path in sorted(set(theirs) & set(ours)):
        if _is_open(ours[path]):
            continue  # an embedded Kubernetes object: only its type is ours to match
        for keyword in ("enum", "default", "required", "format", "minimum", "minItems"):
            mine, kuberay = ours[path].get(keyword), theirs[path].get(keyword)
            if keyword in ("enum", "required") and mine is not None and kuberay is not None:
                mine, kuberay = sorted(mine), sorted(kuberay)
            if mine != kuberay:
                differences.append(f"{path} {keyword}: ours {mine!r}, KubeRay {kuberay!r}")
    assert differences == []


@pytest.mark.parametrize("plural", PLURALS)
def test_names_scope_columns_and_subresources_match_kuberay(compat_dir: Path, plural: str) -> None:
    kuberay, ours = _load_kuberay(compat_dir, plural), _ours(plural)
    assert ours["apiVersion"] == "apiextensions.k8s.io/v1"
    assert ours["metadata"]["name"] == f"{plural}.ray.io"
    assert ours["spec"]["group"] == "ray.io"
    assert ours["spec"]["names"] == kuberay["spec"]["names"]  # categories [all], no short names
    assert "shortNames" not in ours["spec"]["names"]
    assert ours["spec"]["scope"] == "Namespaced"
    (version,) = ours["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}
    assert version["additionalPrinterColumns"] == _v1(kuberay)["additionalPrinterColumns"]


def test_embedded_kubernetes_objects_preserve_unknown_fields() -> None:
    spec = _root(_ours("rayclusters"))["properties"]["spec"]["properties"]
    head = spec["headGroupSpec"]
    assert head["required"] == ["template"]
    for node in (head["properties"]["template"], head["properties"]["headService"]):
        assert node == {
            "description": node["description"],
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
        }
    worker_template = spec["workerGroupSpecs"]["items"]["properties"]["template"]
    assert worker_template["x-kubernetes-preserve-unknown-fields"] is True


def test_every_schema_node_is_structural() -> None:
    """Every node has a type (or is int-or-string), as apiextensions/v1 demands."""
    for crd in build_crds():
        for path, node in _walk(_root(crd), ""):
            assert _type_of(node) is not None, path


def test_managed_by_is_immutable_and_restricted_by_cel() -> None:
    for crd in build_crds():
        managed_by = _root(crd)["properties"]["spec"]["properties"]["managedBy"]
        rules = [v["rule"] for v in managed_by["x-kubernetes-validations"]]
        assert "self == oldSelf" in rules
        assert any("kueue.x-k8s.io/multikueue" in rule for rule in rules)


def test_rayop_crds_prints_the_three_crds_as_multi_document_yaml() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rayop", "crds"], capture_output=True, text=True, check=True
    ).stdout
    documents = list(yaml.load_all(out, Loader=yaml.CSafeLoader))
    assert documents == build_crds()
    assert [d["metadata"]["name"] for d in documents] == [f"{p}.ray.io" for p in PLURALS]
