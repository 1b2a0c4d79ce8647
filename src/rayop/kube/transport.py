"""The client's request path: pooled HTTP, throttling, Retry-After retries, auth and metrics.

Every call follows client-go's request path (``rest/request.go`` and ``rest/config.go`` in
kubernetes/client-go):

1. wait on the client-side token bucket (``rest_client_rate_limiter_duration_seconds``);
2. send the attempt (``rest_client_requests_total``; ``<error>`` when no response came back;
   ``rest_client_request_size_bytes`` unless streaming);
3. on 429, or on 5xx with an integer ``Retry-After``, sleep ``Retry-After`` and go back to 1,
   at most :data:`MAX_RETRIES` times; a GET whose connection was reset is retried the
   same way after 1 s;
4. a 401 makes refreshable credentials (an exec plugin) refresh, and the call is retried once;
5. ``rest_client_request_duration_seconds`` covers 1-4, once per call, and
   ``rest_client_response_size_bytes`` measures the final response (unless streaming).

A connection's DNS lookup is timed by :mod:`rayop.kube.dns_timing`.

No aiohttp or socket exception escapes: they become
:class:`~rayop.kube.errors.TransportError` (chained with ``raise ... from``), and so does a
credential plugin that fails while the client refreshes a token.
"""

from __future__ import annotations

import errno
import io
from asyncio import sslproto
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import aiohttp
import yarl
from multidict import CIMultiDictProxy

from rayop.kube.clock import Clock
from rayop.kube.config import ConfigError, KubeConfig
from rayop.kube.dns_timing import dns_timing
from rayop.kube.errors import transport_error
from rayop.kube.metrics import RestClientMetrics
from rayop.kube.resource_buckets import ResourceBuckets
from rayop.kube.throttle import TokenBucket

TLS_READ_BUFFER = 32 * 1024
"""Bytes of the read buffer asyncio gives each TLS connection (its default: 256 KiB).

asyncio's ``SSLProtocol`` allocates (and zero-fills) a ``max_size`` buffer per connection, and
the operator holds one HTTP/1.1 connection per watch plus one per request in flight: at 256 KiB
that was 5 MB of resident memory for ~20 connections (tracemalloc, ``asyncio/sslproto.py``,
``benchmarks/operator_memory_profile.py --real``). A TLS record carries at most 16 KiB, so
32 KiB still takes two records per read; the process's only TLS connections are the kube
client's, so the smaller size is set for the whole process when this module is imported.
"""
sslproto.SSLProtocol.max_size = TLS_READ_BUFFER

MAX_RETRIES = 10
"""Retries per call after a 429 (or a 5xx with Retry-After), as client-go's maxRetries."""

_INLINE_BODY_BYTES = 1024 * 1024
"""A body longer than this goes to aiohttp as a stream: aiohttp warns that writing more in one
piece may block the event loop (ResourceWarning, payload.py TOO_LARGE_BYTES_BODY, 1 MiB)."""
_RESET_ERRNOS = {errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED}


@dataclass(slots=True)
class Reply:
    """The final response of one call.

    Attributes:
        status: The HTTP status.
        headers: The response headers.
        body: The whole body (empty for an open streaming reply).
        response: The still-open response of a successful streaming call; the caller closes it.
    """

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes
    response: aiohttp.ClientResponse | None = None


def retry_after(headers: Mapping[str, str]) -> int | None:
    """Parses an integer ``Retry-After`` header (None when absent or not an integer)."""
    value = headers.get("Retry-After", "").strip()
    return int(value) if value.isdigit() else None


def _connection_reset(exc: BaseException) -> bool:
    if isinstance(exc, aiohttp.ServerDisconnectedError | ConnectionResetError):
        return True
    return isinstance(exc, aiohttp.ClientOSError) and exc.errno in _RESET_ERRNOS


