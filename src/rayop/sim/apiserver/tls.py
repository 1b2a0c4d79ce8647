"""Self-signed TLS material for the embedded API server (made with the openssl CLI).

kubectl (client-go) sends bearer tokens only over HTTPS, so a server that requires a token
must speak TLS. The certificate is its own CA: put :attr:`TlsMaterial.ca_data` into the
kubeconfig's ``certificate-authority-data``.
"""

from __future__ import annotations

import base64
import ipaddress
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TlsMaterial", "generate_self_signed", "server_ssl_context"]


@dataclass(frozen=True)
class TlsMaterial:
    """Paths of a certificate and key, and the certificate as base64 PEM (kubeconfig form)."""

    cert_path: Path
    key_path: Path
    ca_data: str


def generate_self_signed(
    directory: str | Path, *, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")
) -> TlsMaterial:
    """Writes ``server.crt`` and ``server.key`` (EC P-256, 10 years) into ``directory``.

    Blocks for the openssl run (tens of milliseconds); reuses existing files.

    Raises:
        RuntimeError: openssl failed.
    """
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    cert, key = d / "server.crt", d / "server.key"
    if not (cert.exists() and key.exists()):
        sans = []
        for h in hosts:
            try:
                ipaddress.ip_address(h)
                sans.append(f"IP:{h}")
            except ValueError:
                sans.append(f"DNS:{h}")
        cmd = [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "3650",
            "-subj",
            "/CN=rayop-embedded-apiserver",
            "-addext",
            "subjectAltName=" + ",".join(sans),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,digitalSignature,keyCertSign",
            "-addext",
            "extendedKeyUsage=serverAuth",
        ]
        proc = subprocess.run(cmd, capture_output=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"openssl failed: {proc.stderr.decode(errors='replace')}")
        key.chmod(0o600)
    return TlsMaterial(cert, key, base64.b64encode(cert.read_bytes()).decode())


def server_ssl_context(material: TlsMaterial) -> ssl.SSLContext:
    """Returns a server-side SSLContext loaded with the material."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(material.cert_path), str(material.key_path))
    return ctx
