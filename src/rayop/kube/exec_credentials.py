"""Runs kubeconfig exec credential plugins and reads the ExecCredential they print.

As client-go's exec authenticator: the plugin runs with the process environment plus the
kubeconfig's ``env``, and ``KUBERNETES_EXEC_INFO`` holds an ExecCredential of the configured
``apiVersion`` (``client.authentication.k8s.io/v1`` or ``v1beta1``) whose spec says whether
it may interact (never here: the operator has no terminal, so ``interactiveMode: Always``
is refused) and, with ``provideClusterInfo``, describes the cluster. Its stdout must be an
ExecCredential of the same apiVersion with a token or a client certificate and key. The token
is used until its ``expirationTimestamp`` (real time) and re-fetched after a 401.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rayop.kube.credentials import ConfigError

SUPPORTED_API_VERSIONS = (
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
)
EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO"
CLUSTER_CONFIG_EXTENSION = "client.authentication.k8s.io/exec"


@dataclass(frozen=True, kw_only=True)
class ExecResult:
    """What one plugin run returned."""

    token: str | None = None
    client_certificate: bytes | None = None
    client_key: bytes | None = None
    expiry: datetime.datetime | None = None


class ExecPlugin:
    """One kubeconfig ``user.exec`` stanza, ready to run.

    Args:
        spec: The ``exec`` mapping (apiVersion, command, args, env, interactiveMode,
            provideClusterInfo).
        cluster: The context's cluster mapping (for ``provideClusterInfo``).

    Raises:
        ConfigError: The stanza is malformed or asks for an interactive plugin.
    """

    def __init__(self, spec: Mapping[str, Any], cluster: Mapping[str, Any]) -> None:
        self.api_version = str(spec.get("apiVersion") or "")
        if self.api_version not in SUPPORTED_API_VERSIONS:
            raise ConfigError(f"exec plugin: invalid apiVersion {self.api_version!r}")
        self.command = str(spec.get("command") or "")
        if not self.command:
            raise ConfigError("exec plugin: command must be specified")
        self.args = [str(a) for a in spec.get("args") or []]
        self.env = {str(e["name"]): str(e.get("value", "")) for e in spec.get("env") or []}
        mode = spec.get("interactiveMode")
        if not mode and self.api_version.endswith("/v1"):
            raise ConfigError(
                f"interactiveMode must be specified for {self.api_version} "
                "to use exec authentication plugin"
            )
        if mode not in (None, "", "Never", "IfAvailable", "Always"):
            raise ConfigError(f"exec plugin: unknown interactiveMode: {mode!r}")
        if mode == "Always":
            raise ConfigError(
                "exec plugin cannot support interactive mode: standard input is not a terminal"
            )
        self.cluster = _cluster_info(cluster) if spec.get("provideClusterInfo") else None

    def _exec_info(self) -> str:
        spec: dict[str, Any] = {"interactive": False}
        if self.cluster is not None:
            spec["cluster"] = self.cluster
        return json.dumps({"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec})

    async def run(self) -> ExecResult:
        """Runs the plugin once and parses its ExecCredential; blocks until it exits.

        Raises:
            ConfigError: It could not run, failed, or printed no usable credential.
        """
        env = {**os.environ, **self.env, EXEC_INFO_ENV: self._exec_info()}
        try:
            proc = await asyncio.create_subprocess_exec(
                self.command,
                *self.args,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except FileNotFoundError as exc:
            raise ConfigError(f"exec: executable {self.command} not found") from exc
        except OSError as exc:
            raise ConfigError(f"exec: {exc}") from exc
        stdout, stderr = await proc.communicate()
        if proc.returncode:
            tail = stderr.decode(errors="replace").strip().splitlines()[-1:]
            raise ConfigError(
                f"exec: executable {self.command} failed with exit code {proc.returncode}"
                + (f": {tail[0]}" if tail else "")
            )
        return self._parse(stdout)

    def _parse(self, stdout: bytes) -> ExecResult:
        try:
            cred = json.loads(stdout)
        except ValueError as exc:
            raise ConfigError(f"decoding stdout: {exc}") from exc
        if not isinstance(cred, dict):
            raise ConfigError("decoding stdout: not an ExecCredential object")
        returned = cred.get("apiVersion")
        if returned != self.api_version:
            raise ConfigError(
                f"exec plugin is configured to use API version {self.api_version}, "
                f"plugin returned version {returned}"
            )
        status = cred.get("status")
        if not isinstance(status, dict):
            raise ConfigError("exec plugin didn't return a status field")
        token = status.get("token") or None
        cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
        if not token and not (cert or key):
            raise ConfigError("exec plugin didn't return a token or cert/key pair")
        if bool(cert) != bool(key):
            raise ConfigError("exec plugin returned only certificate or key, not both")
        return ExecResult(
            token=str(token) if token else None,
            client_certificate=str(cert).encode() if cert else None,
            client_key=str(key).encode() if key else None,
            expiry=_parse_time(status.get("expirationTimestamp")),
        )


def _parse_time(value: Any) -> datetime.datetime | None:
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError as exc:
        raise ConfigError(f"exec plugin: bad expirationTimestamp {value!r}") from exc


def _cluster_info(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """The ExecCredential ``spec.cluster`` of a kubeconfig cluster (clientauthentication)."""
    info: dict[str, Any] = {"server": cluster.get("server", "")}
    ca_data = cluster.get("certificate-authority-data")
    if not ca_data and cluster.get("certificate-authority"):
        try:
            with open(cluster["certificate-authority"], "rb") as f:
                ca_data = base64.b64encode(f.read()).decode()
        except OSError as exc:
            raise ConfigError(f"cannot read certificate-authority: {exc}") from exc
    for key, value in (
        ("tls-server-name", cluster.get("tls-server-name")),
        ("insecure-skip-tls-verify", cluster.get("insecure-skip-tls-verify")),
        ("certificate-authority-data", ca_data),
        ("proxy-url", cluster.get("proxy-url")),
        ("disable-compression", cluster.get("disable-compression")),
    ):
        if value:
            info[key] = value
    for ext in cluster.get("extensions") or []:
        if ext.get("name") == CLUSTER_CONFIG_EXTENSION:
            info["config"] = ext.get("extension")
    return info


class ExecCredentials:
    """A token from an exec plugin, re-run once expired or after a 401.

    Build it with :meth:`start`, which runs the plugin once (its client certificate, if any,
    is read then and kept for the TLS context).
    """

    def __init__(self, plugin: ExecPlugin, first: ExecResult) -> None:
        self._plugin = plugin
        self._lock = asyncio.Lock()
        self._token = first.token
        self._expiry = first.expiry
        self.first = first
        """The first run's result (its client certificate goes into the TLS context)."""

    @classmethod
    async def start(cls, plugin: ExecPlugin) -> ExecCredentials:
        """Runs the plugin once and returns credentials holding its result."""
        return cls(plugin, await plugin.run())

    def _expired(self) -> bool:
        if self._expiry is None:
            return False
        # Real time, not the injected clock: the expiry is a real instant set by the issuer.
        return datetime.datetime.now(datetime.UTC) >= self._expiry

    async def headers(self) -> Mapping[str, str]:
        """Returns ``Bearer <token>``, running the plugin again when the token has expired."""
        if self._token is None or self._expired():
            await self._rerun(self._token)
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    async def refresh(self) -> bool:
        """Runs the plugin again after a 401; returns whether it gave a token."""
        await self._rerun(self._token)
        return self._token is not None

    async def _rerun(self, seen: str | None) -> None:
        async with self._lock:
            if self._token != seen:  # another task refreshed it while we waited
                return
            result = await self._plugin.run()
            self._token, self._expiry = result.token, result.expiry
