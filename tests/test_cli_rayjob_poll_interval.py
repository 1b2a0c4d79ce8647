"""``--rayjob-dashboard-poll-interval`` reaches the operator settings; off (0) by default."""

from __future__ import annotations

from typer.testing import CliRunner

from rayop.cli.commands import loaded_app
from rayop.cli.operator_flags import OperatorFlags
from rayop.controllers.kit.settings import RAYJOB_DASHBOARD_POLL_INTERVAL

app = loaded_app()


def test_the_default_is_kuberays_get_in_every_pass() -> None:
    assert OperatorFlags().settings().rayjob_dashboard_poll_interval == RAYJOB_DASHBOARD_POLL_INTERVAL == 0.0


def test_a_given_interval_and_zero_reach_the_settings() -> None:
    assert (
        OperatorFlags(rayjob_dashboard_poll_interval=10).settings().rayjob_dashboard_poll_interval
        == 10
    )
    assert (
        OperatorFlags(rayjob_dashboard_poll_interval=0).settings().rayjob_dashboard_poll_interval
        == 0
    )


def test_a_negative_interval_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["run", "--rayjob-dashboard-poll-interval", "-1"])
    assert result.exit_code == 2
    assert "--rayjob-dashboard-poll-interval" in result.output
