"""``rayop preview -f FILE``: the live objects as a file would change them, as the API server
would store them.

For each ray.io object of the file, the live object of that kind, namespace and name gets the
file's ``spec`` in place of its own and the file's labels and annotations over its own (the rest
of its metadata and its status stay); an object not live is taken as created. The API server
then stores it in a server-side dry run (``dryRun=All``: admission, pruning and the CRD's
defaults, nothing persisted), and that answer is what the operator's first pass sees.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import orjson

from rayop.kube.client import KubeClient
from rayop.kube.errors import NotFound
from rayop.preview.manifests import PREVIEW_KINDS, Manifests, describe
from rayop.preview.recording_client import overlay_key

__all__ = ["Edits", "edited_objects"]

Obj = dict[str, Any]


@dataclass
class Edits:
    """The edited objects (as the server would store them), the overlay keyed by
    :func:`~rayop.preview.recording_client.overlay_key`, and a line per object refused."""

    objects: list[Obj] = field(default_factory=list)
    overlay: dict[tuple[str, str, str], Obj] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    new: set[tuple[str, str, str]] = field(default_factory=set)


async def edited_objects(client: KubeClient, manifests: Manifests) -> Edits:
    """Applies each ray.io object of ``manifests`` to its live object in a dry run."""
    out = Edits()
    for obj in manifests.ray:
        resource = PREVIEW_KINDS[obj["kind"]]
        meta = obj["metadata"]
        key = overlay_key(obj["kind"], meta["namespace"], meta["name"])
        try:
            live: Obj | None = await client.get(resource, meta["name"], namespace=meta["namespace"])
        except NotFound:
            live = None
        if live is None:
            out.new.add(key)
            body, method = copy.deepcopy(obj), "POST"
            path = resource.path(meta["namespace"])
        else:
            body, method = _edited(live, obj), "PUT"
            path = resource.path(meta["namespace"], meta["name"])
        status, answer = await client.request(method, path, params={"dryRun": "All"}, json=body)
        stored = orjson.loads(answer) if answer else {}
        if status >= 400:
            why = stored.get("message") if isinstance(stored, dict) else None
            out.problems.append(f"{describe(obj)}: refused by the API server: {why or status}")
            continue
        stored.setdefault("apiVersion", resource.api_version)
        stored.setdefault("kind", resource.kind)
        out.objects.append(stored)
        out.overlay[key] = stored
    return out


def _edited(live: Obj, obj: Obj) -> Obj:
    edited = copy.deepcopy(live)
    edited["spec"] = copy.deepcopy(obj.get("spec"))
    meta = edited.setdefault("metadata", {})
    for part in ("labels", "annotations"):
        if obj["metadata"].get(part):
            meta[part] = {**(meta.get(part) or {}), **obj["metadata"][part]}
    return edited
