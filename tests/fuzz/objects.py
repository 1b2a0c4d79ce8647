"""Generated ray.io objects: valid, almost valid (one field wrong) and hostile.

Every object starts from one of rayop's shipped samples (``rayop samples``; the RayCronJob
wraps the RayJob sample's spec) and is changed at paths drawn from the object itself, so the
generator follows the samples as they grow.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from typing import Any

import yaml
from hypothesis import strategies as st

from rayop.examples import sample_text
from rayop.kube.resource import Resource
from rayop.kube.resources import RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES

__all__ = [
    "KINDS",
    "RESOURCES",
    "WRONG_VALUES",
    "base",
    "every_wrong_type",
    "fuzzed_objects",
    "paths",
    "set_at",
]

Obj = dict[str, Any]
Path = tuple[str | int, ...]

KINDS = ("RayCluster", "RayJob", "RayService", "RayCronJob")
RAY_CRON_JOBS = Resource("ray.io", "v1", "raycronjobs", "RayCronJob")
RESOURCES: dict[str, Resource] = {
    "RayCluster": RAY_CLUSTERS,
    "RayJob": RAY_JOBS,
    "RayService": RAY_SERVICES,
    "RayCronJob": RAY_CRON_JOBS,
}
WRONG_VALUES: dict[str, Any] = {
    "string": "fuzz",
    "integer": 7,
    "number": 1.5,
    "boolean": True,
    "null": None,
    "list": ["fuzz", 1],
    "object": {"fuzz": 1},
}
"""One value of each JSON type: a field gets each of the types it does not have, in turn."""


@functools.cache
def _samples() -> dict[str, Obj]:
    found: dict[str, Obj] = {}
    for name in ("raycluster", "rayjob", "rayservice"):
        for doc in yaml.safe_load_all(sample_text(name)):
            if isinstance(doc, dict) and doc.get("apiVersion", "").startswith("ray.io/"):
                found[doc["kind"]] = doc
    job = found["RayJob"]
    found["RayCronJob"] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": "raycronjob-sample"},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": copy.deepcopy(job["spec"])},
    }
    return found


def base(kind: str) -> Obj:
    """A fresh copy of the valid sample of ``kind`` (no namespace)."""
    obj = copy.deepcopy(_samples()[kind])
    obj["metadata"].pop("namespace", None)
    return obj


def paths(obj: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every path to a value in ``obj`` (containers too), parents before children."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield (*prefix, i)
            yield from paths(value, (*prefix, i))


def _get(obj: Any, path: Path) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def set_at(obj: Obj, path: Path, value: Any) -> Obj:
    """A copy of ``obj`` with the value at ``path`` replaced."""
    out = copy.deepcopy(obj)
    parent = _get(out, path[:-1])
    parent[path[-1]] = value
    return out


def json_type(value: Any) -> str:
    """The JSON type name of a value, as :data:`WRONG_VALUES` keys them."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "list" if isinstance(value, list) else "object"


def every_wrong_type(kind: str) -> Iterator[tuple[Path, str, Obj]]:
    """Every field of the sample of ``kind`` (metadata.name and apiVersion/kind aside) with each
    JSON type it does not have: (path, type given, object)."""
    obj = base(kind)
    for path in paths(obj):
        if path in (("apiVersion",), ("kind",), ("metadata",), ("metadata", "name")):
            continue
        have = json_type(_get(obj, path))
        for name, wrong in WRONG_VALUES.items():
            if name != have and not (have == "number" and name == "integer"):
                yield path, name, set_at(obj, path, copy.deepcopy(wrong))


# -- names ------------------------------------------------------------------------------------

_LABEL_START = "abcdefghijklmnopqrstuvwxyz"
_LABEL_CHARS = _LABEL_START + "0123456789-"


def _dns_label(min_size: int, max_size: int) -> st.SearchStrategy[str]:
    body = st.text(_LABEL_CHARS, min_size=max(0, min_size - 2), max_size=max(0, max_size - 2))
    return st.builds(
        lambda a, b, c: (a + b + c)[:max_size],
        st.sampled_from(_LABEL_START),
        body,
        st.sampled_from(_LABEL_START + "0123456789"),
    )


_NAMES = st.one_of(
    _dns_label(1, 40),
    _dns_label(47, 47),
    _dns_label(48, 48),  # RayService's limit is 48 (its cluster names get a suffix)
    _dns_label(63, 63),  # a DNS-1035 label's limit
    _dns_label(64, 64),  # one past it
    _dns_label(253, 253),
    _dns_label(254, 300),
    st.sampled_from(["Bad_Name", "-lead", "trail-", "a.b", "x" * 1000, "ünïcode", "a b", ""]),
    st.text(min_size=1, max_size=80),
)


# -- changes ----------------------------------------------------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["", "-1", "0", "1e3", "100Gi", "abc", "Always", "Never", "*/5 * * * *"]),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for i in range(depth):
        value = {"d": value} if i % 2 else [value]
    return value


