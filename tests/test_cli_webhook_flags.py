"""``--webhook-cert-dir`` and ``--webhook-port`` reach the operator's webhook settings."""

from __future__ import annotations

from pathlib import Path

from rayop.cli.operator_flags import OperatorFlags
from rayop.controllers.webhooks.serving import DEFAULT_CERT_DIR


def test_the_defaults_are_controller_runtimes() -> None:
    webhooks = OperatorFlags().settings().webhooks
    assert webhooks.cert_dir == DEFAULT_CERT_DIR and webhooks.port == 9443


def test_a_given_certificate_directory_and_port_are_used() -> None:
    flags = OperatorFlags(webhook_cert_dir="/etc/rayop/certs", webhook_port=10250)
    webhooks = flags.settings().webhooks
    assert webhooks.cert_dir == Path("/etc/rayop/certs") and webhooks.port == 10250
