"""load_config turns kubeconfigs (tokens, client certificates, exec plugins) and the in-cluster
service account into a working KubeConfig (read with PyYAML, no client library)."""

from __future__ import annotations

import base64
import shutil
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestServer

from rayop.kube import errors
from rayop.kube.client import KubeClient
from rayop.kube.config import ConfigError, KubeConfig, load_config, load_incluster_config
from rayop.kube.resources import PODS
from rayop.testing import FakeClock

from .kube_fakes import FakeApiServer, json_response, status_body

POD_PATH = "/api/v1/namespaces/ns/pods/p"


def write_kubeconfig(
    path: Path, server: str, users: dict[str, dict[str, Any]], *, current: str, **cluster: Any
) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
        "users": [{"name": name, "user": user} for name, user in users.items()],
        "contexts": [
            {"name": name, "context": {"cluster": "c", "user": name, "namespace": f"ns-{name}"}}
            for name in users
        ],
        "current-context": current,
    }
    path.write_text(yaml.safe_dump(config))
    return path


def auth_echo(api: FakeApiServer) -> None:
    @api.route("GET", POD_PATH)
    async def handler(request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer good"):
            return json_response(status_body(401, "Unauthorized"), 401)
        return json_response({"metadata": {"name": "p"}, "auth": auth})


async def get_auth(config: KubeConfig) -> str:
    async with KubeClient(config, qps=-1) as kube:
        return str((await kube.get(PODS, "p", namespace="ns"))["auth"])


async def test_kubeconfig_token_and_context_selection(api: FakeApiServer, tmp_path: Path) -> None:
    auth_echo(api)
    path = write_kubeconfig(
        tmp_path / "config",
        api.url,
        {"alice": {"token": "good-alice"}, "bob": {"token": "good-bob"}},
        current="alice",
    )
    config = await load_config(kubeconfig=str(path))
    assert (config.server, config.context, config.namespace) == (api.url, "alice", "ns-alice")
    assert config.ssl_context is None  # plain http
    assert await get_auth(config) == "Bearer good-alice"
    bob = await load_config(kubeconfig=str(path), context="bob")
    assert await get_auth(bob) == "Bearer good-bob"
    with pytest.raises(ConfigError):
        await load_config(kubeconfig=str(path), context="nobody")


async def test_kubeconfig_env_variable_and_missing_config(
    api: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth_echo(api)
    path = write_kubeconfig(tmp_path / "k", api.url, {"u": {"token": "good-env"}}, current="u")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{path}")
    assert await get_auth(await load_config()) == "Bearer good-env"
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError):
        await load_config()
    with pytest.raises(ConfigError):
        await load_config(kubeconfig=str(tmp_path / "absent"))


EXEC_PLUGIN = """
import json, os, sys, datetime
counter = sys.argv[1]
n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
open(counter, "w").write(str(n))
if n > int(os.environ.get("FAIL_AFTER", "1000")):
    sys.exit("plugin broken")
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
status = {"token": f"{os.environ['TOKEN_PREFIX']}-{n}"}
if sys.argv[2] != "none":
    delta = datetime.timedelta(seconds=float(sys.argv[2]))
    status["expirationTimestamp"] = (datetime.datetime.now(datetime.timezone.utc) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")
print(json.dumps({"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}))
"""


def exec_user(
    tmp_path: Path, prefix: str, expires_in: str, *, fail_after: int = 1000
) -> dict[str, Any]:
    script = tmp_path / "plugin.py"
    script.write_text(EXEC_PLUGIN)
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": [str(script), str(tmp_path / "count"), expires_in],
            "env": [
                {"name": "TOKEN_PREFIX", "value": prefix},
                {"name": "FAIL_AFTER", "value": str(fail_after)},
            ],
            "interactiveMode": "Never",
        }
    }


