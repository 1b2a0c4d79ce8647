"""The operator-only install (`pip install rayop`, no extras) runs the operator; the commands
that need an extra (`rayop[sim]`, `rayop[bench]`) name it in one line and exit 2.

The missing extras are made missing in a subprocess by a meta-path finder that refuses their
top-level packages (protobuf's ``google``, ``matplotlib``, ``psutil``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from rayop.cli.extras import DISTRIBUTIONS, EXTRAS, missing_extras, missing_extras_message

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "rayop"
EXTRA_PACKAGES = {"google", "matplotlib", "psutil", "cel"}

BLOCKER = textwrap.dedent(
    """
    import sys
    from importlib.abc import MetaPathFinder

    BLOCKED = set(sys.argv[1].split(","))

    class Blocker(MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Blocker())
    sys.argv = ["rayop", *sys.argv[2:]]
    from rayop.cli import main
    main()
    """
)


def rayop_without(blocked: set[str], *args: str) -> subprocess.CompletedProcess[str]:
    """Runs ``rayop ARGS`` in a subprocess where the packages in ``blocked`` cannot be imported."""
    env = {**os.environ, "COLUMNS": "200", "KUBECONFIG": "/nonexistent/kubeconfig"}
    return subprocess.run(
        [sys.executable, "-c", BLOCKER, ",".join(sorted(blocked)), *args],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip


def operator_modules() -> list[str]:
    """Every module of rayop outside the embedded plane, the benchmark and the test kit."""
    names = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        if parts[1] in {"sim", "bench", "testing", "__main__"}:
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_the_main_dependencies_carry_only_the_operator() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    main = " ".join(project["dependencies"])
    assert not any(name in main for name in ("matplotlib", "psutil", "protobuf"))
    extras = project["optional-dependencies"]
    assert {"sim", "bench"} <= set(extras)
    assert any(req.startswith("rayop[") and {"sim", "bench"} <= set(
        req[len("rayop[") : req.index("]")].split(",")
    ) for req in extras["dev"])  # fmt: skip
    for name, extra in EXTRAS.items():  # the helper looks for what the group installs
        declared = " ".join(extras[name])
        for module in extra.modules:
            distribution = DISTRIBUTIONS.get(module, module.split(".")[-1])
            assert distribution in declared, (name, module)


def test_the_image_installs_the_operator_without_extras() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "pip wheel --wheel-dir /wheels .\n" in dockerfile
    assert "--find-links /wheels rayop \\" in dockerfile
    assert "[" not in dockerfile.split("pip install", 1)[1].split("\n", 1)[0]


def test_the_operator_imports_none_of_the_extras() -> None:
    """Every operator module (cli, controllers, runtime, kube, api) loads without them."""
    code = (
        "import importlib, sys\n"
        f"for name in {operator_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {EXTRA_PACKAGES!r}))\n"
        "print(sorted(m for m in sys.modules if m.startswith('rayop.sim')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "[]"], out.stdout


def test_run_and_crds_work_without_the_extras() -> None:
    crds = rayop_without(EXTRA_PACKAGES, "crds")
    assert crds.returncode == 0, crds.stderr
    assert "kind: CustomResourceDefinition" in crds.stdout
    # `rayop run` imports the whole operator, then fails on the missing kubeconfig (exit 2).
    run = rayop_without(EXTRA_PACKAGES, "run", "--metrics-addr=0", "--health-probe-bind-address=0")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "kubeconfig" in run.stderr
    assert "rayop[" not in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("blocked", "args", "line"),
    [
        (
            {"google"},
            ["up"],
            "rayop up needs the embedded control plane's extra: pip install 'rayop[sim]'",
        ),
        (
            {"google"},
            ["apiserver"],
            "rayop apiserver needs the embedded control plane's extra: pip install 'rayop[sim]'",
        ),
        (
            {"psutil"},
            ["bench", "--kubeconfig", "/nonexistent/kubeconfig"],
            "rayop bench needs the benchmark's extra: pip install 'rayop[bench]'",
        ),
        (
            EXTRA_PACKAGES,
            ["bench"],
            "rayop bench needs the extras of the benchmark and the embedded control plane: "
            "pip install 'rayop[bench,sim]'",
        ),
    ],
)
def test_a_missing_extra_is_one_line_and_exit_2(
    blocked: set[str], args: list[str], line: str
) -> None:
    proc = rayop_without(blocked, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr == line + "\n"


def test_dev_real_cluster_needs_no_extra() -> None:
    """Its modules (rayop.cli.realcluster*) are among those the import test above loads."""
    proc = rayop_without(EXTRA_PACKAGES, "dev", "real-cluster", "down", "--dir", "/nonexistent")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "nothing was running\n"


def test_the_helper_finds_what_is_installed() -> None:
    assert missing_extras("sim", "bench") == []  # the test environment has every extra
    assert missing_extras_message("rayop up", [EXTRAS["sim"]]) == (
        "rayop up needs the embedded control plane's extra: pip install 'rayop[sim]'"
    )
