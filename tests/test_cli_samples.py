"""``rayop samples`` lists, prints and writes the shipped example manifests."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from rayop.cli.commands import loaded_app

app = loaded_app()

runner = CliRunner()


def test_lists_every_sample_with_a_summary() -> None:
    result = runner.invoke(app, ["samples"])
    assert result.exit_code == 0, result.output
    names = [line.split()[0] for line in result.output.splitlines()[:3]]
    assert names == ["raycluster", "rayjob", "rayservice"]
    assert "rayop samples rayjob | kubectl apply -f -" in result.output


def test_prints_the_named_samples_as_one_yaml_stream() -> None:
    result = runner.invoke(app, ["samples", "rayjob", "raycluster"])
    assert result.exit_code == 0, result.output
    docs = [d for d in yaml.safe_load_all(result.output) if d]
    assert [d["kind"] for d in docs] == ["ConfigMap", "RayJob", "RayCluster"]
    assert docs[1]["spec"]["entrypoint"] == "python /home/ray/samples/count_primes.py"


def test_writes_the_samples_into_a_directory(tmp_path: Path) -> None:
    result = runner.invoke(app, ["samples", "--out", str(tmp_path / "ex")])
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in (tmp_path / "ex").iterdir())
    assert written == ["raycluster.yaml", "rayjob.yaml", "rayservice.yaml"]


def test_an_unknown_name_is_refused_with_the_choices() -> None:
    result = runner.invoke(app, ["samples", "raycluser"])
    assert result.exit_code == 2
    assert "no sample named raycluser; choose from raycluster, rayjob, rayservice" in result.output
