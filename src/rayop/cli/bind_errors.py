"""A server that cannot bind its address is reported in one line naming the flag to change.

:func:`bind_error_line` turns a :class:`~rayop.runtime.serving.endpoints.BindError` into that line;
:data:`SERVER_FLAGS` says which flag sets each server's address. :func:`as_bind_error` recognizes
a bind failure of the embedded API server (``rayop up --host/--port``).
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from rayop.runtime.serving.endpoints import BindError

__all__ = ["API_SERVER", "SERVER_FLAGS", "as_bind_error", "bind_error_line"]

API_SERVER: Final = "embedded API"
"""The name :func:`as_bind_error` gives the embedded API server."""

SERVER_FLAGS: Final[dict[str, str]] = {
    "metrics": "--metrics-addr (0 disables it)",
    "health probe": "--health-probe-bind-address (0 disables it)",
    "webhook": "--webhook-port",
    API_SERVER: "--port (0 picks a free one) or --host",
}
"""The flag that sets each server's address, by the name its BindError gives."""

_BIND_ERRNOS: Final = frozenset({errno.EADDRINUSE, errno.EADDRNOTAVAIL})
"""What only a bind fails with: the address is taken, or is not one of this machine's."""


def bind_error_line(exc: BindError) -> str:
    """Returns the one line that says which address failed, why, and which flag to change."""
    flag = SERVER_FLAGS.get(exc.server, "its address flag")
    host = f"[{exc.host}]" if ":" in exc.host else exc.host
    return (
        f"rayop: the {exc.server} server cannot listen on {host}:{exc.port} "
        f"({exc.reason.lower()}): change {flag}"
    )


def as_bind_error(exc: OSError, server: str, host: str, port: int) -> BindError | None:
    """Returns ``exc`` as ``server``'s BindError if it is a bind failure, else None."""
    from rayop.runtime.serving.endpoints import BindError

    if isinstance(exc, BindError):
        return exc
    return BindError(server, host, port, exc) if exc.errno in _BIND_ERRNOS else None
