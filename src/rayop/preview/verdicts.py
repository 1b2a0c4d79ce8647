"""What each first pass would do, in words: the withheld writes of ``rayop preview`` classified
per ray.io object.

Each object gets one :class:`Verdict`, the most severe of its writes' effects, with a line per
effect and, as the reasons, the events its pass would have recorded about it:

- ``refused``: the operator refuses the object (KubeRay's validation and the gate checks, with
  the validating webhook's message); nothing else is done to it;
- ``no answer``: the pass raised, or had not ended when time ran out;
- ``new RayCluster``: a RayService (or RayJob) creates a cluster: its pods and the CPU, memory,
  GPU and other requests they add up to (for a RayService, a zero-downtime upgrade that needs
  that much room beside the running cluster; for a suspended RayJob that resumes, its status
  says so in this pass, the next pass creates the cluster);
- ``recreate pods``: pods are deleted (and others created), or a RayCluster starts suspending
  (its status says so in this pass, the next pass deletes its pods);
- ``create pods``: missing pods are created;
- ``job``: a RayJob's job is submitted again, stopped or deleted, or its submitter Job is created
  or deleted; a RayCluster deleted; or a RayJob starts suspending (its status says so in this
  pass, the next pass deletes its RayCluster and submitter Job) or, with a cluster selector,
  resumes;
- ``update in place``: a child (a Service, a pod's labels, a Serve config sent to the dashboard,
  the object's own metadata) is created or changed without restarting anything: which fields;
- ``status only``: only the object's status is written;
- ``nothing``.

The first five are disruptive (:attr:`Verdict.disruptive`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from rayop.api.rayjob import JobDeploymentStatus
from rayop.apimachinery.quantity import QuantityError
from rayop.controllers.assembly.catalog import CATALOG
from rayop.controllers.batchscheduler.gang_size import desired_replicas, desired_resources
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.raycluster.status import SUSPENDING
from rayop.preview.cron import CRON_KIND, cron_refusal, next_tick_lines
from rayop.preview.first_pass import PRIMARY, FirstPasses
from rayop.preview.manifests import refusal
from rayop.preview.recording_client import Write
from rayop.runtime.reconcile import Request

__all__ = [
    "DISRUPTIVE",
    "SEVERITY",
    "Verdict",
    "cluster_size",
    "verdicts",
    "writes_of",
]

Obj = dict[str, Any]

SEVERITY: Final = (
    "refused",
    "no answer",
    "new RayCluster",
    "recreate pods",
    "create pods",
    "job",
    "update in place",
    "status only",
    "nothing",
)
"""Every verdict, most severe first."""
DISRUPTIVE: Final = frozenset(SEVERITY[:6])
"""The verdicts that start, stop or restart something (or could not be told)."""
_CONTROLLER_KIND: Final = {b.name: b.kind for b in CATALOG}
_DASHBOARD_JOBS = "/proxy/api/jobs/"
SUSPENDING_LINE: Final = (
    "delete every Pod of the cluster: it starts suspending (the next pass deletes them)"
)
JOB_SUSPENDING_LINE: Final = (
    "delete the job's RayCluster and submitter Job: it starts suspending (the next pass deletes"
    " them)"
)
JOB_RESUMING_LINE: Final = "create the job's RayCluster: it resumes (the next pass creates it)"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the first pass over one object would do.

    Attributes:
        kind: The object's kind.
        namespace: Its namespace.
        name: Its name.
        verdict: One of :data:`SEVERITY`.
        effects: A line per effect (for ``refused`` and ``no answer``: why).
        reasons: The events the pass would record about the object, ``Reason: note``.
        room: Where the pods it would create go on the nodes (``rayop preview -f``; see
            :mod:`rayop.preview.capacity`), as plain data; None when not checked.
    """

    kind: str
    namespace: str
    name: str
    verdict: str
    effects: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    room: dict[str, Any] | None = None

    @property
    def disruptive(self) -> bool:
        """Tells whether the verdict is in :data:`DISRUPTIVE`."""
        return self.verdict in DISRUPTIVE

    def as_dict(self) -> dict[str, Any]:
        """The verdict as plain data (``--output json``)."""
        out = {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "verdict": self.verdict,
            "disruptive": self.disruptive,
            "effects": self.effects,
            "reasons": self.reasons,
        }
        if self.room is not None:
            out["room"] = self.room
        return out


