"""Every kubeconfig form rayop reads without kubernetes_asyncio: token files, basic auth,
merging, insecure TLS, proxies, exec plugins (client certificates, cluster info, relative
commands) and what is refused (auth-provider, interactive plugins, mixed methods)."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from rayop.kube.client import KubeClient
from rayop.kube.config import ConfigError, load_config, load_incluster_config
from rayop.kube.resources import PODS

from .kube_fakes import FakeApiServer, json_response
from .test_kube_config import POD_PATH, get_auth, pki, tls_api, write_kubeconfig

__all__ = ["pki", "tls_api"]  # fixtures used here


def echo(api: FakeApiServer) -> None:
    @api.route("GET", POD_PATH)
    async def handler(request: web.Request) -> web.Response:
        return json_response({"auth": request.headers.get("Authorization", "")})


async def test_token_file_is_read_relative_to_the_kubeconfig_and_wins_over_token(
    api: FakeApiServer, tmp_path: Path
) -> None:
    echo(api)
    (tmp_path / "tok").write_text("from-file\n")
    user = {"token": "inline", "tokenFile": "tok"}
    path = write_kubeconfig(tmp_path / "c", api.url, {"u": user}, current="u")
    assert await get_auth(await load_config(kubeconfig=str(path))) == "Bearer from-file"
    missing = write_kubeconfig(tmp_path / "m", api.url, {"u": {"tokenFile": "absent"}}, current="u")
    with pytest.raises(ConfigError, match="cannot read token file"):
        await load_config(kubeconfig=str(missing))


async def test_basic_auth_and_mixed_methods(api: FakeApiServer, tmp_path: Path) -> None:
    echo(api)
    path = write_kubeconfig(
        tmp_path / "c", api.url, {"u": {"username": "ann", "password": "pw"}}, current="u"
    )
    expected = "Basic " + base64.b64encode(b"ann:pw").decode()
    assert await get_auth(await load_config(kubeconfig=str(path))) == expected
    mixed = write_kubeconfig(
        tmp_path / "x", api.url, {"u": {"username": "ann", "token": "t"}}, current="u"
    )
    with pytest.raises(ConfigError, match="more than one authentication method"):
        await load_config(kubeconfig=str(mixed))


async def test_merged_files_first_definition_wins(
    api: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    echo(api)
    first = write_kubeconfig(tmp_path / "a", api.url, {"u": {"token": "first"}}, current="u")
    second = write_kubeconfig(
        tmp_path / "b", "http://127.0.0.1:1", {"u": {"token": "second"}, "v": {"token": "v"}},
        current="v",
    )  # fmt: skip
    monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'absent'}:{second}")
    config = await load_config()
    assert (config.context, config.server) == ("u", api.url)
    assert await get_auth(config) == "Bearer first"
    only_second = await load_config(context="v")
    assert only_second.namespace == "ns-v" and await get_auth(only_second) == "Bearer v"


async def test_auth_provider_and_unknown_names_are_refused(
    api: FakeApiServer, tmp_path: Path
) -> None:
    user = {"auth-provider": {"name": "oidc", "config": {}}}
    path = write_kubeconfig(tmp_path / "c", api.url, {"u": user}, current="u")
    with pytest.raises(ConfigError, match="no Auth Provider found for name 'oidc'"):
        await load_config(kubeconfig=str(path))
    doc = yaml.safe_load(path.read_text())
    doc["contexts"][0]["context"]["cluster"] = "nowhere"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match='cluster "nowhere" not found'):
        await load_config(kubeconfig=str(path))


async def test_proxy_url_sends_requests_through_the_proxy(
    api: FakeApiServer, tmp_path: Path
) -> None:
    echo(api)
    # The server is unreachable; the fake API server plays the proxy and answers.
    path = write_kubeconfig(
        tmp_path / "c", "http://kubernetes.invalid:6443", {"u": {"token": "t"}}, current="u",
        **{"proxy-url": api.url},
    )  # fmt: skip
    config = await load_config(kubeconfig=str(path))
    assert config.proxy == api.url
    assert await get_auth(config) == "Bearer t"
    socks = write_kubeconfig(
        tmp_path / "s", api.url, {"u": {}}, current="u", **{"proxy-url": "socks5://p:1080"}
    )
    with pytest.raises(ConfigError, match="'socks5' is not supported"):
        await load_config(kubeconfig=str(socks))


async def test_insecure_skip_tls_verify_and_its_conflict_with_a_ca(
    pki: Path, tls_api: str, tmp_path: Path
) -> None:
    for name in ("ca.crt", "client.crt", "client.key"):
        shutil.copy(pki / name, tmp_path / name)
    user = {"client-certificate": "client.crt", "client-key": "client.key"}
    path = write_kubeconfig(
        tmp_path / "c", tls_api, {"a": user}, current="a", **{"insecure-skip-tls-verify": True}
    )
    config = await load_config(kubeconfig=str(path))
    assert config.ssl_context is not None and config.ssl_context.verify_mode == ssl.CERT_NONE
    async with KubeClient(config, qps=-1) as kube:
        assert (await kube.get(PODS, "p", namespace="ns"))["user"] == "rayop-admin"
    both = write_kubeconfig(
        tmp_path / "b", tls_api, {"a": user}, current="a",
        **{"insecure-skip-tls-verify": True, "certificate-authority": "ca.crt"},
    )  # fmt: skip
    with pytest.raises(ConfigError, match="insecure flag is not allowed"):
        await load_config(kubeconfig=str(both))


PLUGIN = """
import json, os, sys
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
json.dump(info, open(sys.argv[1], "w"))
status = json.loads(sys.argv[2])
print(json.dumps({"apiVersion": sys.argv[3] if len(sys.argv) > 3 else info["apiVersion"],
                  "kind": "ExecCredential", "status": status}))
