"""Where the API server is and how to authenticate to it, loaded with kubernetes_asyncio.

:func:`load_config` finds the configuration in the order controller-runtime's ``GetConfig``
uses: an explicit kubeconfig path, then ``$KUBECONFIG`` (a colon-separated list, merged), then
the in-cluster service account (only when no context was asked for), then
``~/.kube/config``. The kubeconfig parsing, contexts, client certificates, bearer tokens,
token files, basic auth and exec credential plugins are all kubernetes_asyncio's; this module
turns its result into a :class:`KubeConfig`: a server URL, an :class:`ssl.SSLContext` and a
:class:`Credentials` provider that yields the ``Authorization`` header per request.

Credential refresh: an exec plugin's token is re-fetched once its ``expirationTimestamp`` has
passed, and on demand after a 401 (:meth:`Credentials.refresh`); the in-cluster token file is
re-read every minute. Client certificates returned by an exec plugin are read once at load.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config import ConfigException
from kubernetes_asyncio.config.incluster_config import (
    SERVICE_CERT_FILENAME,
    SERVICE_TOKEN_FILENAME,
    InClusterConfigLoader,
)
from kubernetes_asyncio.config.kube_config import KubeConfigLoader, load_kube_config

__all__ = [
    "NO_CREDENTIALS",
    "ConfigError",
    "Credentials",
    "KubeConfig",
    "StaticCredentials",
    "load_config",
    "load_incluster_config",
    "load_kubeconfig",
]


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
        return {"Authorization": self.authorization} if self.authorization else {}

    async def refresh(self) -> bool:
        return False


NO_CREDENTIALS: Credentials = StaticCredentials()
"""Anonymous requests (or client-certificate authentication only)."""


class _ConfigurationCredentials:
    """The ``BearerToken`` api key of a kubernetes_asyncio Configuration, honouring its
    refresh hook (the in-cluster loader re-reads the token file through it)."""

    def __init__(self, configuration: Any) -> None:
        self._configuration = configuration

    async def headers(self) -> Mapping[str, str]:
        value = await self._configuration.get_api_key_with_prefix("BearerToken")
        return {"Authorization": str(value)} if value else {}

    async def refresh(self) -> bool:
        return False


class _ExecPluginCredentials:
    """A token from a kubeconfig exec plugin, re-run when expired or after a 401."""

    def __init__(self, loader: KubeConfigLoader) -> None:
        self._loader = loader
        self._lock = asyncio.Lock()
        self._token: str | None = getattr(loader, "token", None)
        self._expiry: datetime.datetime | None = getattr(loader, "exec_plugin_expiry", None)

    def _expired(self) -> bool:
        if self._expiry is None:
            return False
        # Genuinely real time, not the injected clock: the expiry is a real instant set by the
        # credential's issuer, and a virtual clock must not keep an expired token in use.
        return datetime.datetime.now(datetime.UTC) >= self._expiry

    async def headers(self) -> Mapping[str, str]:
        if self._token is None or self._expired():
            await self._rerun(self._token)
        return {"Authorization": self._token} if self._token else {}

    async def refresh(self) -> bool:
        before = self._token
        await self._rerun(before)
        return self._token is not None

    async def _rerun(self, seen: str | None) -> None:
        async with self._lock:
            if self._token != seen:  # another task refreshed it while we waited
                return
            loader = self._loader
            # kubernetes_asyncio skips the plugin while its cached expiry is in the future;
            # drop that cache so the plugin really runs.
            if hasattr(loader, "exec_plugin_expiry"):
                del loader.exec_plugin_expiry
            try:
                await loader.load_from_exec_plugin()
            except ConfigException as exc:
                raise ConfigError(f"exec credential plugin failed: {exc}") from exc
            self._token = getattr(loader, "token", None)
            self._expiry = getattr(loader, "exec_plugin_expiry", None)


@dataclass(frozen=True, kw_only=True)
class KubeConfig:
    """How to reach one API server: URL, TLS settings and credentials.

    Attributes:
        server: The base URL, such as ``https://10.0.0.1:6443`` (no trailing slash).
        ssl_context: TLS settings for https servers (CA, client certificate, verification);
            None for plain http, or to use the system's defaults.
        credentials: Supplies the ``Authorization`` header of each request.
        tls_server_name: The name to verify the server certificate against, if not the host.
        proxy: An HTTP proxy URL from the kubeconfig, if any.
        namespace: The context's namespace (``"default"`` when unset).
        context: The kubeconfig context used, or ``"in-cluster"``, or None.
    """

    server: str
    ssl_context: ssl.SSLContext | None = None
    credentials: Credentials = field(default=NO_CREDENTIALS)
    tls_server_name: str | None = None
    proxy: str | None = None
    namespace: str = "default"
    context: str | None = None

    @property
    def host(self) -> str:
        """The server's ``host[:port]``, as the ``host`` label of the client metrics."""
        parts = urlsplit(self.server)
        return parts.netloc.rpartition("@")[2] or self.server

    async def auth_headers(self) -> Mapping[str, str]:
        """Returns the authentication headers for the next request (may run an exec plugin)."""
        return await self.credentials.headers()

    @classmethod
    def for_server(
        cls,
        server: str,
        *,
        token: str | None = None,
        ca_file: str | None = None,
        insecure: bool = False,
        namespace: str = "default",
    ) -> KubeConfig:
        """Builds a configuration by hand, for example for an embedded control plane.

        Args:
            server: The base URL.
            token: A bearer token, or None for anonymous requests.
            ca_file: A PEM bundle of CAs that sign the server certificate (https only).
            insecure: Skip verification of the server certificate (https only).
            namespace: The default namespace.
        """
        context = None
        if server.startswith("https"):
            context = ssl.create_default_context(cafile=ca_file)
            if insecure:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
        return cls(
            server=server.rstrip("/"),
            ssl_context=context,
            credentials=StaticCredentials(f"Bearer {token}" if token else None),
            namespace=namespace,
        )


