"""The console script answers `rayop version`."""

import subprocess
import sys

from rayop import __version__


def test_version_command_prints_the_package_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rayop", "version"], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith(f"rayop {__version__} ")
