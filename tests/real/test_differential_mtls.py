"""Differential test: KubeRay v1.7.0 and rayop with mTLS (``RayClusterMTLS``) on the real plane.

cert-manager's own CRDs (``github.com/cert-manager/cert-manager`` at the version KubeRay v1.7.0's
go.mod names, fetched by ``scripts/cert-manager-crds``) are applied first, so both operators find
``cert-manager.io/v1`` served (KubeRay then starts its ``raycluster-mtls`` controller; rayop's
:func:`~rayop.controllers.raycluster.mtls.discovery.cert_manager_served` must say so too). No
cert-manager runs: the test plays it, filling each Certificate's Secret (``tls.crt``,
``tls.key``, ``ca.crt``) and marking it Ready at its generation through ``/status``, again
whenever the operator updates it. In each operator's namespace KubeRay's ``ray-cluster.mtls.yaml``
sample is applied; once the head and the worker run and each leaf certificate lists its pods'
IPs, compared: the Issuers, the Certificates (pod IPs as placeholders), the Secrets' owners, the
pods (TLS env, volume, ``wait-for-tls-ip-san``) and the mTLS events. KubeRay runs first and is
stopped, then rayop. The CRDs are deleted afterwards.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.mtls.discovery import cert_manager_served
from rayop.controllers.raycluster.mtls.names import CERTIFICATES, ISSUERS
from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists, NotFound
from rayop.kube.resources import CRDS, EVENTS, RAY_CLUSTERS, SECRETS
from rayop.sim.controller_manager.cert_material import issue
from rayop.testing import eventually
from tests.e2e.mtls_env import cert_manager_crds, install_cert_manager_crds

from .differential import _common_metadata, _replace_strings, diff, snapshot
from .real_support import (
    apply_raycluster,
    cluster_pods,
    create_namespace,
    kuberay_running,
    load_sample,
    rayop_operator,
    user_client,
)

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(300, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

SAMPLE = "ray-cluster.mtls.yaml"
NAME = "raycluster-mtls"
GATE = "RayClusterMTLS"
Obj = dict[str, Any]


def _ready(cert: Obj) -> bool:
    generation = cert["metadata"].get("generation")
    return any(
        c.get("type") == "Ready"
        and c.get("status") == "True"
        and c.get("observedGeneration") == generation
        for c in (cert.get("status") or {}).get("conditions") or ()
    )


async def _issue_once(client: KubeClient, ns: str) -> None:
    """Plays cert-manager for every Certificate of ``ns`` not Ready at its generation."""
    for cert in (await client.list(CERTIFICATES, namespace=ns))["items"]:
        if _ready(cert):
            continue
        spec = cert["spec"]
        pair = await asyncio.to_thread(
            issue,
            common_name=str(spec.get("commonName") or ""),
            dns=list(spec.get("dnsNames") or ()),
            ips=list(spec.get("ipAddresses") or ()),
            usages=list(spec.get("usages") or ()),
            is_ca=bool(spec.get("isCA")),
            days=90,
            signer=None,
        )
        data = {
            "tls.crt": base64.b64encode(pair.cert).decode(),
            "tls.key": base64.b64encode(pair.key).decode(),
            "ca.crt": base64.b64encode(pair.cert).decode(),
        }
        try:
            secret = await client.get(SECRETS, spec["secretName"], namespace=ns)
        except NotFound:
            body = {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "kubernetes.io/tls",
                "metadata": {"name": spec["secretName"], "namespace": ns},
                "data": data,
            }
            await client.create(SECRETS, body, namespace=ns)
        else:
            secret["data"] = data
            await client.update(SECRETS, secret)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        cert["status"] = {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Ready",
                    "message": "issued by the test",
                    "lastTransitionTime": now,
                    "observedGeneration": cert["metadata"]["generation"],
                }
            ]
        }
        await client.update_status(CERTIFICATES, cert)


@contextlib.asynccontextmanager
async def cert_manager_stand_in(client: KubeClient, ns: str) -> AsyncIterator[None]:
    """Issues the namespace's Certificates every half second until the block exits."""

    async def loop() -> None:
        while True:
            with contextlib.suppress(Exception):  # a 409 races the operator: next round
                await _issue_once(client, ns)
            await asyncio.sleep(0.5)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@dataclass
class Outcome:
    """What one operator left in its namespace."""

    issuers: dict[str, Obj]
    certificates: dict[str, Obj]
    secret_owners: dict[str, list[Obj]]
    pods: dict[str, Any]
    events: list[tuple[str, str, str]]


