"""Differential test: KubeRay v1.7.0 and rayop on the embedded (RocksDB) GCS FT sample, with
the ``GCSFaultToleranceEmbeddedStorage`` gate on, on the same real control plane.

The sample ships only in KubeRay's source tarball (``config/samples``), so it is read from
there. Each operator gets its own namespace with a PersistentVolume pre-bound to the
``<cluster>-gcs-pvc`` it is expected to create (the tier has no provisioner; the real
controller-manager binds the claim, the real scheduler then places the head). KubeRay runs first
and is stopped, then rayop. Compared, after normalisation (``differential.py``): the pods, the
services, the PVC (without what the binder writes) and the PVC events; then both clusters are
deleted and the real garbage collector must remove both PVCs.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.client import KubeClient
from rayop.kube.errors import NotFound
from rayop.kube.resource import Resource
from rayop.kube.resources import EVENTS, PERSISTENT_VOLUME_CLAIMS, PODS, RAY_CLUSTERS, SERVICES
from rayop.testing import eventually
from tests.kuberay_compat import source_sample

from .differential import _common_metadata, _replace_strings, diff, snapshot
from .real_support import (
    apply_raycluster,
    converged,
    create_namespace,
    kuberay_running,
    rayop_operator,
    user_client,
)

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(240, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

KUBERAY_VERSION = "v1.7.0"
GATE = "GCSFaultToleranceEmbeddedStorage"
SAMPLE = "ray-cluster.embedded-gcs-ft.yaml"
PERSISTENT_VOLUMES = Resource("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False)
PVC_BINDER_ANNOTATIONS = (
    "pv.kubernetes.io/bind-completed",
    "pv.kubernetes.io/bound-by-controller",
)
Obj = dict[str, Any]


def embedded_gcs_ft_sample() -> Obj:
    """Returns KubeRay v1.7.0's embedded GCS FT sample RayCluster, read from the tarball."""
    (cluster,) = source_sample(SAMPLE)
    return dict(cluster)


def normalize_pvc(pvc: Obj) -> Obj:
    """Returns a PVC without what differs by nature or is written by the binder."""
    out = _common_metadata(pvc)
    for key in PVC_BINDER_ANNOTATIONS:
        (out["metadata"].get("annotations") or {}).pop(key, None)
    if not out["metadata"].get("annotations"):
        out["metadata"].pop("annotations", None)
    out.get("spec", {}).pop("volumeName", None)
    return _replace_strings(out, pvc["metadata"]["namespace"], "<namespace>")  # type: ignore[no-any-return]


@dataclass
class Outcome:
    """What one operator produced for the sample."""

    snapshot: dict[str, Any]
    pvcs: dict[str, Obj]
    pvc_events: list[tuple[str, str, str]]
    converged: bool
    collected: bool = False


async def _prebound_volume(client: KubeClient, namespace: str, claim: str) -> None:
    """Creates a 1Gi hostPath PersistentVolume reserved for ``namespace/claim``."""
    await client.create(
        PERSISTENT_VOLUMES,
        {
            "metadata": {"name": f"pv-{namespace}"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "hostPath": {"path": f"/tmp/{namespace}"},
                "claimRef": {"namespace": namespace, "name": claim},
            },
        },
    )


