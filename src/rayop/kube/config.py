"""Where the API server is and how to authenticate to it, loaded from a kubeconfig or a pod.

:func:`load_config` finds the configuration in the order controller-runtime's ``GetConfig``
uses: an explicit kubeconfig path, then ``$KUBECONFIG`` (a colon-separated list, merged), then
the in-cluster service account (only when no context was asked for), then
``~/.kube/config``. Kubeconfig files are read with PyYAML (:mod:`rayop.kube.kubeconfig_file`)
and honour what client-go's ``clientcmd`` honours: contexts and their namespace, the server,
``certificate-authority(-data)``, ``insecure-skip-tls-verify``, ``tls-server-name``,
``proxy-url`` (http and https proxies), ``client-certificate(-data)``/``client-key(-data)``,
``token``, ``tokenFile`` (re-read every minute), basic auth, and exec credential plugins
(:mod:`rayop.kube.exec_credentials`). ``auth-provider`` plugins are refused, as by a client-go
program that links none (KubeRay's operator links none). The result is a :class:`KubeConfig`:
a server URL, an :class:`ssl.SSLContext` and a :class:`Credentials` provider that yields the
``Authorization`` header per request.

Credential refresh: an exec plugin's token is re-fetched once its ``expirationTimestamp`` has
passed, and on demand after a 401 (:meth:`Credentials.refresh`); token files (the in-cluster one
included) are re-read every minute. Client certificates returned by an exec plugin are read once
at load.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import ipaddress
import logging
import os
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rayop.kube.credentials import (
    NO_CREDENTIALS,
    ConfigError,
    Credentials,
    FileTokenCredentials,
    StaticCredentials,
)
from rayop.kube.exec_credentials import ExecCredentials, ExecPlugin
from rayop.kube.kubeconfig_file import read_kubeconfig, select_context

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

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_TOKEN_FILENAME = f"{SERVICE_ACCOUNT_DIR}/token"
SERVICE_CERT_FILENAME = f"{SERVICE_ACCOUNT_DIR}/ca.crt"


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


def _b64(value: Any, what: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ConfigError(f"{what} is not valid base64: {exc}") from exc


@contextlib.contextmanager
def _pem_files(cert: bytes, key: bytes) -> Iterator[tuple[str, str]]:
    """Writes a certificate and key to private temporary files, removed on exit."""
    with tempfile.TemporaryDirectory(prefix="rayop-tls-") as tmp:
        paths = []
        for name, data in (("client.crt", cert), ("client.key", key)):
            path = os.path.join(tmp, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            paths.append(path)
        yield paths[0], paths[1]


def _client_pair(user: Mapping[str, Any]) -> tuple[bytes, bytes] | tuple[str, str] | None:
    """The user's client certificate and key: data (bytes) over files (paths), or None."""
    cert_data, key_data = user.get("client-certificate-data"), user.get("client-key-data")
    cert_file, key_file = user.get("client-certificate"), user.get("client-key")
    cert: bytes | str | None = (
        _b64(cert_data, "client-certificate-data") if cert_data else cert_file or None
    )
    key: bytes | str | None = _b64(key_data, "client-key-data") if key_data else key_file or None
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise ConfigError("client-certificate and client-key must be specified together")
    if isinstance(cert, bytes) or isinstance(key, bytes):
        return (
            cert if isinstance(cert, bytes) else Path(cert).read_bytes(),
            key if isinstance(key, bytes) else Path(key).read_bytes(),
        )
    return str(cert), str(key)


