"""A real Kubernetes control plane on loopback: etcd or kine, kube-apiserver, KCM, scheduler, kwok.

The binaries come from ``scripts/controlplane-build`` (cached under
``~/.cache/rayop/controlplane/<version>/``; etcd when built, else kine). :class:`RealCluster` starts them as detached
processes whose pids, ports and logs live in one working directory, writes an admin kubeconfig
there (bearer token; the CA is the apiserver's self-signed certificate), creates kwok nodes and
blocks until the cluster serves. The apiserver tunnels its pod-network traffic (services proxy)
to a Unix socket beside the kubeconfig (:data:`POD_NETWORK_SOCKET`), and kwok leaves K8sJobMode
submitter pods running, so that a test can play the Ray heads and submitters kwok cannot run. :func:`stop_cluster` stops them again from the pid file alone,
so ``rayop dev real-cluster down`` and a pytest fixture share the same code.

Everything here is synchronous and uses only the standard library (plus PyYAML), so a pytest
session fixture can call it without an event loop.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rayop.bench.child_lifetime import end_with_parent
from rayop.cli.realcluster_config import (
    AUDIT_LOG,
    POD_NETWORK_SOCKET,
    SUBMITTER_ENV,
    audit_policy,
    egress_selector_config,
    kwok_stages,
    pod_network_socket,
)
from rayop.cli.realcluster_http import ApiCaller, wait_until
from rayop.cli.realcluster_procs import running_pids, stop_cluster, tail_log, write_state

K8S_VERSION = "v1.37.2"
"""The Kubernetes release ``scripts/controlplane-build`` builds by default."""

REQUIRED_FILES = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "kwok-stages.yaml",
)
"""What a binaries directory must hold, besides a store (``etcd``, else ``kine``)."""
STORES = ("etcd", "kine")
"""Storage back ends in order of preference: etcd delivers watch events promptly; kine
(SQLite) was seen holding events back for a minute after a failed (conflicting) insert."""

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"

__all__ = [
    "POD_NETWORK_SOCKET",
    "SUBMITTER_ENV",
    "RealCluster",
    "RealClusterError",
    "RealClusterInfo",
    "RealClusterSettings",
    "default_binaries_dir",
    "free_port",
    "kwok_stages",
    "missing_binaries",
    "pod_network_socket",
]


class RealClusterError(RuntimeError):
    """A component failed to start, or the binaries are missing."""


def default_binaries_dir() -> Path:
    """Returns ``$RAYOP_CONTROLPLANE_DIR`` or the build script's cache directory."""
    explicit = os.environ.get("RAYOP_CONTROLPLANE_DIR")
    if explicit:
        return Path(explicit)
    root = os.environ.get("RAYOP_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rayop"
    )
    version = os.environ.get("RAYOP_K8S_VERSION", K8S_VERSION)
    return Path(root) / "controlplane" / version


def missing_binaries(binaries: Path) -> list[str]:
    """Returns the names of :data:`REQUIRED_FILES` (and a store) absent from ``binaries``."""
    missing = [name for name in REQUIRED_FILES if not (binaries / name).is_file()]
    if not any((binaries / store).is_file() for store in STORES):
        missing.append(" or ".join(STORES))
    return missing


@dataclass(frozen=True)
class RealClusterSettings:
    """Where and how to run the control plane."""

    workdir: Path
    """Holds logs, keys, the kine database, the kubeconfig and the pid file."""
    binaries: Path = field(default_factory=default_binaries_dir)
    """The directory ``scripts/controlplane-build`` filled."""
    nodes: int = 3
    """Fake kwok nodes to create."""
    start_timeout: float = 120.0
    """Seconds each component may take to become healthy (2 shared cores are slow)."""
    audit_reads: bool = False
    """Audit reads (get, list, watch) too, not only writes."""
    apiserver_flags: tuple[str, ...] = ()
    """More kube-apiserver flags, after the ones it always gets (``-v=1`` logs each watcher its
    watch cache closes as too slow)."""
    scheduler_flags: tuple[str, ...] = ()
    """More kube-scheduler flags, after the ones it always gets (``--kube-api-qps=500`` lifts its
    client's default 50 requests per second, which is also its rate of pod bindings)."""
    end_with_parent: bool = False
    """Each component gets SIGKILL when this process dies (``bench/child_lifetime.py``), for a
    benchmark that must leave nothing running; ``rayop dev real-cluster up`` leaves them."""


@dataclass(frozen=True)
class RealClusterInfo:
    """A running control plane, as recorded in the working directory."""

    kubeconfig: Path
    server: str
    token: str
    pids: dict[str, int]


PORT_ATTEMPTS = 3
"""Starts tried before giving up when a component's port was taken meanwhile."""

PORT_TAKEN = "address already in use"
"""What a component's log says when another process took its port between
:func:`free_port` and the component's bind (other control planes starting on the machine):
the start is tried again on new ports."""


