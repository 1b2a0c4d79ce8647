"""The JSON side of Kubernetes' protobuf messages: Go's names, zero values and special types."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.message import Message

from rayop.sim.apiserver import protobuf
from rayop.sim.apiserver.proto.go_fields import FIELDS
from rayop.sim.apiserver.protobuf_json import (
    ConversionError,
    format_go_duration,
    message_from_dict,
    message_to_dict,
    new_message,
    parse_go_duration,
)

_ROOT = Path(__file__).resolve().parents[2]


def _msg(name: str) -> Any:
    protobuf.has_message("v1", "Pod")  # loads the generated modules
    desc = descriptor_pool.Default().FindMessageTypeByName(name)
    cls: type[Message] = message_factory.GetMessageClass(desc)
    return cls()


def test_zero_values_follow_go_json_omitempty_and_pointers() -> None:
    spec = _msg("k8s.io.api.apps.v1.DeploymentSpec")
    spec.replicas = 0  # *int32: written even when zero
    spec.minReadySeconds = 0  # int32 with omitempty: left out
    spec.paused = False  # bool with omitempty: left out
    assert message_to_dict(spec) == {"replicas": 0}
    container = _msg("k8s.io.api.core.v1.Container")
    container.name = ""  # no omitempty: Go writes ""
    container.image = ""  # omitempty
    assert message_to_dict(container) == {"name": ""}


def test_go_json_names_that_differ_from_the_proto_field_names() -> None:
    ref = _msg("k8s.io.api.authentication.v1.BoundObjectReference")
    message_from_dict(ref, {"kind": "Pod", "uid": "u-1"})
    assert ref.uID == "u-1"
    assert message_to_dict(ref) == {"kind": "Pod", "uid": "u-1"}


def test_inlined_messages_flatten_into_their_parent() -> None:
    volume = {"name": "v", "secret": {"secretName": "s", "defaultMode": 420}}
    msg = _msg("k8s.io.api.core.v1.Volume")
    message_from_dict(msg, volume)
    assert msg.volumeSource.secret.secretName == "s"
    assert message_to_dict(msg) == volume


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("k8s.io.apimachinery.pkg.apis.meta.v1.Time", "2026-01-02T03:04:05Z"),
        ("k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime", "2026-01-02T03:04:05.000007Z"),
        ("k8s.io.apimachinery.pkg.apis.meta.v1.Duration", "1h2m3.5s"),
        ("k8s.io.apimachinery.pkg.util.intstr.IntOrString", 8080),
        ("k8s.io.apimachinery.pkg.util.intstr.IntOrString", "dashboard"),
        ("k8s.io.apimachinery.pkg.api.resource.Quantity", "500m"),
    ],
)
def test_special_types_keep_their_json_form(name: str, value: Any) -> None:
    holder = {
        "k8s.io.apimachinery.pkg.apis.meta.v1.Time": ("k8s.io.api.core.v1.Event", "lastTimestamp"),
        "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": ("k8s.io.api.core.v1.Event", "eventTime"),
        "k8s.io.apimachinery.pkg.apis.meta.v1.Duration": (
            "k8s.io.apimachinery.pkg.apis.meta.v1.Condition",
            None,
        ),
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString": (
            "k8s.io.api.core.v1.ServicePort",
            "targetPort",
        ),
        "k8s.io.apimachinery.pkg.api.resource.Quantity": (
            "k8s.io.api.core.v1.ResourceRequirements",
            None,
        ),
    }[name]
    if holder[1] is None:  # no simple holder: check the special value through its own message
        if name.endswith("Duration"):
            assert format_go_duration(parse_go_duration(str(value))) == value
        else:
            msg = _msg("k8s.io.api.core.v1.ResourceRequirements")
            message_from_dict(msg, {"limits": {"cpu": value}})
            assert message_to_dict(msg) == {"limits": {"cpu": value}}
        return
    msg = _msg(holder[0])
    message_from_dict(msg, {holder[1]: value})
    assert message_to_dict(msg) == {holder[1]: value}


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1500, "1.5µs"),
        (150_000_000, "150ms"),
        (10**9, "1s"),
        (90 * 10**9, "1m30s"),
        (3600 * 10**9, "1h0m0s"),
        (-2 * 10**9, "-2s"),
    ],
)
def test_durations_print_as_go_does(ns: int, text: str) -> None:
    assert format_go_duration(ns) == text
    assert parse_go_duration(text) == ns


def test_bytes_accept_base64_broken_over_lines_as_go_does() -> None:
    secret = _msg("k8s.io.api.core.v1.Secret")
    message_from_dict(secret, {"data": {"ca.crt": "aGVs\nbG8=\n"}})
    assert secret.data["ca.crt"] == b"hello"
    assert message_to_dict(secret) == {"data": {"ca.crt": "aGVsbG8="}}


def test_a_value_of_the_wrong_type_names_its_field() -> None:
    msg = _msg("k8s.io.api.core.v1.Pod")
    with pytest.raises(ConversionError, match=r"spec\.containers\[0\]\.ports: expected a list"):
        message_from_dict(msg, {"spec": {"containers": [{"name": "c", "ports": 80}]}})
    with pytest.raises(ConversionError, match=r"metadata\.name: cannot store an object"):
        message_from_dict(msg, {"metadata": {"name": {}}})
    with pytest.raises(ConversionError, match=r"spec\.containers\[0\]\.name: cannot store"):
        new_message(type(msg), {"spec": {"containers": [{"name": 7}]}})  # the fast path falls back
    built = new_message(
        type(msg), {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 1.0}]}]}}
    )
    assert message_to_dict(built) == {
        "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 1}]}]}
    }


def test_every_go_field_rule_names_a_field_of_its_message() -> None:
    _msg("k8s.io.api.core.v1.Pod")
    pool = descriptor_pool.Default()
    for message, fields in FIELDS.items():
        desc = pool.FindMessageTypeByName(message)
        assert set(fields) <= set(desc.fields_by_name), message


@pytest.mark.skipif(shutil.which("go") is None, reason="needs Go to download k8s.io/api")
def test_generated_modules_are_current() -> None:
    run = subprocess.run(
        [sys.executable, str(_ROOT / "scripts" / "gen-protobuf"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