@st.composite
def _valid(draw: st.DrawFn, kind: str) -> Obj:
    obj = base(kind)
    obj["metadata"]["name"] = draw(_dns_label(1, 30))  # RayCronJob allows 36
    if draw(st.booleans()):
        labels = draw(st.dictionaries(_dns_label(1, 20), _dns_label(1, 20), max_size=5))
        obj["metadata"]["labels"] = labels
    return obj


@st.composite
def _almost_valid(draw: st.DrawFn, kind: str) -> Obj:
    obj = draw(_valid(kind))
    candidates = [p for p in paths(obj) if p[0] in ("spec", "metadata")]
    path = draw(st.sampled_from(candidates))
    value = draw(st.one_of(st.sampled_from(list(WRONG_VALUES.values())), _SCALARS, _JSON))
    return set_at(obj, path, copy.deepcopy(value))


@st.composite
def _hostile(draw: st.DrawFn, kind: str) -> Obj:
    obj = draw(_valid(kind))
    how = draw(st.sampled_from(["name", "deep", "string", "list", "labels", "unknown", "many"]))
    if how == "name":
        obj["metadata"]["name"] = draw(_NAMES)
        return obj
    candidates = [p for p in paths(obj) if p[0] == "spec"]
    path = draw(st.sampled_from(candidates))
    if how == "deep":
        return set_at(obj, path, _nested(draw(st.integers(min_value=20, max_value=150))))
    if how == "string":
        size = draw(st.sampled_from([1_000, 70_000, 300_000, 1_000_000]))
        return set_at(obj, path, draw(st.sampled_from("x\u00e9\u4e2d\x00")) * size)
    if how == "list":
        size = draw(st.sampled_from([100, 1_000, 10_000]))
        return set_at(obj, path, [draw(_SCALARS)] * size)
    if how == "labels":
        obj["metadata"]["labels"] = {f"k{i}": "v" * 63 for i in range(draw(st.integers(0, 400)))}
        obj["metadata"]["annotations"] = {"a": "x" * draw(st.sampled_from([10, 300_000]))}
        return obj
    if how == "unknown":
        return set_at(obj, path, draw(st.dictionaries(st.text(max_size=20), _JSON, max_size=8)))
    for p in draw(st.lists(st.sampled_from(candidates), min_size=2, max_size=6)):
        try:
            obj = set_at(obj, p, draw(_JSON))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed the path
    return obj


_NUMBERS = st.integers(min_value=-3, max_value=12)
_SEMANTIC: dict[str, list[tuple[Path, st.SearchStrategy[Any]]]] = {
    "RayCluster": [
        (("spec", "workerGroupSpecs", 0, "minReplicas"), _NUMBERS),
        (("spec", "workerGroupSpecs", 0, "maxReplicas"), _NUMBERS),
        (("spec", "workerGroupSpecs", 0, "replicas"), _NUMBERS),
        (("metadata", "name"), _dns_label(50, 63)),
        (("spec", "headGroupSpec", "template", "spec", "containers"), st.just([])),
        (("spec", "workerGroupSpecs", 0, "groupName"), st.sampled_from(["", "workers"])),
    ],
    "RayJob": [
        (("spec", "shutdownAfterJobFinishes"), st.booleans()),
        (("spec", "ttlSecondsAfterFinished"), _NUMBERS),
        (("spec", "submissionMode"), st.sampled_from(["Bogus", "HTTPMode", "K8sJobMode"])),
        (("metadata", "name"), _dns_label(44, 63)),
    ],
    "RayService": [(("metadata", "name"), _dns_label(44, 63))],
    "RayCronJob": [
        (("spec", "schedule"), st.sampled_from(["bogus", "* * *", "61 * * * *", "@every 5m"])),
    ],
}
"""Values the CRD schema lets through and rayop's (KubeRay's) validation may refuse."""


@st.composite
def _semantic(draw: st.DrawFn, kind: str) -> Obj:
    obj = draw(_valid(kind))
    for path, values in draw(st.lists(st.sampled_from(_SEMANTIC[kind]), min_size=1, max_size=2)):
        obj = set_at(obj, path, draw(values))
    return obj


def fuzzed_objects(kinds: tuple[str, ...] = KINDS) -> st.SearchStrategy[tuple[str, str, Obj]]:
    """(kind, family, object) with family one of "valid", "almost", "semantic", "hostile"."""
    return st.sampled_from(kinds).flatmap(
        lambda kind: st.one_of(
            _valid(kind).map(lambda o: (kind, "valid", o)),
            _almost_valid(kind).map(lambda o: (kind, "almost", o)),
            _semantic(kind).map(lambda o: (kind, "semantic", o)),
            _hostile(kind).map(lambda o: (kind, "hostile", o)),
        )
    )
