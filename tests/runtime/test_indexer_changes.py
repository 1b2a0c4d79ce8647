"""The informer cache's change count: it grows with every store and removal and with nothing
else, so a reader that kept what it derived at one count may hand it out again at that count."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rayop.kube.resources import PODS
from rayop.runtime.informers.factory import MultiNamespaceInformer
from rayop.runtime.informers.indexer import OWNER_UID_INDEX, Indexer
from rayop.runtime.informers.shared_informer import SharedInformer


def obj(name: str, owner: str, rv: int) -> dict[str, Any]:
    ref = {"uid": owner, "controller": True, "kind": "RayCluster"}
    meta = {"namespace": "ns", "name": name, "resourceVersion": str(rv), "ownerReferences": [ref]}
    return {"metadata": meta, "status": {"n": rv}}


NAMES = st.sampled_from(["a", "b", "c", "d"])
OWNERS = st.sampled_from(["u1", "u2"])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), NAMES, OWNERS),
        st.tuples(st.just("remove"), NAMES, OWNERS),
        st.tuples(st.just("read"), NAMES, OWNERS),
    ),
    max_size=40,
)


def snapshot(indexer: Indexer) -> tuple[Any, ...]:
    owned = tuple(
        tuple(o["metadata"]["name"] for o in indexer.by_index(OWNER_UID_INDEX, u))
        for u in ("u1", "u2")
    )
    return owned, tuple(sorted((k, repr(indexer.get(k))) for k in indexer))


@given(OPS, st.integers(min_value=1, max_value=3))
def test_the_count_grows_with_every_store_and_removal_and_nothing_else(
    ops: list[tuple[str, str, str]], cache_size: int
) -> None:
    indexer = Indexer(decoded_cache_size=cache_size)
    seen: dict[int, tuple[Any, ...]] = {indexer.changes: snapshot(indexer)}
    for rv, (op, name, owner) in enumerate(ops, start=1):
        before = indexer.changes
        if op == "put":
            indexer.put(obj(name, owner, rv))
            assert indexer.changes == before + 1
        elif op == "remove":
            gone = indexer.remove(f"ns/{name}")
            assert indexer.changes == before + (0 if gone is None else 1)
        else:
            indexer.get(f"ns/{name}")
            indexer.by_index(OWNER_UID_INDEX, owner)
            assert indexer.changes == before
        # equal counts, equal contents: what a reader derived at a count still holds there
        now = snapshot(indexer)
        assert seen.setdefault(indexer.changes, now) == now


def test_an_informer_reports_its_cache_count_and_several_namespaces_their_sum() -> None:
    a = SharedInformer(None, PODS, namespace="a")  # type: ignore[arg-type]  # never started
    b = SharedInformer(None, PODS, namespace="b")  # type: ignore[arg-type]
    both = MultiNamespaceInformer(PODS, {"a": a, "b": b})
    assert (a.changes, b.changes, both.changes) == (0, 0, 0)
    a._indexer.put(obj("x", "u1", 1))
    b._indexer.put(obj("y", "u1", 2))
    b._indexer.remove("ns/y")
    assert (a.changes, b.changes, both.changes) == (1, 2, 3)


MANY = st.sampled_from([f"p{i}" for i in range(12)])
MODEL_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), MANY, OWNERS),
        st.tuples(st.just("remove"), MANY, OWNERS),
        st.tuples(st.just("get"), MANY, OWNERS),
        st.tuples(st.just("by_index"), MANY, OWNERS),
        st.tuples(st.just("values"), MANY, OWNERS),
        st.tuples(st.just("stored_bytes"), MANY, OWNERS),
    ),
    max_size=80,
)


@settings(max_examples=300)
@given(MODEL_OPS, st.integers(min_value=1, max_value=12))
def test_objects_encoded_when_they_leave_the_decoded_read_back_as_stored(
    ops: list[tuple[str, str, str]], cache_size: int
) -> None:
    """Stores keep the newest objects decoded and encode them as they leave that LRU: every
    read, whatever the LRU's size and the order of stores, removals and reads, gives what a
    plain dictionary of the stored objects gives."""
    indexer = Indexer(decoded_cache_size=cache_size)
    model: dict[str, dict[str, Any]] = {}
    for rv, (op, name, owner) in enumerate(ops, start=1):
        key = f"ns/{name}"
        if op == "put":
            model[key] = obj(name, owner, rv)
            stored, _ = indexer.put(obj(name, owner, rv))
            assert stored == model[key]
        elif op == "remove":
            assert indexer.remove(key) == model.pop(key, None)
        elif op == "get":
            assert indexer.get(key) == model.get(key)
        elif op == "by_index":
            want = sorted(
                k for k, o in model.items() if o["metadata"]["ownerReferences"][0]["uid"] == owner
            )
            got = indexer.by_index(OWNER_UID_INDEX, owner)
            assert sorted(f"ns/{o['metadata']['name']}" for o in got) == want
            assert all(o == model[f"ns/{o['metadata']['name']}"] for o in got)
        elif op == "values":
            assert sorted(map(repr, indexer.values())) == sorted(map(repr, model.values()))
        else:
            assert (indexer.stored_bytes() > 0) == bool(model)
        assert sorted(indexer) == sorted(model)


@pytest.mark.parametrize("pair", [("x", "y"), ("y", "x"), ("m", "n"), ("n", "m")])
def test_a_list_that_pushes_a_not_yet_encoded_object_out_of_the_decoded_still_reads_it(
    pair: tuple[str, str],
) -> None:
    """One list decodes an object that was not decoded, which pushes out the oldest decoded
    one, not encoded yet and also in the list: both read back (whichever the set order)."""
    encoded, pending = pair
    indexer = Indexer(decoded_cache_size=8)
    indexer.put(obj(encoded, "u1", 1))
    others = [f"o{i}" for i in range(8)]
    for i, name in enumerate(others):  # pushes `encoded` out: it is encoded
        indexer.put(obj(name, "u2", 10 + i))
    indexer.put(obj(pending, "u1", 2))  # decoded, not encoded
    for name in others[1:]:  # `pending` becomes the oldest decoded object
        indexer.get(f"ns/{name}")
    got = indexer.by_index(OWNER_UID_INDEX, "u1")
    assert sorted(o["metadata"]["name"] for o in got) == sorted(pair)
    assert indexer.get(f"ns/{pending}") == obj(pending, "u1", 2)
    assert indexer.get(f"ns/{encoded}") == obj(encoded, "u1", 1)