def _ssl_context(
    server: str,
    cluster: Mapping[str, Any],
    client: tuple[bytes, bytes] | tuple[str, str] | None,
) -> ssl.SSLContext | None:
    """Builds the TLS context of an https server; None for plain http."""
    if not server.startswith("https"):
        return None
    ca_data, ca_file = (
        cluster.get("certificate-authority-data"),
        cluster.get("certificate-authority"),
    )
    insecure = bool(cluster.get("insecure-skip-tls-verify"))
    if insecure and (ca_data or ca_file):
        raise ConfigError(
            "specifying a root certificates file with the insecure flag is not allowed"
        )
    try:
        if ca_data:
            context = ssl.create_default_context(
                cadata=_b64(ca_data, "certificate-authority-data").decode()
            )
        else:
            context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
        if client is not None:
            cert, key = client
            if isinstance(cert, bytes) and isinstance(key, bytes):
                with _pem_files(cert, key) as (cert_path, key_path):
                    context.load_cert_chain(cert_path, keyfile=key_path)
            else:
                context.load_cert_chain(str(cert), keyfile=str(key))
    except (OSError, ssl.SSLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot load TLS material: {exc}") from exc
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _proxy(cluster: Mapping[str, Any]) -> str | None:
    proxy = cluster.get("proxy-url")
    if not proxy:
        return None
    scheme = urlsplit(str(proxy)).scheme
    if scheme not in ("http", "https"):
        raise ConfigError(f"proxy-url {proxy!r}: scheme {scheme!r} is not supported (http, https)")
    return str(proxy)


def _static_credentials(user: Mapping[str, Any]) -> Credentials | None:
    token, token_file = user.get("token"), user.get("tokenFile")
    basic = user.get("username") or user.get("password")
    if (token or token_file) and basic:
        raise ConfigError(
            "more than one authentication method found; found [token basicAuth], only one is allowed"
        )
    if token_file:
        return FileTokenCredentials(str(token_file), str(token) if token else None)
    if token:
        return StaticCredentials(f"Bearer {token}")
    if basic:
        pair = f"{user.get('username') or ''}:{user.get('password') or ''}".encode()
        return StaticCredentials(f"Basic {base64.b64encode(pair).decode()}")
    return None


async def load_kubeconfig(path: str, *, context: str | None = None) -> KubeConfig:
    """Loads a kubeconfig file (or a colon-separated list of them, merged); may run an exec plugin.

    Args:
        path: The kubeconfig path(s).
        context: The context to use; None means the file's current-context.

    Raises:
        ConfigError: No file exists, the context is unknown, the file is malformed, it asks
            for something rayop refuses (an auth-provider, an interactive plugin), or an exec
            plugin fails.
    """
    selected = select_context(read_kubeconfig(path), context)
    cluster, user = selected.cluster, selected.user
    server = str(cluster["server"]).rstrip("/")
    if user.get("auth-provider"):
        name = (user.get("auth-provider") or {}).get("name")
        raise ConfigError(f"no Auth Provider found for name {name!r}: use an exec plugin instead")
    client = _client_pair(user)
    credentials = _static_credentials(user)
    exec_spec = user.get("exec")
    if exec_spec:
        if credentials is not None:
            raise ConfigError("an exec plugin cannot be combined with a token or basic auth")
        plugin_credentials = await ExecCredentials.start(ExecPlugin(exec_spec, cluster))
        credentials = plugin_credentials
        first = plugin_credentials.first
        if first.client_certificate and first.client_key:
            client = (first.client_certificate, first.client_key)
    return KubeConfig(
        server=server,
        ssl_context=_ssl_context(server, cluster, client),
        credentials=credentials or NO_CREDENTIALS,
        tls_server_name=cluster.get("tls-server-name") or None,
        proxy=_proxy(cluster),
        namespace=selected.namespace,
        context=selected.context,
    )


def load_incluster_config(
    *,
    token_file: str = SERVICE_TOKEN_FILENAME,
    ca_file: str = SERVICE_CERT_FILENAME,
    environ: Mapping[str, str] | None = None,
) -> KubeConfig:
    """Loads the in-cluster service account configuration; never blocks on the network.

    Reads ``KUBERNETES_SERVICE_HOST``/``KUBERNETES_SERVICE_PORT``, the token (re-read every
    minute) and the CA; the namespace comes from the ``namespace`` file beside the token. A CA
    file that cannot be read is logged and the system's CAs are used, as client-go does.

    Raises:
        ConfigError: Not running in a pod (variables missing, token file missing or empty).
    """
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ConfigError(
            "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
            "KUBERNETES_SERVICE_PORT must be defined"
        )
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    server = f"https://{host}:{port}"
    try:
        credentials = FileTokenCredentials(token_file)
    except ConfigError as exc:
        raise ConfigError(f"not running in a cluster: {exc}") from exc
    cluster: dict[str, Any] = {}
    if Path(ca_file).is_file():
        cluster["certificate-authority"] = ca_file
    else:
        log.error("expected to load root CA config from %s, but it is not a file", ca_file)
    namespace_file = Path(token_file).with_name("namespace")
    namespace = "default"
    if namespace_file.is_file():
        namespace = namespace_file.read_text().strip() or "default"
    return KubeConfig(
        server=server,
        ssl_context=_ssl_context(server, cluster, None),
        credentials=credentials,
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
