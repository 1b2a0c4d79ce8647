"""Plays the pod network of a real control plane whose pods kwok runs: Ray heads and submitters.

kwok pods run no processes, so nothing would answer at a head pod's IP. The real tier starts the
kube-apiserver with an egress selector that sends every "cluster" connection (its services
proxy, which rayop uses to reach dashboards) as an HTTP ``CONNECT <pod IP>:<port>`` request to
a Unix socket beside the kubeconfig (``rayop.cli.realcluster.pod_network_socket``).
:class:`PodNetwork` binds that socket and

* follows head pods (``ray.io/node-type=head``) through a watch; each Running and Ready head
  gets a :class:`~rayop.sim.dashboard.head.SimDashboard` (dropped when the pod goes away, stops being
  ready or changes IP), served on loopback ports that ``CONNECT <head IP>:<8265|8000|52365>``
  is tunnelled to (the serve port refuses until Serve runs, as a real head does);
* plays K8sJobMode submitter pods, which kwok leaves Running (its ``pod-complete`` stage skips
  pods that set ``RAY_JOB_SUBMISSION_ID``): it parses the container's ``ray job submit``
  command, submits to the head behind the address like the real CLI, follows the job, and
  then completes the pod through ``pods/<name>/status`` (exit 0, or 1 when the job FAILED).

So the requests the operator sends go through the real apiserver's proxy and the EndpointSlices
the real controller-manager wrote; only the far end is simulated.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import socket
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from rayop.kube.client import KubeClient
from rayop.kube.errors import ApiError, TransportError
from rayop.kube.resources import PODS, SECRETS, SERVICES
from rayop.sim.dashboard.clock import LoopClock
from rayop.sim.dashboard.head import DashboardConfig, SimDashboard
from rayop.sim.dashboard.jobs import TERMINAL, DashboardHttpError
from rayop.sim.dashboard.submitter import SubmitterCommand, parse_submitter, service_of

log = logging.getLogger(__name__)
Obj = dict[str, Any]

SUBMITTER_ENV = "RAY_JOB_SUBMISSION_ID"
DEFAULT_PORTS = {8265: "dashboard", 8000: "serve", 52365: "agent"}
PORT_NAMES = {"dashboard": "dashboard", "serve": "serve", "dashboard-agent": "agent"}
FAST_DASHBOARD = DashboardConfig(
    job_pending_seconds=0.2, job_run_seconds=1.0, serve_deploy_seconds=0.5
)


@dataclass
class Head:
    """One simulated head: its dashboard and the local port of each of its ports."""

    pod: Obj
    dashboard: SimDashboard
    sites: list[web.SockSite]
    ports: dict[int, int]
    """Pod port -> loopback port of the site serving it."""


def _md(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _ready_ip(pod: Mapping[str, Any]) -> str:
    """Returns the IP of a Running, Ready, not terminating pod ("" otherwise)."""
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    if _md(pod).get("deletionTimestamp") or status.get("phase") != "Running" or not ready:
        return ""
    return str(status.get("podIP") or "")


def _head_ports(pod: Mapping[str, Any]) -> dict[int, str]:
    """Maps the head container's ports (by name, then number) to dashboard/serve/agent."""
    ports = dict(DEFAULT_PORTS)
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    for entry in containers[0].get("ports") or []:
        kind = PORT_NAMES.get(str(entry.get("name") or ""))
        if kind is not None:
            ports[int(entry["containerPort"])] = kind
    return ports


def _is_submitter(pod: Mapping[str, Any]) -> bool:
    return any(
        e.get("name") == SUBMITTER_ENV
        for c in (pod.get("spec") or {}).get("containers") or []
        for e in c.get("env") or []
    )


