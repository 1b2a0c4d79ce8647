"""Loopback pod IPs: each pod of ``--real-ray`` gets its own 127.x.y.z address.

Linux routes all of 127.0.0.0/8 to the loopback interface, so every pod can listen on Ray's
fixed ports at its own address. Ray's servers bind the wildcard address (the GCS on
``*:6379``) or 127.0.0.1 (the dashboard agent, the Ray client server); the tiny library built
from ``loopback_shim.c`` and loaded with ``LD_PRELOAD`` turns those binds (and connects to
127.0.0.1) into the pod's address, which the process finds in ``RAYOP_POD_IP``.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import subprocess
from importlib import resources
from pathlib import Path

__all__ = ["POD_IP_ENV", "LoopbackAddresses", "ShimBuildError", "build_shim"]

POD_IP_ENV = "RAYOP_POD_IP"


class ShimBuildError(RuntimeError):
    """The loopback library could not be compiled (no C compiler, or it failed)."""


def build_shim(cache_dir: Path) -> Path:
    """Compiles ``loopback_shim.c`` once into ``cache_dir`` and returns the library's path.

    Raises:
        ShimBuildError: no ``cc``/``gcc`` on PATH, or the compiler failed (its output is in
            the message).
    """
    source = resources.files(__package__).joinpath("loopback_shim.c").read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    target = cache_dir / f"rayop-loopback-{digest}.so"
    if target.is_file():
        return target
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise ShimBuildError("--real-ray needs a C compiler (cc or gcc) to build its loopback shim")
    cache_dir.mkdir(parents=True, exist_ok=True)
    src = cache_dir / f"rayop-loopback-{digest}.c"
    src.write_bytes(source)
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    done = subprocess.run(
        [compiler, "-O2", "-shared", "-fPIC", "-o", str(partial), str(src), "-ldl"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise ShimBuildError(f"building the loopback shim failed: {done.stderr.strip()}")
    partial.replace(target)
    return target


class LoopbackAddresses:
    """Hands out 127.<b>.<c>.<d> pod IPs from a block chosen at random per control plane.

    Args:
        seed: Picks the block's second octet (16-250); None: at random, so two planes on one
            machine are unlikely to share a block.
    """

    def __init__(self, seed: int | None = None) -> None:
        self.block = random.Random(seed).randint(16, 250)
        self._next = 1
        self._used: set[str] = set()

    def note(self, ip: str) -> None:
        """Marks an address already held by a stored pod as used."""
        self._used.add(ip)

    def allocate(self) -> str:
        """Returns an unused address of the block."""
        while True:
            self._next += 1
            n = self._next
            ip = f"127.{self.block}.{(n >> 8) & 255}.{n & 255}"
            if n & 255 not in (0, 255) and ip not in self._used:
                self._used.add(ip)
                return ip
