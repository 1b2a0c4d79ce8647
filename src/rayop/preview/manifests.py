"""Reading the manifests ``rayop render`` (and ``rayop preview -f``) are given, and refusing bad
ones in one line each.

A file holds ray.io objects (RayCluster, RayJob, RayService, ``ray.io/v1``) and, beside them, the
ConfigMaps and Secrets they mount (KubeRay's samples ship their code so); anything else is bad
input. A ray.io object the operator would refuse (KubeRay's validation and rayop's gate checks,
as the validating webhook runs them) is refused with the webhook's message, which names the
object and the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.raycronjob.reconciler import RAY_CRON_JOBS
from rayop.controllers.webhooks.validators import PATHS, handlers
from rayop.kube.resource import Resource
from rayop.kube.resources import CONFIGMAPS, RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES, SECRETS

__all__ = [
    "CONTEXT_KINDS",
    "PREVIEW_KINDS",
    "RAY_KINDS",
    "BadInput",
    "Manifests",
    "describe",
    "read_good_manifests",
    "read_manifests",
    "refusal",
]

Obj = dict[str, Any]

RAY_KINDS: Final[Mapping[str, Resource]] = {
    "RayCluster": RAY_CLUSTERS,
    "RayJob": RAY_JOBS,
    "RayService": RAY_SERVICES,
}
"""The kinds rendered, by kind."""
PREVIEW_KINDS: Final[Mapping[str, Resource]] = {**RAY_KINDS, "RayCronJob": RAY_CRON_JOBS}
"""The kinds ``rayop preview`` looks at with the RayCronJob gate on (RayCronJobs are not
rendered: what they create depends on the time)."""
CONTEXT_KINDS: Final[Mapping[str, Resource]] = {"ConfigMap": CONFIGMAPS, "Secret": SECRETS}
"""The kinds accepted beside them (created first, never rendered)."""
DEFAULT_NAMESPACE = "default"


class BadInput(Exception):
    """The input cannot be rendered; ``str()`` is one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass
class Manifests:
    """The objects of a file: the ray.io ones (in file order) and their context."""

    ray: list[Obj] = field(default_factory=list)
    context: list[Obj] = field(default_factory=list)

    @property
    def namespaces(self) -> list[str]:
        """Every namespace the objects are in, in order of first use."""
        seen = [o["metadata"]["namespace"] for o in self.context + self.ray]
        return list(dict.fromkeys(seen))


def describe(obj: Mapping[str, Any]) -> str:
    """``Kind/namespace/name`` of an object, for messages."""
    meta = obj.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind') or '?'}/{where}{meta.get('name') or '?'}"


def read_manifests(text: str, source: str) -> Manifests:
    """Parses a YAML stream; an object without a namespace gets ``default``.

    Raises:
        BadInput: the text is not YAML, a document is not a Kubernetes object, is of a kind
            other than those above, has no name, or the file has no ray.io object.
    """
    manifests, problems = read_good_manifests(text, source)
    if problems:
        raise BadInput(problems)
    return manifests


def read_good_manifests(
    text: str, source: str, kinds: Mapping[str, Resource] = RAY_KINDS
) -> tuple[Manifests, list[str]]:
    """Parses a YAML stream as :func:`read_manifests` does, but returns the good objects and a
    line per bad document rather than refusing the file for one (``rayop preview -f`` previews
    the rest). ``kinds``: the ray.io kinds taken.

    Raises:
        BadInput: the text is not YAML, or no document is a good ray.io object.
    """
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise BadInput([f"{source}: not YAML{where}: {problem}"]) from exc
    manifests, problems = Manifests(), []
    for i, doc in enumerate(docs, 1):
        problem = _problem(doc, i, source, kinds)
        if problem:
            problems.append(problem)
            continue
        doc["metadata"].setdefault("namespace", DEFAULT_NAMESPACE)
        (manifests.ray if doc["kind"] in kinds else manifests.context).append(doc)
    if not manifests.ray:
        raise BadInput(problems or [f"{source}: no RayCluster, RayJob or RayService in it"])
    return manifests, problems


def _problem(doc: Any, index: int, source: str, kinds: Mapping[str, Resource]) -> str | None:
    if not isinstance(doc, dict) or not doc.get("kind") or not doc.get("apiVersion"):
        return f"{source}: document {index} is not a Kubernetes object (no apiVersion and kind)"
    kind, api_version = str(doc["kind"]), str(doc["apiVersion"])
    if not isinstance(doc.get("metadata"), dict) or not doc["metadata"].get("name"):
        return f"{kind} (document {index} of {source}): metadata.name is required"
    if kind in kinds and api_version == "ray.io/v1":
        return None
    if kind in CONTEXT_KINDS and api_version == "v1":
        return None
    return (
        f"{describe(doc)}: not a ray.io object the operator renders ({api_version} {kind}); "
        "give RayCluster, RayJob or RayService (ray.io/v1), with the ConfigMaps and Secrets "
        "they use"
    )


def refusal(obj: Mapping[str, Any], gates: FeatureGates) -> str | None:
    """The reason the operator would refuse ``obj`` (the webhook's message), or None."""
    kind = str(obj.get("kind"))
    handler = handlers(gates).get(PATHS.get(kind, ""))
    if handler is None:
        return None
    verdict = handler({"operation": "CREATE", "object": obj})
    if verdict.allowed:
        return None
    return str((verdict.status or {}).get("message") or f"{describe(obj)} is invalid")
