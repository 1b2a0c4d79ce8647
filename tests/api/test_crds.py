"""Our generated CRDs against KubeRay v1.7.0's: names, columns, and every schema path.

The walk covers the whole ``openAPIV3Schema``, the embedded Kubernetes objects (pod templates,
Services, EnvVars, NetworkPolicy rules) included, and compares every keyword of every node but
its description. What it keeps apart is listed in :data:`KEPT_DIFFERENCES` with the reason.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rayop.api.crds import build_crds
from rayop.api.k8s_schemas import EMBEDDED

PLURALS = ("rayclusters", "rayjobs", "rayservices")

_NEWER = "a field of Kubernetes 1.37 that the k8s.io/api KubeRay v1.7.0 is built on predates"
KEPT_DIFFERENCES: dict[str, str] = {
    # Present in ours only: the OpenAPI scripts/gen-k8s-openapi reads is Kubernetes 1.37's.
    # KubeRay's CRD prunes these fields from a pod template; ours keeps them for the pod.
    r"\.httpGet\.protocol": _NEWER,
    r"Probe\.grpc\.mode": _NEWER,
    r"volumeMounts\[\]\.bindMountOptions(\[\])?": _NEWER,
    r"\.spec\.evictionResponders(\[\](\.name|\.priority)?)?": _NEWER,
    r"\.(defaultUser|user)": _NEWER,
    r"emptyDir\.mode": _NEWER,
    # Kubernetes 1.37's OpenAPI no longer marks the ConfigMap and Secret references, volume
    # sources and projections atomic (a server-side-apply merge mark only).
    r"\.(configMapRef|secretRef|configMap|secret) x-kubernetes-map-type": (
        "atomic in older Kubernetes only"
    ),
}
_WALKED = ("description", "properties", "items", "additionalProperties")


@functools.cache
def _load_kuberay(compat_dir: Path, plural: str) -> dict[str, Any]:
    with (compat_dir / "crds" / f"ray.io_{plural}.yaml").open() as f:
        crd: dict[str, Any] = yaml.load(f, Loader=yaml.CSafeLoader)
    return crd


@functools.cache
def _built() -> list[dict[str, Any]]:
    return build_crds()


def _ours(plural: str) -> dict[str, Any]:
    (crd,) = [c for c in _built() if c["spec"]["names"]["plural"] == plural]
    return crd


def _version(crd: dict[str, Any], name: str = "v1") -> dict[str, Any]:
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == name]
    return version  # type: ignore[no-any-return]


def _root(crd: dict[str, Any], version: str = "v1") -> dict[str, Any]:
    return _version(crd, version)["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


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


def _keywords(schema: dict[str, Any]) -> dict[str, Any]:
    """Returns a node's own keywords: not its description nor the subtrees walked apart."""
    out = {k: v for k, v in schema.items() if k not in _WALKED}
    if "required" in out:
        out["required"] = sorted(out["required"])
    return out