def cluster_size(spec: Mapping[str, Any]) -> str:
    """``N pods (head + W workers), cpu X, memory Y, ...`` of a RayCluster spec (requests, a
    limit standing in for a missing request, as the scheduler counts them)."""
    workers = desired_replicas(spec)
    try:
        resources = desired_resources(spec)
        amounts = ", ".join(f"{k} {v.canonical()}" for k, v in sorted(resources.items()))
    except QuantityError as exc:
        amounts = f"resources unreadable: {exc}"
    return f"{workers + 1} pods (head + {workers} workers), {amounts or 'no resource requests'}"


def verdicts(
    objects: list[Obj],
    passes: FirstPasses,
    gates: FeatureGates,
    *,
    timeout: float,
    new: Collection[tuple[str, str, str]] = (),
) -> list[Verdict]:
    """Returns the verdict of each of ``objects`` (live ray.io objects, or as a file would
    create them: ``new`` names those by ``(kind, namespace, name)``), in order.

    The pass over an object not yet created fails once it looks for a child it only would have
    created (a RayCluster's head Service); its writes up to there are what applying the file
    starts, so they are its verdict, the failure a line after them.
    """
    now = datetime.now(UTC)
    out = []
    for obj in objects:
        verdict = _verdict(obj, passes, gates, timeout, new)
        if verdict.kind == CRON_KIND and verdict.verdict != "refused":
            effects = [*verdict.effects, *next_tick_lines(obj, now, cluster_size)]
            verdict = dataclasses.replace(verdict, effects=effects)
        out.append(verdict)
    return out


def _verdict(
    obj: Obj,
    passes: FirstPasses,
    gates: FeatureGates,
    timeout: float,
    new: Collection[tuple[str, str, str]],
) -> Verdict:
    kind, meta = str(obj["kind"]), obj["metadata"]
    ns, name = str(meta.get("namespace") or ""), str(meta["name"])
    request = Request(ns, name)
    reasons = _reasons(passes.events, kind, ns, name)
    refused = cron_refusal(obj, gates) if kind == CRON_KIND else refusal(obj, gates)
    if refused:
        return Verdict(kind, ns, name, "refused", [refused], reasons)
    if (kind, request) in passes.missing:
        return Verdict(kind, ns, name, "no answer", [f"no first pass within {timeout:g}s"])
    outcome = passes.outcomes.get((PRIMARY[kind], request))
    mine = writes_of(passes, kind, request)
    failed = outcome.error if outcome is not None else ""
    if failed and not (mine and (kind, ns, name) in new):
        return Verdict(kind, ns, name, "no answer", [f"the pass failed: {failed}"], reasons)
    effects = [_effect(w, obj) for w in mine]
    if not effects:
        return Verdict(kind, ns, name, "nothing", [], reasons)
    worst = min((severity for severity, _ in effects), key=SEVERITY.index)
    lines = list(dict.fromkeys(line for _, line in effects if line))
    if failed:
        lines.append(f"then the pass stops, as it does before its first writes land: {failed}")
    return Verdict(kind, ns, name, worst, lines, reasons)


def writes_of(passes: FirstPasses, kind: str, request: Request) -> list[Write]:
    """Returns the withheld writes of the pass of ``kind``'s controllers over ``request``."""
    return [
        w
        for w in passes.writes
        if w.request == request and _CONTROLLER_KIND.get(w.controller or "") == kind
    ]


def _reasons(events: list[Write], kind: str, ns: str, name: str) -> list[str]:
    out = []
    for event in events:
        body = event.body if isinstance(event.body, Mapping) else {}
        about = body.get("regarding") or body.get("involvedObject") or {}
        if (about.get("kind"), about.get("namespace") or "", about.get("name")) != (kind, ns, name):
            continue
        note = body.get("note") or body.get("message") or ""
        out.append(f"{body.get('reason', '')}: {note}")
    return list(dict.fromkeys(out))


