"""What the docs and the CLI help say about the CRDs and the KubeRay build matches the code."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from rayop.api.crds import build_crds
from rayop.cli.commands import loaded_app
from tests import kuberay_compat

app = loaded_app()

ROOT = Path(__file__).resolve().parents[1]
KINDS = [crd["spec"]["names"]["kind"] for crd in build_crds()]


def _section(doc: Path, heading: str) -> str:
    text = doc.read_text()
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_there_are_four_crds() -> None:
    assert KINDS == ["RayCluster", "RayJob", "RayService", "RayCronJob"]


def test_rayop_crds_help_names_every_crd() -> None:
    result = CliRunner().invoke(app, ["crds", "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    help_text = " ".join(result.output.split())
    for kind in KINDS:
        assert kind in help_text


def test_operations_upgrade_section_names_every_crd_kuberay_has() -> None:
    upgrading = _section(ROOT / "docs" / "operations.md", "Upgrading from KubeRay")
    served = re.search(r"serves the same `ray.io/v1` CRDs \(([^)]*)\)", upgrading)
    assert served is not None
    for kind in KINDS:
        assert kind in served.group(1)


def test_no_doc_or_help_counts_three_crds() -> None:
    three = re.compile(r"\b(?:three|3) (?:ray\.io )?CRDs\b", re.IGNORECASE)
    texts = [*(ROOT / "docs").glob("*.md"), ROOT / "README.md", *(ROOT / "src").rglob("*.py")]
    assert [str(p) for p in texts if three.search(p.read_text())] == []


def test_build_notes_say_kuberay_is_built_from_the_shared_source() -> None:
    notes = _section(ROOT / "docs" / "known-differences.md", "Build notes")
    assert "cannot be built" not in notes
    assert "`scripts/controlplane-build kuberay`" in notes
    archive = f"kuberay-{kuberay_compat.KUBERAY_VERSION}/{kuberay_compat.SOURCE_ARCHIVE}"
    assert archive in notes
    script = (ROOT / "scripts" / "controlplane-build").read_text()
    assert f"/compat/kuberay-$KUBERAY_VERSION/{kuberay_compat.SOURCE_ARCHIVE}" in script
    assert "build_kuberay_from_source" in script
