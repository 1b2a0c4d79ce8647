"""The informer cache's change count: it grows with every store and removal and with nothing
else, so a reader that kept what it derived at one count may hand it out again at that count."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rayop.kube.resources import PODS
from rayop.runtime.indexer import OWNER_UID_INDEX, Indexer
from rayop.runtime.informer import SharedInformer
from rayop.runtime.informer_factory import MultiNamespaceInformer


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
