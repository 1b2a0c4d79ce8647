"""Field-by-field protobuf writing and the per-version memo: the same messages as the message path."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from google.protobuf import descriptor_pool, message_factory

from rayop.sim.apiserver.encoded_objects import EncodedObjects
from rayop.sim.apiserver.protobuf import (
    decode_protobuf,
    encode_protobuf,
    encode_watch_frame,
    message_class,
)
from rayop.sim.apiserver.protobuf_json import new_message
from rayop.sim.apiserver.protobuf_writer import Unwritable, write_object
from rayop.sim.machinery import errors as se

from .protobuf_samples import as_served, samples

_SAMPLES = samples()


def _stored_pod(name: str = "p") -> dict[str, Any]:
    pod = copy.deepcopy(_SAMPLES[("v1", "Pod")])
    pod["metadata"].update(
        name=name,
        namespace="default",
        uid="0d5c1c9e-0000-4000-8000-000000000001",
        resourceVersion="7",
        creationTimestamp="2026-03-04T05:06:07Z",
    )
    pod["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    return pod


@pytest.mark.parametrize("key", sorted(_SAMPLES), ids=lambda k: f"{k[0]}/{k[1]}")
def test_field_by_field_gives_the_message_paths_message(key: tuple[str, str]) -> None:
    obj = _SAMPLES[key]
    cls = message_class(*key)
    assert cls is not None
    desc: Any = cls.DESCRIPTOR
    data, spans = write_object(desc, obj)
    assert cls.FromString(data) == new_message(cls, obj)
    again, spans_again = write_object(desc, obj, (data, spans))  # every container reused
    assert cls.FromString(again) == new_message(cls, obj)
    assert sorted(spans_again) == sorted(spans)
    for field, (value, start, end) in spans.items():
        assert again[spans_again[field][1] : spans_again[field][2]] == data[start:end]
        assert spans_again[field][0] is value
    assert decode_protobuf(encode_protobuf(copy.deepcopy(obj))) == as_served(obj)


def test_a_value_that_does_not_fit_goes_the_message_way() -> None:
    cls = message_class("v1", "Pod")
    assert cls is not None
    desc: Any = cls.DESCRIPTOR
    pod = _stored_pod()
    pod["spec"]["terminationGracePeriodSeconds"] = 30.0  # an integral float: Go's JSON takes it
    with pytest.raises(Unwritable):
        write_object(desc, {"spec": {"containers": 3}})
    assert decode_protobuf(encode_protobuf(pod))["spec"]["terminationGracePeriodSeconds"] == 30
    bad = {**pod, "spec": {**pod["spec"], "containers": 3}}  # a new dict: objects never change
    with pytest.raises(se.StatusError) as err:
        encode_protobuf(bad)
    assert err.value.code == 500
    assert "containers" in str(err.value.status["message"])


def test_one_version_is_encoded_once_and_a_new_version_is_encoded_anew() -> None:
    pod = _stored_pod("memo")
    first = encode_protobuf(pod)
    assert encode_protobuf(pod) == first
    newer = {**pod, "metadata": {**pod["metadata"], "resourceVersion": "8"}}
    newer["status"] = {"phase": "Running", "podIP": "10.0.0.9"}  # spec shared, as a status write
    served = decode_protobuf(encode_protobuf(newer))
    assert served == as_served(newer)
    assert served["status"]["podIP"] == "10.0.0.9"
    dry_run = copy.deepcopy(newer)  # same name and version, another dict: never the memo's bytes
    dry_run["spec"]["containers"][0]["image"] = "changed"
    assert decode_protobuf(encode_protobuf(dry_run)) == as_served(dry_run)
    assert decode_protobuf(encode_protobuf(pod)) == as_served(pod)


def test_a_list_splices_its_items_bytes() -> None:
    pods = [_stored_pod("a"), _stored_pod("b")]
    pods[1]["spec"]["restartPolicy"] = "Always"
    encode_protobuf(pods[0])  # one item already encoded, one not
    listed: dict[str, Any] = {"apiVersion": "v1", "kind": "PodList", "items": pods}
    listed["metadata"] = {"resourceVersion": "9"}
    decoded = decode_protobuf(encode_protobuf(listed))
    assert decoded["metadata"] == {"resourceVersion": "9"}
    assert [{**i, "apiVersion": "v1", "kind": "Pod"} for i in decoded["items"]] == [
        as_served(p) for p in pods
    ]
    empty = decode_protobuf(encode_protobuf({**listed, "items": []}))
    assert empty == {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "9"}}


def test_the_memo_keeps_one_entry_a_name_and_drops_the_least_recently_used() -> None:
    memo = EncodedObjects(capacity=2)
    a, b, c = ({"metadata": {"name": n, "namespace": "ns"}} for n in "abc")
    for obj in (a, b):
        key = memo.key("Pod", obj)
        assert key is not None
        memo.put(key, obj, orjson.dumps(obj), {})
    key_a = memo.key("Pod", a)
    assert key_a is not None and memo.get(key_a, a) is not None  # a is now the most recent
    newer_a = {"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "2"}}
    assert memo.get(key_a, newer_a) is None
    key_c = memo.key("Pod", c)
    assert key_c is not None
    memo.put(key_c, c, b"c", {})
    assert len(memo) == 2
    key_b = memo.key("Pod", b)
    assert key_b is not None and memo.get(key_b, b) is None  # b went first
    assert memo.key("Pod", {"metadata": {}}) is None


def test_the_envelope_and_the_watch_frame_are_the_bytes_upb_writes() -> None:
    pod = _stored_pod("framed")
    cls = message_class("v1", "Pod")
    assert cls is not None
    pool = descriptor_pool.Default()
    unknown = pool.FindMessageTypeByName("k8s.io.apimachinery.pkg.runtime.Unknown")
    watch_event = pool.FindMessageTypeByName("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent")
    envelope: Any = message_factory.GetMessageClass(unknown)()
    envelope.typeMeta.apiVersion, envelope.typeMeta.kind = "v1", "Pod"
    envelope.raw = new_message(cls, pod).SerializeToString()
    envelope.contentEncoding = envelope.contentType = ""
    body = encode_protobuf(pod)
    assert body[:4] == b"k8s\x00"
    assert body[4:] == envelope.SerializeToString()
    event: Any = message_factory.GetMessageClass(watch_event)()
    event.type = "MODIFIED"
    event.object.raw = body
    expected = event.SerializeToString()
    assert encode_watch_frame("MODIFIED", pod) == len(expected).to_bytes(4, "big") + expected
