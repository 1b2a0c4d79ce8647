"""KubeRay's compatibility material is found in one place, and a clone without it still passes.

Only tests/kuberay_compat.py spells where the material is; every other test goes through it, so
a new test cannot read ``../shared`` at import time (which broke collection on a bare clone,
issue 35) or skip without the one-line reason. scripts/test-bare-clone checks the same from the
outside: a clone with no shared folder collects everything and passes what uses the material.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import kuberay_compat

TESTS = Path(__file__).resolve().parent
SUPPORT = TESTS / "kuberay_compat.py"
EXEMPT = {SUPPORT, Path(__file__).resolve()}
"""The support module, and this file, which spells the path to test the pattern."""
SPELLED = re.compile(
    r"\.\./shared|shared/|/\s*[\"']shared\b|[\"']shared[\"']\s*/|[\"']compat[\"']"
    r"|kuberay-v\d+\.\d+\.\d+|ray-operator-src\.tar\.gz|RAYOP_SHARED_DIR"
)
"""How a test would spell the material's path: the folder, its ``compat/kuberay-v<x.y.z>``
directory, the source archive's name, or the variable that moves it."""


def _spelling(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    return [f"{n}: {line.strip()}" for n, line in enumerate(lines, 1) if SPELLED.search(line)]


def test_no_test_file_but_the_support_module_spells_the_material_path() -> None:
    spelled = {
        path.relative_to(TESTS).as_posix(): hits
        for path in sorted(TESTS.rglob("*.py"))
        if path not in EXEMPT and (hits := _spelling(path))
    }
    assert spelled == {}, "read KubeRay's material through tests/kuberay_compat.py"


def test_the_pattern_finds_each_way_of_spelling_the_path() -> None:
    assert _spelling(SUPPORT)
    for line in (
        'ROOT.parent / "shared" / "compat" / "kuberay-v1.7.0" / "samples"',
        'ROOT.parent / "shared/compat/kuberay-v1.7.0/samples"',
        "Path('../shared') / 'compat'",
        'TARBALL = "ray-operator-src.tar.gz"',
        'os.environ["RAYOP_SHARED_DIR"]',
    ):
        assert SPELLED.search(line), line
    for line in ('{"ray.io/cluster": "shared"}', "SharedInformer(shared=True)", "kuberay-v1.md"):
        assert not SPELLED.search(line), line


def _material(root: Path) -> Path:
    compat = root / "compat" / f"kuberay-{kuberay_compat.KUBERAY_VERSION}"
    (compat / "samples").mkdir(parents=True)
    (compat / "samples" / "ray-cluster.a.yaml").write_text("kind: RayCluster\n---\n")
    return compat


def test_the_shared_dir_is_beside_the_checkout_unless_the_variable_names_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(kuberay_compat.SHARED_DIR_ENV, raising=False)
    assert kuberay_compat.shared_dir() == TESTS.parent.parent / "shared"
    monkeypatch.setenv(kuberay_compat.SHARED_DIR_ENV, str(tmp_path))
    assert kuberay_compat.shared_dir() == tmp_path
    compat = _material(tmp_path)
    assert kuberay_compat.present()
    assert kuberay_compat.samples_dir() == compat / "samples"
    assert kuberay_compat.sample_docs("ray-cluster.a.yaml") == [{"kind": "RayCluster"}]
    assert kuberay_compat.names_or_skip(lambda: ["x"]) == ["x"]
    assert kuberay_compat.sample_names(lambda: ["x"]) == ["x"]


def test_a_file_missing_from_present_material_fails_rather_than_skips(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(kuberay_compat.SHARED_DIR_ENV, str(tmp_path))
    _material(tmp_path)
    with pytest.raises(FileNotFoundError):
        kuberay_compat.sample_docs("ray-cluster.missing.yaml")


def test_without_the_material_its_users_skip_with_one_line_and_collection_does_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(kuberay_compat.SHARED_DIR_ENV, str(tmp_path / "nowhere"))
    assert not kuberay_compat.present()
    assert "\n" not in kuberay_compat.MISSING
    assert kuberay_compat.SHARED_DIR_ENV in kuberay_compat.MISSING
    for use in (
        kuberay_compat.samples_dir,
        kuberay_compat.crds_dir,
        kuberay_compat.helm_chart_dir,
        lambda: kuberay_compat.sample_docs("ray-cluster.sample.yaml"),
        lambda: kuberay_compat.source_sample("ray-cronjob.sample.yaml"),
    ):
        with pytest.raises(pytest.skip.Exception, match=re.escape(kuberay_compat.MISSING)):
            use()

    def never() -> list[str]:
        raise AssertionError("listed without the material")

    assert kuberay_compat.sample_names(never) == []
    (param,) = kuberay_compat.names_or_skip(never)
    assert param.id == "no-compat-material"
    assert [m.kwargs["reason"] for m in param.marks] == [kuberay_compat.MISSING]
