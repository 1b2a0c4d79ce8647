"""The per-cluster cache of the last serve config each cluster's dashboard accepted.

KubeRay keeps an LRU of 1000 RayServices, each holding a map from cluster name to the
``serveConfigV2`` string last PUT successfully (KubeRay v1.7.0: ``cacheServeConfig`` and
``checkIfNeedSubmitServeApplications`` in
``ray-operator/controllers/ray/rayservice_controller.go``). A config is sent again only when the
cache has nothing for the cluster, the cluster reports no applications, or the string differs. The
cache lives in memory: after an operator restart every cluster gets one PUT again, which Serve
treats as a no-op when nothing changed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

DEFAULT_CAPACITY = 1000
"""How many RayServices are remembered (KubeRay's LRU size)."""


class ServeConfigCache:
    """Maps (namespace, RayService) -> cluster name -> last deployed serve config.

    Args:
        capacity: RayServices kept; the least recently used one is forgotten beyond it.
    """

    def __init__(self, *, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[tuple[str, str], dict[str, str]] = OrderedDict()

    def get(self, namespace: str, service: str, cluster: str) -> str | None:
        """Returns the config last deployed to ``cluster``, or None."""
        entry = self._entries.get((namespace, service))
        if entry is None:
            return None
        self._entries.move_to_end((namespace, service))
        return entry.get(cluster)

    def put(self, namespace: str, service: str, cluster: str, config: str) -> None:
        """Remembers that ``cluster`` accepted ``config``."""
        key = (namespace, service)
        self._entries.setdefault(key, {})[cluster] = config
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def prune(self, namespace: str, service: str, keep: Iterable[str]) -> None:
        """Forgets every cluster of the RayService except those in ``keep``."""
        entry = self._entries.get((namespace, service))
        if entry is None:
            return
        wanted = set(keep)
        for cluster in [c for c in entry if c not in wanted]:
            del entry[cluster]

    def forget(self, namespace: str, service: str) -> None:
        """Forgets the RayService entirely (it was deleted)."""
        self._entries.pop((namespace, service), None)

    def __len__(self) -> int:
        return len(self._entries)
