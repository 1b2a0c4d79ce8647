"""Runs a simulated Ray dashboard for every ready head pod and routes HTTP to it.

The registry watches pods labelled ``ray.io/node-type=head``. A ready head gets a
:class:`~rayop.sim.dashboard.head.SimDashboard` (created on first use); the dashboard is dropped
when the pod is deleted, terminates or its container restarts, so a new head starts empty as a
real one does. One loopback aiohttp server serves every dashboard under
``/h/<pod uid>/<dashboard|serve|agent>/``; :meth:`DashboardRegistry.resolve` is the API server's
services-proxy resolver: a Service whose selector matches a ready head pod, on its dashboard
(8265), serve (8000) or agent (52365) port, resolves to that head's base URL.

A head pod annotated :data:`DELAY_ANNOTATION` (seconds, from its template) gets a dashboard that
holds back every answer that long: a slow head, or, with a delay beyond every client's timeout, one
that does not answer. It is how a plane in another process (``rayop apiserver``) is told which
dashboards to slow down; in process, :attr:`DashboardRegistry.faults` and each dashboard's own
``faults`` do the same.
"""

from __future__ import annotations

import base64
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from rayop.apimachinery.objects import Obj
from rayop.sim.dashboard.clock import LoopClock, SimClock
from rayop.sim.dashboard.head import DashboardConfig, DashboardFaults, SimDashboard
from rayop.sim.dashboard.jobs import SimJob
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.nodes.pod_status import condition_true
from rayop.sim.storage.controller_base import StoreController, meta
from rayop.sim.storage.store import Store

__all__ = ["DELAY_ANNOTATION", "PORT_KINDS", "DashboardRegistry", "SubmissionRecord"]

log = logging.getLogger(__name__)

PORT_KINDS = {
    "dashboard": "dashboard",
    "8265": "dashboard",
    "serve": "serve",
    "8000": "serve",
    "dashboard-agent": "agent",
    "52365": "agent",
}
"""A head's port names and numbers -> the kind of surface that answers there."""

DELAY_ANNOTATION = "sim.rayop/dashboard-delay"
"""A head pod's annotation: seconds its simulated dashboard holds back every answer."""


@dataclass(frozen=True)
class SubmissionRecord:
    """One accepted job submission (kept after its dashboard is gone)."""

    namespace: str
    cluster: str
    pod_uid: str
    submission_id: str
    entrypoint: str
    time: float


