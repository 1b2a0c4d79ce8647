"""Indexes pods and Service selectors by label, so the endpoints controller never scans.

A Service's ``spec.selector`` is a map: a pod matches when it carries every pair. So

- :class:`PodLabelIndex` files each pod of a namespace under every ``(key, value)`` label pair
  it carries; the pods a selector may match are those of its rarest pair, checked in full.
  A sync then costs what the matching pods cost, not what the namespace holds.
- :class:`SelectorIndex` files each Service under one pair of its selector, the one fewest
  Services shared when it was added (a pod that matches carries that pair too). The Services a
  pod may match are those filed under one of its pairs, checked in full.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

Pair = tuple[str, str]


def label_pairs(labels: Mapping[str, Any] | None) -> frozenset[Pair]:
    """Returns a label map's ``(key, value)`` pairs, values as strings."""
    return frozenset((str(k), str(v)) for k, v in (labels or {}).items())


class PodLabelIndex:
    """The pods of every namespace by name and by label pair."""

    def __init__(self) -> None:
        self._pods: dict[str, dict[str, dict[str, Any]]] = {}
        self._pairs: dict[str, dict[str, frozenset[Pair]]] = {}
        self._by_pair: dict[str, dict[Pair, set[str]]] = {}

    def put(self, namespace: str, name: str, pod: dict[str, Any], labels: frozenset[Pair]) -> None:
        """Adds or replaces a pod (re-filed when its labels changed)."""
        self.remove(namespace, name)
        self._pods.setdefault(namespace, {})[name] = pod
        self._pairs.setdefault(namespace, {})[name] = labels
        by_pair = self._by_pair.setdefault(namespace, {})
        for pair in labels:
            by_pair.setdefault(pair, set()).add(name)

    def remove(self, namespace: str, name: str) -> None:
        """Forgets a pod; a no-op when it is unknown."""
        pods = self._pods.get(namespace)
        if pods is None or pods.pop(name, None) is None:
            return
        by_pair = self._by_pair[namespace]
        for pair in self._pairs[namespace].pop(name):
            names = by_pair.get(pair)
            if names is not None:
                names.discard(name)
                if not names:
                    del by_pair[pair]

    def matching(self, namespace: str, selector: frozenset[Pair]) -> Iterator[dict[str, Any]]:
        """Yields the pods of ``namespace`` that carry every pair of a non-empty ``selector``."""
        by_pair = self._by_pair.get(namespace)
        if not by_pair or not selector:
            return
        buckets = [by_pair.get(pair) for pair in selector]
        if any(b is None for b in buckets):
            return
        rarest = min((b for b in buckets if b is not None), key=len)
        pods, pairs = self._pods[namespace], self._pairs[namespace]
        for name in rarest:
            if selector <= pairs[name]:
                yield pods[name]


class SelectorIndex:
    """The Services of every namespace, each filed under one pair of its selector."""

    def __init__(self) -> None:
        self._selectors: dict[tuple[str, str], frozenset[Pair]] = {}
        self._anchor: dict[tuple[str, str], Pair] = {}
        self._by_pair: dict[str, dict[Pair, set[str]]] = {}

    def put(self, namespace: str, name: str, selector: frozenset[Pair]) -> None:
        """Adds or replaces a Service's selector (a non-empty one)."""
        self.remove(namespace, name)
        by_pair = self._by_pair.setdefault(namespace, {})
        anchor = min(sorted(selector), key=lambda p: len(by_pair.get(p, ())))
        self._selectors[namespace, name] = selector
        self._anchor[namespace, name] = anchor
        by_pair.setdefault(anchor, set()).add(name)

    def remove(self, namespace: str, name: str) -> None:
        """Forgets a Service; a no-op when it is unknown."""
        anchor = self._anchor.pop((namespace, name), None)
        if anchor is None:
            return
        del self._selectors[namespace, name]
        names = self._by_pair[namespace][anchor]
        names.discard(name)
        if not names:
            del self._by_pair[namespace][anchor]

    def matching(self, namespace: str, labels: frozenset[Pair]) -> Iterator[str]:
        """Yields the names of the Services of ``namespace`` whose selector ``labels`` satisfy."""
        by_pair = self._by_pair.get(namespace)
        if not by_pair:
            return
        for pair in labels:
            for name in by_pair.get(pair, ()):
                if self._selectors[namespace, name] <= labels:
                    yield name
