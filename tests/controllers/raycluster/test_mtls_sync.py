"""One pass of the ``raycluster-mtls`` controller on fakes (KubeRay v1.7.0's mTLS controller)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from rayop.api.common import format_time
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.raycluster.mtls import certificates as certs
from rayop.controllers.raycluster.mtls.sync import MTLSSync
from rayop.controllers.raycluster.pods import owner_reference
from rayop.kube.client import KubeClient
from rayop.kube.resources import SECRETS
from rayop.runtime.events.recorder import EventRecorder
from rayop.runtime.reconcile import Request
from rayop.testing import FakeClient, FakeClock, RecordingEventSink

from ._fakes import Cache
from ._fixtures import load_sample, parse

GATES = FeatureGates().with_overrides({"RayClusterMTLS": True})
NAME = "raycluster-mtls"
FQDN = f"{NAME}-head-svc.default.svc.cluster.local"
Obj = dict[str, Any]


def _issued(cert: Obj, *, not_after: str | None = None) -> Obj:
    cert["metadata"].update(uid=f"uid-{cert['metadata']['name']}", generation=1)
    cert["status"] = {
        "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}],
        **({"notAfter": not_after} if not_after else {}),
    }
    return cert


def _sync(
    cluster: Obj, objects: list[Obj], pods: list[Obj], clock: FakeClock
) -> tuple[MTLSSync, FakeClient, RecordingEventSink]:
    api, events = FakeClient(), RecordingEventSink()
    sync = MTLSSync(
        client=cast(KubeClient, api),
        clusters=Cache([cluster]),
        issuers=Cache([o for o in objects if o["kind"] == "Issuer"]),
        certificates=Cache([o for o in objects if o["kind"] == "Certificate"]),
        pods=Cache(pods),
        recorder=cast(EventRecorder, events),
        gates=GATES,
        cluster_domain="cluster.local",
        clock=clock,
    )
    return sync, api, events


def _pki(cluster: Obj, clock: FakeClock, *, ready_worker: bool = True) -> list[Obj]:
    rc = parse(cluster)
    owner = owner_reference(rc)
    soon = format_time(clock.wall() + timedelta(hours=10))
    head = certs.build_leaf_certificate(rc, "head", owner, ips=[], head_fqdn=FQDN)
    worker = certs.build_leaf_certificate(rc, "worker", owner, ips=[], head_fqdn=FQDN)
    return [
        certs.build_self_signed_issuer(rc, owner),
        certs.build_ca_issuer(rc, owner),
        _issued(certs.build_ca_certificate(rc, owner)),
        _issued(head, not_after=soon),
        _issued(worker) if ready_worker else worker,
    ]


async def test_a_new_cluster_gets_its_issuers_and_certificates_in_kuberays_order() -> None:
    cluster = load_sample("ray-cluster.mtls.yaml", uid="0123456789")
    sync, api, events = _sync(cluster, [], [], FakeClock())
    result = await sync.reconcile(Request("default", NAME))
    created = [(c.kind, c.name) for c in api.calls_of("create")]
    assert created == [
        ("Issuer", f"ray-selfsigned-issuer-{NAME}"),
        ("Certificate", f"ray-ca-certificate-{NAME}"),
        ("Issuer", f"ray-ca-issuer-{NAME}"),
        ("Certificate", f"ray-head-cert-{NAME}"),
        ("Certificate", f"ray-worker-cert-{NAME}"),
    ]
    assert events.reasons() == ["MTLSCertsNotReady"], "created, not issued yet"
    assert result.requeue_after == 30.0


async def test_pod_ips_update_the_certificate_and_issued_secrets_get_owned() -> None:
    clock = FakeClock()
    cluster = load_sample("ray-cluster.mtls.yaml")
    head_pod = {
        "metadata": {
            "name": "h",
            "labels": {"ray.io/cluster": NAME, "ray.io/node-type": "head"},
        },
        "status": {"phase": "Running", "podIP": "10.0.0.7"},
    }
    sync, api, events = _sync(cluster, _pki(cluster, clock), [head_pod], clock)
    issued = (f"{NAME}-ca-secret-uid-1", f"ray-head-secret-{NAME}", f"ray-worker-secret-{NAME}")
    for name in issued:  # cert-manager wrote them
        api.put(SECRETS, {"metadata": {"name": name, "namespace": "default"}})
    result = await sync.reconcile(Request("default", NAME))
    (update,) = [c for c in api.calls_of("update", "Certificate")]
    assert update.name == f"ray-head-cert-{NAME}"
    assert update.body["spec"]["ipAddresses"] == ["10.0.0.7", "127.0.0.1"]
    notes = {e.reason: e.note for e in events.recorded}
    assert notes["MTLSCertificatesUpdated"] == (
        "Updated head certificate SANs (IPs: [10.0.0.7 127.0.0.1])"
    )
    secret_updates = {c.name: c.body for c in api.calls_of("update", "Secret")}
    assert set(secret_updates) == set(issued)
    (ref,) = secret_updates[f"ray-worker-secret-{NAME}"]["metadata"]["ownerReferences"]
    assert ref == {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "name": f"ray-worker-cert-{NAME}",
        "uid": f"uid-ray-worker-cert-{NAME}",
    }
    assert "MTLSPKIReady" in notes
    assert notes["MTLSCertificateExpiringSoon"] == (
        f"TLS certificate ray-head-cert-{NAME} expires in 10.0 hours; Ray does not hot-reload "
        "certs so a pod restart will be needed after renewal"
    )
    assert result.requeue_after == 60.0


async def test_unissued_certificates_requeue_after_30s() -> None:
    clock = FakeClock()
    cluster = load_sample("ray-cluster.mtls.yaml")
    sync, api, events = _sync(cluster, _pki(cluster, clock, ready_worker=False), [], clock)
    result = await sync.reconcile(Request("default", NAME))
    assert events.reasons() == ["MTLSCertsNotReady"]
    assert result.requeue_after == 30.0
    assert api.calls_of("create") == [] and api.calls_of("update", "Certificate") == []


async def test_tls_off_or_another_manager_is_left_alone() -> None:
    clock = FakeClock()
    off = load_sample("ray-cluster.mtls.yaml")
    off["spec"]["tlsOptions"] = {"enabled": False}
    managed = load_sample("ray-cluster.mtls.yaml")
    managed["spec"]["managedBy"] = "example.com/other"
    for cluster in (off, managed):
        sync, api, events = _sync(cluster, [], [], clock)
        await sync.reconcile(Request("default", NAME))
        assert api.calls == [] and events.recorded == []