def _normalize(obj: Obj, ns: str, uid: str, ips: dict[str, str]) -> Obj:
    out = _common_metadata(obj)
    for ip, placeholder in ips.items():
        out = _replace_strings(out, ip, placeholder)
    out = _replace_strings(out, uid[:8], "<uid8>")
    return _replace_strings(out, ns, "<namespace>")  # type: ignore[no-any-return]


def _placeholders(note: str, ns: str, ips: dict[str, str]) -> str:
    for ip, placeholder in ips.items():
        note = note.replace(ip, placeholder)
    return note.replace(ns, "<ns>")


async def _run(client: KubeClient, ns: str) -> Outcome:
    (cluster,) = load_sample(SAMPLE)
    await apply_raycluster(client, cluster, ns)

    async def settled() -> bool:
        pods = await cluster_pods(client, ns, NAME)
        if len(pods) != 2 or not all((p.get("status") or {}).get("podIP") for p in pods):
            return False
        certs = {
            c["metadata"]["name"]: c
            for c in (await client.list(CERTIFICATES, namespace=ns))["items"]
        }
        for pod in pods:
            kind = pod["metadata"]["labels"]["ray.io/node-type"]
            cert = certs.get(f"ray-{kind}-cert-{NAME}")
            if cert is None or pod["status"]["podIP"] not in cert["spec"].get("ipAddresses", []):
                return False
        return all(_ready(c) for c in certs.values()) and len(certs) == 3

    await eventually(settled, timeout=120, what="pods running with their IPs in the certificates")
    await asyncio.sleep(3.0)  # a late update would show by now
    raycluster = await client.get(RAY_CLUSTERS, NAME, namespace=ns)
    cluster_uid = raycluster["metadata"]["uid"]
    pods = await cluster_pods(client, ns, NAME)
    ips = {
        p["status"]["podIP"]: f"<{p['metadata']['labels']['ray.io/node-type']}-ip>" for p in pods
    }
    issuers = (await client.list(ISSUERS, namespace=ns))["items"]
    certs = (await client.list(CERTIFICATES, namespace=ns))["items"]
    owners: dict[str, list[Obj]] = {}
    for cert in certs:
        secret = await client.get(SECRETS, cert["spec"]["secretName"], namespace=ns)
        refs = [
            {k: v for k, v in r.items() if k != "uid"}
            | {"matches": r.get("uid") == cert["metadata"]["uid"]}
            for r in secret["metadata"].get("ownerReferences") or ()
        ]
        owners[_replace_strings(secret["metadata"]["name"], cluster_uid[:8], "<uid8>")] = refs
    events = (await client.list(EVENTS, namespace=ns))["items"]
    return Outcome(
        {i["metadata"]["name"]: _normalize(i, ns, cluster_uid, ips) for i in issuers},
        {c["metadata"]["name"]: _normalize(c, ns, cluster_uid, ips) for c in certs},
        owners,
        snapshot(pods, [])["pods"],
        sorted(
            {
                (
                    e.get("type", ""),
                    e.get("reason", ""),
                    _placeholders(str(e.get("note", "")), ns, ips),
                )
                for e in events
                # a failed step is a lost race with the test's cert-manager: either may have it
                if str(e.get("reason", "")).startswith("MTLS")
                and e.get("reason") != "MTLSFailedToReconcile"
            }
        ),
    )


