"""The simulated scheduler and kubelet: places every pod on a fake node and runs it.

The role kwok plays for real clusters. Each new pod gets a node, a pod IP, and goes
Pending -> Running -> Ready after the configured delays (fixed plus jitter), with container
statuses and conditions shaped like a kubelet's. The binding and the first (Pending) status
are one write, and transitions whose delay is 0 are folded into the write before them, so a
pod costs between one and three writes. A configured fraction of pods fail or
crash-loop; pods of Jobs run to completion. A deleted pod (deletionTimestamp set) disappears
after ``min(grace period, delete_delay)`` once it has no finalizers left.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from rayop.apimachinery.objects import Obj
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.machinery.timestamps import now_rfc3339
from rayop.sim.nodes import pod_status as ps
from rayop.sim.nodes.container_logs import PodLogs
from rayop.sim.nodes.container_output import record_crash, record_exit, record_start
from rayop.sim.nodes.kubelet_config import KubeletConfig as KubeletConfig
from rayop.sim.nodes.pod_scheduling import PodScheduler
from rayop.sim.nodes.scheduler import Placement
from rayop.sim.storage.controller_base import StoreController, error_code, meta
from rayop.sim.storage.store import Store

if TYPE_CHECKING:
    from rayop.sim.nodes.processes.runtime import ProcessRuntime

log = logging.getLogger(__name__)

PodHook = Callable[[Obj], Awaitable[None] | None]


def _is_job_pod(pod: Obj) -> bool:
    return any(ref.get("kind") == "Job" for ref in meta(pod).get("ownerReferences") or [])


class Kubelet(StoreController):
    """Schedules and runs every pod of a :class:`Store` (see the module docstring).

    Attributes:
        config: the settings in force; replace it (``dataclasses.replace``) to change them.
        on_pod_running: hooks called with the pod when it starts running (sync or async); the
            pod is the store's shared object: read it, never change it.
        completion_claims: predicates; a Job pod any of them claims is not completed after
            ``job_duration`` but left running until :meth:`complete_pod`.
        logs: every container's log (what ``pods/log`` serves); producers of a container's
            output write to ``logs.current(uid, container)``.
    """

    name = "kubelet"

    def __init__(self, store: Store, config: KubeletConfig | None = None) -> None:
        super().__init__(store)
        self.config = config or KubeletConfig()
        self.on_pod_running: list[PodHook] = []
        self.completion_claims: list[Callable[[Obj], bool]] = []
        self.logs = PodLogs()
        self.processes: ProcessRuntime | None = None
        """Set (``--real-ray``): pods' containers run as local processes instead of timers."""
        self._rng = random.Random(self.config.seed)
        self._lifecycles: dict[str, asyncio.Task[None]] = {}
        self._finalizing: set[str] = set()
        self._placement = Placement(
            self.config.node_names(),
            capacity=self.config.node_capacity,
            labels=self.config.node_labels,
            taints=self.config.node_taints,
            pools=self.config.node_pools,
            nodes=self.config.extra_nodes,
        )
        self._scheduler = PodScheduler(store, self._placement)
        self._scheduler.writer = self
        self._pods: ResourceInfo | None = None

    # -- StoreController hooks -------------------------------------------------------------

    def wants(self, info: ResourceInfo) -> bool:
        return (info.group == "" and info.plural == "pods") or self._scheduler.wants(info)

    def observe(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        self._scheduler.observe(event_type, info, obj)

    def needs_handling(
        self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None
    ) -> bool:
        if info.plural != "pods":
            return False
        if event_type != "MODIFIED":
            return True
        md = meta(obj)
        if md.get("deletionTimestamp"):
            return str(md.get("uid")) not in self._finalizing
        return str(md.get("uid")) not in self._lifecycles and (obj.get("status") or {}).get(
            "phase"
        ) in (None, "Pending")

    async def resync(self) -> None:
        self._pods = self.resource("", "v1", "pods")
        await self._placement.create_nodes(self.store, time.time())
        self._scheduler.prime()
        if self._pods is None:
            return
        items, _ = self.store.list(self._pods)
        for pod in items:
            self._placement.note_ip(str((pod.get("status") or {}).get("podIP") or ""))
        for pod in items:
            await self.handle("ADDED", self._pods, pod, None)

    async def handle(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        self._pods = info
        md = meta(obj)
        uid = str(md.get("uid") or "")
        if event_type == "DELETED":
            self._cancel(uid)
            self._finalizing.discard(uid)
            if self.processes is not None:
                self.spawn(self.processes.stop_pod(uid, 0.0), name=f"kubelet-stop-{uid}")
            self.logs.forget(uid)
            return
        if md.get("deletionTimestamp"):
            self._cancel(uid)
            if not md.get("finalizers") and uid not in self._finalizing:
                self._finalizing.add(uid)
                self.spawn(self._finalize(obj), name=f"kubelet-delete-{md.get('name')}")
            return
        phase = (obj.get("status") or {}).get("phase")
        if uid in self._lifecycles or phase in ("Succeeded", "Failed"):
            return
        if event_type == "ADDED" or phase in (None, "Pending"):
            task = self.spawn(self._lifecycle(obj), name=f"kubelet-{md.get('name')}")
            self._lifecycles[uid] = task
            task.add_done_callback(lambda _t: self._forget_lifecycle(uid, _t))

    # -- public API --------------------------------------------------------------------------

    async def complete_pod(
        self,
        namespace: str,
        name: str,
        *,
        succeeded: bool = True,
        exit_code: int | None = None,
        message: str | None = None,
    ) -> bool:
        """Ends a running pod now (phase Succeeded or Failed); blocks until written.

        Returns:
            True when the pod existed and was not already terminated.
        """
        info = self._pods or self.resource("", "v1", "pods")
        if info is None:
            return False
        current = await self.get(info, namespace, name)
        if current is None:
            return False
        self._cancel(str(meta(current).get("uid") or ""))

        def end(pod: Obj) -> bool:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return False
            ps.mark_terminated(
                pod, now_rfc3339(), succeeded=succeeded, exit_code=exit_code, message=message
            )
            return True

        written = await self.mutate(info, namespace, name, end, subresource="status")
        if written is not None:
            record_exit(self.logs, written)
        return written is not None

    # -- the pod's life ----------------------------------------------------------------------

    def _forget_lifecycle(self, uid: str, task: asyncio.Task[None]) -> None:
        if self._lifecycles.get(uid) is task:
            del self._lifecycles[uid]

    def _cancel(self, uid: str) -> None:
        task = self._lifecycles.pop(uid, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    def _delay(self, fixed: float) -> float:
        jitter = self.config.jitter
        return max(0.0, fixed) + (self._rng.uniform(0.0, jitter) if jitter > 0 else 0.0)

    def _roll(self, rate: float) -> bool:
        return rate > 0 and self._rng.random() < rate

    async def _lifecycle(self, pod: Obj) -> None:
        """Drives one pod from creation to Ready (or Failed / crash-looping / completed)."""
        cfg = self.config
        info = self._pods
        assert info is not None
        md = meta(pod)
        ns, name, uid = str(md.get("namespace") or ""), str(md["name"]), str(md.get("uid"))
        unschedulable = self._roll(cfg.unschedulable_rate)
        fails = self._roll(cfg.failure_rate)
        crashes = not fails and self._roll(cfg.crashloop_rate)
        job_fails = self._roll(cfg.job_failure_rate)
        pending, running = self._delay(cfg.pending_delay), self._delay(cfg.running_delay)
        ready = (
            self._delay(cfg.ready_delay)
            + ps.readiness_initial_delay(pod) * cfg.readiness_probe_factor
        )

        if pending > 0:
            await asyncio.sleep(pending)
        if unschedulable:
            nodes = len(self._placement.node_names)
            await self._write_status(
                info, ns, name, uid, lambda p: ps.mark_unschedulable(p, now_rfc3339(), nodes=nodes)
            )
            return
        if not (pod.get("spec") or {}).get("nodeName"):
            node = await self._scheduler.schedule(info, pod)
            if node is None:
                return
            pod = self.store.peek(info, ns, name) or pod
        if self.processes is not None:
            await self._run_processes(info, pod)
            return
        if (pod.get("status") or {}).get("phase") == "Running":
            ready_now = ps.condition_true(pod, "Ready")
        else:
            ready_now = ready <= 0 and not crashes
            if not await self._start(info, pod, running=running, fails=fails, ready=ready_now):
                return
        if crashes:
            await self._crashloop(info, ns, name, uid)
            return
        if not ready_now:
            if ready > 0:
                await asyncio.sleep(ready)
            written = await self._write_status(
                info, ns, name, uid, lambda p: ps.mark_ready(p, now_rfc3339())
            )
            if written is None:
                return
        claimed = any(claim(pod) for claim in self.completion_claims)
        if _is_job_pod(pod) and cfg.job_duration is not None and not claimed:
            await asyncio.sleep(self._delay(cfg.job_duration))
            ended = await self._write_status(
                info,
                ns,
                name,
                uid,
                lambda p: ps.mark_terminated(p, now_rfc3339(), succeeded=not job_fails),
            )
            if ended is not None:
                record_exit(self.logs, ended)

    async def _run_processes(self, info: ResourceInfo, pod: Obj) -> None:
        """Binds the pod with a loopback IP and lets the process runtime run it (--real-ray)."""
        assert self.processes is not None
        md = meta(pod)
        ns, name, uid = str(md.get("namespace") or ""), str(md["name"]), str(md.get("uid"))
        node = str((pod.get("spec") or {}).get("nodeName") or self._scheduler.placed(uid))
        host_ip, pod_ip = self._placement.host_ip(node), self.processes.allocate_ip()
        scheduled = await self._write_status(
            info,
            ns,
            name,
            uid,
            lambda p: ps.mark_scheduled(p, now_rfc3339(), host_ip=host_ip, pod_ip=pod_ip),
            node=node,
        )
        if scheduled is None:
            return

        async def write(stage: Callable[[Obj], None]) -> Obj | None:
            return await self._write_status(info, ns, name, uid, stage)

        await self.processes.run(scheduled, write)

    async def _start(
        self, info: ResourceInfo, pod: Obj, *, running: float, fails: bool, ready: bool
    ) -> bool:
        """Binds the pod and reports it Pending, then Running (Ready when ``ready``) or Failed.

        The binding and the Pending status are one write; the Running (or Failed) status
        joins it when ``running`` is 0. Returns True once the pod runs, False when it failed
        or went away.
        """
        md = meta(pod)
        ns, name, uid = str(md.get("namespace") or ""), str(md["name"]), str(md.get("uid"))
        node = str((pod.get("spec") or {}).get("nodeName") or self._scheduler.placed(uid))
        host_ip, pod_ip = self._placement.host_ip(node), self._placement.allocate_ip()
        stages: list[Callable[[Obj], None]] = [
            lambda p: ps.mark_scheduled(p, now_rfc3339(), host_ip=host_ip, pod_ip=pod_ip)
        ]
        if running > 0:
            if await self._write_status(info, ns, name, uid, *stages, node=node) is None:
                return False
            stages = []
            await asyncio.sleep(running)
        if fails:
            stages.append(lambda p: ps.mark_terminated(p, now_rfc3339(), succeeded=False))
            failed = await self._write_status(info, ns, name, uid, *stages, node=node)
            if failed is not None:
                record_start(self.logs, failed)
                record_exit(self.logs, failed)
            return False
        stages.append(lambda p: ps.mark_running(p, now_rfc3339(), ready=ready))
        written = await self._write_status(info, ns, name, uid, *stages, node=node)
        if written is None:
            return False
        record_start(self.logs, written)
        await self._run_hooks(written)
        return True

    async def _write_status(
        self,
        info: ResourceInfo,
        ns: str,
        name: str,
        uid: str,
        *stages: Callable[[Obj], None],
        node: str | None = None,
    ) -> Obj | None:
        """Applies ``stages`` to the latest pod and writes its status; None if it went away.

        With ``node``, a pod not yet bound gets ``spec.nodeName`` in the same write.
        """

        def apply(p: Obj) -> bool:
            if meta(p).get("deletionTimestamp"):
                return False
            if binding:
                p["spec"] = dict(p.get("spec") or {}, nodeName=node)
            for stage in stages:
                stage(p)
            return True

        stored = self.store.peek(info, ns, name)
        binding = (
            node is not None
            and stored is not None
            and not (stored.get("spec") or {}).get("nodeName")
        )
        if binding:
            return await self.mutate(info, ns, name, apply, uid=uid, with_status=True)
        return await self.mutate(info, ns, name, apply, subresource="status", uid=uid)

    async def _crashloop(self, info: ResourceInfo, ns: str, name: str, uid: str) -> None:
        restarts = 0
        while True:
            restarts += 1

            def crash(p: Obj, count: int = restarts) -> None:
                ps.mark_crashloop(p, now_rfc3339(), restart_count=count)

            crashed = await self._write_status(info, ns, name, uid, crash)
            if crashed is None:
                return
            record_crash(self.logs, crashed)
            backoff = min(300.0, self.config.crashloop_backoff * 2 ** (restarts - 1))
            await asyncio.sleep(backoff)

    async def _run_hooks(self, pod: Obj) -> None:
        for hook in list(self.on_pod_running):
            try:
                result = hook(pod)
                if inspect.isawaitable(result):
                    await result
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("kubelet: on_pod_running hook failed")

    async def _finalize(self, pod: Obj) -> None:
        """Removes a gracefully deleted pod after min(grace, delete_delay)."""
        info = self._pods
        assert info is not None
        md = meta(pod)
        ns, name, uid = str(md.get("namespace") or ""), str(md["name"]), md.get("uid")
        grace = md.get("deletionGracePeriodSeconds")
        delay = (
            self.config.delete_delay
            if grace is None
            else min(float(grace), self.config.delete_delay)
        )
        try:
            if self.processes is not None:
                await self.processes.stop_pod(str(uid), None if grace is None else float(grace))
                delay = 0.0
            await asyncio.sleep(max(0.0, delay))
            current = await self.get(info, ns, name)
            if (
                current is None
                or meta(current).get("uid") != uid
                or meta(current).get("finalizers")
            ):
                return
            try:
                await self.store.finalize_delete(info, ns, name)
            except Exception as exc:
                if error_code(exc) not in (404, 409):
                    raise
        finally:
            self._finalizing.discard(str(uid))
