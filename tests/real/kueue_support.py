"""Kueue v0.17.0 on the real tier: its manager out-of-cluster, with its webhooks, beside an operator.

``scripts/kueue-build`` (the ``kueue`` component of ``scripts/controlplane-build``) builds the
manager and copies the module's CRDs and webhook configuration to ``~/.cache/rayop/kueue/<v>/``.
:func:`kueue_running` then

* creates the ``kueue-system`` namespace and Kueue's CRDs (``config/components/crd/bases``);
* writes a Kueue ``Configuration`` with internal certificate management off, the webhook server
  on ``127.0.0.1:<port>`` serving a certificate made here (``certDir``), leader election off,
  the visibility server off and only the ``ray.io/rayjob`` and ``ray.io/raycluster``
  integrations;
* starts the manager (``KUBECONFIG`` the tier's admin kubeconfig) and waits for ``/readyz``;
* registers the module's webhooks for Kueue's own kinds and for RayJob/RayCluster, each with
  ``url: https://127.0.0.1:<port><path>`` and the certificate as ``caBundle`` (the apiserver runs
  on this host), limited to namespaces labelled :data:`NAMESPACE_LABEL` so that the tier's other
  tests never meet Kueue's webhooks; they are deleted again when the block exits.

:func:`ray_world` runs the pod network with jobs that run until the test finishes them, and the
operator under test: rayop's three controllers in-process, or KubeRay v1.7.0's binary.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rayop.cli.realcluster import free_port, pod_network_socket
from rayop.cli.realcluster_http import ApiCaller, wait_until
from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.errors import AlreadyExists, NotFound
from rayop.kube.resource import Resource
from rayop.kube.resources import CRDS, NAMESPACES
from rayop.runtime.serving.serving_cert import ca_bundle, ensure_serving_cert
from rayop.sim.dashboard.head import DashboardConfig
from rayop.testing import ALL_KINDS, open_operator

from .pod_network import PodNetwork
from .real_support import build, kuberay_running, server_and_token, user_client

Obj = dict[str, Any]

KUEUE_VERSION = "v0.17.0"
KUEUE_GROUP = "kueue.x-k8s.io"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
NAMESPACE_LABEL = "rayop.test/kueue"
"""Kueue's webhooks are registered for namespaces carrying this label (value "true") only."""
FRAMEWORKS = ("ray.io/rayjob", "ray.io/raycluster")
WEBHOOK_PATHS = ("kueue-x-k8s-io-", "ray-io-v1-rayjob", "ray-io-v1-raycluster")
"""The module's webhooks kept: those of Kueue's kinds and of the two enabled integrations."""

CLUSTER_QUEUES = Resource(KUEUE_GROUP, "v1beta2", "clusterqueues", "ClusterQueue", namespaced=False)
LOCAL_QUEUES = Resource(KUEUE_GROUP, "v1beta2", "localqueues", "LocalQueue")
RESOURCE_FLAVORS = Resource(
    KUEUE_GROUP, "v1beta2", "resourceflavors", "ResourceFlavor", namespaced=False
)
WORKLOADS = Resource(KUEUE_GROUP, "v1beta2", "workloads", "Workload")
WORKLOAD_PRIORITY_CLASSES = Resource(
    KUEUE_GROUP, "v1beta2", "workloadpriorityclasses", "WorkloadPriorityClass", namespaced=False
)
MUTATING_WEBHOOKS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    namespaced=False,
)
VALIDATING_WEBHOOKS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)
WEBHOOK_RESOURCES = {
    "MutatingWebhookConfiguration": MUTATING_WEBHOOKS,
    "ValidatingWebhookConfiguration": VALIDATING_WEBHOOKS,
}
SERVED_PLURALS = ("clusterqueues", "localqueues", "resourceflavors", "workloads")

HELD_JOBS = DashboardConfig(job_pending_seconds=0.2, job_run_seconds=None, serve_deploy_seconds=0.5)
"""Simulated Ray jobs RUN until the test finishes them (``SimDashboard.finish_job``)."""


def kueue_dir() -> Path:
    """Returns the directory ``scripts/kueue-build`` builds Kueue into."""
    cache = os.environ.get("RAYOP_CACHE_DIR") or os.path.expanduser("~/.cache/rayop")
    return Path(cache) / "kueue" / KUEUE_VERSION


def build_kueue() -> tuple[bool, str]:
    """Builds (or reuses) Kueue through ``scripts/controlplane-build kueue``; (ok, why-not)."""
    return build("kueue")


