"""A fluid model of one controller that writes rayop's real metric series, second by second.

Work arrives at ``arrivals`` keys a second; ``workers`` workers each take ``pass_seconds`` per
reconcile; what they cannot serve queues up. Each reconcile makes ``requests_per_pass`` API
calls of ``api_seconds`` each (plus ``throttle_seconds`` in the token bucket), and fails with
share ``error_share``. The series are the operator's own (:class:`OperatorMetrics`,
:class:`RestClientMetrics`), so ``rayop advise`` reads exactly what a running rayop exports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge

from rayop.advise.evidence import Scrape
from rayop.advise.exposition import Snapshot
from rayop.kube.metrics import RestClientMetrics
from rayop.runtime.metrics import OperatorMetrics

HOST = "127.0.0.1:6443"


@dataclass
class Load:
    """One phase of the model: how much work arrives and what it costs."""

    arrivals: float
    pass_seconds: float = 0.1
    api_seconds: float = 0.01
    throttle_seconds: float = 0.0
    error_share: float = 0.0
    requests_per_pass: int = 2
    creates_per_pass: int = 1
    """Of those requests, how many are POSTs (what the pass created)."""
    cpu_seconds: float = 0.0
    """CPU seconds the operator's process spends each second (process_cpu_seconds_total)."""


@dataclass
class FluidOperator:
    """One controller named ``name`` with ``workers`` workers, as a flow of work."""

    workers: int
    name: str = "raycluster"
    flavour: str = "rayop"
    """"rayop" (exports a rayop_* series) or "KubeRay" (a Go process: go_info)."""
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    depth: float = 0.0
    t: float = 0.0

    def __post_init__(self) -> None:
        self.metrics = OperatorMetrics(self.registry)
        self.rest = RestClientMetrics(self.registry)
        self.metrics.init_controller(self.name, self.workers)
        self.series = self.metrics.controller_series(self.name)
        labels = {"name": self.name, "controller": self.name}
        self.adds = self.metrics.workqueue_adds_total.labels(**labels)
        self.wait = self.metrics.workqueue_queue_duration_seconds.labels(**labels)
        self.queue_depth = self.metrics.workqueue_depth.labels(priority="", **labels)
        marker = "rayop_events_unsent_total" if self.flavour == "rayop" else "go_info"
        Gauge(marker, "who exports these series", registry=self.registry).set(1)
        self.cpu = Counter("process_cpu_seconds", "CPU seconds", registry=self.registry)
        self._errors_owed = 0.0
        self._passes_owed = 0.0

    def second(self, load: Load) -> None:
        """Advances the model by one second under ``load``."""
        capacity = self.workers / load.pass_seconds
        waiting = self.depth + load.arrivals
        served = min(capacity, waiting)
        wait = self.depth / capacity if capacity else 0.0
        self.depth = waiting - served
        self.adds.inc(load.arrivals)
        self.cpu.inc(load.cpu_seconds)
        self.queue_depth.set(self.depth)
        busy = self.workers if self.depth > 0 else min(self.workers, served * load.pass_seconds)
        self.series.active_workers.set(math.ceil(busy - 1e-9))
        self._passes_owed += served
        passes = int(self._passes_owed + 1e-9)
        self._passes_owed -= passes
        self._errors_owed += passes * load.error_share
        errors = int(self._errors_owed)
        self._errors_owed -= errors
        for i in range(passes):
            self.wait.observe(wait)
            self.series.reconcile_time.observe(load.pass_seconds)
            (self.series.error if i < errors else self.series.success).inc()
            if i < errors:
                self.series.errors.inc()
            for r in range(load.requests_per_pass):
                verb = "POST" if r < load.creates_per_pass else "GET"
                self.rest.observe_rate_limiter(verb, HOST, load.throttle_seconds)
                self.rest.observe_request(verb, HOST, load.api_seconds + load.throttle_seconds)
                self.rest.observe_attempt(201 if verb == "POST" else 200, verb, HOST)
        self.t += 1.0

    def run(self, loads: list[Load], *, every: float = 2.0) -> list[Scrape]:
        """Runs one second per load and scrapes every ``every`` seconds (and at the start)."""
        scrapes = [Scrape(0.0, Snapshot.from_registry(self.registry))]
        for i, load in enumerate(loads, start=1):
            self.second(load)
            if i % every == 0 or i == len(loads):
                scrapes.append(Scrape(float(i), Snapshot.from_registry(self.registry)))
        return scrapes
