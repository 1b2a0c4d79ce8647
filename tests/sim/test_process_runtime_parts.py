"""The pure parts of the ``--real-ray`` process runtime, without Ray: env resolution, volume
materialization, command rewriting, image versions, container states, the loopback shim, and
the startup refusal when Ray is missing."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rayop.sim.nodes.processes.container_state import ContainerState, render
from rayop.sim.nodes.processes.image_version import image_ray_version, version_warning
from rayop.sim.nodes.processes.loopback import LoopbackAddresses, build_shim
from rayop.sim.nodes.processes.pod_env import EnvError, resolve_env
from rayop.sim.nodes.processes.rewrite import (
    CommandRewriter,
    address_services,
    drop_login_flag,
    rewrite_addresses,
)
from rayop.sim.nodes.processes.volumes import VolumeError, container_mounts, materialize_volumes

Obj = dict[str, Any]
POD: Obj = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "labels": {"app": "x"}},
    "spec": {"nodeName": "n0"},
    "status": {"podIP": "127.20.0.2"},
}
OBJECTS: dict[tuple[str, str], Obj] = {
    ("ConfigMap", "cm"): {"data": {"a.py": "print(1)", "k": "v"}},
    ("Secret", "s"): {"data": {"token": base64.b64encode(b"t0p").decode()}},
}


def lookup(kind: str, name: str) -> Obj | None:
    return OBJECTS.get((kind, name))


def test_env_resolves_values_refs_downward_api_and_dollar_references() -> None:
    container: Obj = {
        "resources": {"limits": {"cpu": "2", "memory": "1Gi"}},
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
        "env": [
            {"name": "A", "value": "1"},
            {"name": "B", "value": "$(A)-$$(A)-$(NOPE)"},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {
                "name": "MEM",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
            },
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "token"}}},
            {"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
        ],
    }
    env = resolve_env(POD, container, lookup)
    assert env["B"] == "1-$(A)-$(NOPE)" and env["IP"] == "127.20.0.2" and env["APP"] == "x"
    assert env["CPU"] == "2" and env["MEM"] == "1024" and env["TOKEN"] == "t0p"
    assert env["K"] == "v" and env["CM_a.py"] == "print(1)"


def test_a_missing_required_reference_is_an_env_error() -> None:
    container: Obj = {
        "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k"}}}]
    }
    with pytest.raises(EnvError, match='configmap "gone" not found'):
        resolve_env(POD, container, lookup)
    optional: Obj = {
        "env": [
            {
                "name": "X",
                "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k", "optional": True}},
            }
        ]
    }
    assert resolve_env(POD, optional, lookup) == {}


def test_volumes_are_written_under_the_pod_directory(tmp_path: Path) -> None:
    pod: Obj = {
        **POD,
        "spec": {
            "volumes": [
                {
                    "name": "code",
                    "configMap": {"name": "cm", "items": [{"key": "a.py", "path": "x/a.py"}]},
                },
                {"name": "sec", "secret": {"secretName": "s"}},
                {"name": "scratch", "emptyDir": {}},
                {
                    "name": "info",
                    "downwardAPI": {
                        "items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]
                    },
                },
                {
                    "name": "both",
                    "projected": {
                        "sources": [{"configMap": {"name": "cm"}}, {"secret": {"name": "s"}}]
                    },
                },
            ]
        },
    }
    volumes = materialize_volumes(pod, tmp_path / "v", tmp_path / "claims", lookup)
    assert (volumes["code"] / "x" / "a.py").read_text() == "print(1)"
    assert (volumes["sec"] / "token").read_bytes() == b"t0p"
    assert volumes["scratch"].is_dir() and (volumes["info"] / "name").read_text() == "p"
    assert {p.name for p in volumes["both"].iterdir()} == {"a.py", "k", "token"}
    mounts = container_mounts(
        {"volumeMounts": [{"name": "code", "mountPath": "/home/ray/samples"}]}, volumes
    )
    assert mounts == {"/home/ray/samples": str(volumes["code"])}


def test_an_unsupported_or_missing_volume_is_refused(tmp_path: Path) -> None:
    for volume, message in (
        ({"name": "v", "configMap": {"name": "gone"}}, 'configmap "gone" not found'),
        ({"name": "v", "iscsi": {}}, 'volume "v" of type iscsi is not supported'),
    ):
        with pytest.raises(VolumeError, match=message):
            materialize_volumes({**POD, "spec": {"volumes": [volume]}}, tmp_path, tmp_path, lookup)


def test_commands_get_mount_paths_and_service_names_rewritten() -> None:
    rewriter = CommandRewriter(
        {"/home/ray/samples": "/tmp/rr/1/v/code", "/home/ray": "/tmp/rr/1/home"},
        lambda ns, svc: "127.20.0.2" if (ns, svc) == ("default", "rc-head-svc") else None,
    )
    argv = rewriter.argv(
        [
            "/bin/bash",
            "-lc",
            "--",
            "ray start --address=rc-head-svc.default.svc.cluster.local:6379; "
            "python /home/ray/samples/a.py; ls /home/rayx /home/ray; curl other.ns.svc:80",
        ]
    )
    assert argv[:3] == ["/bin/bash", "-c", "--"]
    assert argv[3] == (
        "ray start --address=127.20.0.2:6379; python /tmp/rr/1/v/code/a.py; "
        "ls /home/rayx /tmp/rr/1/home; curl other.ns.svc:80"
    )
    assert drop_login_flag(["sh", "-l", "-c", "x"]) == ["sh", "-c", "x"]
    assert drop_login_flag(["python", "-l"]) == ["python", "-l"]


def test_redis_addresses_resolve_short_service_names_in_the_pod_namespace() -> None:
    ips = {("ns", "redis"): "127.9.0.2", ("other", "cache"): "127.9.0.3"}

    def resolve(ns: str, svc: str) -> str | None:
        return ips.get((ns, svc))

    value = "redis:6379,cache.other:7000,127.0.0.1:6380,gone:1"
    assert address_services(value, "ns") == [("ns", "redis"), ("other", "cache"), ("ns", "gone")]
    assert rewrite_addresses(value, "ns", resolve) == (
        "127.9.0.2:6379,127.9.0.3:7000,127.0.0.1:6380,gone:1"
    )
    assert rewrite_addresses("redis://:pw@redis:6379", "ns", resolve) == (
        "redis://:pw@127.9.0.2:6379"
    )


def test_image_versions_and_the_warning() -> None:
    assert image_ray_version("rayproject/ray:2.52.0") == "2.52.0"
    assert image_ray_version("rayproject/ray:2.52.0-py311-gpu") == "2.52.0"
    assert image_ray_version("rayproject/ray-ml:nightly") is None
    assert image_ray_version("registry:5000/ray") is None
    assert image_ray_version("redis:7.4.0") is None  # not a Ray image
    assert version_warning("head", "rayproject/ray:2.60.0", "2.60.0") is None
    message = version_warning("head", "rayproject/ray:2.52.0", "2.60.0")
    assert message is not None and "Ray 2.60.0 installed on this machine runs it" in message


def test_container_states_render_phase_and_conditions() -> None:
    pod: Obj = {"metadata": {"name": "p"}, "spec": {"restartPolicy": "Never"}}
    main = [ContainerState("c", "busybox")]
    main[0].running("t0", "rayop://1")
    main[0].ready = True
    render(pod, [], main, "t0")
    assert pod["status"]["phase"] == "Running"
    assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "True"
    main[0].ended(127, "t1")
    render(pod, [], main, "t1")
    term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (
        pod["status"]["phase"] == "Failed" and term["exitCode"] == 127 and term["reason"] == "Error"
    )
    always: Obj = {"metadata": {"name": "p"}, "spec": {}}
    main[0].restarting("CrashLoopBackOff", "back-off")
    render(always, [], main, "t2")
    status = always["status"]["containerStatuses"][0]
    assert always["status"]["phase"] == "Running" and status["restartCount"] == 1
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert status["lastState"]["terminated"]["exitCode"] == 127


def test_loopback_addresses_are_unique_and_skip_network_and_broadcast() -> None:
    addresses = LoopbackAddresses(seed=1)
    ips = [addresses.allocate() for _ in range(600)]
    assert len(set(ips)) == 600 and all(ip.startswith(f"127.{addresses.block}.") for ip in ips)
    assert not any(ip.endswith((".0", ".255")) for ip in ips)


PROBE = """
import socket
server = socket.socket()
server.bind(("0.0.0.0", 0))
server.listen()
port = server.getsockname()[1]
client = socket.create_connection(("127.0.0.1", port))
peer = server.accept()[0].getpeername()[0]
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.connect(("192.0.2.1", 53))
print(server.getsockname()[0], client.getpeername()[0], peer, udp.getsockname()[0])
"""


def test_the_shim_puts_a_process_on_its_pod_address(tmp_path: Path) -> None:
    shim = build_shim(tmp_path)
    env = dict(os.environ, LD_PRELOAD=str(shim), RAYOP_POD_IP="127.31.0.9")
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["127.31.0.9"] * 4
    assert build_shim(tmp_path) == shim  # built once


V6ONLY_PROBE = """
import socket