async def _delete_crds(client: KubeClient, names: list[str]) -> None:
    for name in names:
        with contextlib.suppress(NotFound):
            await client.delete(CRDS, name)

    left: list[str] = []
    nudged: dict[str, float] = {}

    async def gone() -> bool:
        left.clear()
        for name in names:
            try:
                crd = await client.get(CRDS, name)
            except NotFound:
                continue
            conditions = (crd.get("status") or {}).get("conditions") or []
            state = "; ".join(f"{c.get('type')}={c.get('status')}: {c.get('message')}" for c in conditions)
            left.append(f"{name} ({state})")
            if "could not list instances" in state and time.monotonic() - nudged.get(name, 0) > 10:
                # The finalizer found the CRD's storage (re)initializing and backs off
                # exponentially (minutes: operator-framework/operator-controller#1437); a
                # metadata-only update enqueues it again without touching the storage.
                nudged[name] = time.monotonic()
                with contextlib.suppress(NotFound):
                    body = {"metadata": {"annotations": {"rayop.test/nudge": str(time.time())}}}
                    await client.patch(CRDS, name, body)
        return not left

    # The API server deletes every instance of a CRD before the CRD (its finalizer); on a busy
    # machine, with the real tier's many namespaces, that has taken over a minute, and a
    # finalizer that found the storage (re)initializing retries only after its backoff.
    try:
        await eventually(gone, timeout=360, what="cert-manager CRDs deleted")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; still there: {left}") from None


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def outcomes(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Outcome, Outcome, bool]]:
    """Applies the CRDs, runs KubeRay, then rayop; yields (kuberay, rayop, detected)."""
    crds = cert_manager_crds()
    token = secrets.token_hex(2)
    kuberay_ns, rayop_ns = f"kuberay-mtls-{token}", f"rayopop-mtls-{token}"
    log_path = tmp_path_factory.mktemp("kuberay-mtls") / "ray-operator.log"
    async with user_client(real_kubeconfig) as client:
        for crd in crds:
            with contextlib.suppress(AlreadyExists):
                await client.create(CRDS, crd)
        try:

            async def served() -> bool:
                return await cert_manager_served(client)

            await eventually(served, timeout=60, what="cert-manager.io served")
            await install_cert_manager_crds(client, [])
            for ns in (kuberay_ns, rayop_ns):
                await create_namespace(client, ns)
            args = (f"--watch-namespace={kuberay_ns}", f"--feature-gates={GATE}=true")
            async with (
                cert_manager_stand_in(client, kuberay_ns),
                kuberay_running(kuberay_binary, real_kubeconfig, log_path, *args),
            ):
                kuberay = await _run(client, kuberay_ns)
            detected = await cert_manager_served(client)
            gates = FeatureGates().with_overrides({GATE: True})
            options = OperatorOptions(feature_gates=gates, cert_manager_available=detected)
            async with (
                cert_manager_stand_in(client, rayop_ns),
                rayop_operator(real_kubeconfig, watch_namespaces=[rayop_ns], options=options),
            ):
                rayop = await _run(client, rayop_ns)
        finally:
            await _delete_crds(client, [c["metadata"]["name"] for c in crds])
    yield kuberay, rayop, detected


async def test_cert_manager_is_detected(outcomes: tuple[Outcome, Outcome, bool]) -> None:
    assert outcomes[2] is True


async def test_the_issuers_and_certificates_are_kuberay_s(
    outcomes: tuple[Outcome, Outcome, bool],
) -> None:
    kuberay, rayop, _ = outcomes
    assert set(kuberay.issuers) == {f"ray-selfsigned-issuer-{NAME}", f"ray-ca-issuer-{NAME}"}
    assert len(kuberay.certificates) == 3
    lines = diff(
        {"issuers": kuberay.issuers, "certificates": kuberay.certificates},
        {"issuers": rayop.issuers, "certificates": rayop.certificates},
    )
    assert not lines, "\n".join(lines)


async def test_every_secret_is_owned_by_its_certificate(
    outcomes: tuple[Outcome, Outcome, bool],
) -> None:
    kuberay, rayop, _ = outcomes
    assert all(any(r["matches"] for r in refs) for refs in kuberay.secret_owners.values())
    lines = diff(kuberay.secret_owners, rayop.secret_owners)
    assert not lines, "\n".join(lines)


async def test_the_pods_are_kuberay_s(outcomes: tuple[Outcome, Outcome, bool]) -> None:
    kuberay, rayop, _ = outcomes
    (head,) = kuberay.pods["head"]
    assert head["spec"]["initContainers"][0]["name"] == "wait-for-tls-ip-san"
    env = {e["name"]: e.get("value") for e in head["spec"]["containers"][0]["env"]}
    assert env["RAY_USE_TLS"] == "1" and env["RAY_TLS_CA_CERT"] == "/etc/ray/tls/ca.crt"
    (worker,) = kuberay.pods["worker/small-group"]
    volumes = {v["name"]: v for v in worker["spec"]["volumes"]}
    assert volumes["ray-tls"]["secret"]["secretName"] == f"ray-worker-secret-{NAME}"
    lines = diff(kuberay.pods, rayop.pods)
    assert not lines, "\n".join(lines)


async def test_the_same_mtls_events(outcomes: tuple[Outcome, Outcome, bool]) -> None:
    kuberay, rayop, _ = outcomes
    reasons = {reason for _, reason, _ in kuberay.events}
    assert {"MTLSPKIReady", "MTLSCertificatesUpdated"} <= reasons, kuberay.events
    # A certificate is updated only if its pod had no IP yet when it was first written: whether
    # the head's, the worker's or both are updated is the pods' timing, on either side; what the
    # certificates end up with is compared above (test_the_issuers_and_certificates_are_kuberay_s).
    updates = {
        (
            "Normal",
            "MTLSCertificatesUpdated",
            f"Updated {kind} certificate SANs (IPs: [<{kind}-ip> 127.0.0.1])",
        )
        for kind in ("head", "worker")
    }
    assert set(rayop.events) - updates == set(kuberay.events) - updates
    for side in (rayop, kuberay):
        assert {e for e in side.events if e[1] == "MTLSCertificatesUpdated"} <= updates
