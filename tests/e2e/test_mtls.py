"""KubeRay v1.7.0's mTLS sample on the embedded plane with cert-manager's CRDs.

The plane's simulated issuer (``rayop.sim.controller_manager.cert_issuer``) plays cert-manager.
The ``raycluster-mtls`` controller makes the PKI; the RayCluster controller creates pods only
once the leaf certificates are issued; each certificate then gains its pods' IPs and is issued
again; every Secret is owned by its Certificate.
"""

from __future__ import annotations

import base64
import subprocess
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.mtls.names import CERTIFICATES, ISSUERS
from rayop.kube.resources import SECRETS
from rayop.testing import FAST_KUBELET, eventually, open_control_plane

from .mtls_env import CrdsUnavailable, cert_manager_crds, install_cert_manager_crds
from .raycluster_env import SAMPLE_GATES, OperatorEnv, load_sample

NAME = "raycluster-mtls"
OPTIONS = OperatorOptions(feature_gates=SAMPLE_GATES, cert_manager_available=True)


@pytest_asyncio.fixture
async def env() -> AsyncIterator[OperatorEnv]:
    try:
        crds = cert_manager_crds()
    except CrdsUnavailable as exc:  # the real tier fetches them first (scripts/test-real)
        pytest.skip(f"cert-manager CRDs not available: {exc}")
    async with open_control_plane(kubelet=FAST_KUBELET) as plane:
        await install_cert_manager_crds(plane.client, crds)
        running = OperatorEnv(plane, {"concurrency": 2, "options": OPTIONS})
        await running.start_operator()
        try:
            yield running
        finally:
            await running.stop_operator()


def _ips_in(secret_data: str) -> str:
    pem = base64.b64decode(secret_data)
    done = subprocess.run(
        ["openssl", "x509", "-noout", "-text"], input=pem, capture_output=True, check=True
    )
    return done.stdout.decode()


async def test_the_mtls_sample_converges_with_its_pki(env: OperatorEnv) -> None:
    ns = await env.namespace("mtls")
    (cluster,) = load_sample("ray-cluster.mtls.yaml")
    await env.apply(cluster, ns)
    await eventually(lambda: env.converged(ns, NAME), timeout=60, what="mTLS cluster ready")
    issuers = {i["metadata"]["name"]: i["spec"] for i in env.objects(ISSUERS, ns)}
    uid = env.raycluster(ns, NAME)["metadata"]["uid"]  # type: ignore[index]
    assert issuers == {
        f"ray-selfsigned-issuer-{NAME}": {"selfSigned": {}},
        f"ray-ca-issuer-{NAME}": {"ca": {"secretName": f"{NAME}-ca-secret-{uid[:8]}"}},
    }
    pods = env.pods(ns, NAME)
    head = next(p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head")
    worker = next(p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "worker")
    for pod, kind in ((head, "head"), (worker, "worker")):
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        assert volumes["ray-tls"]["secret"]["secretName"] == f"ray-{kind}-secret-{NAME}"
        assert pod["spec"]["initContainers"][0]["name"] == "wait-for-tls-ip-san"
        env_names = {e["name"] for e in pod["spec"]["containers"][0]["env"]}
        assert {"RAY_USE_TLS", "RAY_TLS_SERVER_CERT", "RAY_TLS_SERVER_KEY"} <= env_names

    def issued_with_ip(kind: str, ip: str) -> bool:
        cert = env.stored(CERTIFICATES, ns, f"ray-{kind}-cert-{NAME}")
        secret = env.stored(SECRETS, ns, f"ray-{kind}-secret-{NAME}")
        if cert is None or secret is None or ip not in cert["spec"]["ipAddresses"]:
            return False
        conditions = (cert.get("status") or {}).get("conditions") or []
        ready = any(
            c["type"] == "Ready"
            and c["status"] == "True"
            and c["observedGeneration"] == cert["metadata"]["generation"]
            for c in conditions
        )
        return ready and f"IP Address:{ip}" in _ips_in(secret["data"]["tls.crt"])

    for pod, kind in ((head, "head"), (worker, "worker")):
        ip = pod["status"]["podIP"]
        await eventually(
            lambda k=kind, i=ip: issued_with_ip(k, i), timeout=30, what=f"{kind} IP SAN"
        )
    for cert in env.objects(CERTIFICATES, ns):

        def owned(c: dict[str, object] = cert) -> bool:
            s = env.stored(SECRETS, ns, str(c["spec"]["secretName"]))  # type: ignore[index]
            refs = (s or {}).get("metadata", {}).get("ownerReferences") or []
            return any(r["uid"] == c["metadata"]["uid"] for r in refs)  # type: ignore[index]

        await eventually(owned, timeout=30, what=f"{cert['metadata']['name']}'s Secret owned")
    mtls = [e for e in env.events(ns) if e["reason"].startswith("MTLS")]
    assert {e["reason"] for e in mtls} >= {"MTLSPKIReady", "MTLSCertificatesUpdated"}, mtls
    reporters = {e.get("reportingController") or e.get("reportingComponent") for e in mtls}
    assert reporters == {"raycluster-mtls-controller"}


async def test_no_pod_is_created_before_the_certificates_are_issued(env: OperatorEnv) -> None:
    ns = await env.namespace("mtls-wait")
    (cluster,) = load_sample("ray-cluster.mtls.yaml")
    # A head certificate, with the labels and SANs the operator wants, that the simulated issuer
    # never issues (a ClusterIssuer): the operator keeps it and waits.
    labels = {
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
        "app.kubernetes.io/component": "head-certificate",
        "ray.io/cluster": NAME,
    }
    blocked = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": f"ray-head-cert-{NAME}", "labels": labels},
        "spec": {
            "secretName": f"ray-head-secret-{NAME}",
            "dnsNames": ["localhost", f"{NAME}-head-svc.{ns}.svc.cluster.local"],
            "ipAddresses": ["127.0.0.1"],
            "issuerRef": {"name": "elsewhere", "kind": "ClusterIssuer", "group": "cert-manager.io"},
        },
    }
    await env.client.create(CERTIFICATES, blocked, namespace=ns)
    await env.apply(cluster, ns)
    await eventually(
        lambda: any(
            e["reason"] == "MTLSCertsNotReady" and e["regarding"]["name"] == NAME
            for e in env.events(ns)
        ),
        timeout=30,
        what="MTLSCertsNotReady",
    )
    await eventually(
        lambda: bool((env.stored(CERTIFICATES, ns, f"ray-worker-cert-{NAME}") or {}).get("status")),
        timeout=30,
        what="the worker certificate issued",
    )
    assert env.pods(ns, NAME, live_only=False) == []