class Transport:
    """Sends throttled, retried, authenticated requests over one pooled aiohttp session.

    Args:
        config: Server URL, TLS and credentials.
        bucket: The client-side token bucket.
        buckets: A bucket per API resource instead (``bucket`` for paths naming none), or None.
        clock: Time for Retry-After sleeps and durations.
        metrics: Collectors, or None.
        headers: Headers sent with every request (User-Agent, Accept).
        timeout: Default seconds per attempt; None for no limit.
        max_connections: Connection pool size.
    """

    def __init__(
        self,
        config: KubeConfig,
        *,
        bucket: TokenBucket,
        buckets: ResourceBuckets | None = None,
        clock: Clock,
        metrics: RestClientMetrics | None,
        headers: Mapping[str, str],
        timeout: float | None,
        max_connections: int,
    ) -> None:
        self._config = config
        self._bucket = bucket
        self._buckets = buckets
        self._clock = clock
        self._metrics = metrics
        self._headers = dict(headers)
        self._timeout = timeout
        self._max_connections = max_connections
        self._host = config.host
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    async def close(self) -> None:
        """Closes the pool; blocks until its connections are closed. Later sends fail."""
        self._closed = True
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise RuntimeError("the client is closed")
        if self._session is None:
            ssl_context = self._config.ssl_context
            connector = aiohttp.TCPConnector(
                limit=self._max_connections,
                limit_per_host=0,
                ssl=ssl_context if ssl_context is not None else True,
                keepalive_timeout=30.0,
            )
            traces = [] if self._metrics is None else [dns_timing(self._metrics, self._clock)]
            self._session = aiohttp.ClientSession(connector=connector, trace_configs=traces)
        return self._session

    async def send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | Literal["default"] | None = "default",
        stream: bool = False,
    ) -> Reply:
        """Sends one call with throttling and retries; blocks until the final response.

        Error statuses are returned, not raised. A streaming reply with status < 400 keeps
        its response open (``Reply.response``) for the caller to close; its timeout only
        bounds connecting.

        Raises:
            TransportError: No response arrived (RequestTimeout when the timeout expired).
        """
        verb = method.upper()
        url = yarl.URL(self._config.server + path, encoded=True)
        limit = self._timeout if timeout == "default" else timeout
        client_timeout = (
            aiohttp.ClientTimeout(total=None, sock_connect=limit, sock_read=None)
            if stream
            else aiohttp.ClientTimeout(total=limit)
        )
        started = self._clock.now()
        try:
            bucket = self._bucket if self._buckets is None else self._buckets.for_path(path)
            reply = await self._send_with_retries(
                verb, url, params, body, headers, client_timeout, stream, bucket
            )
            if not stream:
                self._observe_response_size(verb, reply)
            return reply
        finally:
            if self._metrics is not None:
                self._metrics.observe_request(verb, self._host, self._clock.now() - started)

    async def _send_with_retries(
        self,
        verb: str,
        url: yarl.URL,
        params: Mapping[str, str] | None,
        body: bytes | None,
        headers: Mapping[str, str] | None,
        timeout: aiohttp.ClientTimeout,
        stream: bool,
        bucket: TokenBucket,
    ) -> Reply:
        retries = 0
        auth_refreshed = False
        while True:
            await self._wait_for_token(verb, bucket)
            all_headers = {**self._headers, **(await self._auth_headers())}
            all_headers.update(headers or {})
            try:
                reply = await self._attempt(verb, url, params, body, all_headers, timeout, stream)
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                self._count(None, verb, body, stream)
                if verb == "GET" and _connection_reset(exc) and retries < MAX_RETRIES:
                    retries += 1
                    self._count_retry(None, verb)
                    await self._clock.sleep(1.0)
                    continue
                raise transport_error(exc, timeout=isinstance(exc, TimeoutError)) from exc
            self._count(reply.status, verb, body, stream)
            if reply.status == 401 and not auth_refreshed:
                auth_refreshed = True
                if await self._refresh_credentials():
                    continue
            delay = retry_after(reply.headers)
            retriable = reply.status == 429 or reply.status >= 500
            if retriable and delay is not None and retries < MAX_RETRIES:
                retries += 1
                self._count_retry(reply.status, verb)
                if reply.response is not None:
                    reply.response.close()
                await self._clock.sleep(float(delay))
                continue
            return reply

    async def _attempt(
        self,
        verb: str,
        url: yarl.URL,
        params: Mapping[str, str] | None,
        body: bytes | None,
        headers: dict[str, str],
        timeout: aiohttp.ClientTimeout,
        stream: bool,
    ) -> Reply:
        data = body if body is None or len(body) <= _INLINE_BODY_BYTES else io.BytesIO(body)
        response = await self._get_session().request(
            verb,
            url,
            params=params,
            data=data,
            headers=headers,
            timeout=timeout,
            proxy=self._config.proxy,
            server_hostname=self._config.tls_server_name,
        )
        if stream and response.status < 400:
            return Reply(response.status, response.headers, b"", response)
        try:
            data = await response.read()
        finally:
            response.release()
        return Reply(response.status, response.headers, data)

    async def _auth_headers(self) -> Mapping[str, str]:
        try:
            return await self._config.auth_headers()
        except ConfigError as exc:
            raise transport_error(exc) from exc

    async def _refresh_credentials(self) -> bool:
        try:
            return await self._config.credentials.refresh()
        except ConfigError as exc:
            raise transport_error(exc) from exc

    async def _wait_for_token(self, verb: str, bucket: TokenBucket) -> None:
        if not bucket.enabled:
            return
        waited = await bucket.wait()
        if self._metrics is not None:
            self._metrics.observe_rate_limiter(verb, self._host, waited)

    def _count(self, code: int | None, verb: str, body: bytes | None, stream: bool) -> None:
        if self._metrics is not None:
            self._metrics.observe_attempt(code, verb, self._host)
            if not stream:
                self._metrics.observe_request_size(verb, self._host, len(body or b""))

    def _observe_response_size(self, verb: str, reply: Reply) -> None:
        """Measures the final response as client-go does: when it has a body or succeeded."""
        if self._metrics is not None and (reply.body or 200 <= reply.status <= 206):
            self._metrics.observe_response_size(verb, self._host, len(reply.body))

    def _count_retry(self, code: int | None, verb: str) -> None:
        if self._metrics is not None:
            self._metrics.observe_retry(code, verb, self._host)
