"""The spec memo: a repeated spec is converted once each way, and the results are the very
ones the conversion without the memo gives, key order included."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rayop.sim.apiserver import protobuf
from rayop.sim.apiserver import protobuf_writer as writer
from rayop.sim.apiserver.encoded_objects import EncodedObjects
from rayop.sim.apiserver.protobuf import decode_protobuf, encode_protobuf, message_class
from rayop.sim.apiserver.protobuf_json import new_message
from rayop.sim.apiserver.protobuf_writer import write_object
from rayop.sim.apiserver.spec_memo import SpecMemo

from .protobuf_samples import as_served, samples

_SAMPLES = samples()


@pytest.fixture(autouse=True)
def memos(monkeypatch: pytest.MonkeyPatch) -> tuple[SpecMemo, SpecMemo]:
    """Fresh memos for each test: the decoded specs', the encoded specs'."""
    decoded, encoded = SpecMemo(8), SpecMemo(8)
    monkeypatch.setattr(protobuf, "DECODED", decoded)
    monkeypatch.setattr(writer, "ENCODED", encoded)
    monkeypatch.setattr(protobuf, "_ENCODED", EncodedObjects(1 << 10))
    return decoded, encoded


@pytest.mark.parametrize("key", sorted(_SAMPLES), ids=lambda k: f"{k[0]}/{k[1]}")
def test_a_spec_read_twice_decodes_as_without_the_memo_in_the_same_key_order(
    key: tuple[str, str], memos: tuple[SpecMemo, SpecMemo]
) -> None:
    obj = _SAMPLES[key]
    expected = as_served(obj)
    bodies = []
    for name in ("one", "two"):
        copy_ = copy.deepcopy(obj)
        copy_["metadata"]["name"] = name
        bodies.append(encode_protobuf(copy_))
    first, second = (decode_protobuf(body) for body in bodies)
    for got, name in ((first, "one"), (second, "two")):
        want = {**expected, "metadata": {**expected["metadata"], "name": name}}
        assert got == want
        assert list(got) == list(want)
    if "spec" in obj and isinstance(obj["spec"], dict):
        assert memos[0].hits >= 1
        assert second["spec"] is not first["spec"]  # each caller owns its dict
        second["spec"]["changed"] = True
        assert "changed" not in decode_protobuf(bodies[0])["spec"]


def test_a_spec_written_again_reuses_its_bytes_and_decodes_the_same(
    memos: tuple[SpecMemo, SpecMemo],
) -> None:
    encoded = memos[1]
    cls = message_class("v1", "Pod")
    assert cls is not None
    desc: Any = cls.DESCRIPTOR
    pods = []
    for name in ("w-1", "w-2", "w-3"):
        pod = copy.deepcopy(_SAMPLES[("v1", "Pod")])
        pod["metadata"]["name"] = name
        pods.append(pod)
    written = [write_object(desc, pod)[0] for pod in pods]
    assert encoded.hits == 2 and encoded.misses == 1
    for pod, data in zip(pods, written, strict=True):
        assert data == new_message(cls, pod).SerializeToString()  # the bytes, field order too
    other = copy.deepcopy(pods[0])
    other["spec"]["restartPolicy"] = "Always"
    assert cls.FromString(write_object(desc, other)[0]) == new_message(cls, other)
    assert encoded.misses == 2


def test_the_memo_keeps_its_most_recently_used_entries() -> None:
    memo = SpecMemo(capacity=2)
    memo.put("m", b"a", b"1")
    memo.put("m", b"b", b"2")
    assert memo.get("m", b"a") == b"1"  # a is now the most recent
    memo.put("m", b"c", b"3")
    assert memo.get("m", b"b") is None and memo.get("m", b"a") == b"1" and len(memo) == 2
    assert memo.get("other", b"a") is None  # the message type is part of the key
