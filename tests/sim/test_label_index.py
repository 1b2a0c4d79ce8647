"""The endpoints controller's label indexes answer exactly what a full scan would."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rayop.sim.controller_manager.label_index import (
    Pair,
    PodLabelIndex,
    SelectorIndex,
    label_pairs,
)

KEYS = ("ray.io/cluster", "ray.io/node-type", "app")
VALUES = ("a", "b", "c")
labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
op_st = st.tuples(
    st.sampled_from(("put", "remove")),
    st.sampled_from(("ns1", "ns2")),
    st.sampled_from(tuple(f"o{i}" for i in range(6))),
    labels_st,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(op_st, max_size=40), labels_st, st.sampled_from(("ns1", "ns2")))
def test_pod_index_matches_a_full_scan(
    ops: list[tuple[str, str, str, dict[str, str]]], selector: dict[str, str], namespace: str
) -> None:
    index = PodLabelIndex()
    truth: dict[tuple[str, str], dict[str, Any]] = {}
    for op, ns, name, labels in ops:
        if op == "put":
            pod: dict[str, Any] = {"metadata": {"name": name, "labels": labels}}
            index.put(ns, name, pod, label_pairs(labels))
            truth[ns, name] = pod
        else:
            index.remove(ns, name)
            truth.pop((ns, name), None)
    pairs = label_pairs(selector)
    found = sorted(p["metadata"]["name"] for p in index.matching(namespace, pairs))
    expected = sorted(
        name
        for (ns, name), pod in truth.items()
        if ns == namespace and pairs and pairs <= label_pairs(pod["metadata"]["labels"])
    )
    assert found == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(op_st, max_size=40), labels_st, st.sampled_from(("ns1", "ns2")))
def test_selector_index_matches_a_full_scan(
    ops: list[tuple[str, str, str, dict[str, str]]], labels: dict[str, str], namespace: str
) -> None:
    index, truth = SelectorIndex(), dict[tuple[str, str], frozenset[Pair]]()
    for op, ns, name, selector in ops:
        if op == "put" and selector:
            index.put(ns, name, label_pairs(selector))
            truth[ns, name] = label_pairs(selector)
        else:
            index.remove(ns, name)
            truth.pop((ns, name), None)
    pairs = label_pairs(labels)
    found = sorted(index.matching(namespace, pairs))
    expected = sorted(name for (ns, name), sel in truth.items() if ns == namespace and sel <= pairs)
    assert found == expected


def test_a_pod_lookup_visits_only_the_rarest_pair() -> None:
    index = PodLabelIndex()
    for i in range(1000):
        labels = {"ray.io/node-type": "worker", "ray.io/cluster": f"c{i}"}
        index.put("ns", f"p{i}", {"name": f"p{i}"}, label_pairs(labels))
    selector = label_pairs({"ray.io/node-type": "worker", "ray.io/cluster": "c7"})
    # The rarest pair holds one pod: a scan of the 999 others would be the quadratic cost.
    assert [p["name"] for p in index.matching("ns", selector)] == ["p7"]
    assert list(index.matching("ns", label_pairs({"ray.io/cluster": "none"}))) == []
