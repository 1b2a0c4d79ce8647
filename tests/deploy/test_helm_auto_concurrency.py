"""The chart takes ``reconcileConcurrency: auto`` (flag form only) and passes it to rayop run."""

from __future__ import annotations

import re

import pytest

from rayop.cli.operator_flags import AUTO_CONCURRENCY

from .helm_cli import HelmError, deployment_container, missing_helm_reason, template
from .manifests import parse_run_args

pytestmark = pytest.mark.skipif(bool(missing_helm_reason()), reason=missing_helm_reason())


def test_auto_renders_the_flag_rayop_run_parses_with_its_ceiling_from_extra_args() -> None:
    values = {
        "reconcileConcurrency": "auto",
        "rayop": {"extraArgs": ["--max-reconcile-concurrency=8"]},
    }
    args = deployment_container(template(values))["args"]
    assert "--reconcile-concurrency=auto" in args
    params = parse_run_args(args)
    assert params["reconcile_concurrency"] == AUTO_CONCURRENCY
    assert params["max_reconcile_concurrency"] == 8


def test_auto_is_refused_with_the_configuration_file() -> None:
    message = "values.reconcileConcurrency auto is a rayop flag: KubeRay's Configuration file"
    with pytest.raises(HelmError, match=re.escape(message)):
        template({"reconcileConcurrency": "auto", "configuration": {"enabled": True}})