async def _run(client: KubeClient, namespace: str, sample: Obj) -> Outcome:
    """Applies the sample, waits for convergence, snapshots, deletes it, waits for the GC."""
    name = sample["metadata"]["name"]
    await apply_raycluster(client, sample, namespace)
    ready = functools.partial(converged, client, namespace, name)
    try:
        await eventually(ready, timeout=150, what=f"{name} ready in {namespace}")
        done = True
    except AssertionError:
        done = False
    await asyncio.sleep(2.0)  # late writes
    pods = (await client.list(PODS, namespace=namespace))["items"]
    services = (await client.list(SERVICES, namespace=namespace))["items"]
    pvcs = (await client.list(PERSISTENT_VOLUME_CLAIMS, namespace=namespace))["items"]
    events = (await client.list(EVENTS, namespace=namespace))["items"]
    pvc_events = sorted(
        (e.get("type", ""), e.get("reason", ""), e.get("note", "").replace(namespace, "<ns>"))
        for e in events
        if "PVC" in str(e.get("reason", ""))
    )
    outcome = Outcome(
        snapshot(pods, services),
        {p["metadata"]["name"]: normalize_pvc(p) for p in pvcs},
        pvc_events,
        done,
    )
    await client.delete(RAY_CLUSTERS, name, namespace=namespace)

    async def pvc_collected() -> bool:
        try:
            await client.get(PERSISTENT_VOLUME_CLAIMS, f"{name}-gcs-pvc", namespace=namespace)
        except NotFound:
            return True
        return False

    try:
        await eventually(pvc_collected, timeout=60, what="the owned PVC garbage-collected")
        outcome.collected = True
    except AssertionError:
        pass
    return outcome


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def outcomes(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Outcome, Outcome]]:
    """Runs KubeRay, then rayop, on the sample; yields (kuberay, rayop)."""
    sample = embedded_gcs_ft_sample()
    claim = f"{sample['metadata']['name']}-gcs-pvc"
    token = secrets.token_hex(2)
    kuberay_ns, rayop_ns = f"kuberay-gcs-{token}", f"rayop-gcs-{token}"
    log_path = tmp_path_factory.mktemp("kuberay-gcs") / "ray-operator.log"
    async with user_client(real_kubeconfig) as client:
        for ns in (kuberay_ns, rayop_ns):
            await create_namespace(client, ns)
            await _prebound_volume(client, ns, claim)
        async with kuberay_running(
            kuberay_binary,
            real_kubeconfig,
            log_path,
            f"--watch-namespace={kuberay_ns}",
            f"--feature-gates={GATE}=true",
        ):
            kuberay = await _run(client, kuberay_ns, copy.deepcopy(sample))
        gates = FeatureGates().with_overrides({GATE: True})
        async with rayop_operator(
            real_kubeconfig,
            watch_namespaces=[rayop_ns],
            options=OperatorOptions(feature_gates=gates),
        ):
            rayop = await _run(client, rayop_ns, copy.deepcopy(sample))
        for ns in (kuberay_ns, rayop_ns):
            await client.delete(PERSISTENT_VOLUMES, f"pv-{ns}")
    yield kuberay, rayop


async def test_both_converge(outcomes: tuple[Outcome, Outcome]) -> None:
    kuberay, rayop = outcomes
    assert kuberay.converged, "KubeRay did not converge on the embedded GCS FT sample"
    assert rayop.converged, "rayop did not converge on the embedded GCS FT sample"


async def test_same_pvc_as_kuberay(outcomes: tuple[Outcome, Outcome]) -> None:
    kuberay, rayop = outcomes
    assert list(kuberay.pvcs) == ["raycluster-embedded-gcs-ft-gcs-pvc"], kuberay.pvcs
    lines = diff(kuberay.pvcs, rayop.pvcs)
    assert not lines, "\n".join(lines)


async def test_same_pods_and_services_as_kuberay(outcomes: tuple[Outcome, Outcome]) -> None:
    kuberay, rayop = outcomes
    lines = [
        ln
        for ln in diff(kuberay.snapshot, rayop.snapshot)
        if "ray.io/upgrade-strategy-recreate-hash" not in ln  # docs/known-differences.md
    ]
    assert not lines, "\n".join(lines)


async def test_same_pvc_events_as_kuberay(outcomes: tuple[Outcome, Outcome]) -> None:
    kuberay, rayop = outcomes
    assert kuberay.pvc_events == [
        ("Normal", "CreatedPVC", "Created GCS storage PVC <ns>/raycluster-embedded-gcs-ft-gcs-pvc")
    ]
    assert rayop.pvc_events == kuberay.pvc_events


async def test_both_pvcs_are_garbage_collected_with_their_cluster(
    outcomes: tuple[Outcome, Outcome],
) -> None:
    kuberay, rayop = outcomes
    assert kuberay.collected and rayop.collected, (kuberay.collected, rayop.collected)
