"""The API server's audit: request counts by verb/resource/code, a log of writes, /metrics text."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

__all__ = ["WRITE_VERBS", "Audit", "AuditRecord"]

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
_METRIC_VERB = {"create": "POST", "update": "PUT"}


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One write request as the audit saw it.

    Attributes:
        time: Unix time of the response.
        verb: Kubernetes audit verb (create, update, patch, delete, deletecollection).
        resource: Plural resource name ("pods", "rayclusters").
        subresource: "status", "proxy"... or "".
        namespace: Namespace or "".
        name: Object name ("" for collections; the generated name for generateName creates).
        code: HTTP status code sent.
        user: The authenticated user.
    """

    time: float
    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int
    user: str


class Audit:
    """Counts every request and logs every write; single-threaded."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str, str, str, int]] = Counter()
        self._writes: list[AuditRecord] = []

    def record(
        self,
        *,
        verb: str,
        resource: str,
        code: int,
        subresource: str = "",
        namespace: str = "",
        name: str = "",
        user: str = "admin",
    ) -> None:
        """Records one finished request."""
        self._counts[(verb, resource, subresource, namespace, code)] += 1
        if verb in WRITE_VERBS:
            self._writes.append(
                AuditRecord(time.time(), verb, resource, subresource, namespace, name, code, user)
            )

    def count(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        code: int | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
    ) -> int:
        """Returns how many requests matched every given filter (None matches anything)."""
        total = 0
        for (v, r, s, n, c), k in self._counts.items():
            if verb is not None and v != verb:
                continue
            if resource is not None and r != resource:
                continue
            if subresource is not None and s != subresource:
                continue
            if namespace is not None and n != namespace:
                continue
            if code is not None and c != code:
                continue
            total += k
        return total

    @property
    def writes(self) -> list[AuditRecord]:
        """Every write request so far, oldest first (a copy)."""
        return list(self._writes)

    def reset(self) -> None:
        """Forgets every count and write."""
        self._counts.clear()
        self._writes.clear()

    def render_metrics(self) -> bytes:
        """Returns apiserver_request_total{verb,resource,code} in Prometheus text format."""
        agg: Counter[tuple[str, str, str, int]] = Counter()
        for (v, r, s, _n, c), k in self._counts.items():
            agg[(v, r, s, c)] += k
        lines = [
            "# HELP apiserver_request_total Counter of apiserver requests by verb, resource and code.",
            "# TYPE apiserver_request_total counter",
        ]
        for (v, r, s, c), k in sorted(agg.items()):
            lines.append(
                f'apiserver_request_total{{code="{c}",resource="{r}",subresource="{s}",verb="{_METRIC_VERB.get(v, v.upper())}"}} {k}'
            )
        return ("\n".join(lines) + "\n").encode()
