"""The embedded control plane: API server, scheduler/kubelet, Job controller, GC, endpoints and
a Gateway implementation.

Usage::

    async with EmbeddedControlPlane() as cp:
        ...  # point any Kubernetes client at cp.kubeconfig_path (or cp.url with cp.token)

Entering starts everything and returns once the server accepts requests; leaving stops it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import ssl
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from aiohttp import web

from rayop.sim.apiserver.app import build_app
from rayop.sim.apiserver.audit import Audit
from rayop.sim.apiserver.faults import Faults
from rayop.sim.apiserver.kubeconfig import kubeconfig_document
from rayop.sim.apiserver.pod_log import POD_LOGS_KEY
from rayop.sim.apiserver.proxy import POD_PROXY_KEY, ServiceRegistry
from rayop.sim.apiserver.rbac import Rbac
from rayop.sim.apiserver.tls import TlsMaterial, generate_self_signed, server_ssl_context
from rayop.sim.controller_manager.batch_jobs import JobController
from rayop.sim.controller_manager.cert_issuer import CertIssuerController
from rayop.sim.controller_manager.deployments import DeploymentController
from rayop.sim.controller_manager.endpoints import EndpointsController
from rayop.sim.controller_manager.garbage_collector import GarbageCollector
from rayop.sim.controller_manager.gateways import GatewayController
from rayop.sim.controller_manager.replica_sets import ReplicaSetController
from rayop.sim.controller_manager.resource_quotas import ResourceQuotaController
from rayop.sim.controller_manager.serviceaccounts import ServiceAccountController
from rayop.sim.controller_manager.stateful_sets import StatefulSetController
from rayop.sim.controller_manager.volumes import VolumeController
from rayop.sim.dashboard.head import DashboardConfig
from rayop.sim.dashboard.head_ports import HeadPorts
from rayop.sim.dashboard.registry import DashboardRegistry
from rayop.sim.dashboard.simulated_exec import SimulatedExecutor
from rayop.sim.dashboard.submitter import SubmitterSimulator
from rayop.sim.nodes.container_exec import CONTAINER_EXECUTOR_KEY
from rayop.sim.nodes.kubelet import Kubelet, KubeletConfig
from rayop.sim.nodes.processes.runtime import ProcessRuntime
from rayop.sim.nodes.processes.service_account import POD_API_HOST, PlaneEndpoint, pod_api_host
from rayop.sim.storage.controller_base import StoreController
from rayop.sim.storage.store import Store


class EmbeddedControlPlane:
    """A Kubernetes-compatible control plane in this process (async context manager).

    Args:
        host: Address to bind (loopback by default).
        port: TCP port; 0 picks a free one.
        state_path: SQLite file that persists every object (None: memory only).
        token: Bearer token clients must send (generated when None).
        kubelet: Simulated kubelet settings.
        faults: Fault-injection knobs (mutable while running).
        kubeconfig_path: Where to write the kubeconfig (a temporary file when None).
        history_size: Watch events kept per resource; a watch from an older resourceVersion
            gets 410 Expired.
        tls: Serve HTTPS with a self-signed certificate (its CA goes into the kubeconfig).
            kubectl only sends the bearer token over HTTPS, so ``rayop apiserver`` turns it on.
        dashboard: Timings of the simulated Ray dashboards (``.dashboards``) of head pods.
        bookmark_interval: Idle seconds between BOOKMARK events on watches that allow them.
        extended_resource_toleration: Run the ExtendedResourceToleration admission plugin, as
            GKE does: a pod requesting ``nvidia.com/gpu`` or ``google.com/tpu`` (any extended
            resource) gets a toleration of the NoSchedule taint of that name.
        audit_log_path: A file the audit appends every request to (JSON lines).

    Attributes:
        url, kubeconfig_path, token, faults, kubelet_config, audit, store: see the interfaces
        document; ``kubelet`` is the running :class:`Kubelet` (for its hooks).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        state_path: str | os.PathLike[str] | None = None,
        token: str | None = None,
        kubelet: KubeletConfig | None = None,
        faults: Faults | None = None,
        kubeconfig_path: str | os.PathLike[str] | None = None,
        history_size: int = 10_000,
        tls: bool = False,
        bookmark_interval: float = 10.0,
        dashboard: DashboardConfig | None = None,
        extended_resource_toleration: bool = False,
        audit_log_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.state_path = Path(state_path) if state_path is not None else None
        self.token = token or secrets.token_urlsafe(24)
        self.kubelet_config = kubelet or KubeletConfig()
        self.faults = faults or Faults()
        self.audit = Audit(log_path=Path(audit_log_path) if audit_log_path else None)
        self.history_size = history_size
        self.tls = tls
        self.bookmark_interval = bookmark_interval
        self.extended_resource_toleration = extended_resource_toleration
        self._tls_material: TlsMaterial | None = None
        self._tls_dir: tempfile.TemporaryDirectory[str] | None = None
        self._requested_kubeconfig = Path(kubeconfig_path) if kubeconfig_path else None
        self.kubeconfig_path = ""
        self.url = ""
        self._store: Store | None = None
        self._persistence: Any = None
        self._runner: web.AppRunner | None = None
        self._controllers: list[StoreController] = []
        self._kubelet: Kubelet | None = None
        self._services: ServiceRegistry | None = None
        self.dashboard_config = dashboard or DashboardConfig()
        self._dashboards: DashboardRegistry | None = None
        self._processes: ProcessRuntime | None = None
        self._head_ports: HeadPorts | None = None
        self._simulated_exec: SimulatedExecutor | None = None
        self._rbac: Rbac | None = None
        self._temp_kubeconfig = False

    @property
    def store(self) -> Store:
        """The object store (only while running)."""
        if self._store is None:
            raise RuntimeError("the control plane is not running")
        return self._store

    @property
    def kubelet(self) -> Kubelet:
        """The simulated kubelet (only while running)."""
        if self._kubelet is None:
            raise RuntimeError("the control plane is not running")
        return self._kubelet

    @property
    def dashboards(self) -> DashboardRegistry:
        """The simulated Ray dashboards of ready head pods (only while running)."""
        if self._dashboards is None:
            raise RuntimeError("the control plane is not running")
        return self._dashboards

    def _resolve_proxy(self, namespace: str, service: str, port: str) -> str | None:
        registered = self._services.resolve(namespace, service, port) if self._services else None
        if registered is None and self._dashboards is not None:
            return self._dashboards.resolve(namespace, service, port)
        if registered is None and self._processes is not None:
            return self._processes.resolve_url(namespace, service, port)
        return registered

    def resolve_service_url(self, namespace: str, service: str, port: str) -> str | None:
        """Returns the base URL serving ``service:port`` (a simulated head, or with
        ``real_ray`` a ready pod's address), or None; what the services proxy forwards to."""
        return self._resolve_proxy(namespace, service, port)

    def resolve_pod_ip_url(self, pod_ip: str, port: str) -> str | None:
        """Returns the base URL serving ``<pod IP>:<port>``, or None: a simulated head's port,
        or with ``real_ray`` the address itself when a live pod has that IP (pod IPs are
        loopback addresses there, reachable as they are)."""
        if self._dashboards is not None:
            return self._dashboards.resolve_pod_ip(pod_ip, port)
        if self._processes is None or self._store is None:
            return None
        info = self._store.resources.get("", "v1", "pods")
        pods, _ = ([], 0) if info is None else self._store.list(info, copy=False)
        alive = any(
            (pod.get("status") or {}).get("podIP") == pod_ip
            and not (pod.get("metadata") or {}).get("deletionTimestamp")
            for pod in pods
        )
        return f"http://{pod_ip}:{port}" if alive else None

    @property
    def processes(self) -> ProcessRuntime | None:
        """The process runtime running the pods (``real_ray``), else None."""
        return self._processes

    def register_service_handler(
        self, namespace: str, service: str, port: int | str, handler_base_url: str
    ) -> None:
        """Routes the services proxy for ``service:port`` to an in-process HTTP server."""
        if self._services is None:
            raise RuntimeError("the control plane is not running")
        self._services.register(namespace, service, port, handler_base_url)

    def unregister_service_handler(self, namespace: str, service: str, port: int | str) -> None:
        """Undoes :meth:`register_service_handler`."""
        if self._services is not None:
            self._services.unregister(namespace, service, port)

    def issue_service_account_token(self, namespace: str, name: str) -> str:
        """Returns a bearer token authenticating as the ServiceAccount (RBAC applies to it).

        Raises:
            StatusError: 404 when the ServiceAccount does not exist.
        """
        if self._rbac is None:
            raise RuntimeError("the control plane is not running")
        return self._rbac.issue_token(namespace, name)

    def kubeconfig_text(self, token: str, *, namespace: str = "default") -> str:
        """Returns a kubeconfig (YAML) for this server that authenticates with ``token``."""
        ca_data = self._tls_material.ca_data if self._tls_material is not None else None
        doc = kubeconfig_document(self.url, token, ca_data=ca_data, namespace=namespace)
        return yaml.safe_dump(doc, sort_keys=False)

    async def __aenter__(self) -> EmbeddedControlPlane:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    async def start(self) -> None:
        """Builds the store, starts the controllers and the HTTP server, writes the kubeconfig.

        Blocks until the server accepts requests; on failure, undoes what was started.
        """
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        self._store = self._build_store()
        self._services = ServiceRegistry(self._store)
        self._kubelet = Kubelet(self._store, self.kubelet_config)
        if self.kubelet_config.real_ray:  # real processes: no simulated heads or submitters
            self._processes = ProcessRuntime(
                self._store,
                self._kubelet.logs,
                ray_env=self.kubelet_config.ray_env,
                backoff=self.kubelet_config.crashloop_backoff,
            )
            self._kubelet.processes = self._processes
        else:
            self._dashboards = DashboardRegistry(self._store, config=self.dashboard_config)
            SubmitterSimulator(self._dashboards, self._kubelet)
            self._head_ports = HeadPorts(self._dashboards)
            self._simulated_exec = SimulatedExecutor(
                self._store, self._dashboards, self._head_ports
            )
        self._controllers = [
            ServiceAccountController(self._store),
            ResourceQuotaController(self._store),
            GarbageCollector(self._store),
            EndpointsController(self._store),
            JobController(self._store),
            DeploymentController(self._store),
            ReplicaSetController(self._store),
            StatefulSetController(self._store),
            VolumeController(self._store),
            CertIssuerController(self._store),
            GatewayController(self._store),
            self._kubelet,
            *([self._dashboards] if self._dashboards is not None else []),
        ]
        for controller in self._controllers:
            await controller.start()
        self._rbac = Rbac(self._store, self.token)
        app = build_app(
            self._store,
            token=self.token,
            faults=self.faults,
            audit=self.audit,
            proxy_resolver=self._resolve_proxy,
            bookmark_interval=self.bookmark_interval,
            rbac=self._rbac,
        )
        app[POD_LOGS_KEY] = self._kubelet.logs
        if self._processes is not None:
            app[POD_PROXY_KEY] = self._processes.resolve_pod_url
            app[CONTAINER_EXECUTOR_KEY] = self._processes
        elif self._dashboards is not None:
            app[POD_PROXY_KEY] = self._dashboards.resolve_pod
        if self._simulated_exec is not None:
            app[CONTAINER_EXECUTOR_KEY] = self._simulated_exec
        # handler_cancellation: a watch whose client has gone ends at once (as a request's
        # context is cancelled in kube-apiserver) instead of holding its watcher until the
        # next event or its timeout. Store writes never await, so none is cut in half.
        self._runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            shutdown_timeout=0.5,
            handler_cancellation=True,
        )
        await self._runner.setup()
        ssl_context = self._server_ssl_context()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=ssl_context)
        await site.start()
        port = int(self._runner.addresses[0][1])
        self.port = port
        pods_reach = self.host
        if self._processes is not None and (extra := pod_api_host(self.host)) is not None:
            # The pods' 127.0.0.1 is their own: they reach the plane at another address.
            await web.TCPSite(self._runner, extra, port, ssl_context=ssl_context).start()
            pods_reach = extra
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"{'https' if ssl_context else 'http'}://{host}:{port}"
        if self._processes is not None:
            ca_data = self._tls_material.ca_data if self._tls_material is not None else ""
            self._processes.endpoint = PlaneEndpoint(
                pods_reach, port, ca_data, self._rbac.issue_token
            )
        self._write_kubeconfig()

    async def stop(self) -> None:
        """Stops the HTTP server and the controllers; closes the state file. Blocks until done."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        for controller in reversed(self._controllers):
            await controller.stop()
        self._controllers = []
        if self._processes is not None:
            await self._processes.close()
            self._processes = None
        if self._head_ports is not None:
            await self._head_ports.close()
            self._head_ports = None
        if self._simulated_exec is not None:
            self._simulated_exec.close()
            self._simulated_exec = None
        if self._persistence is not None:
            close = getattr(self._persistence, "close", None)
            if close is not None:
                close()
            self._persistence = None
        if self._temp_kubeconfig and self.kubeconfig_path:
            with contextlib.suppress(OSError):
                os.unlink(self.kubeconfig_path)
        if self._tls_dir is not None:
            self._tls_dir.cleanup()
            self._tls_dir = None
        self._store = None
        self._rbac = None
        self.audit.close()

    def client_ssl_context(self) -> ssl.SSLContext | None:
        """Returns an SSL context trusting this server (None when it serves plain HTTP)."""
        if self._tls_material is None:
            return None
        return ssl.create_default_context(cafile=str(self._tls_material.cert_path))

    def _server_ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        if self.state_path is not None:
            directory = Path(f"{self.state_path}.tls")
        else:
            self._tls_dir = tempfile.TemporaryDirectory(prefix="rayop-tls-")
            directory = Path(self._tls_dir.name)
        wildcard = self.host in ("0.0.0.0", "::", "")
        pods = (POD_API_HOST,) if self.kubelet_config.real_ray else ()
        hosts = tuple(
            dict.fromkeys(("127.0.0.1", "localhost", *(() if wildcard else (self.host,)), *pods))
        )
        self._tls_material = generate_self_signed(directory, hosts=hosts)
        return server_ssl_context(self._tls_material)

    def _build_store(self) -> Store:
        toleration = self.extended_resource_toleration
        if self.state_path is None:
            return Store(history_size=self.history_size, extended_resource_toleration=toleration)
        from rayop.sim.storage.sqlite import SqlitePersistence

        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        self._persistence = SqlitePersistence(self.state_path)
        return Store(
            persistence=self._persistence,
            history_size=self.history_size,
            extended_resource_toleration=toleration,
        )

    def _write_kubeconfig(self) -> None:
        text = self.kubeconfig_text(self.token)
        if self._requested_kubeconfig is not None:
            path = self._requested_kubeconfig
            path.parent.mkdir(parents=True, exist_ok=True)
        else:
            fd, name = tempfile.mkstemp(prefix="rayop-kubeconfig-", suffix=".yaml")
            os.close(fd)
            path = Path(name)
            self._temp_kubeconfig = True
        path.write_text(text)
        path.chmod(0o600)
        self.kubeconfig_path = str(path)
