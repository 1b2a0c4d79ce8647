"""The simulated Job controller (batch/v1): runs each Job's pods and keeps the Job's status.

A Job gets one pod at a time (up to ``parallelism``) from its template, owned by the Job and
labelled as kube-controller-manager labels them; the kubelet runs the pod to Succeeded or
Failed. The Job completes (SuccessCriteriaMet, Complete) once ``completions`` pods succeeded,
and fails (FailureTarget, Failed, reason BackoffLimitExceeded) once more than
``backoffLimit`` pods failed.
"""

from __future__ import annotations

import copy
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.machinery.timestamps import now_rfc3339
from rayop.sim.nodes.pod_status import condition_true
from rayop.sim.storage.controller_base import StoreController, error_code, meta
from rayop.sim.storage.store import Store

_TERMINAL = ("Succeeded", "Failed")


def _job_owner_uid(pod: Obj) -> str | None:
    for ref in meta(pod).get("ownerReferences") or []:
        if ref.get("kind") == "Job" and ref.get("controller"):
            return str(ref.get("uid"))
    return None


def _finished(job: Obj) -> bool:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return True
    return False


class JobController(StoreController):
    """Creates the pods of batch/v1 Jobs and reports their progress in the Job's status."""

    name = "jobs"
    watched = frozenset({("batch", "jobs"), ("", "pods")})

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._pods_by_job: dict[str, dict[str, Obj]] = {}
        self._job_keys: dict[str, tuple[str, str]] = {}
        self._jobs: ResourceInfo | None = None
        self._pods: ResourceInfo | None = None

    def observe(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        if info.plural == "pods":
            owner = _job_owner_uid(obj)
            if owner is None:
                return
            pods = self._pods_by_job.setdefault(owner, {})
            name = str(meta(obj).get("name"))
            if event_type == "DELETED":
                pods.pop(name, None)
            else:
                pods[name] = obj
        elif event_type == "DELETED":
            uid = str(meta(obj).get("uid"))
            self._job_keys.pop(uid, None)
            self._pods_by_job.pop(uid, None)
        else:
            md = meta(obj)
            self._job_keys[str(md.get("uid"))] = (str(md.get("namespace")), str(md.get("name")))

    def needs_handling(
        self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None
    ) -> bool:
        if info.plural == "jobs":
            return True
        if _job_owner_uid(obj) is None:
            return False
        if old is None or event_type == "DELETED":
            return True
        status, old_status = obj.get("status") or {}, old.get("status") or {}
        return (
            status.get("phase") != old_status.get("phase")
            or condition_true(obj, "Ready") != condition_true(old, "Ready")
            or meta(obj).get("deletionTimestamp") != meta(old).get("deletionTimestamp")
        )

    async def resync(self) -> None:
        self._jobs = self.resource("batch", "v1", "jobs")
        self._pods = self.resource("", "v1", "pods")
        if self._jobs is None or self._pods is None:
            return
        pods, _ = self.store.list(self._pods)
        for pod in pods:
            self.observe("ADDED", self._pods, pod, None)
        jobs, _ = self.store.list(self._jobs)
        for job in jobs:
            self.observe("ADDED", self._jobs, job, None)
            await self.sync(str(meta(job).get("namespace")), str(meta(job).get("name")))

    async def handle(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        if info.plural == "jobs":
            self._jobs = info
            if event_type != "DELETED":
                await self.sync(str(meta(obj).get("namespace")), str(meta(obj).get("name")))
            return
        self._pods = info
        owner = _job_owner_uid(obj)
        key = self._job_keys.get(owner or "")
        if key is not None:
            await self.sync(*key)

    async def sync(self, namespace: str, name: str) -> None:
        """Brings one Job's pods and status up to date; blocks until written."""
        if self._jobs is None or self._pods is None:
            return
        job = await self.get(self._jobs, namespace, name)
        if job is None or meta(job).get("deletionTimestamp") or _finished(job):
            return
        uid = str(meta(job).get("uid"))
        spec = job.get("spec") or {}
        pods = list(self._pods_by_job.get(uid, {}).values())
        active = [
            p
            for p in pods
            if (p.get("status") or {}).get("phase") not in _TERMINAL
            and not meta(p).get("deletionTimestamp")
        ]
        succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
        failed = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed")
        completions = int(spec.get("completions") or 1)
        outcome: str | None = None
        if failed > int(spec.get("backoffLimit", 6)):
            outcome = "Failed"
            for pod in active:
                await self.delete(self._pods, namespace, str(meta(pod)["name"]))
            active = []
        elif succeeded >= completions:
            outcome = "Complete"
        elif not spec.get("suspend"):
            want = min(int(spec.get("parallelism") or 1), completions - succeeded) - len(active)
            for _ in range(max(0, want)):
                created = await self._create_pod(job)
                if created is not None:
                    active.append(created)
        ready = sum(1 for p in active if condition_true(p, "Ready"))
        await self._write_status(
            namespace,
            name,
            uid,
            active=len(active),
            ready=ready,
            succeeded=succeeded,
            failed=failed,
            outcome=outcome,
        )

    async def _create_pod(self, job: Obj) -> Obj | None:
        assert self._pods is not None
        md = meta(job)
        template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
        tmeta = template.get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        labels.update(
            {
                "batch.kubernetes.io/controller-uid": md["uid"],
                "batch.kubernetes.io/job-name": md["name"],
                "controller-uid": md["uid"],
                "job-name": md["name"],
            }
        )
        annotations = dict(tmeta.get("annotations") or {})
        annotations.setdefault("batch.kubernetes.io/job-tracking", "")
        pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": f"{md['name']}-",
                "namespace": md.get("namespace"),
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": md["name"],
                        "uid": md["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": template.get("spec") or {},
        }
        try:
            created: Any = await self.store.create(self._pods, str(md.get("namespace")), pod)
        except Exception as exc:
            if error_code(exc) in (403, 404, 409, 422):
                return None
            raise
        if isinstance(created, dict):
            self.observe("ADDED", self._pods, created, None)
            return created
        return None

    async def _write_status(
        self,
        namespace: str,
        name: str,
        uid: str,
        *,
        active: int,
        ready: int,
        succeeded: int,
        failed: int,
        outcome: str | None,
    ) -> None:
        assert self._jobs is not None
        now = now_rfc3339()

        def change(job: Obj) -> bool:
            before = copy.deepcopy(job.get("status") or {})
            st: Obj = job.setdefault("status", {})
            st.setdefault("startTime", now)
            for key, value in (("active", active), ("succeeded", succeeded), ("failed", failed)):
                if value or key in st:
                    st[key] = value
            st["ready"] = ready
            st["terminating"] = 0
            st.setdefault("uncountedTerminatedPods", {})
            if outcome == "Complete" and not _finished(job):
                st["completionTime"] = now
                st["conditions"] = [
                    *st.get("conditions", []),
                    _condition(
                        "SuccessCriteriaMet",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods",
                        now,
                    ),
                    _condition(
                        "Complete",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods",
                        now,
                    ),
                ]
            elif outcome == "Failed" and not _finished(job):
                message = "Job has reached the specified backoff limit"
                st["conditions"] = [
                    *st.get("conditions", []),
                    _condition("FailureTarget", "BackoffLimitExceeded", message, now),
                    _condition("Failed", "BackoffLimitExceeded", message, now),
                ]
            return st != before

        await self.mutate(self._jobs, namespace, name, change, subresource="status", uid=uid)


def _condition(ctype: str, reason: str, message: str, now: str) -> Obj:
    return {
        "type": ctype,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": now,
        "lastTransitionTime": now,
    }