def _differences(theirs: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """Every path on one side only, and every keyword that differs: ``path [keyword]``."""
    a, b = dict(_walk(theirs, "")), dict(_walk(ours, ""))
    out = [f"{p}: KubeRay only" for p in a if p not in b]
    out += [f"{p}: ours only" for p in b if p not in a]
    for path in sorted(set(a) & set(b)):
        mine, kuberay = _keywords(b[path]), _keywords(a[path])
        for keyword in sorted(set(mine) | set(kuberay)):
            if mine.get(keyword) != kuberay.get(keyword):
                out.append(
                    f"{path} {keyword}: ours {mine.get(keyword)!r}, KubeRay "
                    f"{kuberay.get(keyword)!r}"
                )
    return out


def _kept(difference: str) -> bool:
    where = difference.split(":", 1)[0]
    return any(re.search(f"{pattern}$", where) for pattern in KEPT_DIFFERENCES)


@pytest.mark.parametrize("version", ["v1", "v1alpha1"])
@pytest.mark.parametrize("plural", PLURALS)
def test_every_schema_path_of_kuberay_is_ours_with_the_same_keywords(
    compat_dir: Path, plural: str, version: str
) -> None:
    """Walks every node of KubeRay's schema (embedded Kubernetes objects included)."""
    theirs = _root(_load_kuberay(compat_dir, plural), version)
    ours = _root(_ours(plural), version)
    assert [d for d in _differences(theirs, ours) if not _kept(d)] == []
    assert sum(1 for _ in _walk(theirs, "")) > 2000  # the walk really went into pod templates


def test_every_kept_difference_is_still_needed(compat_dir: Path) -> None:
    """A kept difference that no longer matches anything is stale and must go."""
    found = [
        d
        for plural in PLURALS
        for d in _differences(_root(_load_kuberay(compat_dir, plural)), _root(_ours(plural)))
    ]
    for pattern in KEPT_DIFFERENCES:
        assert any(re.search(f"{pattern}$", d.split(":", 1)[0]) for d in found), pattern


def test_embedded_kubernetes_objects_carry_their_full_schema() -> None:
    spec = _root(_ours("rayclusters"))["properties"]["spec"]["properties"]
    head = spec["headGroupSpec"]
    assert head["required"] == ["template"]
    template = head["properties"]["template"]
    assert sorted(template["properties"]) == ["metadata", "spec"]
    pod_spec = template["properties"]["spec"]
    assert pod_spec["required"] == ["containers"]
    assert pod_spec["properties"]["containers"]["items"]["required"] == ["name"]
    service = head["properties"]["headService"]["properties"]
    assert sorted(service) == ["apiVersion", "kind", "metadata", "spec", "status"]
    for crd in _built():
        for path, node in _walk(_root(crd), ""):
            assert not node.get("x-kubernetes-preserve-unknown-fields"), path


def test_every_embedded_entry_names_a_model_field() -> None:
    """A renamed model or field would silently fall back to an open object otherwise."""
    import rayop.api.raycluster as raycluster
    import rayop.api.rayjob as rayjob
    import rayop.api.rayservice as rayservice

    for where in EMBEDDED:
        model_name, wire = where.split(".")
        (model,) = [
            getattr(m, model_name)
            for m in (raycluster, rayjob, rayservice)
            if hasattr(m, model_name)
        ]
        assert wire in {f.alias or n for n, f in model.model_fields.items()}, where


@pytest.mark.parametrize("plural", PLURALS)
def test_names_scope_columns_and_subresources_match_kuberay(compat_dir: Path, plural: str) -> None:
    kuberay, ours = _load_kuberay(compat_dir, plural), _ours(plural)
    assert ours["apiVersion"] == "apiextensions.k8s.io/v1"
    assert ours["metadata"]["name"] == f"{plural}.ray.io"
    assert ours["spec"]["group"] == "ray.io"
    assert ours["spec"]["names"] == kuberay["spec"]["names"]  # categories [all], no short names
    assert "shortNames" not in ours["spec"]["names"]
    assert ours["spec"]["scope"] == "Namespaced"
    assert "conversion" not in ours["spec"] and "conversion" not in kuberay["spec"]  # None
    served = [(v["name"], v["served"], v["storage"]) for v in ours["spec"]["versions"]]
    assert served == [("v1", True, True), ("v1alpha1", True, False)]
    for name in ("v1", "v1alpha1"):
        mine, theirs = _version(ours, name), _version(kuberay, name)
        assert mine["subresources"] == theirs["subresources"] == {"status": {}}
        for key in ("additionalPrinterColumns", "deprecated", "deprecationWarning"):
            assert mine.get(key) == theirs.get(key), (name, key)


def test_every_schema_node_is_structural() -> None:
    """Every node has a type (or is int-or-string), as apiextensions/v1 demands."""
    for crd in build_crds():
        for path, node in _walk(_root(crd), ""):
            assert _type_of(node) is not None, path


def test_managed_by_is_immutable_and_restricted_by_cel() -> None:
    for crd in map(_ours, PLURALS):  # KubeRay's RayCronJob has no managedBy
        managed_by = _root(crd)["properties"]["spec"]["properties"]["managedBy"]
        rules = [v["rule"] for v in managed_by["x-kubernetes-validations"]]
        assert "self == oldSelf" in rules
        assert any("kueue.x-k8s.io/multikueue" in rule for rule in rules)


def test_rayop_crds_prints_the_four_crds_as_multi_document_yaml() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rayop", "crds"], capture_output=True, text=True, check=True
    ).stdout
    documents = list(yaml.load_all(out, Loader=yaml.CSafeLoader))
    assert documents == build_crds()
    plurals = (*PLURALS, "raycronjobs")
    assert [d["metadata"]["name"] for d in documents] == [f"{p}.ray.io" for p in plurals]
