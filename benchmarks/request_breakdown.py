"""Breaks a real kube-apiserver's audit log down by client, verb and resource, and over time.

``benchmarks/side_by_side.py`` starts its control plane with every request audited at
Metadata level (``RealClusterSettings(audit_reads=True)``). Each audit entry names the
client's ``User-Agent``, the verb, the resource and subresource, and when the request arrived,
so the operator's requests can be told from kwok's, the scheduler's and the bench's own:

- KubeRay's user agent is ``kuberay-operator``; its event broadcaster uses the same one, so
  its event writes are told apart by resource;
- rayop's reconcile client says ``rayop-operator`` and its event client (its own token bucket)
  ``rayop/<version>``;
- the bench creating the RayClusters (and deleting their namespace at the end) says
  ``rayop-bench``.

The measured phase runs from the bench's first RayCluster create to its namespace delete (what
the operators do while the namespace terminates is not counted), or, when the bench keeps its
objects (``--keep-objects``), to the moment the log is read.

A watch is audited when it ends, so a watch still open when the log was read is not counted;
everything else is counted once, when its response was complete.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

OPERATOR_AGENTS = {"kuberay-operator": "kuberay", "rayop-operator": "rayop", "rayop": "rayop"}
"""User-agent products (the part before ``/``) of each operator's clients."""
BENCH_AGENT = "rayop-bench"


@dataclass(frozen=True, slots=True)
class Request:
    """One audited request."""

    at: float
    """When the API server received it (Unix seconds)."""
    agent: str
    """The user agent's product: ``ray-operator``, ``rayop-operator``, ``kwok``, ..."""
    verb: str
    resource: str
    """``pods``, ``rayclusters/status``, ``events`` (group left out)."""
    code: int


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def read_audit(path: Path) -> list[Request]:
    """Reads the audit log's completed requests, in the order they arrived."""
    out: list[Request] = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            entry: dict[str, Any] = json.loads(line)
            if entry.get("stage") != "ResponseComplete":
                continue
            ref = entry.get("objectRef") or {}
            resource = str(ref.get("resource") or entry.get("requestURI", "").split("?")[0])
            if ref.get("subresource"):
                resource += "/" + str(ref["subresource"])
            out.append(
                Request(
                    at=_seconds(entry["requestReceivedTimestamp"]),
                    agent=str(entry.get("userAgent") or "-").split("/")[0].split(" ")[0],
                    verb=str(entry.get("verb")),
                    resource=resource,
                    code=int((entry.get("responseStatus") or {}).get("code") or 0),
                )
            )
    out.sort(key=lambda r: r.at)
    return out


def operator_of(request: Request) -> str | None:
    """Returns ``kuberay`` or ``rayop`` for an operator's request, None for anyone else's."""
    return OPERATOR_AGENTS.get(request.agent)


def is_event(request: Request) -> bool:
    """Tells whether the request is an event write (they have their own token bucket)."""
    return request.resource == "events" and request.verb in ("create", "patch", "update")


def measured_start(requests: Iterable[Request]) -> float | None:
    """Returns when the bench created its first RayCluster (the measured phase's start)."""
    for r in requests:
        if r.agent == BENCH_AGENT and r.verb == "create" and r.resource == "rayclusters":
            return r.at
    return None


def measured_end(requests: Iterable[Request]) -> float | None:
    """Returns when the bench deleted its namespace (the measured phase's end)."""
    for r in requests:
        if r.agent == BENCH_AGENT and r.verb == "delete" and r.resource == "namespaces":
            return r.at
    return None


def failures(requests: Iterable[Request]) -> dict[str, int]:
    """Counts failed requests as ``"<verb> <resource> <code>"``."""
    counts = Counter(f"{r.verb} {r.resource} {r.code}" for r in requests if r.code >= 400)
    return dict(counts.most_common())


def by_verb_and_resource(requests: Iterable[Request]) -> dict[str, int]:
    """Counts requests as ``"<verb> <resource>"`` (most first)."""
    counts = Counter(f"{r.verb} {r.resource}" for r in requests)
    return dict(counts.most_common())


def between(requests: Iterable[Request], start: float, end: float) -> Iterator[Request]:
    """The requests received in ``[start, end)``."""
    return (r for r in requests if start <= r.at < end)


def per_second(
    requests: Iterable[Request], start: float, seconds: float, step: float = 1.0
) -> list[int]:
    """Counts requests in each ``step`` from ``start`` for ``seconds``."""
    bins = [0] * max(1, int(seconds / step + 0.999))
    for r in requests:
        i = int((r.at - start) / step)
        if 0 <= i < len(bins):
            bins[i] += 1
    return bins


