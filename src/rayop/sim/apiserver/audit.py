"""The API server's audit: request counts, a log of every request, /metrics text.

Every resource request (reads and watches too) is logged with its API group and the user
that made it, so tests can tell ``events`` from ``events.k8s.io`` events and can collect the
exact permissions an operator's service account used. Given a path (``--audit-log-path`` of
``rayop up``/``rayop apiserver``, as kube-apiserver's flag), every record is also appended
to that file as one JSON object a line, for whoever watches the plane from outside its process.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

__all__ = ["WRITE_VERBS", "Audit", "AuditRecord"]

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
_METRIC_VERB = {"create": "POST", "update": "PUT"}
_MAX_REQUESTS = 1_000_000


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One request as the audit saw it.

    Attributes:
        time: Unix time of the response.
        verb: Kubernetes audit verb (get, list, watch, create, update, patch, delete,
            deletecollection).
        resource: Plural resource name ("pods", "rayclusters").
        subresource: "status", "proxy"... or "".
        namespace: Namespace or "".
        name: Object name ("" for collections; the generated name for generateName creates).
        code: HTTP status code sent.
        user: The authenticated user ("admin" or "system:serviceaccount:<ns>:<name>").
        group: API group ("" for the core group).
    """

    time: float
    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int
    user: str
    group: str = ""


class Audit:
    """Counts and logs every request; single-threaded.

    Args:
        max_requests: How many of the most recent requests :attr:`requests` keeps (writes are
            all kept in :attr:`writes`).
        log_path: A file every record is appended to (JSON lines); None: none.
    """

    def __init__(self, *, max_requests: int = _MAX_REQUESTS, log_path: Path | None = None) -> None:
        self._counts: Counter[tuple[str, str, str, str, str, int, str]] = Counter()
        self._writes: list[AuditRecord] = []
        self._requests: deque[AuditRecord] = deque(maxlen=max_requests)
        self.log_path = log_path
        self._log: TextIO | None = None

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
        group: str = "",
    ) -> None:
        """Records one finished request."""
        self._counts[(verb, group, resource, subresource, namespace, code, user)] += 1
        rec = AuditRecord(
            time.time(), verb, resource, subresource, namespace, name, code, user, group
        )
        self._requests.append(rec)
        if self.log_path is not None:
            if self._log is None:
                self._log = self.log_path.open("a", buffering=1, encoding="utf-8")
            self._log.write(json.dumps(dataclasses.asdict(rec)) + "\n")
        if verb in WRITE_VERBS:
            self._writes.append(rec)

    def count(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        code: int | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        group: str | None = None,
        user: str | None = None,
    ) -> int:
        """Returns how many requests matched every given filter (None matches anything)."""
        wanted = (verb, group, resource, subresource, namespace, code, user)
        return sum(
            k
            for key, k in self._counts.items()
            if all(w is None or w == v for w, v in zip(wanted, key, strict=True))
        )

    @property
    def writes(self) -> list[AuditRecord]:
        """Every write request so far, oldest first (a copy)."""
        return list(self._writes)

    @property
    def requests(self) -> list[AuditRecord]:
        """The most recent requests of every verb (reads included), oldest first (a copy)."""
        return list(self._requests)

    def close(self) -> None:
        """Closes the log file (a later record opens it again)."""
        if self._log is not None:
            self._log.close()
            self._log = None

    def reset(self) -> None:
        """Forgets every count, request and write."""
        self._counts.clear()
        self._writes.clear()
        self._requests.clear()

    def render_metrics(self) -> bytes:
        """Returns apiserver_request_total{verb,resource,code} in Prometheus text format."""
        agg: Counter[tuple[str, str, str, int]] = Counter()
        for (v, _g, r, s, _n, c, _u), k in self._counts.items():
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
