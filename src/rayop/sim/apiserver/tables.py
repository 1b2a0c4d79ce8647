"""meta.k8s.io/v1 Table responses for ``kubectl get``: pods, events, resource quotas, CRD printer
columns, a default."""

from __future__ import annotations

import calendar
import json
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.sim.machinery.resources import ResourceInfo

__all__ = ["human_duration", "jsonpath_values", "table", "wants_table"]

_TOKEN = re.compile(
    r"\[\?\(@\.([\w.]+)\s*==\s*[\"']([^\"']*)[\"']\)\]|\.?([^.\[\]]+)|\[(\*|-?\d+)\]"
)
"""A filter ``[?(@.a.b=="v")]``, a key, or an index."""


def wants_table(accept: str) -> bool:
    """Returns whether an Accept header asks for a Table (``as=Table``)."""
    return "as=Table" in accept


def human_duration(seconds: float) -> str:
    """Formats an age the way kubectl does (``45s``, ``3m20s``, ``5h``, ``2d3h``...)."""
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if d < 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if d < 365 * 2:
        return f"{d}d"
    return f"{d // 365}y"


def _age(ts: str | None, now: float) -> str:
    if not ts:
        return "<unknown>"
    try:
        t = calendar.timegm(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return "<unknown>"
    return human_duration(now - t)


def jsonpath_values(obj: Any, path: str) -> list[Any]:
    """Evaluates a simple JSONPath (``.a.b[0].c``, ``[*]``, ``{.a}``, a filter on equality such as
    ``.conditions[?(@.type=="Ready")]``); returns the matches."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    current = [obj]
    for m in _TOKEN.finditer(path.replace("\\.", "\x00")):
        field, wanted, key, idx = m.groups()
        nxt: list[Any] = []
        for cur in current:
            if field is not None:
                if isinstance(cur, list):
                    nxt.extend(item for item in cur if _field_text(item, field) == wanted)
            elif key is not None:
                k = key.replace("\x00", ".")
                if isinstance(cur, dict) and k in cur:
                    nxt.append(cur[k])
            elif isinstance(cur, list):
                if idx == "*":
                    nxt.extend(cur)
                elif -len(cur) <= int(idx) < len(cur):
                    nxt.append(cur[int(idx)])
        current = nxt
    return current


def _field_text(item: Any, field: str) -> str | None:
    """Returns ``item``'s value at the dotted ``field`` as JSONPath prints it, None when absent."""
    for part in field.split("."):
        if not isinstance(item, dict) or part not in item:
            return None
        item = item[part]
    return item if isinstance(item, str) else json.dumps(item)


def _pod_row(pod: Obj, now: float) -> list[Any]:
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    cstat = status.get("containerStatuses") or []
    total = len(spec.get("containers") or []) or len(cstat)
    ready = sum(1 for c in cstat if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in cstat)
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for c in cstat:
        st = c.get("state") or {}
        if "waiting" in st and st["waiting"].get("reason"):
            reason = st["waiting"]["reason"]
        elif "terminated" in st and st["terminated"].get("reason") and reason == "Running":
            reason = st["terminated"]["reason"]
    if pod["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    return [
        pod["metadata"]["name"],
        f"{ready}/{total}",
        reason,
        restarts,
        _age(pod["metadata"].get("creationTimestamp"), now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
    ]


Column = tuple[str, str, str, int]
"""A column definition: (name, type, format, priority)."""


def _text_columns(*names: str, wide: tuple[str, ...] = ()) -> list[Column]:
    """Returns string columns; ``wide`` ones only show with ``-o wide`` (priority 1)."""
    return [(n, "string", "name" if n == "Name" else "", int(n in wide)) for n in names]


_POD_COLUMNS = _text_columns(
    "Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", wide=("IP", "Node")
)


def _columns(cols: Sequence[Column]) -> list[Obj]:
    return [
        {"name": n, "type": t, "format": f, "description": n, "priority": p} for n, t, f, p in cols
    ]


def _custom_cells(info: ResourceInfo, obj: Obj, now: float) -> list[Any]:
    cells: list[Any] = [obj["metadata"]["name"]]
    for col in info.printer_columns:
        vals = jsonpath_values(obj, str(col.get("jsonPath", "")))
        if not vals:
            cells.append(None)
            continue
        v = vals[0] if len(vals) == 1 else ",".join(str(x) for x in vals)
        if col.get("type") == "date" and isinstance(v, str):
            v = _age(v, now)
        cells.append(v)
    return cells


def _event_row(ev: Obj, now: float) -> list[Any]:
    ref = ev.get("involvedObject") or ev.get("regarding") or {}
    last = (
        ev.get("lastTimestamp")
        or ev.get("deprecatedLastTimestamp")
        or (ev.get("series") or {}).get("lastObservedTime")
        or ev.get("eventTime")
        or ev["metadata"].get("creationTimestamp")
    )
    if isinstance(last, str) and "." in last:
        last = last.split(".", 1)[0] + "Z"
    obj_ref = f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"
    return [
        _age(last, now),
        ev.get("type", ""),
        ev.get("reason", ""),
        obj_ref,
        ev.get("message") or ev.get("note") or "",
    ]


_EVENT_COLUMNS = _text_columns("Last Seen", "Type", "Reason", "Object", "Message")


def _quota_row(quota: Obj, now: float) -> list[Any]:
    """kubectl's ResourceQuota row: ``used/hard`` per name, limits.* apart from the rest."""
    status = quota.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    request: list[str] = []
    limit: list[str] = []
    for name in sorted(hard):
        said = f"{name}: {used.get(name, '0')}/{hard[name]}"
        (limit if name.startswith("limits.") else request).append(said)
    age = _age(quota["metadata"].get("creationTimestamp"), now)
    return [quota["metadata"]["name"], age, ", ".join(request), ", ".join(limit)]


_QUOTA_COLUMNS = _text_columns("Name", "Age", "Request", "Limit")


def _workload_row(obj: Obj, now: float) -> list[Any]:
    """kubectl's columns of a Deployment, ReplicaSet or StatefulSet (printers.go in
    https://github.com/kubernetes/kubernetes/tree/master/pkg/printers/internalversion)."""
    spec, st = obj.get("spec") or {}, obj.get("status") or {}
    want, ready = int(spec.get("replicas", 1)), int(st.get("readyReplicas") or 0)
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    names = ",".join(str(c.get("name")) for c in containers)
    images = ",".join(str(c.get("image")) for c in containers)
    selector = ",".join(
        f"{k}={v}" for k, v in ((spec.get("selector") or {}).get("matchLabels") or {}).items()
    )
    age = _age(obj["metadata"].get("creationTimestamp"), now)
    kind = obj.get("kind")
    if kind == "Deployment":
        counts = [
            f"{ready}/{want}",
            st.get("updatedReplicas") or 0,
            st.get("availableReplicas") or 0,
        ]
        return [obj["metadata"]["name"], *counts, age, names, images, selector]
    if kind == "ReplicaSet":
        return [
            obj["metadata"]["name"],
            want,
            st.get("replicas") or 0,
            ready,
            age,
            names,
            images,
            selector,
        ]
    return [obj["metadata"]["name"], f"{ready}/{want}", age, names, images]


_WIDE = ("Containers", "Images", "Selector")
_WORKLOAD_COLUMNS = {
    "apps/deployments": _text_columns(
        "Name", "Ready", "Up-to-date", "Available", "Age", *_WIDE, wide=_WIDE
    ),
    "apps/replicasets": _text_columns(
        "Name", "Desired", "Current", "Ready", "Age", *_WIDE, wide=_WIDE
    ),
    "apps/statefulsets": _text_columns("Name", "Ready", "Age", *_WIDE[:2], wide=_WIDE),
}


def _layout(info: ResourceInfo) -> tuple[list[Obj], Callable[[Obj, float], list[Any]]]:
    if info.key == "/pods":
        return _columns(_POD_COLUMNS), _pod_row
    if info.key == "/resourcequotas":
        return _columns(_QUOTA_COLUMNS), _quota_row

    if info.key in _WORKLOAD_COLUMNS:
        return _columns(_WORKLOAD_COLUMNS[info.key]), _workload_row
    if info.key == "/events":
        return _columns(_EVENT_COLUMNS), _event_row
    if info.printer_columns:
        cols: list[Column] = [("Name", "string", "name", 0)] + [
            (
                str(c.get("name", "")),
                "string" if c.get("type") == "date" else str(c.get("type", "string")),
                str(c.get("format", "")),
                int(c.get("priority", 0)),
            )
            for c in info.printer_columns
        ]
        return _columns(cols), lambda o, now: _custom_cells(info, o, now)
    cols = [("Name", "string", "name", 0), ("Created At", "date", "", 0)]
    return _columns(cols), lambda o, _now: [
        o["metadata"]["name"],
        o["metadata"].get("creationTimestamp"),
    ]


def table(
    info: ResourceInfo,
    objs: Sequence[Obj],
    *,
    resource_version: str = "",
    continue_token: str = "",
    include_object: str = "Metadata",
    with_columns: bool = True,
) -> Obj:
    """Builds a Table of ``objs`` (rows carry PartialObjectMetadata unless asked otherwise)."""
    cols, row = _layout(info)
    now = time.time()
    rows = []
    for o in objs:
        if include_object == "Object":
            ref: Any = o
        elif include_object == "None":
            ref = None
        else:
            ref = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": o.get("metadata", {}),
            }
        rows.append({"cells": row(o, now), "object": ref})
    meta: Obj = {"resourceVersion": resource_version}
    if continue_token:
        meta["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": cols if with_columns else [],
        "rows": rows,
    }
