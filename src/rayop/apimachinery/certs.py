"""Self-signed X.509 certificates (EC P-256) made with the openssl CLI.

:func:`write_self_signed` writes a key and a certificate that is its own CA, for the names and
IPs given (the webhook server's and the embedded API server's serving pairs); its PEM is what
clients trust (``caBundle``, ``certificate-authority-data``). The smaller helpers
(:func:`run_openssl`, :func:`subject_alt_names`, :data:`EC_P256_KEY`) serve other issuers
too. Every call blocks on openssl (tens of milliseconds): run it in a thread on a hot path.
"""

from __future__ import annotations

import base64
import ipaddress
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

__all__ = [
    "EC_P256_KEY",
    "base64_pem",
    "is_ip",
    "run_openssl",
    "subject_alt_names",
    "write_self_signed",
]

EC_P256_KEY: Final = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
"""``openssl req`` arguments for a new unencrypted EC P-256 key."""


def is_ip(text: str) -> bool:
    """Tells whether ``text`` is an IPv4 or IPv6 address."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def subject_alt_names(hosts: Iterable[str]) -> list[str]:
    """Returns ``IP:<host>`` for an address and ``DNS:<host>`` for a name, in order."""
    return [f"IP:{h}" if is_ip(h) else f"DNS:{h}" for h in hosts]


def run_openssl(args: Sequence[str], *, failure: str = "openssl failed") -> None:
    """Runs an openssl command.

    Raises:
        RuntimeError: openssl failed (``failure``, then its stderr).
    """
    done = subprocess.run(list(args), capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{failure}: {done.stderr.decode(errors='replace')}")


def write_self_signed(
    cert: Path,
    key: Path,
    *,
    common_name: str,
    hosts: Sequence[str],
    extensions: Sequence[str] = (),
    days: int = 3650,
    failure: str = "openssl failed",
) -> None:
    """Writes a new key and a self-signed CA certificate for ``hosts`` (its SANs).

    ``extensions`` are more ``-addext`` values (``keyUsage=...``) after ``subjectAltName`` and
    ``basicConstraints=critical,CA:TRUE``.

    Raises:
        RuntimeError: openssl failed (``failure``, then its stderr).
    """
    command = ["openssl", "req", "-x509", *EC_P256_KEY, "-keyout", str(key), "-out", str(cert)]
    command += ["-days", str(days), "-subj", f"/CN={common_name}"]
    added = ["subjectAltName=" + ",".join(subject_alt_names(hosts))]
    added += ["basicConstraints=critical,CA:TRUE", *extensions]
    for extension in added:
        command += ["-addext", extension]
    run_openssl(command, failure=failure)


def base64_pem(cert: Path) -> str:
    """Returns a PEM file base64-encoded (``caBundle``, ``certificate-authority-data``)."""
    return base64.b64encode(cert.read_bytes()).decode()
