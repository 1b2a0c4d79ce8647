"""``rayop up`` takes every operator flag ``rayop run`` takes, with defaults for a laptop (issue 35)."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from rayop.cli.commands import loaded_app
from rayop.cli.operator_flags import KUBERAY_DEFAULTS, LOCAL_DEFAULTS

app = loaded_app()

RAY_PORTS = {6379, 8000, 8080, 8265, 9000, 10001, 44217, 44227, 52365}
"""The fixed ports a Ray 2.60 node listens on (GCS, Serve, metrics, dashboard, client, agents)."""
RAY_WORKER_PORTS = range(10002, 20000)
RUN_ONLY = {"--kubeconfig"}
"""``rayop run``'s API server connection: ``rayop up`` runs its own (``--kubeconfig-out``)."""
UP_ONLY = {
    "--host", "--port", "--kubeconfig-out", "--state", "--real-ray", "--pod-ready-delay",
    "--node-pool", "--node-file", "--audit-log-path",
}  # fmt: skip
"""The embedded control plane's options."""


def _options(command: str) -> set[str]:
    click_app = typer.main.get_command(app)
    cmd = click_app.commands[command]  # type: ignore[attr-defined]
    return {opt for param in cmd.params for opt in param.opts if opt.startswith("--")}


def test_up_takes_every_operator_flag_of_run() -> None:
    run, up = _options("run"), _options("up")
    assert run - RUN_ONLY <= up, sorted(run - RUN_ONLY - up)
    assert up - run == UP_ONLY
    for flag in (
        "--enable-batch-scheduler",
        "--batch-scheduler",
        "--config",
        "--zap-log-level",
        "--enable-leader-election",
        "--watch-namespace",
        "--use-kubernetes-proxy",
    ):
        assert flag in up, flag


def test_up_listens_on_loopback_on_ports_ray_does_not_use_and_run_keeps_kuberays() -> None:
    assert (KUBERAY_DEFAULTS.metrics_addr, KUBERAY_DEFAULTS.health_probe_bind_address) == (
        ":8080",
        ":8082",
    )
    for address in (LOCAL_DEFAULTS.metrics_addr, LOCAL_DEFAULTS.health_probe_bind_address):
        host, _, port = address.rpartition(":")
        assert host == "127.0.0.1"
        assert int(port) not in RAY_PORTS and int(port) not in RAY_WORKER_PORTS
        assert int(port) < 32768  # below Linux's ephemeral range
    help_text = CliRunner().invoke(app, ["up", "--help"], env={"COLUMNS": "200"}).output
    assert "127.0.0.1:28080" in help_text and "127.0.0.1:28082" in help_text
    assert "Established" in help_text and "caches have synced" in help_text


def test_up_checks_the_deprecated_batch_scheduler_flag_as_run_does() -> None:
    for command in ("run", "up"):
        both = CliRunner().invoke(
            app, [command, "--enable-batch-scheduler=true", "--batch-scheduler=yunikorn"]
        )
        assert both.exit_code == 2, (command, both.output)
        assert "batch scheduler configs validation failed" in " ".join(both.output.split())
        garbage = CliRunner().invoke(app, [command, "--enable-batch-scheduler=maybe"])
        assert garbage.exit_code == 2, (command, garbage.output)
        assert "expects true or false" in " ".join(garbage.output.split())
