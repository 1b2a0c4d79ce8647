"""Self-signed certificates: what the webhook server and the embedded API server serve."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from rayop.apimachinery.certs import (
    base64_pem,
    is_ip,
    run_openssl,
    subject_alt_names,
    write_self_signed,
)
from rayop.runtime.serving.serving_cert import ensure_serving_cert
from rayop.sim.apiserver.tls import generate_self_signed


def _text(cert: Path) -> str:
    command = ["openssl", "x509", "-in", str(cert), "-noout", "-text"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.replace(
        "CN = ", "CN="
    )


def test_names_and_addresses_become_their_san_kinds() -> None:
    assert subject_alt_names(["localhost", "127.0.0.1", "::1", "svc.ns"]) == [
        "DNS:localhost",
        "IP:127.0.0.1",
        "IP:::1",
        "DNS:svc.ns",
    ]
    assert is_ip("10.0.0.1") and not is_ip("10.0.0") and not is_ip("host")


def test_a_self_signed_ca_with_the_hosts_and_extensions(tmp_path: Path) -> None:
    cert, key = tmp_path / "c.crt", tmp_path / "c.key"
    write_self_signed(
        cert,
        key,
        common_name="example",
        hosts=("example.svc", "10.1.2.3"),
        extensions=("extendedKeyUsage=serverAuth",),
        days=2,
    )
    text = _text(cert)
    assert "Subject: CN=example" in text and "Issuer: CN=example" in text
    assert "DNS:example.svc, IP Address:10.1.2.3" in text
    assert "CA:TRUE" in text and "TLS Web Server Authentication" in text
    assert "prime256v1" in text or "P-256" in text
    assert base64.b64decode(base64_pem(cert)) == cert.read_bytes()
    assert b"PRIVATE KEY" in key.read_bytes()


def test_openssl_failures_name_what_failed(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"^making x: .+"):
        run_openssl(["openssl", "x509", "-in", str(tmp_path / "missing")], failure="making x")


def test_the_two_servers_pairs(tmp_path: Path) -> None:
    """The webhook pair keeps the first host as its name and no key usages; the API server's
    pair has its fixed name, server usages and a private key only its owner reads."""
    webhook = _text(
        ensure_serving_cert(tmp_path / "webhook", ("svc.ns.svc", "127.0.0.1")) / "tls.crt"
    )
    assert "Subject: CN=svc.ns.svc" in webhook and "Key Usage" not in webhook
    material = generate_self_signed(tmp_path / "apiserver")
    server = _text(material.cert_path)
    assert "Subject: CN=rayop-embedded-apiserver" in server
    assert "IP Address:127.0.0.1, DNS:localhost" in server
    assert "Certificate Sign" in server and "TLS Web Server Authentication" in server
    assert material.key_path.stat().st_mode & 0o777 == 0o600
    assert material.ca_data == base64_pem(material.cert_path)