def _restarts(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def annotated_delay(pod: Obj) -> float | None:
    """Returns the head pod's :data:`DELAY_ANNOTATION` in seconds, or None when it has none (or
    it is not a number)."""
    value = (meta(pod).get("annotations") or {}).get(DELAY_ANNOTATION)
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        log.warning(
            "ignoring %s=%r on pod %s: not a number", DELAY_ANNOTATION, value, meta(pod).get("name")
        )
        return None


def _head_ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return (
        not meta(pod).get("deletionTimestamp")
        and status.get("phase") == "Running"
        and condition_true(pod, "Ready")
    )


def port_kind(service: Obj | None, port: str) -> str | None:
    """Maps a services-proxy port (name or number) to "dashboard", "serve", "agent" or None."""
    entries = ((service or {}).get("spec") or {}).get("ports") or []
    for entry in entries:
        name, number = str(entry.get("name") or ""), str(entry.get("port") or "")
        if port in (name, number) or (not port and len(entries) == 1):
            target = str(entry.get("targetPort") or "")
            for key in (name, number, target):
                if key in PORT_KINDS:
                    return PORT_KINDS[key]
                if key.startswith("serve-"):
                    return "serve"
            return None
    return PORT_KINDS.get(port)


class DashboardRegistry(StoreController):
    """Simulated dashboards of all head pods, their HTTP server and the proxy resolver.

    Args:
        store: The control plane's object store.
        config: Timings of jobs and Serve applications.
        clock: Time source of job/app transitions (LoopClock by default).
        host: Address of the loopback HTTP server.

    Attributes:
        faults: Fault knobs applied to every dashboard (each also has its own ``.faults``).
        submissions: Every accepted job submission, across all heads ever seen.
        url: Base URL of the HTTP server (once started).
    """

    name = "dashboards"
    watched = frozenset({("", "pods")})

    def __init__(
        self,
        store: Store,
        *,
        config: DashboardConfig | None = None,
        clock: SimClock | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        super().__init__(store)
        self.config = config or DashboardConfig()
        self.clock: SimClock = clock or LoopClock()
        self.faults = DashboardFaults()
        self.submissions: list[SubmissionRecord] = []
        self.url = ""
        self._host = host
        self._heads: dict[str, dict[str, Obj]] = {}
        self._dashboards: dict[str, SimDashboard] = {}
        self._runner: web.AppRunner | None = None

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Starts the HTTP server, then follows head pods; blocks until listening."""
        app = web.Application()
        app.router.add_route("*", "/h/{uid}/{kind}/{tail:.*}", self._serve_http)
        app.router.add_route("*", "/h/{uid}/{kind}", self._serve_http)
        self._runner = web.AppRunner(
            app, handle_signals=False, access_log=None, shutdown_timeout=0.2
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, 0)
        await site.start()
        port = int(self._runner.addresses[0][1])
        self.url = f"http://{self._host}:{port}"
        await super().start()

    async def stop(self) -> None:
        """Stops following pods and closes the HTTP server; blocks until done."""
        await super().stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        for dash in self._dashboards.values():
            dash.closed = True
        self._dashboards.clear()

    # -- StoreController hooks -----------------------------------------------------------

    def observe(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        md = meta(obj)
        if (md.get("labels") or {}).get("ray.io/node-type") != "head":
            return
        ns, uid = str(md.get("namespace") or ""), str(md.get("uid") or "")
        heads = self._heads.setdefault(ns, {})
        if event_type == "DELETED":
            heads.pop(uid, None)
            self._drop(uid)
            return
        heads[uid] = obj
        phase = (obj.get("status") or {}).get("phase")
        dash = self._dashboards.get(uid)
        if (
            md.get("deletionTimestamp")
            or phase in ("Succeeded", "Failed")
            or (dash is not None and _restarts(obj) != dash.restarts)
        ):
            self._drop(uid)
        elif dash is not None:
            _apply_delay(dash, obj)

    def needs_handling(
        self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None
    ) -> bool:
        return False

    async def resync(self) -> None:
        info = self.resource("", "v1", "pods")
        if info is None:
            return
        for pod in self.store.iter_objects(info):
            self.observe("ADDED", info, pod, None)

    # -- lookups -------------------------------------------------------------------------

    def dashboards(self) -> list[SimDashboard]:
        """Returns the live dashboards."""
        return list(self._dashboards.values())

    def for_pod(self, namespace: str, pod_uid: str) -> SimDashboard | None:
        """Returns the dashboard of a ready head pod (creating it), or None."""
        pod = self._heads.get(namespace, {}).get(pod_uid)
        if pod is None or not _head_ready(pod):
            return None
        dash = self._dashboards.get(pod_uid)
        if dash is None:
            dash = self._create(pod)
        return dash

    def for_selector(self, namespace: str, selector: Mapping[str, str]) -> SimDashboard | None:
        """Returns the dashboard of the ready head pod whose labels match ``selector``."""
        if not selector:
            return None
        matches = []
        for uid, pod in self._heads.get(namespace, {}).items():
            labels = meta(pod).get("labels") or {}
            if all(labels.get(k) == v for k, v in selector.items()) and _head_ready(pod):
                matches.append((str(meta(pod).get("creationTimestamp") or ""), uid))
        if not matches:
            return None
        return self.for_pod(namespace, max(matches)[1])

    def for_cluster(self, namespace: str, cluster: str) -> SimDashboard | None:
        """Returns the dashboard of the RayCluster's ready head pod, or None."""
        return self.for_selector(namespace, {"ray.io/cluster": cluster, "ray.io/node-type": "head"})

    def for_service(self, namespace: str, service: str) -> SimDashboard | None:
        """Returns the dashboard behind a Service (by its selector), or None."""
        svc = self._service(namespace, service)
        selector = ((svc or {}).get("spec") or {}).get("selector") or {}
        return self.for_selector(namespace, selector)

    def listening(self, namespace: str, pod_uid: str, kind: str) -> bool:
        """Tells whether a head pod answers on its ``kind`` port now (Serve only once running)."""
        dash = self.for_pod(namespace, pod_uid)
        return dash is not None and (kind != "serve" or dash.serve.running)

    def base_url(self, dashboard: SimDashboard, kind: str = "dashboard") -> str:
        """Returns the direct base URL of a dashboard's port ("dashboard", "serve", "agent")."""
        return f"{self.url}/h/{dashboard.pod_uid}/{kind}"

    def resolve(self, namespace: str, service: str, port: str | None) -> str | None:
        """The services-proxy resolver: base URL for ``service:port``, or None (never blocks)."""
        svc = self._service(namespace, service)
        if svc is None:
            return None
        kind = port_kind(svc, str(port or ""))
        if kind is None:
            return None
        dash = self.for_selector(namespace, (svc.get("spec") or {}).get("selector") or {})
        return None if dash is None else self.base_url(dash, kind)

    def resolve_pod(self, namespace: str, pod: str, port: str | None) -> str | None:
        """Like :meth:`resolve` for the pods proxy (``<pod>:<port>``) of a head pod."""
        for uid, obj in self._heads.get(namespace, {}).items():
            if meta(obj).get("name") == pod:
                kind = PORT_KINDS.get(str(port or ""))
                dash = self.for_pod(namespace, uid)
                return None if dash is None or kind is None else self.base_url(dash, kind)
        return None

    def resolve_pod_ip(self, pod_ip: str, port: str | None) -> str | None:
        """Like :meth:`resolve_pod` for a head addressed by its pod IP (``status.podIP``)."""
        for namespace, heads in self._heads.items():
            for obj in heads.values():
                if (obj.get("status") or {}).get("podIP") == pod_ip:
                    return self.resolve_pod(namespace, str(meta(obj).get("name") or ""), port)
        return None

    # -- internals -----------------------------------------------------------------------

    def _service(self, namespace: str, name: str) -> Obj | None:
        info = self.store.resources.get("", "v1", "services")
        return None if info is None else self.store.peek(info, namespace, name)

    def _create(self, pod: Obj) -> SimDashboard:
        md = meta(pod)
        ns, uid = str(md.get("namespace") or ""), str(md.get("uid") or "")
        dash = SimDashboard(
            namespace=ns,
            cluster=str((md.get("labels") or {}).get("ray.io/cluster") or ""),
            pod_name=str(md.get("name") or ""),
            pod_uid=uid,
            pod_ip=str((pod.get("status") or {}).get("podIP") or ""),
            token=self._auth_token(ns, pod),
            config=self.config,
            clock=self.clock,
            shared_faults=self.faults,
            on_submit=self._record,
        )
        dash.restarts = _restarts(pod)
        _apply_delay(dash, pod)
        self._dashboards[uid] = dash
        return dash

    def _drop(self, uid: str) -> None:
        dash = self._dashboards.pop(uid, None)
        if dash is not None:
            dash.closed = True

    def _record(self, dash: SimDashboard, job: SimJob) -> None:
        self.submissions.append(
            SubmissionRecord(
                dash.namespace,
                dash.cluster,
                dash.pod_uid,
                job.submission_id,
                job.entrypoint,
                job.submitted_at,
            )
        )

    def _auth_token(self, namespace: str, pod: Obj) -> str | None:
        env = container_env(self.store, namespace, pod, container_index=0)
        if env.get("RAY_AUTH_MODE") != "token":
            return None
        return env.get("RAY_AUTH_TOKEN") or None

    async def _serve_http(self, request: web.Request) -> web.StreamResponse:
        uid, kind = request.match_info["uid"], request.match_info["kind"]
        return await self.serve(uid, kind, request.match_info.get("tail", ""), request)

    async def serve(
        self, uid: str, kind: str, tail: str, request: web.Request
    ) -> web.StreamResponse:
        """Answers ``request`` for path ``tail`` on a head's port kind ("dashboard", "serve",
        "agent"); closes the connection, as a refused connect would fail, when nothing listens."""
        dash = self._dashboards.get(uid)
        if (
            dash is None
            or kind not in ("dashboard", "serve", "agent")
            or (kind == "serve" and not dash.serve.running)
        ):
            # Nothing listens there: close the connection as a refused connect would fail.
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=503)
        return await dash.handle(kind, tail, request)


def _apply_delay(dash: SimDashboard, pod: Obj) -> None:
    delay = annotated_delay(pod)
    if delay is not None:
        dash.faults.delay = delay


def container_env(
    store: Store,
    namespace: str,
    pod: Obj,
    *,
    container_index: int = 0,
    container_name: str | None = None,
) -> dict[str, str]:
    """Returns a container's env as plain values, resolving secretKeyRef/configMapKeyRef."""
    containers = (pod.get("spec") or {}).get("containers") or []
    chosen: Obj | None = None
    if container_name is not None:
        chosen = next((c for c in containers if c.get("name") == container_name), None)
    elif len(containers) > container_index:
        chosen = containers[container_index]
    out: dict[str, str] = {}
    for var in (chosen or {}).get("env") or []:
        name = str(var.get("name") or "")
        if "value" in var:
            out[name] = str(var.get("value") or "")
            continue
        source = var.get("valueFrom") or {}
        value = _ref_value(store, namespace, source.get("secretKeyRef"), "secrets", decode=True)
        if value is None:
            value = _ref_value(
                store, namespace, source.get("configMapKeyRef"), "configmaps", decode=False
            )
        if value is not None:
            out[name] = value
    return out


def _ref_value(store: Store, namespace: str, ref: Any, plural: str, *, decode: bool) -> str | None:
    if not isinstance(ref, dict):
        return None
    info = store.resources.get("", "v1", plural)
    obj = None if info is None else store.peek(info, namespace, str(ref.get("name") or ""))
    if obj is None:
        return None
    key = str(ref.get("key") or "")
    if decode:
        raw = (obj.get("data") or {}).get(key)
        if raw is None:
            string = (obj.get("stringData") or {}).get(key)
            return None if string is None else str(string)
        with contextlib.suppress(ValueError):
            return base64.b64decode(str(raw)).decode()
        return None
    value = (obj.get("data") or {}).get(key)
    return None if value is None else str(value)