def operator_breakdown(audit: Path, seconds_until_ready: float) -> dict[str, Any]:
    """Returns the operator's requests from the audit log: over the measured phase by verb and
    resource (reconcile client and event writes apart), the same until the last cluster was
    ready, its failed requests, and per second (reconcile client only, which is what its token
    bucket paces); and kube-scheduler's pod bindings per second, which pace every pod.

    Args:
        audit: The audit log of a control plane that one operator ran on.
        seconds_until_ready: The bench's ``seconds_until_all_ready``.
    """
    requests = read_audit(audit)
    start = measured_start(requests)
    if start is None:
        raise ValueError(f"{audit}: the bench created no RayCluster")
    end = measured_end(requests) or float("inf")
    ops = [r for r in requests if operator_of(r) is not None and start <= r.at < end]
    reconcile = [r for r in ops if not is_event(r)]
    ready_at = start + seconds_until_ready
    until_ready = [r for r in reconcile if r.at < ready_at]
    return {
        "start": start,
        "reconcile_by_verb_resource": by_verb_and_resource(reconcile),
        "event_writes_by_verb_resource": by_verb_and_resource(r for r in ops if is_event(r)),
        "reconcile_until_ready": len(until_ready),
        "reconcile_until_ready_by_verb_resource": by_verb_and_resource(until_ready),
        "failures": failures(ops),
        "reconcile_per_second": per_second(reconcile, start, seconds_until_ready + 5.0),
        "others_by_agent": dict(
            Counter(r.agent for r in requests if operator_of(r) is None and start <= r.at < end)
        ),
        "scheduler_binds_per_second": per_second(
            (r for r in requests if r.resource == "pods/binding"), start, seconds_until_ready + 5.0
        ),
    }


def breakdown_table(results: dict[str, dict[str, Any]]) -> str:
    """Renders each run's operator requests by verb and resource as a Markdown table.

    Args:
        results: A run's label (``kuberay c=1``) -> its result with ``requests`` filled in.
    """
    labels = list(results)
    rows: dict[str, dict[str, int]] = {}
    for label, result in results.items():
        requests = result.get("requests") or {}
        for part, prefix in (
            ("reconcile_by_verb_resource", ""),
            ("event_writes_by_verb_resource", "events client: "),
        ):
            for key, n in (requests.get(part) or {}).items():
                rows.setdefault(prefix + key, {})[label] = n
        until = requests.get("reconcile_until_ready")
        if until is not None:
            rows.setdefault("reconcile client, until all ready", {})[label] = until
        for key, n in (requests.get("failures") or {}).items():
            rows.setdefault(f"failed: {key}", {})[label] = n
    lines = ["| operator requests | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for key, counts in rows.items():
        lines.append(f"| {key} | " + " | ".join(str(counts.get(k, 0)) for k in labels) + " |")
    return "\n".join(lines)


def timeline_table(results: dict[str, dict[str, Any]], step: int = 5) -> str:
    """Renders, per ``step`` seconds of each run, the operator's reconcile-client requests per
    second, kube-scheduler's bindings per second, and the operator's, kube-apiserver's and the
    whole machine's CPU (cores busy), as Markdown.

    Args:
        results: A run's label -> its result with ``requests`` and ``cpu_busy`` filled in.
        step: Seconds per row.
    """
    header = ["t (s)"]
    columns: list[list[str]] = []
    for label, result in results.items():
        requests = result.get("requests") or {}
        busy = result.get("cpu_busy") or {}
        offset = round(float(requests.get("start", 0)) - float(busy.get("started", 0)))
        per_second = busy.get("per_second") or {}
        series = {
            "req/s": requests.get("reconcile_per_second") or [],
            "binds/s": requests.get("scheduler_binds_per_second") or [],
            "op CPU": (per_second.get("operator") or [])[max(0, offset) :],
            "apiserver CPU": (per_second.get("kube-apiserver") or [])[max(0, offset) :],
            "machine CPU": (per_second.get("machine") or [])[max(0, offset) :],
        }
        for name, values in series.items():
            header.append(f"{label} {name}")
            columns.append([_mean(values[i : i + step]) for i in range(0, len(values), step)])
    length = max((len(c) for c in columns), default=0)
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---|" * (len(header) - 1)]
    for row in range(length):
        cells = [f"{row * step}-{(row + 1) * step}"]
        cells += [c[row] if row < len(c) else "" for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _mean(values: list[float] | list[int]) -> str:
    return f"{sum(values) / len(values):.2f}".rstrip("0").rstrip(".") if values else ""
