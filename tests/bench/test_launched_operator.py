"""``rayop bench --operator-command``: the bench starts the operator under test for every run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rayop.bench.launched_operator import LaunchedOperator, OperatorCommand
from rayop.cli.commands import loaded_app

app = loaded_app()

FAKE_OPERATOR = r"""
import http.server, os, sys
args = dict(a.split("=", 1) for a in sys.argv[1:])
if args.get("--fail"):
    print("cannot reach the API server at", os.environ["KUBECONFIG"], flush=True)
    sys.exit(3)
page = (
    "# TYPE controller_runtime_max_concurrent_reconciles gauge\n"
    'controller_runtime_max_concurrent_reconciles{controller="raycluster-controller"} '
    + args["--workers"] + "\n"
).encode()
class Metrics(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(page)
    def log_message(self, *a):
        pass
server = http.server.HTTPServer(("127.0.0.1", int(args["--port"])), Metrics)
print('{"msg":"Starting workers","controller":"raycluster-controller","worker count":'
      + args["--workers"] + "}", flush=True)
server.serve_forever()
"""


def _template(tmp_path: Path, extra: str = "") -> OperatorCommand:
    script = tmp_path / "fake_operator.py"
    script.write_text(FAKE_OPERATOR)
    return OperatorCommand.parse(
        f"{sys.executable} {script} --port={{metrics_port}} --workers={{concurrency}} "
        f"--kubeconfig={{kubeconfig}} --qps={{qps}} --burst={{burst}} {extra}"
    )


def _kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig.yaml"
    path.write_text("apiVersion: v1\nkind: Config\n")
    return path


async def test_the_launched_operator_is_read_through_its_metrics_and_stopped(
    tmp_path: Path,
) -> None:
    command = _template(tmp_path)
    op = LaunchedOperator(
        command, lambda _d: _kubeconfig(tmp_path), concurrency=3, qps=50, burst=100
    )
    async with op:
        assert op.controller == "raycluster-controller"
        assert op.pid is not None and op.exited is None
        snap = await op.snapshot()
        assert snap.total("controller_runtime_max_concurrent_reconciles") == 3.0
        proc = op._proc
    assert proc is not None and proc.returncode is not None  # stopped when the run ended


async def test_an_operator_that_exits_at_start_fails_the_run_with_its_last_lines(
    tmp_path: Path,
) -> None:
    command = _template(tmp_path, "--fail=1")
    op = LaunchedOperator(command, lambda _d: _kubeconfig(tmp_path), concurrency=1, qps=5, burst=10)
    with pytest.raises(RuntimeError, match="exited with code 3 before it was ready") as info:
        async with op:
            pass
    assert "cannot reach the API server at" in str(info.value)


def test_the_template_fills_every_placeholder() -> None:
    command = OperatorCommand.parse(
        "op --kubeconfig={kubeconfig} -c={concurrency} --m=:{metrics_port} --q={qps} --b={burst}"
    )
    argv = command.argv(kubeconfig=Path("/k"), concurrency=2, metrics_port=8080, qps=12.5, burst=40)
    assert argv == ["op", "--kubeconfig=/k", "-c=2", "--m=:8080", "--q=12.5", "--b=40"]


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("", "--operator-command is empty"),
        ("op 'unclosed", "--operator-command does not split as a shell line"),
        (
            "op {metrics_port} {concurrency} {port}",
            "--operator-command names unknown placeholder(s) port",
        ),
        ("op {concurrency}", "--operator-command must contain {metrics_port}"),
        ("op {metrics_port}", "--operator-command must contain {concurrency}"),
    ],
)
def test_a_bad_template_is_refused(template: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        OperatorCommand.parse(template)
    assert str(info.value).startswith(message)


def test_the_cli_refuses_a_bad_template_and_a_second_operator_with_exit_2() -> None:
    bad = CliRunner().invoke(app, ["bench", "--operator-command", "op {concurrency}"])
    assert bad.exit_code == 2
    assert "--operator-command must contain {metrics_port}" in bad.output
    both = CliRunner().invoke(
        app,
        [
            "bench", "--operator-command", "op {concurrency} {metrics_port}",
            "--external-operator", "--external-metrics-url", "http://x/m", "--kubeconfig", "k",
        ],
    )  # fmt: skip
    assert both.exit_code == 2
    assert "--operator-command and --external-operator exclude each other" in both.output
