"""Node manifests as the simulated kubelet registers them (``rayop up --node-file``).

A file holds Node objects, one YAML document each (or a ``List`` of them), as one would hand them
to kwok: ``metadata`` (name, labels, annotations), ``spec.taints`` and ``status.capacity`` /
``status.allocatable``. A node without either gets the default simulated capacity; one with only
one of them gets it as both. Other fields are ignored. Names, labels and annotations are checked
as kube-apiserver checks them, quantities as it parses them; a bad file raises
:class:`NodeManifestError` with one line that names the file and the document.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from rayop.apimachinery.quantity import parse_quantity
from rayop.sim.admission.object_meta import validate_object_meta
from rayop.sim.machinery.errors import StatusError
from rayop.sim.machinery.resources import ResourceRegistry
from rayop.sim.nodes.node_specs import DEFAULT_NODE_CAPACITY, NodeSpec

__all__ = ["NodeManifestError", "load_node_manifests", "node_spec"]

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_NODES = ResourceRegistry().get("", "v1", "nodes")


class NodeManifestError(ValueError):
    """A Node manifest file cannot be read, or one of its documents is not a valid Node."""


def _strings(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a mapping")
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


def _resources(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    out = _strings(value, where)
    for name, quantity in out.items():
        try:
            parse_quantity(quantity)
        except ValueError as exc:
            raise ValueError(f"{where}.{name}: {quantity!r} is not a quantity") from exc
    return out


def _taints(value: Any) -> tuple[dict[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValueError("spec.taints must be a list")
    taints: list[dict[str, Any]] = []
    for i, taint in enumerate(value):
        if not isinstance(taint, Mapping) or not taint.get("key"):
            raise ValueError(f"spec.taints[{i}] needs a key")
        if taint.get("effect") not in TAINT_EFFECTS:
            raise ValueError(f"spec.taints[{i}].effect must be one of {', '.join(TAINT_EFFECTS)}")
        taints.append({str(k): v if k != "value" else str(v) for k, v in taint.items()})
    return tuple(taints)


def node_spec(doc: Any) -> NodeSpec:
    """Returns the node a Node manifest describes.

    Raises:
        ValueError: the document is not a valid Node (the message says why).
    """
    if not isinstance(doc, Mapping) or doc.get("kind") != "Node":
        raise ValueError("not a Node (kind: Node)")
    if doc.get("apiVersion", "v1") != "v1":
        raise ValueError(f"apiVersion {doc.get('apiVersion')!r} is not v1")
    md, spec = doc.get("metadata") or {}, doc.get("spec") or {}
    status = doc.get("status") or {}
    if not isinstance(md, Mapping) or not isinstance(spec, Mapping):
        raise ValueError("metadata and spec must be mappings")
    if not isinstance(status, Mapping):
        raise ValueError("status must be a mapping")
    name = md.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("metadata.name is missing")
    labels = _strings(md.get("labels"), "metadata.labels")
    annotations = _strings(md.get("annotations"), "metadata.annotations")
    assert _NODES is not None
    try:
        meta = {"name": name, "labels": labels, "annotations": annotations}
        validate_object_meta(_NODES, {"metadata": meta}, check_name=True)
    except StatusError as exc:
        raise ValueError(str(exc)) from exc
    capacity = _resources(status.get("capacity"), "status.capacity")
    allocatable = _resources(status.get("allocatable"), "status.allocatable")
    if capacity is None:
        capacity = dict(allocatable or DEFAULT_NODE_CAPACITY)
    return NodeSpec(
        name=name,
        labels=labels,
        annotations=annotations,
        capacity=capacity,
        allocatable=allocatable,
        taints=_taints(spec.get("taints")),
    )


def _documents(path: Path) -> list[Any]:
    try:
        with path.open(encoding="utf-8") as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
    except (OSError, UnicodeDecodeError) as exc:
        raise NodeManifestError(f"{path}: cannot read it ({exc})") from exc
    except yaml.YAMLError as exc:
        problem = str(getattr(exc, "problem", None) or exc).replace("\n", " ")
        raise NodeManifestError(f"{path}: not YAML ({problem})") from exc
    out: list[Any] = []
    for doc in docs:
        if isinstance(doc, Mapping) and doc.get("kind") in ("List", "NodeList"):
            out.extend(doc.get("items") or [])
        else:
            out.append(doc)
    return out


def load_node_manifests(path: Path) -> tuple[NodeSpec, ...]:
    """Returns the nodes a file of Node manifests describes.

    Raises:
        NodeManifestError: the file cannot be read, is not YAML, holds no Node, or one of its
            documents is not a valid Node.
    """
    docs = _documents(path)
    if not docs:
        raise NodeManifestError(f"{path}: holds no Node")
    nodes: list[NodeSpec] = []
    for index, doc in enumerate(docs, start=1):
        try:
            nodes.append(node_spec(doc))
        except ValueError as exc:
            raise NodeManifestError(f"{path}: document {index}: {exc}") from exc
    return tuple(nodes)