def free_port():
    s = socket.socket()
    s.bind(("0.0.0.0", 0))
    port = s.getsockname()[1]
    s.close()
    return port

def v6only_server(port):
    s = socket.socket(socket.AF_INET6)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind(("::", port))  # without the fix: EINVAL, as redis-server's `bind * -::*` met
    s.listen()
    return s

# redis-server's default: 0.0.0.0 first, then [::] (IPV6_V6ONLY) on the same port
shared = free_port()
v4 = socket.socket()
v4.bind(("0.0.0.0", shared))
v4.listen()
also_v6 = v6only_server(shared)
socket.create_connection(("127.31.0.9", shared)).close()
print(v4.accept()[1][0])
# a lone [::] IPV6_V6ONLY server answers at the pod's address, and at [::1] inside the pod
alone = free_port()
v6 = v6only_server(alone)
socket.create_connection(("127.31.0.9", alone)).close()
print(v6.accept()[1][0])
client = socket.socket(socket.AF_INET6)
client.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
client.connect(("::1", alone))
print(client.getpeername()[0])
"""


def test_the_shim_serves_an_ipv6_only_wildcard_bind_at_the_pod_address(tmp_path: Path) -> None:
    env = dict(os.environ, LD_PRELOAD=str(build_shim(tmp_path)), RAYOP_POD_IP="127.31.0.9")
    out = subprocess.run(
        [sys.executable, "-c", V6ONLY_PROBE], env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["127.31.0.9", "::ffff:127.31.0.9", "::ffff:127.31.0.9"]


def test_real_ray_without_ray_stops_at_startup_saying_how_to_install_it(tmp_path: Path) -> None:
    env = dict(os.environ, RAYOP_RAY_ENV=str(tmp_path / "no-ray"))
    for command in ("up", "apiserver"):
        done = subprocess.run(
            [sys.executable, "-m", "rayop", command, "--real-ray"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert 'pip install "rayop[ray]"' in done.stderr and "has no ray command" in done.stderr
