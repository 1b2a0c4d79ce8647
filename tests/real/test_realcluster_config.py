"""Fast checks (no control plane) of what the real tier configures for kwok and the apiserver."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rayop.cli.realcluster import (
    REQUIRED_FILES,
    RealCluster,
    RealClusterError,
    RealClusterSettings,
    kwok_stages,
    pod_network_socket,
)

STAGES = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-ready}
spec: {selector: {matchExpressions: []}}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-complete}
spec:
  selector:
    matchExpressions:
    - {key: '.metadata.ownerReferences.[].kind', operator: In, values: [Job]}
"""


def test_pod_complete_skips_submitter_pods_only() -> None:
    docs = {d["metadata"]["name"]: d for d in yaml.safe_load_all(kwok_stages(STAGES))}
    complete = docs["pod-complete"]["spec"]["selector"]["matchExpressions"]
    assert complete[0]["key"] == ".metadata.ownerReferences.[].kind"
    assert complete[1] == {
        "key": ".spec.containers[]?.env[]?.name",
        "operator": "NotIn",
        "values": ["RAY_JOB_SUBMISSION_ID"],
    }
    assert docs["pod-ready"]["spec"]["selector"]["matchExpressions"] == []


def test_apiserver_tunnels_cluster_traffic_to_the_socket(tmp_path: Path) -> None:
    cluster = RealCluster(RealClusterSettings(workdir=tmp_path, binaries=tmp_path))
    path = cluster._write_egress_config()
    doc = yaml.safe_load(path.read_text())
    (selection,) = doc["egressSelections"]
    assert selection["name"] == "cluster"
    assert selection["connection"]["proxyProtocol"] == "HTTPConnect"
    socket = selection["connection"]["transport"]["uds"]["udsName"]
    assert socket == str(pod_network_socket(tmp_path / "kubeconfig"))
    assert socket == str(tmp_path.resolve() / "pod-network.sock")


def test_the_scheduler_gets_the_extra_flags_after_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = RealClusterSettings(
        workdir=tmp_path, binaries=tmp_path, scheduler_flags=("--kube-api-qps=500",)
    )
    cluster = RealCluster(settings)
    spawned: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(cluster, "_spawn", lambda binary, args: spawned.append((binary, args)))
    cluster._start_scheduler()
    ((binary, args),) = spawned
    assert binary == "kube-scheduler"
    assert args[-1] == "--kube-api-qps=500"
    assert "--leader-elect=false" in args[:-1]


@pytest.mark.parametrize("failures", [1, 3])
def test_a_start_that_lost_a_port_race_is_tried_again_on_new_ports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failures: int
) -> None:
    """Another process took a component's port between the choice and the bind: the start is
    tried again from a clean store (3 attempts at most); any other failure is not retried."""
    binaries = tmp_path / "bin"
    binaries.mkdir()
    for name in (*REQUIRED_FILES, "etcd"):
        (binaries / name).write_text("")
    cluster = RealCluster(RealClusterSettings(workdir=tmp_path / "work", binaries=binaries))
    attempts: list[bool] = []

    def start_all() -> None:
        store = cluster.workdir / "etcd"
        attempts.append(store.exists())  # a retry starts without the lost attempt's data
        store.mkdir()
        (cluster.workdir / "logs" / "kube-apiserver.log").write_text("bind: address in use\n")
        if len(attempts) <= failures:
            raise RealClusterError(
                "kube-apiserver exited with code 1:\n"
                "listen tcp 127.0.0.1:44349: bind: address already in use"
            )

    monkeypatch.setattr(cluster, "_start_all", start_all)
    monkeypatch.setattr(cluster, "stop", lambda: None)
    if failures < 3:
        cluster.start()
        assert attempts == [False, False]
        assert (cluster.workdir / "logs" / "kube-apiserver.lost-port-race.log").is_file()
    else:
        with pytest.raises(RealClusterError, match="address already in use"):
            cluster.start()
        assert len(attempts) == 3

    other = RealCluster(RealClusterSettings(workdir=tmp_path / "other", binaries=binaries))
    calls: list[int] = []

    def fails_otherwise() -> None:
        calls.append(1)
        raise RealClusterError("kube-apiserver exited with code 1:\nsome other reason")

    monkeypatch.setattr(other, "_start_all", fails_otherwise)
    monkeypatch.setattr(other, "stop", lambda: None)
    with pytest.raises(RealClusterError, match="some other reason"):
        other.start()
    assert calls == [1]