async def test_exec_plugin_token_is_cached_then_refreshed_after_401(
    api: FakeApiServer, tmp_path: Path
) -> None:
    # The plugin's first token is refused; the 401 makes the client re-run it once.
    @api.route("GET", POD_PATH)
    async def handler(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") in ("Bearer tok-2", "Bearer tok-3"):
            return json_response({"auth": request.headers["Authorization"]})
        return json_response(status_body(401, "Unauthorized"), 401)

    path = write_kubeconfig(
        tmp_path / "c", api.url, {"u": exec_user(tmp_path, "tok", "none")}, current="u"
    )
    config = await load_config(kubeconfig=str(path))
    async with KubeClient(config, qps=-1) as kube:
        assert (await kube.get(PODS, "p", namespace="ns"))["auth"] == "Bearer tok-2"
        assert (await kube.get(PODS, "p", namespace="ns"))["auth"] == "Bearer tok-2"  # cached
    assert (tmp_path / "count").read_text() == "2"


async def test_exec_plugin_token_is_rerun_once_expired(api: FakeApiServer, tmp_path: Path) -> None:
    auth_echo(api)
    # Already expired when printed: every request must ask the plugin again.
    user = exec_user(tmp_path, "good", "-60")
    path = write_kubeconfig(tmp_path / "c", api.url, {"u": user}, current="u")
    config = await load_config(kubeconfig=str(path))
    assert await get_auth(config) == "Bearer good-2"
    assert await get_auth(config) == "Bearer good-3"
    (tmp_path / "fresh").mkdir()
    fresh_user = exec_user(tmp_path / "fresh", "good", "3600")
    fresh = await load_config(
        kubeconfig=str(write_kubeconfig(tmp_path / "f", api.url, {"u": fresh_user}, current="u"))
    )
    assert await get_auth(fresh) == "Bearer good-1"
    assert await get_auth(fresh) == "Bearer good-1"


async def test_failing_exec_plugin_refresh_is_a_transport_error(
    api: FakeApiServer, tmp_path: Path
) -> None:
    auth_echo(api)
    user = exec_user(tmp_path, "good", "-60", fail_after=1)
    path = write_kubeconfig(tmp_path / "c", api.url, {"u": user}, current="u")
    config = await load_config(kubeconfig=str(path))  # the first run works
    with pytest.raises(errors.TransportError) as info:
        await get_auth(config)  # its token has expired and the plugin now fails
    assert isinstance(info.value.__cause__, ConfigError)
    assert "plugin broken" in info.value.message
    assert api.requests == []  # nothing was sent without credentials


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        pytest.skip(
            "the openssl CLI is not installed and cryptography is unavailable: cannot make certificates"
        )
    d = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
        cwd=d,
    )
    for name, ext in (
        ("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
        ("client", "extendedKeyUsage=clientAuth\n"),
    ):
        (d / f"{name}.ext").write_text(ext)
        cn = "/CN=127.0.0.1" if name == "server" else "/CN=rayop-admin/O=system:masters"
        openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", cn, cwd=d)
        openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "2",
            "-extfile",
            f"{name}.ext",
            cwd=d,
        )
    return d


@pytest.fixture
async def tls_api(pki: Path) -> AsyncIterator[str]:
    """An https server that requires a client certificate signed by the test CA."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki / "ca.crt"))
    context.load_cert_chain(pki / "server.crt", pki / "server.key")
    context.verify_mode = ssl.CERT_REQUIRED

    async def handler(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(x[0] for x in peer["subject"]) if peer else {}
        return json_response({"user": subject.get("commonName")})

    app = web.Application()
    app.router.add_get(POD_PATH, handler)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server(ssl=context)
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


async def test_client_certificate_from_kubeconfig_data(
    pki: Path, tls_api: str, tmp_path: Path
) -> None:
    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    user = {"client-certificate-data": b64("client.crt"), "client-key-data": b64("client.key")}
    path = write_kubeconfig(
        tmp_path / "c",
        tls_api,
        {"admin": user},
        current="admin",
        **{"certificate-authority-data": b64("ca.crt")},
    )
    config = await load_config(kubeconfig=str(path))
    assert isinstance(config.ssl_context, ssl.SSLContext)
    async with KubeClient(config, qps=-1) as kube:
        assert (await kube.get(PODS, "p", namespace="ns"))["user"] == "rayop-admin"
    # the same server refuses a client without the certificate
    anonymous = KubeConfig.for_server(tls_api, ca_file=str(pki / "ca.crt"))
    clock = FakeClock(0.0, autojump=True)
    async with KubeClient(anonymous, qps=-1, clock=clock) as kube:
        with pytest.raises(errors.TransportError):
            await kube.get(PODS, "p", namespace="ns")
    # the dropped connection looks like a reset, which a GET retries 10 times, 1 s apart (T5)
    assert clock.sleeps == [1.0] * 10


async def test_client_certificate_from_files_relative_to_kubeconfig(
    pki: Path, tls_api: str, tmp_path: Path
) -> None:
    for name in ("ca.crt", "client.crt", "client.key"):
        shutil.copy(pki / name, tmp_path / name)
    user = {"client-certificate": "client.crt", "client-key": "client.key"}
    path = write_kubeconfig(
        tmp_path / "c",
        tls_api,
        {"admin": user},
        current="admin",
        **{"certificate-authority": "ca.crt"},
    )
    async with KubeClient(await load_config(kubeconfig=str(path)), qps=-1) as kube:
        assert (await kube.get(PODS, "p", namespace="ns"))["user"] == "rayop-admin"


async def test_in_cluster_service_account(pki: Path, tls_api: str, tmp_path: Path) -> None:
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("sa-token")
    (sa / "namespace").write_text("ray-system")
    shutil.copy(pki / "ca.crt", sa / "ca.crt")
    host, port = tls_api.removeprefix("https://").rsplit(":", 1)
    env = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
    config = load_incluster_config(
        token_file=str(sa / "token"), ca_file=str(sa / "ca.crt"), environ=env
    )
    assert (config.server, config.namespace, config.context) == (
        tls_api,
        "ray-system",
        "in-cluster",
    )
    assert await config.auth_headers() == {"Authorization": "Bearer sa-token"}
    assert config.ssl_context is not None
    assert config.ssl_context.verify_mode == ssl.CERT_REQUIRED
    with pytest.raises(ConfigError):
        load_incluster_config(token_file=str(sa / "token"), ca_file=str(sa / "ca.crt"), environ={})


def test_for_server_builds_bearer_header() -> None:
    import asyncio

    config = KubeConfig.for_server("http://127.0.0.1:6443/", token="abc")
    assert config.server == "http://127.0.0.1:6443"
    assert config.host == "127.0.0.1:6443"
    assert asyncio.run(config.auth_headers()) == {"Authorization": "Bearer abc"}
