"""Where a bench run happens: the API server (fresh embedded, or an existing cluster) and the
operator under test (rayop in this process, or an external one read through its metrics URL).

- :class:`SubprocessControlPlane` runs ``rayop apiserver`` as a child process, so this process's
  CPU time and memory are the operator's (plus the bench driver's), not the API server's.
- :class:`InProcessControlPlane` runs :class:`~rayop.sim.controlplane.EmbeddedControlPlane` in
  this event loop (quicker to start; the operator's CPU figure then includes the server).
- :class:`ExistingCluster` uses a kubeconfig (a kwok cluster, say).

Each reports the requests it served by (verb, resource, subresource, code): the embedded
server's audit in process, the ``apiserver_request_total`` series of ``/metrics`` otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Self

import aiohttp
import yaml

from rayop.advise.exposition import Snapshot
from rayop.bench.child_lifetime import end_with_parent
from rayop.controllers.assembly.build import build_operator
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.assembly.run import new_client
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig, load_kubeconfig
from rayop.runtime.manager import Manager
from rayop.runtime.metrics import OperatorMetrics

RequestCounts = Counter[tuple[str, str, str, str]]
"""(verb, resource, subresource, code) -> requests served."""

_HTTP_VERBS = {"POST": "create", "PUT": "update"}
AUDIT_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


@dataclass(frozen=True, kw_only=True)
class ServerSettings:
    """The simulated cluster's behaviour (embedded control planes only)."""

    pod_start_delay: float = 1.0
    """Seconds from a pod's creation until it is Running and Ready."""
    api_latency: float = 0.0
    """Seconds added to every non-watch request."""
    watch_lag: float = 0.0
    """Seconds each watch event is held back."""
    api_service_slots: int | None = None
    """How many requests the API latency serves at once (None: all; see ``--service-slots``)."""
    seed: int = 0
    tls: bool = False
    """Serve HTTPS (client-go sends a bearer token over HTTPS only, so an operator the bench
    launches, KubeRay say, needs it)."""


def normalize_verb(verb: str) -> str:
    """Maps apiserver_request_total's verb label (POST, PUT, LIST...) to the audit verb."""
    return _HTTP_VERBS.get(verb.upper(), verb.lower())


def counts_from_metrics(text: str) -> RequestCounts:
    """Reads apiserver_request_total out of an API server's /metrics page."""
    counts: RequestCounts = Counter()
    for labels, value in Snapshot.from_text(text).select("apiserver_request_total"):
        key = (
            normalize_verb(labels.get("verb", "")),
            labels.get("resource", ""),
            labels.get("subresource", ""),
            labels.get("code", ""),
        )
        counts[key] += int(value)
    return counts


class ControlPlane(Protocol):
    """A running API server the bench talks to."""

    config: KubeConfig
    fresh: bool
    """True for an embedded server started for this run (its namespace is empty)."""

    async def __aenter__(self) -> Self:
        """Starts (or connects to) the server; blocks until it serves requests."""

    async def __aexit__(self, *exc: object) -> None:
        """Stops what was started."""

    async def request_counts(self, client: KubeClient) -> RequestCounts:
        """Returns the requests served so far (empty when the server does not say)."""

    def kubeconfig_file(self, directory: Path) -> Path:
        """Returns a kubeconfig file for the server (written into ``directory`` if need be), for
        an operator the bench starts as a process of its own."""


class InProcessControlPlane:
    """The embedded control plane in this event loop."""

    fresh = True

    def __init__(self, settings: ServerSettings) -> None:
        from rayop.sim.apiserver.faults import Faults
        from rayop.sim.controlplane import EmbeddedControlPlane
        from rayop.sim.nodes.kubelet import KubeletConfig

        latency = {v: (settings.api_latency, 0.0) for v in AUDIT_VERBS if v != "watch"}
        self._faults = Faults(
            latency=latency if settings.api_latency else {},
            watch_delay=settings.watch_lag,
            service_slots=settings.api_service_slots,
            seed=settings.seed,
        )
        self._cp = EmbeddedControlPlane(
            kubelet=KubeletConfig(
                pending_delay=0.0,
                running_delay=settings.pod_start_delay,
                ready_delay=0.0,
                seed=settings.seed,
            ),
            faults=self._faults,
            tls=settings.tls,
        )
        self.config = KubeConfig.for_server("http://127.0.0.1", token="")

    def set_api_latency(self, seconds: float) -> None:
        """Adds ``seconds`` to every non-watch request from now on (``--api-latency-step``)."""
        self._faults.latency = {v: (seconds, 0.0) for v in AUDIT_VERBS if v != "watch"}

    async def __aenter__(self) -> InProcessControlPlane:
        await self._cp.start()
        if self._cp.tls:
            self.config = await load_kubeconfig(self._cp.kubeconfig_path)
        else:
            self.config = KubeConfig.for_server(self._cp.url, token=self._cp.token)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._cp.stop()

    def kubeconfig_file(self, directory: Path) -> Path:
        """Returns the kubeconfig the plane wrote (``directory`` is not needed)."""
        del directory
        return Path(self._cp.kubeconfig_path)

    async def request_counts(self, client: KubeClient) -> RequestCounts:
        """Reads the audit (no request is made)."""
        del client
        counts: RequestCounts = Counter()
        for verb in AUDIT_VERBS:
            for resource in ("pods", "services", "rayclusters", "events", "secrets", "leases"):
                n = self._cp.audit.count(verb=verb, resource=resource)
                if n:
                    created = self._cp.audit.count(verb=verb, resource=resource, code=201)
                    counts[(verb, resource, "", "201")] += created
                    counts[(verb, resource, "", "other")] += n - created
            rest = self._cp.audit.count(verb=verb) - sum(
                v for k, v in counts.items() if k[0] == verb
            )
            if rest:
                counts[(verb, "other", "", "other")] += rest
        return counts