def configuration(*, webhook_port: int, health_port: int, cert_dir: Path) -> Obj:
    """Returns the Kueue Configuration the manager runs with out-of-cluster."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": "kueue-system",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": list(FRAMEWORKS)},
    }


def webhook_configurations(manifests: str, *, port: int, ca: str, suffix: str) -> list[Obj]:
    """Returns the module's webhook configurations, pointed at ``https://127.0.0.1:<port>``.

    Only the webhooks of :data:`WEBHOOK_PATHS` are kept; each gets the URL of its path, ``ca``
    as its ``caBundle`` and a namespace selector on :data:`NAMESPACE_LABEL`. The configurations
    are named ``kueue-<kind>-<suffix>``.
    """
    out = []
    for doc in yaml.safe_load_all(manifests):
        if not doc or doc.get("kind") not in WEBHOOK_RESOURCES:
            continue
        hooks = []
        for hook in doc.get("webhooks") or []:
            path = str(hook["clientConfig"]["service"]["path"])
            if not any(p in path for p in WEBHOOK_PATHS):
                continue
            hook = copy.deepcopy(hook)
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}
            hook["namespaceSelector"] = {"matchLabels": {NAMESPACE_LABEL: "true"}}
            hook["timeoutSeconds"] = 10
            hooks.append(hook)
        kind = "mutating" if doc["kind"].startswith("Mutating") else "validating"
        out.append(
            {
                "apiVersion": doc["apiVersion"],
                "kind": doc["kind"],
                "metadata": {"name": f"kueue-{kind}-{suffix}"},
                "webhooks": hooks,
            }
        )
    return out


async def _create_if_absent(client: KubeClient, res: Resource, obj: Obj) -> None:
    with contextlib.suppress(AlreadyExists):
        await client.create(res, obj)


async def install_kueue_crds(client: KubeClient, directory: Path, kubeconfig: str) -> None:
    """Creates Kueue's CRDs (kept when present) and blocks until its main kinds are served."""
    for path in sorted((directory / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        await _create_if_absent(client, CRDS, crd)
    # The manager's REST mapper reads discovery at startup: wait until discovery lists them.
    api = ApiCaller(*server_and_token(kubeconfig))
    wanted = set(SERVED_PLURALS)

    def discovered() -> bool:
        doc = api.get(f"/apis/{KUEUE_GROUP}/v1beta2") or {}
        return wanted <= {r.get("name") for r in doc.get("resources") or []}

    await asyncio.to_thread(
        wait_until, discovered, timeout=60, what=f"{KUEUE_GROUP}/v1beta2 in discovery"
    )


METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
"""Where Kueue v0.17.0's manager reads its metrics certificate whenever internal certificate
management is off (``cmd/kueue/main.go`` hard-codes the path, and exits if the files are
missing, even with the metrics server disabled as here)."""


def _ensure_metrics_cert() -> None:
    """Writes a self-signed pair into :data:`METRICS_CERT_DIR` unless one is there.

    Raises:
        AssertionError: The directory cannot be written (the tier must run as a user that may
            create it, as CI's root does).
    """
    try:
        ensure_serving_cert(METRICS_CERT_DIR, ("localhost",))
    except (OSError, RuntimeError) as err:
        raise AssertionError(
            f"Kueue needs a certificate at {METRICS_CERT_DIR} (hard-coded when internal "
            f"certificate management is off) and it cannot be written: {err}"
        ) from err


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
            return int(resp.status) == 200
    except (urllib.error.URLError, OSError):
        return False


@dataclass
class KueueProcess:
    """A running Kueue manager: its process, log and webhook port."""

    process: asyncio.subprocess.Process
    log_path: Path
    webhook_port: int

    async def log_tail(self, chars: int = 4000) -> str:
        """Returns the end of the manager's log."""
        text = await asyncio.to_thread(self.log_path.read_text, errors="replace")
        return text[-chars:]


@contextlib.asynccontextmanager
async def kueue_running(
    directory: Path, kubeconfig: str, workdir: Path
) -> AsyncIterator[KueueProcess]:
    """Runs Kueue's manager with its webhooks (see the module doc) until the block exits.

    Raises:
        AssertionError: The manager exited or did not turn ready in 90 s (with its log).
    """
    await asyncio.to_thread(workdir.mkdir, parents=True, exist_ok=True)
    cert_dir = await asyncio.to_thread(
        ensure_serving_cert, workdir / "certs", ("127.0.0.1", "localhost")
    )
    await asyncio.to_thread(_ensure_metrics_cert)
    webhook_port, health_port = free_port(), free_port()
    config_path = workdir / "kueue-config.yaml"
    config = configuration(webhook_port=webhook_port, health_port=health_port, cert_dir=cert_dir)
    config_path.write_text(yaml.safe_dump(config))
    log_path = workdir / "kueue.log"
    async with user_client(kubeconfig) as client:
        await _create_if_absent(client, NAMESPACES, {"metadata": {"name": "kueue-system"}})
        await install_kueue_crds(client, directory, kubeconfig)
        with log_path.open("wb") as log:
            proc = await asyncio.create_subprocess_exec(
                str(directory / "kueue"),
                f"--config={config_path}",
                "--feature-gates=VisibilityOnDemand=false",
                env={**os.environ, "KUBECONFIG": kubeconfig},
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
            )
        running = KueueProcess(proc, log_path, webhook_port)
        registered: list[Obj] = []
        try:
            await _wait_ready(running, health_port)
            manifests = (directory / "webhook-manifests.yaml").read_text()
            ca = ca_bundle(cert_dir)
            suffix = workdir.name.lower().replace("_", "-")[-40:].strip("-")
            for conf in webhook_configurations(manifests, port=webhook_port, ca=ca, suffix=suffix):
                await client.create(WEBHOOK_RESOURCES[conf["kind"]], conf)
                registered.append(conf)
            yield running
            if proc.returncode is not None:
                raise AssertionError(f"Kueue exited early: {await running.log_tail()}")
        finally:
            for conf in registered:
                with contextlib.suppress(NotFound):
                    res = WEBHOOK_RESOURCES[conf["kind"]]
                    await client.delete(res, conf["metadata"]["name"])
            if proc.returncode is None:
                proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def _wait_ready(running: KueueProcess, health_port: int) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 90
    while not await asyncio.to_thread(_ready, health_port):
        if running.process.returncode is not None:
            raise AssertionError(f"Kueue exited at startup: {await running.log_tail()}")
        if loop.time() > deadline:
            raise AssertionError(f"Kueue not ready in 90 s: {await running.log_tail()}")
        await asyncio.sleep(0.5)


class World:
    """The user's client and the pod network of a running :func:`ray_world`."""

    def __init__(self, client: KubeClient, network: PodNetwork, namespaces: Sequence[str]) -> None:
        self.client = client
        self.network = network
        self.namespaces = list(namespaces)
        """The namespaces the operator watches, not yet created."""

    async def namespace(self, prefix: str) -> str:
        """Creates the watched namespace named ``<prefix>-...`` (labelled for Kueue's
        webhooks); returns its name."""
        name = next(n for n in self.namespaces if n.startswith(f"{prefix}-"))
        self.namespaces.remove(name)
        meta = {"name": name, "labels": {NAMESPACE_LABEL: "true"}}
        await self.client.create(NAMESPACES, {"metadata": meta})
        return name

    def submissions(self, namespace: str) -> list[tuple[str, str]]:
        """(cluster, submission id) of every submission the heads of ``namespace`` accepted."""
        return [(c, sid) for ns, c, sid in self.network.submissions if ns == namespace]

    def finish(self, namespace: str, cluster: str, submission_id: str) -> None:
        """Makes a held job's entrypoint exit 0 now."""
        dash = self.network.for_cluster(namespace, cluster)
        if dash is None:
            raise AssertionError(f"no ready head for {namespace}/{cluster}")
        dash.finish_job(submission_id)


@contextlib.asynccontextmanager
async def ray_world(
    kubeconfig: str,
    namespaces: Sequence[str],
    *,
    kuberay: Path | None = None,
    log_dir: Path | None = None,
) -> AsyncIterator[World]:
    """Runs the pod network (jobs held until finished) and the operator under test, watching
    ``namespaces`` only, until the block exits: rayop's three controllers, or KubeRay's binary
    ``kuberay`` (its log in ``log_dir``), both through the services proxy."""
    async with (
        user_client(kubeconfig) as user,
        PodNetwork(user, pod_network_socket(Path(kubeconfig)), config=HELD_JOBS) as network,
    ):
        if kuberay is not None:
            log_path = (log_dir or Path(kubeconfig).parent) / "ray-operator-kueue.log"
            watch = f"--watch-namespace={','.join(namespaces)}"
            async with kuberay_running(
                kuberay, kubeconfig, log_path, "--use-kubernetes-proxy", watch
            ):
                yield World(user, network, namespaces)
            return
        config = await load_config(kubeconfig=kubeconfig)
        async with open_operator(
            config,
            controllers=ALL_KINDS,
            concurrency=4,
            watch_namespaces=namespaces,
            ready_timeout=60,
            use_kubernetes_proxy=True,
        ):
            yield World(user, network, namespaces)
