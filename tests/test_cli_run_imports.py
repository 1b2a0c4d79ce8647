"""``rayop run`` starts with only what the operator needs: its import set when it connects.

A fresh interpreter runs ``rayop run`` (the console script's ``main``) up to the moment it
reads its kubeconfig, right after every start-up import, and reports ``sys.modules`` there.
The modules below cost start-up time and resident memory and have no part in an operator
that runs against an API server; the test fails when one of them is imported again.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from rayop.cli.commands import COMMANDS

_PROBE = textwrap.dedent(
    """
    import json, os, sys
    import rayop.kube.config

    async def connect(*args, **kwargs):
        sys.stdout.write(json.dumps(sorted(sys.modules)))
        sys.stdout.flush()
        os._exit(0)

    rayop.kube.config.load_config = connect
    sys.argv = ["rayop", "run", "--metrics-addr=127.0.0.1:0",
                "--health-probe-bind-address=127.0.0.1:0", "--log-format=console"]
    from rayop.cli import main
    main()
    """
)

FORBIDDEN_PACKAGES = (
    "rayop.sim",  # the embedded control plane (rayop up, rayop apiserver)
    "rayop.bench",
    "rayop.testing",
    "rayop.preview",
    "rayop.advise",
    "rich",  # console logs on a terminal only
    "matplotlib",
    "google.protobuf",
    "kubernetes",
    "numpy",
)
"""Packages ``rayop run`` must not import before it connects."""


def _modules_when_connecting() -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    return set(json.loads(out.stdout))


def test_rayop_run_imports_only_its_own_command_and_no_heavy_package() -> None:
    modules = _modules_when_connecting()
    assert "rayop.controllers.assembly.run" in modules  # the probe saw the whole start-up
    other_commands = {module for name, module in COMMANDS.items() if name != "run"}
    assert sorted(modules & other_commands) == []
    heavy = sorted(
        m for m in modules for p in FORBIDDEN_PACKAGES if m == p or m.startswith(p + ".")
    )
    assert heavy == []