class PodNetwork:
    """Serves simulated Ray heads at kwok pod IPs and plays submitter pods (see module doc).

    Use ``async with PodNetwork(client, socket_path): ...``; entering blocks until the socket is
    bound and the pods have been listed once.

    Args:
        client: A client with cluster-wide read access to pods and services (and pod status
            writes, for submitters).
        socket_path: The apiserver's egress socket.
        config: Timings of the simulated jobs and Serve applications.
    """

    def __init__(
        self, client: KubeClient, socket_path: Path, *, config: DashboardConfig = FAST_DASHBOARD
    ) -> None:
        self.client = client
        self.socket_path = socket_path
        self.config = config
        self.clock = LoopClock()
        self.heads: dict[str, Head] = {}
        """By pod uid."""
        self.submissions: list[tuple[str, str, str]] = []
        """(namespace, cluster, submission id) of every accepted submission."""
        self._by_local_port: dict[int, tuple[SimDashboard, str]] = {}
        self._played: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._tunnels: set[asyncio.Task[Any]] = set()
        """The running connection handlers of the tunnel server."""
        self._runner: web.AppRunner | None = None
        self._server: asyncio.Server | None = None
        self._listed = asyncio.Event()

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> PodNetwork:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._http)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        self.socket_path.unlink(missing_ok=True)
        self._server = await asyncio.start_unix_server(self._on_connect, str(self.socket_path))
        self._spawn(self._follow_pods())
        await asyncio.wait_for(self._listed.wait(), 30)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
        # The server's connection handlers (the apiserver's tunnels, kept alive) are not
        # ended by closing the server: cancel them so that each closes both of its sockets.
        tasks = [*self._tasks, *self._tunnels]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.socket_path.unlink(missing_ok=True)
        if self._runner is not None:
            await self._runner.cleanup()

    def _spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- views for tests -------------------------------------------------------------------

    def for_cluster(self, namespace: str, cluster: str) -> SimDashboard | None:
        """Returns the dashboard of the RayCluster's ready head, if it has one."""
        for head in self.heads.values():
            dash = head.dashboard
            if dash.namespace == namespace and dash.cluster == cluster:
                return dash
        return None

    # -- following pods --------------------------------------------------------------------

    async def _follow_pods(self) -> None:
        while True:
            try:
                listed = await self.client.list(PODS)
                seen = {str(_md(p).get("uid")) for p in listed["items"]}
                for uid in [u for u in self.heads if u not in seen]:
                    await self._drop(uid)
                for pod in listed["items"]:
                    await self._on_pod(pod, deleted=False)
                self._listed.set()
                rv = listed["metadata"]["resourceVersion"]
                async with self.client.watch(PODS, resource_version=rv) as events:
                    async for event in events:
                        if event.type in ("ADDED", "MODIFIED", "DELETED"):
                            await self._on_pod(event.object, deleted=event.type == "DELETED")
            except (ApiError, TransportError) as err:
                log.info("pod network: relisting pods after %s", err)
                await asyncio.sleep(0.2)

    async def _on_pod(self, pod: Obj, *, deleted: bool) -> None:
        uid = str(_md(pod).get("uid"))
        labels = _md(pod).get("labels") or {}
        if labels.get("ray.io/node-type") == "head":
            ip = "" if deleted else _ready_ip(pod)
            head = self.heads.get(uid)
            if head is not None and _ready_ip(head.pod) != ip:
                await self._drop(uid)
                head = None
            if head is None and ip:
                await self._add_head(pod, ip)
        if not deleted and _is_submitter(pod) and uid not in self._played and _ready_ip(pod):
            self._played.add(uid)
            self._spawn(self._play_submitter(pod))

    async def _add_head(self, pod: Obj, ip: str) -> None:
        assert self._runner is not None
        md = _md(pod)
        namespace = str(md.get("namespace"))
        dash = SimDashboard(
            namespace=namespace,
            cluster=str((md.get("labels") or {}).get("ray.io/cluster") or ""),
            pod_name=str(md.get("name")),
            pod_uid=str(md.get("uid")),
            pod_ip=ip,
            token=await self._auth_token(namespace, pod),
            config=self.config,
            clock=self.clock,
            on_submit=lambda d, job: self.submissions.append(
                (d.namespace, d.cluster, job.submission_id)
            ),
        )
        head = Head(pod, dash, [], {})
        for pod_port, kind in _head_ports(pod).items():
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            local = int(sock.getsockname()[1])
            site = web.SockSite(self._runner, sock)
            await site.start()
            head.sites.append(site)
            head.ports[pod_port] = local
            self._by_local_port[local] = (dash, kind)
        self.heads[dash.pod_uid] = head
        log.info("pod network: head %s/%s at %s", namespace, dash.pod_name, ip)

    async def _drop(self, uid: str) -> None:
        head = self.heads.pop(uid, None)
        if head is None:
            return
        head.dashboard.closed = True
        for local in head.ports.values():
            self._by_local_port.pop(local, None)
        for site in head.sites:
            await site.stop()

    async def _auth_token(self, namespace: str, pod: Obj) -> str | None:
        env = await self._env(namespace, ((pod.get("spec") or {}).get("containers") or [{}])[:1])
        return env.get("RAY_AUTH_TOKEN") or None if env.get("RAY_AUTH_MODE") == "token" else None

    async def _env(self, namespace: str, containers: list[Obj]) -> dict[str, str]:
        """Returns the containers' env as plain values (secretKeyRef resolved)."""
        out: dict[str, str] = {}
        for container in containers:
            for var in container.get("env") or []:
                if "value" in var:
                    out[var["name"]] = str(var["value"])
                    continue
                ref = (var.get("valueFrom") or {}).get("secretKeyRef")
                if ref:
                    with contextlib.suppress(ApiError):
                        secret = await self.client.get(SECRETS, ref["name"], namespace=namespace)
                        raw = (secret.get("data") or {}).get(ref["key"])
                        if raw is not None:
                            out[var["name"]] = base64.b64decode(raw).decode()
        return out

    # -- the tunnel ------------------------------------------------------------------------

    def _target(self, host: str, port: int) -> tuple[str, int] | None:
        for head in self.heads.values():
            if _ready_ip(head.pod) == host and port in head.ports:
                dash, kind = self._by_local_port[head.ports[port]]
                if kind == "serve" and not dash.serve.running:
                    return None  # nothing listens on the serve port before Serve starts
                return "127.0.0.1", head.ports[port]
        if host.startswith("127."):
            return host, port  # kwok's kubelet endpoint (the node IP is 127.0.0.1)
        return None

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tunnels.add(task)
        up_writer: asyncio.StreamWriter | None = None
        try:
            request_line = (await reader.readline()).decode(errors="replace")
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            method, authority, _ = [*request_line.split(" ", 2), "", ""][:3]
            host, _, port = authority.rpartition(":")
            target = self._target(host, int(port)) if method == "CONNECT" and port else None
            if target is None:
                writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
                return
            try:
                up_reader, up_writer = await asyncio.open_connection(*target)
            except OSError:
                writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
                return
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (OSError, ValueError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # the network is closing; asyncio's stream server logs a handler that re-raises
        finally:
            if task is not None:
                self._tunnels.discard(task)
            for stream in (writer, up_writer):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()

    async def _http(self, request: web.Request) -> web.StreamResponse:
        sock = request.transport.get_extra_info("sockname") if request.transport else None
        entry = self._by_local_port.get(int(sock[1])) if sock else None
        if entry is None or entry[0].closed:
            # A keep-alive tunnel to a dropped head: close it, so that the apiserver dials
            # again and reaches whichever head now has that IP (kwok reuses pod IPs at once).
            gone = web.Response(status=503)
            gone.force_close()
            return gone
        dash, kind = entry
        return await dash.handle(kind, request.match_info["tail"], request)

    # -- submitter pods --------------------------------------------------------------------

    def _dashboard_for(self, namespace: str, service: Obj) -> SimDashboard | None:
        selector = (service.get("spec") or {}).get("selector") or {}
        for head in self.heads.values():
            labels = _md(head.pod).get("labels") or {}
            if (
                selector
                and _md(head.pod).get("namespace") == namespace
                and all(labels.get(k) == v for k, v in selector.items())
            ):
                return head.dashboard
        return None

    async def _play_submitter(self, pod: Obj) -> None:
        md = _md(pod)
        namespace, name = str(md["namespace"]), str(md["name"])
        containers = (pod.get("spec") or {}).get("containers") or []
        env = await self._env(namespace, containers)
        cmd = parse_submitter(pod, env)
        if cmd is None:
            log.warning("pod network: cannot parse the submitter %s/%s", namespace, name)
            return
        dash = await self._wait_for_head(namespace, cmd)
        code = self._submit(dash, cmd, env)
        while code == 0 and not dash.closed:
            status = dash.job_status(cmd.submission_id)
            if status is None:
                code = 1
            elif status in TERMINAL:
                code = 1 if (not cmd.no_wait and status == "FAILED") else 0
                break
            await asyncio.sleep(self.config.submitter_poll_seconds)
        await self._complete(pod, 1 if dash.closed else code)

    async def _wait_for_head(self, namespace: str, cmd: SubmitterCommand) -> SimDashboard:
        target = service_of(cmd.address, namespace)
        while True:
            if target is not None:
                with contextlib.suppress(ApiError):
                    service = await self.client.get(SERVICES, target[1], namespace=target[0])
                    dash = self._dashboard_for(target[0], service)
                    if dash is not None and dash.gcs_healthy():
                        return dash
            await asyncio.sleep(self.config.submitter_poll_seconds)

    def _submit(self, dash: SimDashboard, cmd: SubmitterCommand, env: dict[str, str]) -> int:
        if dash.token and env.get("RAY_AUTH_TOKEN") != dash.token:
            return 1
        if cmd.guarded and dash.job_status(cmd.submission_id) is not None:
            return 0
        try:
            dash.submit_job(dict(cmd.body))
        except DashboardHttpError as err:
            log.info("pod network: submit of %s refused: %s", cmd.submission_id, err.status)
            return 1
        return 0

    async def _complete(self, pod: Obj, exit_code: int) -> None:
        """Ends the submitter pod as its kubelet would once the CLI exited."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        reason = "Completed" if exit_code == 0 else "Error"
        statuses = [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {
                    "terminated": {
                        "exitCode": exit_code,
                        "reason": reason,
                        "startedAt": now,
                        "finishedAt": now,
                    }
                },
            }
            for c in (pod.get("spec") or {}).get("containers") or []
        ]
        body = {
            "status": {
                "phase": "Succeeded" if exit_code == 0 else "Failed",
                "containerStatuses": statuses,
            }
        }
        md = _md(pod)
        with contextlib.suppress(ApiError):
            await self.client.patch(
                PODS, str(md["name"]), body, namespace=str(md["namespace"]), subresource="status"
            )


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            writer.close()
