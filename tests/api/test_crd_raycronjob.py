"""Our generated raycronjobs.ray.io CRD against the one KubeRay v1.7.0's chart ships."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rayop.api.crds import RAYCRONJOB, RAYJOB, build_crd, build_crds


@pytest.fixture(scope="module")
def kuberay(compat_dir: Path) -> dict[str, Any]:
    """KubeRay's raycronjobs CRD, from its Helm chart (its ``crds/`` has only three kinds)."""
    path = compat_dir / "helm-chart" / "kuberay-operator" / "crds" / "ray.io_raycronjobs.yaml"
    with path.open() as f:
        crd: dict[str, Any] = yaml.load(f, Loader=yaml.CSafeLoader)
    return crd


def _version(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return version  # type: ignore[no-any-return]


def _root(crd: dict[str, Any]) -> dict[str, Any]:
    return _version(crd)["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def _walk(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _walk(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _walk(schema["additionalProperties"], f"{path}{{}}")


def _nodes(crd: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(_walk(_root(crd), ""))


def test_names_scope_columns_and_subresources_equal_kuberays(kuberay: dict[str, Any]) -> None:
    ours = build_crd(RAYCRONJOB)
    assert ours["metadata"]["name"] == kuberay["metadata"]["name"] == "raycronjobs.ray.io"
    for key in ("group", "names", "scope"):
        assert ours["spec"][key] == kuberay["spec"][key]
    mine, theirs = _version(ours), _version(kuberay)
    for key in ("name", "served", "storage", "subresources", "additionalPrinterColumns"):
        assert mine[key] == theirs[key], key


def _strip_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_strip_descriptions(v) for v in node]
    return node


def _outside_template(nodes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {p: n for p, n in nodes.items() if not p.startswith(".spec.jobTemplate.")}


def test_every_path_outside_the_template_equals_kuberays(kuberay: dict[str, Any]) -> None:
    """The RayCronJob's own fields, keyword for keyword (descriptions aside)."""
    theirs = _outside_template(_nodes(kuberay))
    ours = _outside_template(_nodes(build_crd(RAYCRONJOB)))
    assert sorted(ours) == sorted(theirs)
    for path, node in theirs.items():
        mine = {k: v for k, v in ours[path].items() if k not in ("description", "properties")}
        kuberays = {k: v for k, v in node.items() if k not in ("description", "properties")}
        if path == ".spec.jobTemplate":
            continue  # compared below, through the RayJob spec
        assert mine == kuberays, path


def test_the_job_template_is_the_rayjob_spec_in_ours_and_in_kuberays(
    kuberay: dict[str, Any], compat_dir: Path
) -> None:
    """KubeRay's ``jobTemplate`` is its RayJob ``spec`` and so is ours: every path below the
    template is then compared with KubeRay's by the rayjobs CRD test (tests/api/test_crds.py)."""
    with (compat_dir / "crds" / "ray.io_rayjobs.yaml").open() as f:
        rayjobs: dict[str, Any] = yaml.load(f, Loader=yaml.CSafeLoader)
    (v1,) = [v for v in rayjobs["spec"]["versions"] if v["name"] == "v1"]
    kuberay_template = _root(kuberay)["properties"]["spec"]["properties"]["jobTemplate"]
    kuberay_spec = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert _strip_descriptions(kuberay_template) == _strip_descriptions(kuberay_spec)
    our_template = _root(build_crd(RAYCRONJOB))["properties"]["spec"]["properties"]["jobTemplate"]
    our_spec = _root(build_crd(RAYJOB))["properties"]["spec"]
    assert _strip_descriptions(our_template) == _strip_descriptions(our_spec)
    assert len(list(_walk(our_template, ""))) > 100


def test_rayop_crds_serves_raycronjobs_with_the_others() -> None:
    names = [crd["metadata"]["name"] for crd in build_crds()]
    assert names[-1] == "raycronjobs.ray.io"
    assert len(names) == len(set(names)) == 4
