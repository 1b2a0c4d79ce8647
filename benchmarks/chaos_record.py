"""The chaos campaign's invariant checker: what happened, from the plane's own record, never from
the operator's word (benchmarks/chaos.py; not a test).

:class:`Record` subscribes to the embedded plane's change feed (every committed write, in
resourceVersion order, before the write returns) and checks as each change commits:

- **no over-creation**: when a Ray pod is created, the live pods of its group (not being deleted,
  not finished) are at most what the RayCluster asked for at any time in the last
  :data:`STALE_WINDOW` seconds (a pass may act on a spec that far behind: watch lag and slow
  calls), and a cluster never has two live heads;
- **no status goes backwards**: ``status.observedGeneration`` never decreases nor disappears; a
  RayJob's ``jobStatus`` never leaves SUCCEEDED/FAILED/STOPPED and its ``jobDeploymentStatus``
  never leaves Complete/Failed;
- **a RayService keeps serving**: once a RayService reported Running, until it is deleted its serve
  Service always selects a RayCluster that exists, is not being deleted, and has a Running and
  Ready head pod (an upgrade switches the Service to the new cluster only once that one serves).

After the run, :meth:`Record.after_run` adds the checks that need the whole history:

- **no duplicate submission**: the simulated Ray heads' own submission log holds at most one
  accepted submission per RayJob (the SidecarMode and InteractiveMode ones included: the
  campaign plays the sidecar and the user once);
- **nothing deleted that the operator did not create and own**: every successful delete in the
  API server's audit by the operator's ServiceAccount names an object the audit shows that same
  user creating, and whose last stored version had an owner reference;
- **nothing outlives its owner** and **nothing is stuck deleting** once converged.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.machinery.resources import ResourceInfo
from rayop.testing.readiness import running_and_ready

__all__ = ["STALE_WINDOW", "Record", "Violation"]

Obj = dict[str, Any]
Key = tuple[str, str]

STALE_WINDOW = 15.0
"""Seconds of spec history a pod create may act on (the largest planned watch lag and slowness,
with their retries, fit in it)."""

_TERMINAL_JOB = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
_TERMINAL_DEPLOYMENT = frozenset({"Complete", "Failed"})
_FOLLOWED = frozenset({"pods", "rayclusters", "rayjobs", "rayservices", "services", "jobs"})
_STATUS_KINDS = frozenset({"rayclusters", "rayjobs", "rayservices"})


@dataclass(frozen=True)
class Violation:
    """One broken invariant: which, when (Unix time), on what, and the evidence."""

    invariant: str
    time: float
    subject: str
    detail: str


def _meta(obj: Obj) -> Obj:
    md = obj.get("metadata")
    return md if isinstance(md, dict) else {}


def _labels(obj: Obj) -> dict[str, str]:
    return dict(_meta(obj).get("labels") or {})


def _live(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return not _meta(pod).get("deletionTimestamp") and phase not in ("Failed", "Succeeded")


def desired_counts(cluster: Obj) -> dict[str, int]:
    """What a RayCluster asks for: ``{"": heads, group: pods}`` (suspended: nothing)."""
    spec = cluster.get("spec") or {}
    if spec.get("suspend"):
        return {"": 0}
    out = {"": 1}
    for group in spec.get("workerGroupSpecs") or []:
        replicas = int(group.get("replicas") or 0)
        if group.get("suspend"):
            replicas = 0
        low, high = group.get("minReplicas"), group.get("maxReplicas")
        if low is not None:
            replicas = max(replicas, int(low))
        if high is not None:
            replicas = min(replicas, int(high))
        out[str(group.get("groupName"))] = replicas * int(group.get("numOfHosts") or 1)
    return out


@dataclass
class _Serving:
    ever_running: bool = False
    broken_since: float | None = None
    reason: str = ""


@dataclass
class Record:
    """Follows one plane's writes and collects :class:`Violation` s (see the module docstring).

    Args:
        cp: The running plane.
        namespace: The campaign's namespace (everything else is ignored).
        operator_user: The audit user name of the operator's ServiceAccount.
        clock: Unix time.
    """

    cp: EmbeddedControlPlane
    namespace: str
    operator_user: str
    clock: Callable[[], float] = time.time
    violations: list[Violation] = field(default_factory=list)
    checks: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    pod_creates: int = 0
    objects_seen: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    _objects: dict[str, dict[str, Obj]] = field(default_factory=lambda: defaultdict(dict))
    _last_meta: dict[tuple[str, str], Obj] = field(default_factory=dict)
    _desired: dict[str, list[tuple[float, dict[str, int]]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    _serving: dict[str, _Serving] = field(default_factory=lambda: defaultdict(_Serving))
    on_pod_created: list[Callable[[], None]] = field(default_factory=list)
    _unsubscribe: Callable[[], None] | None = None

    def start(self) -> None:
        """Subscribes to the plane's change feed."""
        self._unsubscribe = self.cp.store.subscribe(self._on_commit)

    def stop(self) -> None:
        """Unsubscribes (and ends any open serving gap at now)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        now = self.clock()
        for name, state in self._serving.items():
            if state.broken_since is not None:
                self._gap_ended(name, state, now)

    def objects(self, plural: str) -> dict[str, Obj]:
        """The campaign namespace's current objects of a kind, by name (read-only)."""
        return self._objects[plural]

    def _violate(self, invariant: str, subject: str, detail: str, at: float | None = None) -> None:
        self.violations.append(Violation(invariant, at or self.clock(), subject, detail))

    # -- the change feed -------------------------------------------------------------------

    def _on_commit(self, type_: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        plural = info.plural
        if plural not in _FOLLOWED or _meta(obj).get("namespace") != self.namespace:
            return
        name = str(_meta(obj).get("name"))
        self._last_meta[(plural, name)] = _meta(obj)
        self.objects_seen[plural].add(str(_meta(obj).get("uid")))
        if type_ == "DELETED":
            self._objects[plural].pop(name, None)
        else:
            self._objects[plural][name] = obj
        now = self.clock()
        if plural == "rayclusters" and type_ != "DELETED":
            self._note_desired(name, obj, now)
        if plural == "rayclusters" and type_ == "DELETED":
            self._desired[name].append((now, {"": 0}))
        if plural == "pods" and type_ == "ADDED":
            self._check_pod_create(obj, now)
        if plural in _STATUS_KINDS and type_ == "MODIFIED" and old is not None:
            self._check_status(plural, name, old, obj)
        if plural in ("services", "pods", "rayclusters", "rayservices"):
            self._check_serving(now)

    def _note_desired(self, name: str, cluster: Obj, now: float) -> None:
        counts = desired_counts(cluster)
        history = self._desired[name]
        if not history or history[-1][1] != counts:
            history.append((now, counts))

    def _allowed(self, cluster: str, group: str, now: float) -> int:
        history = self._desired.get(cluster) or []
        allowed = 0
        for i, (_at, counts) in enumerate(history):
            ends = history[i + 1][0] if i + 1 < len(history) else now
            if ends >= now - STALE_WINDOW:
                allowed = max(allowed, counts.get(group, 0))
        return allowed

    def _check_pod_create(self, pod: Obj, now: float) -> None:
        labels = _labels(pod)
        cluster = labels.get("ray.io/cluster")
        if not cluster:
            return
        self.pod_creates += 1
        for hook in list(self.on_pod_created):
            hook()
        group = "" if labels.get("ray.io/node-type") == "head" else labels.get("ray.io/group", "")
        live = [
            p
            for p in self._objects["pods"].values()
            if _live(p)
            and _labels(p).get("ray.io/cluster") == cluster
            and (
                ""
                if _labels(p).get("ray.io/node-type") == "head"
                else _labels(p).get("ray.io/group", "")
            )
            == group
        ]
        allowed = self._allowed(cluster, group, now)
        self.checks["pod-create"] += 1
        if len(live) > allowed:
            what = "head" if group == "" else f"group {group}"
            self._violate(
                "no-over-creation",
                f"RayCluster {cluster} {what}",
                f"pod {_meta(pod).get('name')} made {len(live)} live pods; the spec asked for at "
                f"most {allowed} in the last {STALE_WINDOW:g} s ({sorted(_meta(p)['name'] for p in live)})",
                now,
            )

    def _check_status(self, plural: str, name: str, old: Obj, new: Obj) -> None:
        before, after = old.get("status") or {}, new.get("status") or {}
        self.checks["status-change"] += 1
        subject = f"{plural}/{name}"
        og_before, og_after = before.get("observedGeneration"), after.get("observedGeneration")
        if og_before is not None and (og_after is None or int(og_after) < int(og_before)):
            self._violate(
                "status-never-backwards", subject, f"observedGeneration {og_before} -> {og_after}"
            )
        if plural != "rayjobs":
            return
        for key, terminal in (
            ("jobStatus", _TERMINAL_JOB),
            ("jobDeploymentStatus", _TERMINAL_DEPLOYMENT),
        ):
            was, now = before.get(key), after.get(key)
            if was in terminal and now != was:
                self._violate("status-never-backwards", subject, f"{key} {was} -> {now}")

    def _check_serving(self, now: float) -> None:
        for name, rs in self._objects["rayservices"].items():
            state = self._serving[name]
            if _meta(rs).get("deletionTimestamp"):
                state.broken_since = None
                continue
            if (rs.get("status") or {}).get("serviceStatus") == "Running":
                state.ever_running = True
            if not state.ever_running:
                continue
            self.checks["serving"] += 1
            reason = self._why_not_serving(name)
            if reason and state.broken_since is None:
                state.broken_since, state.reason = now, reason
            elif not reason and state.broken_since is not None:
                self._gap_ended(name, state, now)
        for name in [n for n in self._serving if n not in self._objects["rayservices"]]:
            del self._serving[name]

    def _why_not_serving(self, rayservice: str) -> str:
        svc = self._objects["services"].get(f"{rayservice}-serve-svc")
        if svc is None:
            return "no serve Service"
        cluster = str(((svc.get("spec") or {}).get("selector") or {}).get("ray.io/cluster") or "")
        rc = self._objects["rayclusters"].get(cluster)
        if rc is None:
            return f"the serve Service selects {cluster!r}, which does not exist"
        if _meta(rc).get("deletionTimestamp"):
            return f"the serve Service selects {cluster!r}, which is being deleted"
        heads = [
            p
            for p in self._objects["pods"].values()
            if _labels(p).get("ray.io/cluster") == cluster
            and _labels(p).get("ray.io/node-type") == "head"
            and _live(p)
            and running_and_ready(p)
        ]
        if not heads:
            return f"the serve Service selects {cluster!r}, which has no ready head"
        return ""

    def _gap_ended(self, name: str, state: _Serving, now: float) -> None:
        assert state.broken_since is not None
        self._violate(
            "rayservice-keeps-serving",
            f"rayservices/{name}",
            f"{state.reason} for {now - state.broken_since:.2f} s",
            state.broken_since,
        )
        state.broken_since = None

    # -- after the run ---------------------------------------------------------------------

    def after_run(self) -> None:
        """Runs the history checks (submissions, operator deletes)."""
        self._check_submissions()
        self._check_deletes()

    def rayjob_of_cluster(self, cluster: str) -> str | None:
        """The RayJob a cluster was made for (from its last stored labels), or None."""
        md = self._last_meta.get(("rayclusters", cluster)) or {}
        labels = md.get("labels") or {}
        if labels.get("ray.io/originated-from-crd") == "RayJob":
            return str(labels.get("ray.io/originated-from-cr-name"))
        return None

    def _check_submissions(self) -> None:
        by_rayjob: dict[str, list[str]] = defaultdict(list)
        for sub in self.cp.dashboards.submissions:
            if sub.namespace != self.namespace:
                continue
            self.checks["submission"] += 1
            rayjob = self.rayjob_of_cluster(sub.cluster) or f"(cluster {sub.cluster})"
            by_rayjob[rayjob].append(sub.submission_id)
        for rayjob, ids in by_rayjob.items():
            if len(ids) > 1:
                self._violate(
                    "no-duplicate-submission",
                    f"rayjobs/{rayjob}",
                    f"the Ray heads accepted {len(ids)} submissions: {ids}",
                )

    def _check_deletes(self) -> None:
        created: set[tuple[str, str]] = set()
        for w in self.cp.audit.writes:
            if w.namespace != self.namespace or w.user != self.operator_user or w.subresource:
                continue
            key = (w.resource, w.name)
            if w.verb == "create" and w.code < 300:
                created.add(key)
            if w.verb == "deletecollection":
                self._violate("operator-deletes-only-its-own", w.resource, "a deletecollection")
            if w.verb != "delete" or w.code >= 300:
                continue
            self.checks["operator-delete"] += 1
            owners = (self._last_meta.get(key) or {}).get("ownerReferences") or []
            if key not in created:
                self._violate(
                    "operator-deletes-only-its-own", f"{w.resource}/{w.name}",
                    "deleted by the operator, which never created it", w.time,
                )  # fmt: skip
            elif not owners:
                self._violate(
                    "operator-deletes-only-its-own", f"{w.resource}/{w.name}",
                    "deleted by the operator, but it had no owner reference", w.time,
                )  # fmt: skip

    def check_final(self, converged: bool, pending: Iterable[str]) -> None:
        """Records the end state: not converged in time, objects stuck deleting, orphans."""
        if not converged:
            self._violate(
                "converges-after-faults", self.namespace, "; ".join(sorted(pending))[:2000]
            )
        uids = {str(_meta(o).get("uid")) for objs in self._objects.values() for o in objs.values()}
        for plural, objs in self._objects.items():
            for name, obj in objs.items():
                for ref in _meta(obj).get("ownerReferences") or []:
                    owner_kind = str(ref.get("kind"))
                    if (
                        owner_kind in ("RayCluster", "RayJob", "RayService", "Job")
                        and ref.get("uid") not in uids
                    ):
                        self._violate(
                            "nothing-outlives-its-owner", f"{plural}/{name}",
                            f"its owner {owner_kind} {ref.get('name')} is gone",
                        )  # fmt: skip