def free_port() -> int:
    """Returns a loopback TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RealCluster:
    """Starts and stops one real control plane; ``start()`` blocks until it serves."""

    def __init__(self, settings: RealClusterSettings) -> None:
        self.settings = settings
        self.workdir = settings.workdir.resolve()
        self._pids: dict[str, int] = {}
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self.token = ""
        self.server = ""

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig's path."""
        return self.workdir / "kubeconfig"

    def start(self) -> RealClusterInfo:
        """Starts every component and blocks until pods can run on kwok nodes.

        Raises:
            RealClusterError: A binary is missing, already running, or a component did not
                become healthy in time (everything started so far is stopped again).
        """
        missing = missing_binaries(self.settings.binaries)
        if missing:
            raise RealClusterError(
                f"missing in {self.settings.binaries}: {', '.join(missing)}; "
                "run scripts/controlplane-build"
            )
        if running_pids(self.workdir):
            raise RealClusterError(f"a control plane from {self.workdir} is still running")
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "logs").mkdir(exist_ok=True)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                self._start_all()
                break
            except TimeoutError as exc:
                self.stop()
                logs = "\n".join(f"--- {n}:\n{tail_log(self.workdir, n, 8)}" for n in self._procs)
                raise RealClusterError(f"{exc}\n{logs}") from exc
            except RealClusterError as exc:
                self.stop()
                if PORT_TAKEN not in str(exc) or attempt == PORT_ATTEMPTS:
                    raise
                self._forget_attempt()
            except BaseException:
                self.stop()
                raise
        return RealClusterInfo(self.kubeconfig, self.server, self.token, dict(self._pids))

    def _forget_attempt(self) -> None:
        """Clears what a start that lost a port race left (processes already stopped): its
        process records and the store's data, so the next attempt starts fresh on new ports."""
        self._procs.clear()
        self._pids.clear()
        for data in ("etcd", "kine"):
            shutil.rmtree(self.workdir / data, ignore_errors=True)
        for log in (self.workdir / "logs").glob("*.log"):  # kept, apart from the next attempt's
            log.replace(log.with_suffix(".lost-port-race.log"))

    def stop(self) -> None:
        """Stops every component this object started (blocks until they exit)."""
        stop_cluster(self.workdir)
        for proc in self._procs.values():
            # A component may still be exiting (its /proc cmdline already gone, so stop_cluster
            # counts it as stopped): reap it, or it outlives its Popen as a ResourceWarning.
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    # -- start-up steps ------------------------------------------------------------------------

    def _start_all(self) -> None:
        store_port, api_port = free_port(), free_port()
        self._write_credentials()
        self.server = f"https://127.0.0.1:{api_port}"
        self._write_kubeconfig()
        self._start_store(store_port)
        self._start_apiserver(store_port, api_port)
        api = ApiCaller(self.server, self.token)
        self._wait(lambda: api.status("/api/v1/namespaces/default") == 200, "namespace default")
        self._write_kubeconfig(ca=self.workdir / "pki" / "apiserver.crt")  # self-signed at start
        self._start_controller_manager()
        self._start_scheduler()
        self._start_kwok()
        self._create_nodes(api)
        names = [f"kwok-node-{i}" for i in range(self.settings.nodes)]
        self._wait(lambda: all(api.node_ready(n) for n in names), "kwok nodes Ready")
        self._wait(
            lambda: api.status("/api/v1/namespaces/default/serviceaccounts/default") == 200,
            "the controller-manager (default ServiceAccount)",
        )

    def _write_credentials(self) -> None:
        self.token = secrets.token_hex(24)
        (self.workdir / "tokens.csv").write_text(
            f'{self.token},rayop-admin,rayop-admin,"system:masters"\n'
        )
        key = self.workdir / "sa.key"
        if not key.exists():
            openssl = shutil.which("openssl")
            if openssl is None:
                raise RealClusterError("openssl is needed to create the service-account key")
            subprocess.run(
                [openssl, "genrsa", "-out", str(key), "2048"], check=True, capture_output=True
            )

    def _write_kubeconfig(self, *, ca: Path | None = None) -> None:
        """Writes the admin kubeconfig; without ``ca`` the server certificate is not verified
        (only used until the apiserver has generated its self-signed certificate)."""
        cluster: dict[str, object] = {"server": self.server}
        if ca is not None:
            cluster["certificate-authority"] = str(ca)
        else:
            cluster["insecure-skip-tls-verify"] = True
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "rayop-real", "cluster": cluster}],
            "users": [{"name": "rayop-admin", "user": {"token": self.token}}],
            "contexts": [
                {
                    "name": "rayop-real",
                    "context": {"cluster": "rayop-real", "user": "rayop-admin"},
                }
            ],
            "current-context": "rayop-real",
        }
        self.kubeconfig.write_text(yaml.safe_dump(doc, sort_keys=False))
        self.kubeconfig.chmod(0o600)

    def _start_store(self, port: int) -> None:
        """Starts etcd (kine when etcd was not built) on ``port``; blocks until it listens."""
        etcd = (self.settings.binaries / "etcd").is_file()
        store = "etcd" if etcd else "kine"
        self._spawn(store, self._etcd_flags(port) if etcd else self._kine_flags(port))
        self._wait(lambda: _port_open(port), store)

    def _etcd_flags(self, port: int) -> list[str]:
        peer = f"http://127.0.0.1:{free_port()}"
        client = f"http://127.0.0.1:{port}"
        return [
            "--name=default",
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}",
            "--unsafe-no-fsync",
        ]

    def _kine_flags(self, port: int) -> list[str]:
        db = self.workdir / "kine"
        db.mkdir(exist_ok=True)
        endpoint = f"sqlite://{db / 'state.db'}?_journal=WAL&_busy_timeout=30000&_synchronous=OFF"
        return [
            f"--listen-address=127.0.0.1:{port}",
            f"--endpoint={endpoint}",
            "--metrics-bind-address=0",
        ]

    def _start_apiserver(self, store_port: int, port: int) -> None:
        d = self.workdir
        self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers=http://127.0.0.1:{store_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={d / 'pki'}",
                f"--token-auth-file={d / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",
                "--service-cluster-ip-range=10.96.0.0/16",
                f"--service-account-issuer=https://127.0.0.1:{port}",
                f"--service-account-key-file={d / 'sa.key'}",
                f"--service-account-signing-key-file={d / 'sa.key'}",
                "--disable-admission-plugins=ServiceAccount",
                "--endpoint-reconciler-type=none",
                # default 5m; short, so that old resourceVersions expire (410) within a test
                "--etcd-compaction-interval=5s",
                f"--egress-selector-config-file={self._write_egress_config()}",
                f"--audit-policy-file={self._write_audit_policy()}",
                f"--audit-log-path={d / 'logs' / AUDIT_LOG}",
                *self.settings.apiserver_flags,
            ],
        )

    def _write_audit_policy(self) -> Path:
        """Writes the audit policy (every write request, Metadata level)."""
        path = self.workdir / "audit-policy.yaml"
        policy = audit_policy(reads=self.settings.audit_reads)
        path.write_text(yaml.safe_dump(policy, sort_keys=False))
        return path

    def _write_egress_config(self) -> Path:
        """Writes the egress selector config that tunnels "cluster" traffic to the socket."""
        doc = egress_selector_config(pod_network_socket(self.kubeconfig))
        path = self.workdir / "egress-selector.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    def _component_flags(self, port: int) -> list[str]:
        kubeconfig = str(self.kubeconfig)
        return [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
        ]

    def _start_controller_manager(self) -> None:
        flags = self._component_flags(free_port())
        flags += [
            f"--service-account-private-key-file={self.workdir / 'sa.key'}",
            # kube-root-ca.crt ConfigMaps in every namespace would break "list everything in a
            # fresh namespace" expectations; nothing here mounts service-account tokens.
            "--controllers=*,-root-ca-cert-publisher",
            "--concurrent-gc-syncs=5",
        ]
        self._spawn("kube-controller-manager", flags)

    def _start_scheduler(self) -> None:
        flags = [*self._component_flags(free_port()), *self.settings.scheduler_flags]
        self._spawn("kube-scheduler", flags)

    def _start_kwok(self) -> None:
        stages = self.workdir / "kwok-stages.yaml"
        stages.write_text(kwok_stages((self.settings.binaries / "kwok-stages.yaml").read_text()))
        self._spawn(
            "kwok",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--config={stages}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
                "--cidr=10.244.0.0/16",
                "--node-ip=127.0.0.1",
                "--node-lease-duration-seconds=40",
            ],
        )

    def _create_nodes(self, api: ApiCaller) -> None:
        for i in range(self.settings.nodes):
            name = f"kwok-node-{i}"
            node = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "annotations": {KWOK_NODE_ANNOTATION: "fake"},
                    "labels": {"type": "kwok", "kubernetes.io/hostname": name},
                },
                "status": {
                    "allocatable": {"cpu": "1000", "memory": "4Ti", "pods": "1000"},
                    "capacity": {"cpu": "1000", "memory": "4Ti", "pods": "1000"},
                },
            }
            code = api.create("/api/v1/nodes", node)
            if code not in (201, 409):
                raise RealClusterError(f"creating node {name}: HTTP {code}")

    # -- processes -----------------------------------------------------------------------------

    def _spawn(self, binary: str, args: list[str]) -> None:
        log = (self.workdir / "logs" / f"{binary}.log").open("ab")
        proc = subprocess.Popen(
            [str(self.settings.binaries / binary), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=self.workdir,
            preexec_fn=end_with_parent() if self.settings.end_with_parent else None,
        )
        log.close()
        self._procs[binary] = proc
        self._pids[binary] = proc.pid
        write_state(self.workdir, {"server": self.server, "pids": self._pids})

    def _wait(self, condition: Callable[[], bool], what: str) -> None:
        """Blocks until ``condition()`` holds.

        Raises:
            TimeoutError: it did not within ``start_timeout`` seconds.
            RealClusterError: a component exited meanwhile.
        """
        wait_until(
            condition, timeout=self.settings.start_timeout, what=what, alive=self._check_alive
        )

    def _check_alive(self) -> None:
        for name, proc in self._procs.items():
            if proc.poll() is not None:
                raise RealClusterError(
                    f"{name} exited with code {proc.returncode}:\n{tail_log(self.workdir, name)}"
                )


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