def _ssl_context(configuration: Any) -> ssl.SSLContext | None:
    if not str(configuration.host).startswith("https"):
        return None
    try:
        context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
        if configuration.cert_file:
            context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load TLS material: {exc}") from exc
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _new_configuration() -> Any:
    # Configuration() would start from the process-wide default; build a blank one instead.
    return type.__call__(Configuration)


async def load_kubeconfig(path: str, *, context: str | None = None) -> KubeConfig:
    """Loads a kubeconfig file (or a colon-separated list of them, merged); may run an exec plugin.

    Args:
        path: The kubeconfig path(s).
        context: The context to use; None means the file's current-context.

    Raises:
        ConfigError: No file exists, the context is unknown, or the file is malformed.
    """
    configuration = _new_configuration()
    try:
        loader = await load_kube_config(
            config_file=path,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except (ConfigException, AssertionError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"cannot load kubeconfig {path!r}: {exc}") from exc
    user = getattr(loader, "_user", None)
    credentials: Credentials
    if user is not None and "exec" in user:
        credentials = _ExecPluginCredentials(loader)
    else:
        credentials = _ConfigurationCredentials(configuration)
    current = loader.current_context or {}
    return KubeConfig(
        server=str(configuration.host).rstrip("/"),
        ssl_context=_ssl_context(configuration),
        credentials=credentials,
        tls_server_name=configuration.tls_server_name,
        proxy=configuration.proxy,
        namespace=str((current.get("context") or {}).get("namespace") or "default"),
        context=current.get("name"),
    )


def load_incluster_config(
    *,
    token_file: str = SERVICE_TOKEN_FILENAME,
    ca_file: str = SERVICE_CERT_FILENAME,
    environ: Mapping[str, str] | None = None,
) -> KubeConfig:
    """Loads the in-cluster service account configuration; never blocks on the network.

    Reads ``KUBERNETES_SERVICE_HOST``/``KUBERNETES_SERVICE_PORT``, the token (re-read every
    minute) and the CA; the namespace comes from the ``namespace`` file beside the token.

    Raises:
        ConfigError: Not running in a pod (variables or files missing or empty).
    """
    configuration = _new_configuration()
    env = dict(os.environ if environ is None else environ)
    try:
        InClusterConfigLoader(
            token_filename=token_file, cert_filename=ca_file, environ=env
        ).load_and_set(configuration)
    except ConfigException as exc:
        raise ConfigError(f"not running in a cluster: {exc}") from exc
    namespace_file = Path(token_file).with_name("namespace")
    namespace = "default"
    if namespace_file.is_file():
        namespace = namespace_file.read_text().strip() or "default"
    return KubeConfig(
        server=str(configuration.host).rstrip("/"),
        ssl_context=_ssl_context(configuration),
        credentials=_ConfigurationCredentials(configuration),
        namespace=namespace,
        context="in-cluster",
    )


def _existing(paths: str) -> bool:
    return any(p and Path(p).expanduser().exists() for p in paths.split(os.pathsep))


async def load_config(*, kubeconfig: str | None = None, context: str | None = None) -> KubeConfig:
    """Finds and loads the configuration the way controller-runtime's GetConfig does.

    Order: ``kubeconfig`` if given; ``$KUBECONFIG`` if any of its files exists; the in-cluster
    service account if ``KUBERNETES_SERVICE_HOST`` is set and no ``context`` was asked for;
    ``~/.kube/config``. May run an exec credential plugin.

    Args:
        kubeconfig: An explicit kubeconfig path (as ``--kubeconfig``).
        context: The kubeconfig context to use instead of the current-context.

    Raises:
        ConfigError: Nothing usable was found.
    """
    if kubeconfig:
        if not _existing(kubeconfig):
            raise ConfigError(f"kubeconfig {kubeconfig!r} does not exist")
        return await load_kubeconfig(kubeconfig, context=context)
    from_env = os.environ.get("KUBECONFIG", "")
    if from_env and _existing(from_env):
        return await load_kubeconfig(from_env, context=context)
    if context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return load_incluster_config()
    home = str(Path.home() / ".kube" / "config")
    if _existing(home):
        return await load_kubeconfig(home, context=context)
    raise ConfigError(
        "no configuration: pass --kubeconfig, set KUBECONFIG, run in a pod, or create ~/.kube/config"
    )
