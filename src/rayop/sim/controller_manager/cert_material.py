"""X.509 material for the simulated cert-manager issuer, made with the openssl CLI.

Keys are EC P-256 whatever the Certificate's ``privateKey`` asks (generation in tens of
milliseconds instead of seconds for RSA 4096); names, SANs, usages, CA flag and validity follow
the Certificate's spec. Every call blocks on openssl: run it in a thread.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rayop.apimachinery.certs import EC_P256_KEY, is_ip, run_openssl

__all__ = ["IssuedPair", "issue"]

_USAGE_KEYS = {
    "digital signature": "digitalSignature",
    "key encipherment": "keyEncipherment",
    "cert sign": "keyCertSign",
    "crl sign": "cRLSign",
}
_EXTENDED = {"server auth": "serverAuth", "client auth": "clientAuth"}


@dataclass(frozen=True)
class IssuedPair:
    """A PEM certificate and its PEM private key."""

    cert: bytes
    key: bytes


def _extensions(
    *, is_ca: bool, dns: Sequence[str], ips: Sequence[str], usages: Sequence[str]
) -> str:
    lines = [f"basicConstraints=critical,CA:{'TRUE' if is_ca else 'FALSE'}"]
    sans = [f"DNS:{d}" for d in dns]
    sans += [f"IP:{ip}" for ip in ips if is_ip(ip)]
    if sans:
        lines.append("subjectAltName=" + ",".join(sans))
    key_usage = [_USAGE_KEYS[u] for u in usages if u in _USAGE_KEYS]
    if is_ca and "keyCertSign" not in key_usage:
        key_usage.append("keyCertSign")
    if key_usage:
        lines.append("keyUsage=critical," + ",".join(key_usage))
    extended = [_EXTENDED[u] for u in usages if u in _EXTENDED]
    if extended:
        lines.append("extendedKeyUsage=" + ",".join(extended))
    return "\n".join(lines) + "\n"


def issue(
    *,
    common_name: str,
    dns: Sequence[str],
    ips: Sequence[str],
    usages: Sequence[str],
    is_ca: bool,
    days: int,
    signer: IssuedPair | None,
) -> IssuedPair:
    """Returns a new key and a certificate for it, self-signed or signed by ``signer``.

    Raises:
        RuntimeError: openssl failed.
    """
    with tempfile.TemporaryDirectory(prefix="rayop-sim-cert-") as tmp:
        d = Path(tmp)
        key, csr, cert, ext = d / "tls.key", d / "tls.csr", d / "tls.crt", d / "ext.cnf"
        ext.write_text(_extensions(is_ca=is_ca, dns=dns, ips=ips, usages=usages))
        subject = f"/CN={common_name}" if common_name else "/"
        request = ["openssl", "req", "-new", *EC_P256_KEY, "-keyout", str(key), "-out", str(csr)]
        run_openssl([*request, "-subj", subject])
        sign = ["openssl", "x509", "-req", "-in", str(csr), "-out", str(cert)]
        sign += ["-days", str(max(days, 1)), "-set_serial", str(secrets.randbits(63))]
        sign += ["-extfile", str(ext)]
        if signer is None:
            sign += ["-signkey", str(key)]
        else:
            ca_cert, ca_key = d / "ca.crt", d / "ca.key"
            ca_cert.write_bytes(signer.cert)
            ca_key.write_bytes(signer.key)
            sign += ["-CA", str(ca_cert), "-CAkey", str(ca_key)]
        run_openssl(sign)
        return IssuedPair(cert.read_bytes(), key.read_bytes())
