"""Credential providers: what puts the ``Authorization`` header on each request.

- :class:`StaticCredentials`: a fixed header (a kubeconfig ``token``, basic auth, or none).
- :class:`FileTokenCredentials`: a bearer token read from a file and re-read every minute, as
  client-go's cached file token source does (``tokenFile``, the in-cluster service account).
- Exec credential plugins live in :mod:`rayop.kube.exec_credentials`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

TOKEN_FILE_REREAD_SECONDS = 60.0
"""How long a token read from a file is used before the file is read again (client-go: 1 min)."""


class ConfigError(Exception):
    """No usable configuration was found, or the one found is malformed."""


@runtime_checkable
class Credentials(Protocol):
    """Supplies the authentication headers of each request."""

    async def headers(self) -> Mapping[str, str]:
        """Returns the headers to add (may run an exec plugin when the token has expired)."""
        ...

    async def refresh(self) -> bool:
        """Forces new credentials after a 401; returns whether a retry may now succeed."""
        ...


@dataclass(frozen=True)
class StaticCredentials:
    """A fixed ``Authorization`` header value (``"Bearer <token>"``), or none at all."""

    authorization: str | None = None

    async def headers(self) -> Mapping[str, str]:
        """Returns the fixed header, if any."""
        return {"Authorization": self.authorization} if self.authorization else {}

    async def refresh(self) -> bool:
        """A fixed header cannot change: returns False."""
        return False


NO_CREDENTIALS: Credentials = StaticCredentials()
"""Anonymous requests (or client-certificate authentication only)."""


class FileTokenCredentials:
    """A bearer token from a file, re-read once a minute (and when a read fails, kept).

    Args:
        path: The token file.
        token: The token to use when the file cannot be read (a kubeconfig's ``token`` beside
            its ``tokenFile``); None: the file must be readable now.

    Raises:
        ConfigError: The file cannot be read and no token was given.
    """

    def __init__(self, path: str, token: str | None = None) -> None:
        self._path = Path(path)
        self._token = token
        self._read_at = float("-inf")
        if self._read() is None and not token:
            raise ConfigError(f"cannot read token file {path!r}")

    def _read(self) -> str | None:
        # Real time, not an injected clock: the file is rotated by the kubelet in real time.
        self._read_at = time.monotonic()
        try:
            token = self._path.read_text().strip()
        except OSError:
            return None
        if token:
            self._token = token
        return token or None

    async def headers(self) -> Mapping[str, str]:
        """Returns ``Bearer <token>``, re-reading the file when a minute has passed."""
        if time.monotonic() - self._read_at >= TOKEN_FILE_REREAD_SECONDS:
            self._read()
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    async def refresh(self) -> bool:
        """Re-reads the file after a 401; returns whether the token changed."""
        before = self._token
        self._read()
        return self._token != before