def _effect(write: Write, obj: Obj) -> tuple[str, str]:
    """(verdict, line) of one write by the object's pass."""
    if write.resource is None:
        return _dashboard_effect(write)
    kind, meta = write.kind, obj["metadata"]
    target = f"{write.kind} {write.namespace}/{write.name or _generated(write)}"
    if kind == obj["kind"] and write.name == meta["name"]:
        if write.subresource == "status":
            if kind == "RayCluster" and _starts_suspending(write, obj):
                return "recreate pods", SUSPENDING_LINE
            if kind == "RayJob" and (moved := _job_moves(write, obj)) is not None:
                return moved
            return "status only", ""
        return "update in place", f"{write.verb} {obj['kind']} itself: {_changed(write, obj)}"
    if kind == "RayCluster" and write.verb == "create":
        spec = (write.body or {}).get("spec") or {}
        why = "a zero-downtime upgrade" if obj["kind"] == "RayService" else "the job's cluster"
        return "new RayCluster", f"create {target} ({why}): {cluster_size(spec)}"
    if kind == "Pod" and write.verb in ("delete", "deletecollection"):
        return "recreate pods", f"delete {target}"
    if kind == "Pod" and write.verb == "create":
        return "create pods", f"create {target}"
    if kind in ("Job", "RayCluster", "RayJob") and write.verb in ("create", "delete"):
        return "job", f"{write.verb} {target}"
    return "update in place", f"{write.verb} {target}"


def _starts_suspending(write: Write, obj: Obj) -> bool:
    """Tells whether a RayCluster's status write sets the Suspending condition it did not have:
    the pass that does so deletes no pod, the next one deletes them all."""

    def suspending(status: Any) -> bool:
        conditions = (status.get("conditions") or []) if isinstance(status, Mapping) else []
        return any(
            c.get("type") == SUSPENDING and c.get("status") == "True"
            for c in conditions
            if isinstance(c, Mapping)
        )

    return suspending((write.body or {}).get("status")) and not suspending(obj.get("status"))


def _job_moves(write: Write, obj: Obj) -> tuple[str, str] | None:
    """(verdict, line) of a RayJob's status write that starts what its next pass does: to
    Suspending (the next pass deletes its RayCluster and submitter Job), or from Suspended back
    to New (the next pass creates its cluster, or submits to the selected one, again)."""

    def deployment(status: Any) -> str:
        return str(status.get("jobDeploymentStatus") or "") if isinstance(status, Mapping) else ""

    before, after = deployment(obj.get("status")), deployment((write.body or {}).get("status"))
    if after == JobDeploymentStatus.SUSPENDING != before:
        return "job", JOB_SUSPENDING_LINE
    if (before, after) != (JobDeploymentStatus.SUSPENDED, JobDeploymentStatus.NEW):
        return None
    spec = obj.get("spec") or {}
    cluster = spec.get("rayClusterSpec")
    if cluster and not spec.get("clusterSelector"):
        return "new RayCluster", f"{JOB_RESUMING_LINE}: {cluster_size(cluster)}"
    return "job", "submit the job again: it resumes (the next pass submits it)"


def _dashboard_effect(write: Write) -> tuple[str, str]:
    where = write.path.split("/proxy", 1)[-1]
    if _DASHBOARD_JOBS in write.path or write.path.endswith("/proxy/api/jobs"):
        return "job", f"dashboard {write.verb} {where}"
    return "update in place", f"dashboard {write.verb} {where}"


def _generated(write: Write) -> str:
    meta = (write.body or {}).get("metadata") or {}
    return f"{meta.get('generateName', '')}*"


def _changed(write: Write, obj: Obj) -> str:
    """The paths an update of the object itself changes (a patch: the paths it sets)."""
    if write.verb == "patch":
        return ", ".join(_paths(write.body)) or "patch"
    before = {k: v for k, v in obj.items() if k != "status"}
    after = {k: v for k, v in (write.body or {}).items() if k != "status"}
    return ", ".join(_diff(before, after)) or "no field"


def _paths(value: Any, prefix: str = "", depth: int = 3) -> list[str]:
    if not isinstance(value, Mapping) or depth == 0:
        return [prefix] if prefix else []
    out: list[str] = []
    for key, sub in value.items():
        out += _paths(sub, f"{prefix}.{key}" if prefix else str(key), depth - 1)
    return out


def _diff(before: Any, after: Any, prefix: str = "", depth: int = 4) -> list[str]:
    if before == after:
        return []
    if not (isinstance(before, Mapping) and isinstance(after, Mapping)) or depth == 0:
        return [prefix or "."]
    out: list[str] = []
    for key in dict.fromkeys([*before, *after]):
        if key in ("resourceVersion", "managedFields"):
            continue
        path = f"{prefix}.{key}" if prefix else str(key)
        out += _diff(before.get(key), after.get(key), path, depth - 1)
    return out