class SubprocessControlPlane:
    """``rayop apiserver`` in a child process (plain HTTP) that ends with this process.

    The child gets SIGKILL from the kernel when this process dies, by any signal
    (:mod:`rayop.bench.child_lifetime`); a graceful exit terminates it in ``__aexit__``.
    """

    fresh = True

    def __init__(self, settings: ServerSettings) -> None:
        self._settings = settings
        self._proc: asyncio.subprocess.Process | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._kubeconfig: Path | None = None
        self.config = KubeConfig.for_server("http://127.0.0.1", token="")

    def kubeconfig_file(self, directory: Path) -> Path:
        """Returns the kubeconfig ``rayop apiserver`` wrote (``directory`` is not needed)."""
        del directory
        assert self._kubeconfig is not None, "the plane is not running"
        return self._kubeconfig

    def _command(self, kubeconfig: Path) -> list[str]:
        s = self._settings
        cmd = [
            sys.executable, "-m", "rayop", "apiserver", *([] if s.tls else ["--no-tls"]),
            "--kubeconfig-out", str(kubeconfig), "--seed", str(s.seed),
            "--pod-pending-delay", "0", "--pod-running-delay", str(s.pod_start_delay),
            "--pod-ready-delay", "0", "--watch-delay", str(s.watch_lag),
        ]  # fmt: skip
        if s.api_latency:
            for verb in AUDIT_VERBS:
                if verb != "watch":
                    cmd += ["--latency", f"{verb}={s.api_latency}"]
        if s.api_service_slots is not None:
            cmd += ["--service-slots", str(s.api_service_slots)]
        return cmd

    async def __aenter__(self) -> SubprocessControlPlane:
        self._tmp = tempfile.TemporaryDirectory(prefix="rayop-bench-")
        kubeconfig = self._kubeconfig = Path(self._tmp.name) / "kubeconfig.yaml"
        log_path = Path(self._tmp.name) / "apiserver.log"
        with log_path.open("wb") as log_file:
            self._proc = await asyncio.create_subprocess_exec(
                *self._command(kubeconfig),
                stdout=asyncio.subprocess.PIPE,
                stderr=log_file,
                preexec_fn=end_with_parent(),
            )
        assert self._proc.stdout is not None
        if not await self._proc.stdout.readline():
            tail = log_path.read_text(errors="replace").strip().splitlines()[-5:]
            raise RuntimeError("rayop apiserver exited before it was ready:\n" + "\n".join(tail))
        if self._settings.tls:
            self.config = await load_kubeconfig(str(kubeconfig))
            return self
        doc = yaml.safe_load(kubeconfig.read_text())
        self.config = KubeConfig.for_server(
            doc["clusters"][0]["cluster"]["server"], token=doc["users"][0]["user"]["token"]
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._proc is not None:
            if self._proc.returncode is None:
                self._proc.terminate()
            try:
                async with asyncio.timeout(10):
                    await self._proc.wait()
            except TimeoutError:
                self._proc.kill()
                await self._proc.wait()
            self._proc = None
        if self._tmp is not None:
            self._tmp.cleanup()

    @property
    def pid(self) -> int | None:
        """The API server's process id (while running)."""
        return self._proc.pid if self._proc is not None else None

    async def request_counts(self, client: KubeClient) -> RequestCounts:
        """Reads the child's /metrics."""
        _, body = await client.request("GET", "/metrics")
        return counts_from_metrics(body.decode())


class ExistingCluster:
    """An API server named by a kubeconfig."""

    fresh = False

    def __init__(self, kubeconfig: str) -> None:
        self._path = kubeconfig
        self.config = KubeConfig.for_server("http://127.0.0.1", token="")

    def kubeconfig_file(self, directory: Path) -> Path:
        """Returns the kubeconfig the bench was given."""
        del directory
        return Path(self._path)

    async def __aenter__(self) -> ExistingCluster:
        self.config = await load_kubeconfig(self._path)
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def request_counts(self, client: KubeClient) -> RequestCounts:
        """Reads /metrics when allowed (empty otherwise)."""
        try:
            code, body = await client.request("GET", "/metrics")
        except Exception:
            return Counter()
        return counts_from_metrics(body.decode()) if code == 200 else Counter()


class OperatorUnderTest(Protocol):
    """The operator whose metrics the bench reads."""

    controller: str
    in_process: bool
    pid: int | None
    """The external operator's process (for CPU and RSS), None when unknown or in process."""

    async def __aenter__(self) -> Self:
        """Starts (or connects to) the operator; blocks until it is ready."""

    async def __aexit__(self, *exc: object) -> None:
        """Stops what was started."""

    async def snapshot(self) -> Snapshot:
        """Returns its metrics now."""


class InProcessOperator:
    """rayop's operator (manager + RayCluster controller) in this event loop."""

    controller = "raycluster"
    in_process = True
    pid: int | None = None

    def __init__(self, config: KubeConfig, settings: OperatorSettings) -> None:
        self.metrics = OperatorMetrics()
        self._config = config
        self._settings = settings
        self._client: KubeClient | None = None
        self.manager: Manager[KubeClient] | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> InProcessOperator:
        self._client = new_client(self._config, self._settings, self.metrics)
        self.manager = build_operator(self._client, self._settings, self.metrics).manager
        self._task = asyncio.create_task(self.manager.run(), name="bench-operator")
        try:
            await self.manager.wait_ready()
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.manager is not None:
            await self.manager.stop()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 15)
        if self._client is not None:
            await self._client.close()

    async def snapshot(self) -> Snapshot:
        """Collects the operator's registry (controller, workqueue and REST client series)."""
        return Snapshot.from_registry(self.metrics.registry)