"""


def plugin_user(tmp_path: Path, status: dict[str, Any], **extra: Any) -> dict[str, Any]:
    (tmp_path / "plugin.py").write_text(PLUGIN)
    spec = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": [str(tmp_path / "plugin.py"), str(tmp_path / "info.json"), json.dumps(status)],
        "interactiveMode": "Never",
        **extra,
    }
    return {"exec": spec}


async def test_exec_plugin_client_certificate_and_cluster_info(
    pki: Path, tls_api: str, tmp_path: Path
) -> None:
    status = {
        "clientCertificateData": (pki / "client.crt").read_text(),
        "clientKeyData": (pki / "client.key").read_text(),
    }
    ca = base64.b64encode((pki / "ca.crt").read_bytes()).decode()
    path = write_kubeconfig(
        tmp_path / "c", tls_api, {"a": plugin_user(tmp_path, status, provideClusterInfo=True)},
        current="a", **{"certificate-authority-data": ca},
    )  # fmt: skip
    async with KubeClient(await load_config(kubeconfig=str(path)), qps=-1) as kube:
        assert (await kube.get(PODS, "p", namespace="ns"))["user"] == "rayop-admin"
    info = json.loads((tmp_path / "info.json").read_text())
    assert info["kind"] == "ExecCredential" and info["spec"]["interactive"] is False
    cluster = info["spec"]["cluster"]
    assert cluster["server"] == tls_api and cluster["certificate-authority-data"] == ca


async def test_exec_plugin_relative_command_resolves_against_the_kubeconfig(
    api: FakeApiServer, tmp_path: Path
) -> None:
    echo(api)
    script = tmp_path / "bin" / "plugin"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\n{PLUGIN}")
    script.chmod(0o755)
    user = plugin_user(tmp_path, {"token": "rel"})
    user["exec"]["command"] = "./bin/plugin"
    user["exec"]["args"] = user["exec"]["args"][1:]
    path = write_kubeconfig(tmp_path / "c", api.url, {"u": user}, current="u")
    assert await get_auth(await load_config(kubeconfig=str(path))) == "Bearer rel"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"interactiveMode": "Always"}, "cannot support interactive mode"),
        ({"interactiveMode": None}, "interactiveMode must be specified"),
        ({"apiVersion": "client.authentication.k8s.io/v1alpha1"}, "invalid apiVersion"),
        ({"command": "/nonexistent/plugin"}, "executable /nonexistent/plugin not found"),
    ],
)
async def test_exec_plugin_stanzas_that_are_refused(
    api: FakeApiServer, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    user = plugin_user(tmp_path, {"token": "t"})
    user["exec"].update(change)
    user["exec"] = {k: v for k, v in user["exec"].items() if v is not None}
    path = write_kubeconfig(tmp_path / "c", api.url, {"u": user}, current="u")
    with pytest.raises(ConfigError, match=message):
        await load_config(kubeconfig=str(path))


@pytest.mark.parametrize(
    ("status", "args", "message"),
    [
        ({"token": "t"}, ["client.authentication.k8s.io/v1beta1"], "plugin returned version"),
        ({}, [], "didn't return a token or cert/key pair"),
        ({"clientCertificateData": "x"}, [], "only certificate or key"),
    ],
)
async def test_exec_plugin_outputs_that_are_refused(
    api: FakeApiServer, tmp_path: Path, status: dict[str, Any], args: list[str], message: str
) -> None:
    user = plugin_user(tmp_path, status)
    user["exec"]["args"] += args
    path = write_kubeconfig(tmp_path / "c", api.url, {"u": user}, current="u")
    with pytest.raises(ConfigError, match=message):
        await load_config(kubeconfig=str(path))


def test_in_cluster_ipv6_host_and_a_missing_ca(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa")
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    config = load_incluster_config(
        token_file=str(tmp_path / "token"), ca_file=str(tmp_path / "absent"), environ=env
    )
    assert config.server == "https://[fd00::1]:443" and config.namespace == "default"
    with pytest.raises(ConfigError, match="must be defined"):
        load_incluster_config(token_file=str(tmp_path / "token"), environ={})
    with pytest.raises(ConfigError, match="cannot read token file"):
        load_incluster_config(token_file=str(tmp_path / "none"), environ=env)


def test_the_config_loader_does_not_import_kubernetes_asyncio() -> None:
    import subprocess

    code = "import rayop.kube.config, rayop.kube.client, sys; print('kubernetes_asyncio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
