"""The live ray.io objects ``rayop preview`` looks at: all of them, those of some namespaces, or
those named ``KIND/NAME``; and what stopped it from reading some.

A kind whose CRD the cluster does not serve, a namespace the user may not list, or a named
object that is not there is a problem (one line naming it and why); the objects that could be
read are still previewed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rayop.kube.client import KubeClient
from rayop.kube.errors import ApiError, Forbidden, NotFound
from rayop.kube.resource import Resource
from rayop.preview.manifests import PREVIEW_KINDS, RAY_KINDS

__all__ = ["KIND_ALIASES", "LiveObjects", "list_live_objects", "parse_names"]

Obj = dict[str, Any]

KIND_ALIASES: Final = {
    **{k.lower(): k for k in PREVIEW_KINDS},
    **{f"{k.lower()}s": k for k in PREVIEW_KINDS},
    "rc": "RayCluster",
    "rj": "RayJob",
    "rs": "RayService",
}
"""``KIND/NAME`` spellings (kubectl's: kind, plural, short name), by the kind they mean."""


@dataclass
class LiveObjects:
    """The objects read (ordered RayCluster, RayJob, RayService, then namespace and name) and a
    line per thing that could not be."""

    objects: list[Obj] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def parse_names(names: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """Parses ``KIND/NAME`` arguments: ((kind, name) pairs, a line per bad argument)."""
    pairs, problems = [], []
    for text in names:
        kind, _, name = text.partition("/")
        if kind.lower() not in KIND_ALIASES or not name:
            problems.append(
                f"{text}: give KIND/NAME, KIND one of RayCluster, RayJob, RayService, RayCronJob"
            )
            continue
        pairs.append((KIND_ALIASES[kind.lower()], name))
    return pairs, problems


async def list_live_objects(
    client: KubeClient,
    namespaces: list[str],
    names: list[tuple[str, str]],
    kinds: Mapping[str, Resource] = RAY_KINDS,
) -> LiveObjects:
    """Reads the objects of ``kinds``: ``names`` (in the one namespace given) or every object
    of ``namespaces`` (all when empty). A name of a kind not in ``kinds`` is a problem."""
    out = LiveObjects()
    if names:
        namespace = namespaces[0] if namespaces else "default"
        for kind, name in names:
            if kind not in kinds:
                out.problems.append(
                    f"{kind}/{namespace}/{name}: {kind}s are not reconciled "
                    f"(the {kind} feature gate is off)"
                )
                continue
            try:
                obj = await client.get(kinds[kind], name, namespace=namespace)
            except ApiError as exc:
                out.problems.append(f"{kind}/{namespace}/{name}: {_why(exc, kind, namespace)}")
                continue
            out.objects.append(_with_kind(obj, kind))
        return out
    for kind, resource in kinds.items():
        scopes: list[str | None] = list(namespaces) or [None]
        for scope in scopes:
            try:
                listed = await client.list(resource, namespace=scope)
            except ApiError as exc:
                out.problems.append(f"{resource.plural}: {_why(exc, kind, scope)}")
                continue
            out.objects += [_with_kind(o, kind) for o in listed["items"]]
    return out


def _with_kind(obj: Obj, kind: str) -> Obj:
    return {"apiVersion": "ray.io/v1", "kind": kind, **obj}


def _why(exc: ApiError, kind: str, namespace: str | None) -> str:
    where = f"in namespace {namespace}" if namespace else "in any namespace"
    if isinstance(exc, Forbidden):
        return f"no read access {where} ({exc})"
    if isinstance(exc, NotFound):
        return f"not found {where} (is the {kind} CRD installed? {exc})"
    return f"cannot be read {where}: {exc}"
