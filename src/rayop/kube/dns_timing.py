"""Times the client's DNS lookups (``rest_client_dns_resolution_duration_seconds``).

client-go times each lookup Go's dialer makes for a new connection (an ``httptrace`` hook); here
aiohttp's trace hooks around its resolver do the same. aiohttp sends them only for a lookup it
actually makes: none for an IP address, none for a name its resolver cache still holds (10 s),
and no end for a lookup that fails (Go reports those too).
"""

from __future__ import annotations

from types import SimpleNamespace

import aiohttp

from rayop.kube.clock import Clock
from rayop.kube.metrics import RestClientMetrics

__all__ = ["dns_timing"]


def dns_timing(metrics: RestClientMetrics, clock: Clock) -> aiohttp.TraceConfig:
    """Returns trace hooks that record every DNS lookup of a session in ``metrics``."""

    async def started(
        _session: aiohttp.ClientSession,
        context: SimpleNamespace,
        _params: aiohttp.TraceDnsResolveHostStartParams,
    ) -> None:
        context.dns_started = clock.now()

    async def ended(
        _session: aiohttp.ClientSession,
        context: SimpleNamespace,
        params: aiohttp.TraceDnsResolveHostEndParams,
    ) -> None:
        started_at: float | None = getattr(context, "dns_started", None)
        if started_at is not None:
            metrics.observe_dns_resolution(params.host, clock.now() - started_at)

    trace = aiohttp.TraceConfig()
    trace.on_dns_resolvehost_start.append(started)
    trace.on_dns_resolvehost_end.append(ended)
    return trace
