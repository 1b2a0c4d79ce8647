"""Prometheus metrics of the REST client, named and bucketed as client-go/component-base do.

- ``rest_client_requests_total{code,method,host}`` (counter): every HTTP attempt, retries
  included; ``code`` is the status code, or ``<error>`` when no response arrived.
- ``rest_client_request_duration_seconds{verb,host}`` (histogram): once per client call, from
  before the first rate-limiter wait to the final response, retries included.
- ``rest_client_rate_limiter_duration_seconds{verb,host}`` (histogram): every token-bucket
  wait, retries included; never observed when throttling is disabled (qps < 0).
- ``rest_client_request_retries_total{code,verb,host}`` (counter): each retry and the status
  that caused it.
- ``rest_client_request_size_bytes{verb,host}`` (histogram): the body sent by every attempt,
  retries included (0 without a body); not for watches or other streaming calls.
- ``rest_client_response_size_bytes{verb,host}`` (histogram): once per call, the final
  response's decoded body, when the call succeeded or its error response has a body; not for
  watches or other streaming calls, nor when no response arrived.
- ``rest_client_dns_resolution_duration_seconds{host}`` (histogram): every DNS lookup of the
  server's (or proxy's) name when the client opens a connection (:mod:`rayop.kube.dns_timing`);
  none for an IP address, nor for a name aiohttp's resolver cache still holds.

These are the client-go metrics KubeRay v1.7.0 registers (its
``controllers/ray/metrics/client_go_metrics.go``, with component-base's names, help texts and
buckets), plus ``rest_client_requests_total``, which controller-runtime registers.
``verb`` and ``method`` are the upper-case HTTP method, as client-go reports them; ``host`` is
the server's ``host[:port]``, except the DNS histogram's, which is the name looked up.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram

LATENCY_BUCKETS: tuple[float, ...] = (
    0.005,
    0.025,
    0.1,
    0.25,
    0.5,
    1.0,
    2.0,
    4.0,
    8.0,
    15.0,
    30.0,
    60.0,
)
"""Histogram buckets (seconds) shared by the request and rate-limiter durations."""

DNS_BUCKETS: tuple[float, ...] = LATENCY_BUCKETS[:-1]
"""Histogram buckets (seconds) of the DNS lookups: the latency buckets up to 30 s."""

SIZE_BUCKETS: tuple[float, ...] = (
    64,
    256,
    512,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
)
"""Histogram buckets (bytes) of request and response sizes: 64 B to 16 MiB."""

NO_RESPONSE_CODE = "<error>"
"""The ``code`` label of an attempt that got no HTTP response."""


@dataclass(slots=True)
class RestTotals:
    """Counts and seconds of every request and token-bucket wait so far."""

    requests: int = 0
    request_seconds: float = 0.0
    throttle_waits: int = 0
    throttle_seconds: float = 0.0


class RestClientMetrics:
    """The REST client's collectors, registered in one registry (one per operator instance).

    Args:
        registry: Where the collectors are registered.

    Raises:
        ValueError: The registry already holds collectors with these names.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.requests_total = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=registry,
        )
        self.request_duration_seconds = self._latency(
            "request", "Request latency in seconds. Broken down by verb, and host."
        )
        self.rate_limiter_duration_seconds = self._latency(
            "rate_limiter",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
        )
        self.request_retries_total = Counter(
            "rest_client_request_retries_total",
            "Number of request retries, partitioned by status code, verb, and host.",
            ["code", "verb", "host"],
            registry=registry,
        )
        self.request_size_bytes = self._size("request", "Request size in bytes.")
        self.response_size_bytes = self._size("response", "Response size in bytes.")
        self.dns_resolution_duration_seconds = Histogram(
            "rest_client_dns_resolution_duration_seconds",
            "DNS resolver latency in seconds. Broken down by host.",
            ["host"],
            buckets=DNS_BUCKETS,
            registry=registry,
        )
        self.totals = RestTotals()
        """Running sums of both histograms over every label, for readers that need no labels
        (adaptive concurrency reads them every window without collecting every bucket)."""

    def _latency(self, what: str, text: str) -> Histogram:
        return Histogram(
            f"rest_client_{what}_duration_seconds",
            text,
            ["verb", "host"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )

    def _size(self, what: str, text: str) -> Histogram:
        return Histogram(
            f"rest_client_{what}_size_bytes",
            f"{text} Broken down by verb and host.",
            ["verb", "host"],
            buckets=SIZE_BUCKETS,
            registry=self.registry,
        )

    def observe_attempt(self, code: int | None, method: str, host: str) -> None:
        """Counts one HTTP attempt; ``code`` None means no response arrived."""
        label = NO_RESPONSE_CODE if code is None else str(code)
        self.requests_total.labels(code=label, method=method.upper(), host=host).inc()

    def observe_request(self, verb: str, host: str, seconds: float) -> None:
        """Records the whole duration of one client call, waits and retries included."""
        self.request_duration_seconds.labels(verb=verb.upper(), host=host).observe(seconds)
        self.totals.requests += 1
        self.totals.request_seconds += seconds

    def observe_rate_limiter(self, verb: str, host: str, seconds: float) -> None:
        """Records one token-bucket wait."""
        self.rate_limiter_duration_seconds.labels(verb=verb.upper(), host=host).observe(seconds)
        self.totals.throttle_waits += 1
        self.totals.throttle_seconds += seconds

    def observe_request_size(self, verb: str, host: str, size: int) -> None:
        """Records the body size of one attempt (0 without a body)."""
        self.request_size_bytes.labels(verb=verb.upper(), host=host).observe(size)

    def observe_response_size(self, verb: str, host: str, size: int) -> None:
        """Records the body size of one call's final response."""
        self.response_size_bytes.labels(verb=verb.upper(), host=host).observe(size)

    def observe_dns_resolution(self, host: str, seconds: float) -> None:
        """Records one DNS lookup of ``host``."""
        self.dns_resolution_duration_seconds.labels(host=host).observe(seconds)

    def observe_retry(self, code: int | None, verb: str, host: str) -> None:
        """Counts one retry caused by ``code`` (None: no response)."""
        label = NO_RESPONSE_CODE if code is None else str(code)
        self.request_retries_total.labels(code=label, verb=verb.upper(), host=host).inc()