SCRAPE_TIMEOUT = 60.0
"""Seconds an external operator's /metrics may take to answer once it is up. A busy operator
answers late (its event loop serves the scrape between reconciles); one that needs longer has
failed the run, and says so."""

STARTING_SCRAPE_TIMEOUT = 5.0
"""Seconds each scrape may take while the bench waits for the operator to come up."""


class MetricsUnavailable(RuntimeError):
    """The operator's /metrics did not answer 200 in time."""


class ExternalOperator:
    """An operator running elsewhere (KubeRay, say), observed through its /metrics URL.

    Args:
        metrics_url: The operator's Prometheus endpoint.
        pid: Its process id on this machine, for CPU seconds and peak RSS (psutil).
        ready_timeout: Seconds to wait for the endpoint to report its RayCluster controller.
    """

    in_process = False

    def __init__(
        self,
        metrics_url: str,
        *,
        pid: int | None = None,
        ready_timeout: float = 60.0,
        scrape_timeout: float = SCRAPE_TIMEOUT,
    ) -> None:
        self._url = metrics_url
        self._session: aiohttp.ClientSession | None = None
        self._ready_timeout = ready_timeout
        self._scrape_timeout = scrape_timeout
        self.pid = pid
        self.controller = "raycluster"

    async def __aenter__(self) -> ExternalOperator:
        """Blocks until the endpoint reports a RayCluster controller (KubeRay names it
        ``raycluster-controller``, rayop ``raycluster``); an operator that is still starting
        answers without controller series, and reading it then would mislabel every figure.

        Raises:
            RuntimeError: No RayCluster controller appeared within ``ready_timeout``.
        """
        self._session = aiohttp.ClientSession()
        deadline = asyncio.get_running_loop().time() + self._ready_timeout
        while True:
            try:
                snap = await self._scrape(STARTING_SCRAPE_TIMEOUT)
            except MetricsUnavailable:
                snap = Snapshot()  # still starting: not listening yet, or not answering
            names = [
                labels.get("controller", "")
                for labels, _ in snap.select("controller_runtime_max_concurrent_reconciles")
            ]
            found = next((n for n in names if "raycluster" in n.lower()), None)
            if found is not None:
                self.controller = found
                return self
            if asyncio.get_running_loop().time() > deadline:
                await self._session.close()
                raise RuntimeError(f"{self._url} reports no RayCluster controller")
            await asyncio.sleep(0.5)

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def snapshot(self) -> Snapshot:
        """Scrapes the metrics URL.

        Raises:
            MetricsUnavailable: it did not answer 200 within the scrape timeout (an empty
                snapshot in its place would turn the run's counters into nonsense: a final
                read that came back empty made 10,000 clusters' reconciles 0).
        """
        return await self._scrape(self._scrape_timeout)

    async def _scrape(self, timeout: float) -> Snapshot:
        assert self._session is not None
        try:
            async with self._session.get(
                self._url, timeout=aiohttp.ClientTimeout(total=timeout)
            ) as resp:
                if resp.status != 200:
                    raise MetricsUnavailable(f"{self._url} answered {resp.status}")
                return Snapshot.from_text(await resp.text())
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise MetricsUnavailable(
                f"{self._url} could not be read in {timeout:g} s: {type(exc).__name__} {exc}"
            ) from exc
