"""Blocking helpers for starting a real control plane: a tiny API caller and a poll loop.

Only the standard library is used, so the start-up code runs before any event loop exists.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any


class ApiCaller:
    """Sends single blocking requests to a kube-apiserver on loopback with a bearer token.

    The server's self-signed certificate is not verified: it is generated at start-up on
    127.0.0.1 and only ever reached over loopback.
    """

    def __init__(self, server: str, token: str, *, timeout: float = 5.0) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._ssl = ssl.create_default_context()
        self._ssl.check_hostname = False
        self._ssl.verify_mode = ssl.CERT_NONE

    def _call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self._ssl) as resp:
                return int(resp.status), json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            return int(exc.code), None
        except (OSError, ValueError):
            return 0, None

    def status(self, path: str) -> int:
        """Returns the HTTP status of ``GET path`` (0 when the server is unreachable)."""
        return self._call("GET", path)[0]

    def get(self, path: str) -> Any:
        """Returns the decoded body of ``GET path``, or None unless it answered 200."""
        code, body = self._call("GET", path)
        return body if code == 200 else None

    def create(self, path: str, obj: dict[str, Any]) -> int:
        """POSTs ``obj`` to ``path``; returns the HTTP status."""
        return self._call("POST", path, obj)[0]

    def node_ready(self, name: str) -> bool:
        """Tells whether the node reports condition Ready=True."""
        node = self.get(f"/api/v1/nodes/{name}")
        if not node:
            return False
        conditions = (node.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def wait_until(
    predicate: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    alive: Callable[[], None] | None = None,
    interval: float = 0.2,
) -> None:
    """Polls ``predicate`` until it holds; blocks.

    Args:
        predicate: The condition to wait for.
        timeout: Seconds before giving up.
        what: Names the condition in the error message.
        alive: Called each round; raises when a process the condition depends on has died.
        interval: Seconds between polls.

    Raises:
        TimeoutError: ``predicate`` did not hold within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        if alive is not None:
            alive()
        if predicate():
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
