"""What ``rayop run`` and ``rayop up`` do with their operator flags, in one place.

Both commands declare the same option groups (:class:`~rayop.cli.operator_flags.OperatorFlags`,
:class:`~rayop.cli.replica_flags.ReplicaFlags`, :class:`~rayop.cli.operator_flags.LogFlags`,
:class:`~rayop.cli.kuberay_flags.KubeRayLogFlags` and
:class:`~rayop.cli.kuberay_flags.KubeRayFeatureFlags`), each with its own defaults, so every
operator flag of one works on the other. :func:`operator_settings` turns their values into
:class:`~rayop.controllers.assembly.operator_settings.OperatorSettings`: it sets up logging,
applies KubeRay's Configuration file (``--config``) and checks the batch scheduler choice.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from rayop.cli.kuberay_config import (
    apply_configuration,
    log_configuration,
    log_plan_with_configuration,
)
from rayop.cli.log_plan import configure_logging

if TYPE_CHECKING:
    from rayop.cli.kuberay_flags import KubeRayFeatureFlags, KubeRayLogFlags
    from rayop.cli.operator_flags import LogFlags, OperatorFlags
    from rayop.cli.replica_flags import ReplicaFlags
    from rayop.controllers.assembly.operator_settings import OperatorSettings

__all__ = ["operator_settings"]


def operator_settings(
    operator: OperatorFlags,
    replica: ReplicaFlags,
    logs: LogFlags,
    kuberay_logs: KubeRayLogFlags,
    kuberay: KubeRayFeatureFlags,
) -> OperatorSettings:
    """Sets up logging and returns the operator settings the flags ask for.

    ``--config`` (KubeRay's Configuration file) replaces the flags it has fields for, as in
    KubeRay; the batch scheduler is checked as KubeRay checks it.

    Raises:
        typer.BadParameter: a value does not parse, the Configuration file is invalid, or the
            batch scheduler checks fail.
    """
    config = kuberay.configuration()
    plan = kuberay_logs.plan(log_level=logs.log_level, log_format=logs.log_format)
    configure_logging(log_plan_with_configuration(plan, config))
    if config is not None:
        log_configuration(kuberay.config, config)
    settings = replica.apply(
        dataclasses.replace(operator.settings(), use_kubernetes_proxy=kuberay.kubernetes_proxy())
    )
    if config is not None:
        settings = apply_configuration(settings, config)
    scheduler = kuberay.check(config, kubernetes_was=settings.options.feature_gates.kubernetes_was)
    return dataclasses.replace(
        settings, options=dataclasses.replace(settings.options, batch_scheduler=scheduler)
    )
