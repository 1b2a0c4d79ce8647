"""Finds the Ray installation ``--real-ray`` runs: its ``bin`` directory and its version.

Ray is an optional extra of rayop (``pip install "rayop[ray]"``). The runtime looks for it in
the virtualenv named by ``RAYOP_RAY_ENV`` when that is set, else beside the running interpreter.
Nothing here imports Ray: the version is read from the installed distribution's metadata.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RAY_ENV_VAR", "RayInstall", "RayNotInstalled", "find_ray"]

RAY_ENV_VAR = "RAYOP_RAY_ENV"
"""Names a virtualenv holding Ray (its ``bin/ray`` and ``bin/python`` are used)."""

INSTALL_HINT = (
    'install it with  pip install "rayop[ray]"  (Ray 2.60.0 with its dashboard and Serve), or '
    f"point {RAY_ENV_VAR} at a virtualenv that has ray[default,serve]"
)


class RayNotInstalled(RuntimeError):
    """Ray (its ``ray`` command and the ``ray`` distribution) is not where it was looked for."""


@dataclass(frozen=True)
class RayInstall:
    """A usable Ray: the directory with ``ray`` and ``python``, and Ray's version."""

    bin_dir: Path
    version: str

    @property
    def python(self) -> Path:
        """The interpreter that has Ray (``python`` in container commands resolves to it)."""
        return self.bin_dir / "python"


def find_ray(env_dir: str | None = None) -> RayInstall:
    """Returns the Ray to run, from ``env_dir``, ``$RAYOP_RAY_ENV`` or the running interpreter.

    Raises:
        RayNotInstalled: there is no ``ray`` command or no ``ray`` distribution there; the
            message says how to install it.
    """
    chosen = env_dir or os.environ.get(RAY_ENV_VAR)
    bin_dir = Path(chosen) / "bin" if chosen else Path(sys.executable).parent
    where = f"{RAY_ENV_VAR}={chosen}" if chosen else f"the interpreter's environment ({bin_dir})"
    if not (bin_dir / "ray").is_file():
        raise RayNotInstalled(
            f"--real-ray needs Ray, and {where} has no ray command: {INSTALL_HINT}"
        )
    python = bin_dir / "python"
    if not python.exists():
        python = bin_dir / "python3"
    probe = "import importlib.metadata as m; print(m.version('ray'))"
    try:
        done = subprocess.run(
            [str(python), "-c", probe], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RayNotInstalled(f"--real-ray could not run {python}: {exc}; {INSTALL_HINT}") from exc
    if done.returncode != 0 or not done.stdout.strip():
        raise RayNotInstalled(
            f"--real-ray needs Ray, and {where} has no ray distribution: {INSTALL_HINT}"
        )
    return RayInstall(bin_dir=bin_dir, version=done.stdout.strip().splitlines()[-1])
