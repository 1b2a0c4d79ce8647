"""``rayop run --config``: KubeRay's Configuration file in place of its flags, as KubeRay reads it.

KubeRay v1.7.0 (``main.go``) decodes the file, applies its defaults, and then ignores every flag
the Configuration has a field for: ``--metrics-addr``, ``--health-probe-bind-address``,
``--enable-leader-election``, ``--leader-election-namespace``, ``--reconcile-concurrency``,
``--watch-namespace``, ``--log-file-path``, ``--enable-batch-scheduler``, ``--batch-scheduler``,
``--use-kubernetes-proxy``, ``--enable-metrics``, ``--qps`` and ``--burst``. The rest still come
from flags: ``--feature-gates``, the zap flags, ``--forced-cluster-upgrade``, and (a quirk this
module keeps) the two log encoders, which KubeRay reads from ``--log-stdout-encoder`` and
``--log-file-encoder`` even when the file sets ``logStdoutEncoder`` or ``logFileEncoder``.
``deleteRayJobAfterJobFinishes`` is also read and unused: KubeRay's RayJob controller looks at
the ``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES`` environment variable. rayop's own flags
(``--kubeconfig``, ``--use-priority-queue``, ``--log-level``, ``--log-format``) keep working.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

import typer

from rayop.cli.flags import parse_namespaces

if TYPE_CHECKING:
    from rayop.cli.log_plan import LogPlan
    from rayop.controllers.assembly.operator_settings import OperatorSettings
    from rayop.controllers.config.configuration import Configuration

__all__ = [
    "apply_configuration",
    "load_config_file",
    "log_configuration",
    "log_plan_with_configuration",
]

log = logging.getLogger("rayop.cli")

IGNORED_FLAGS = (
    "--metrics-addr",
    "--health-probe-bind-address",
    "--enable-leader-election",
    "--leader-election-namespace",
    "--reconcile-concurrency",
    "--watch-namespace",
    "--log-file-path",
    "--enable-batch-scheduler",
    "--batch-scheduler",
    "--use-kubernetes-proxy",
    "--enable-metrics",
    "--qps",
    "--burst",
)
"""The flags KubeRay ignores once ``--config`` is given (the file's fields replace them)."""


def load_config_file(path: str) -> Configuration:
    """Loads and validates ``--config`` (KubeRay's defaults applied).

    Raises:
        typer.BadParameter: the file cannot be read, does not parse, has an unknown field or a
            wrong type, or would make invalid pods; the message gives the file, line and field
            of every problem.
    """
    from rayop.controllers.config.configuration_file import ConfigurationError, load_configuration

    try:
        config = load_configuration(path)
    except ConfigurationError as exc:
        lines = "\n".join(issue.render(exc.path) for issue in exc.issues)
        raise typer.BadParameter(f"--config: invalid Configuration:\n{lines}") from exc
    return config


def log_configuration(path: str, config: Configuration) -> None:
    """Logs that ``--config`` replaces flags, and which of its fields KubeRay leaves unused."""
    log.info(
        "loaded the Configuration file; the flags it replaces are ignored",
        extra={"config": path, "ignoredFlags": list(IGNORED_FLAGS)},
    )
    if config.log_stdout_encoder or config.log_file_encoder:
        log.info(
            "logStdoutEncoder and logFileEncoder have no effect, as in KubeRay v1.7.0: the "
            "encoders come from --log-stdout-encoder and --log-file-encoder"
        )
    if config.delete_rayjob_after_job_finishes:
        log.info(
            "deleteRayJobAfterJobFinishes has no effect, as in KubeRay v1.7.0: RayJobs are "
            "deleted after they finish when DELETE_RAYJOB_CR_AFTER_JOB_FINISHES=true"
        )


def log_plan_with_configuration(plan: LogPlan, config: Configuration | None) -> LogPlan:
    """Returns ``plan`` with the Configuration's ``logFile`` in place of ``--log-file-path``."""
    if config is None:
        return plan
    return dataclasses.replace(plan, file_path=config.log_file or None)


def apply_configuration(settings: OperatorSettings, config: Configuration) -> OperatorSettings:
    """Returns ``settings`` with every operator field of the Configuration applied.

    ``settings`` carries what still comes from flags (feature gates, the priority queue, the
    environment options); the fields the file replaces are overwritten, unset ones with
    KubeRay's defaults; the pod defaults go into the operator options.
    """
    from rayop.controllers.config import configuration as c

    config = config.with_defaults()  # idempotent: a loaded file has them already
    return dataclasses.replace(
        settings,
        metrics_addr=config.metrics_addr or c.DEFAULT_METRICS_ADDR,
        health_probe_bind_address=config.probe_addr or c.DEFAULT_PROBE_ADDR,
        enable_leader_election=config.enable_leader_election is not False,
        leader_election_namespace=config.leader_election_namespace or None,
        reconcile_concurrency=config.reconcile_concurrency or c.DEFAULT_RECONCILE_CONCURRENCY,
        watch_namespaces=parse_namespaces(config.watch_namespace or ""),
        qps=c.DEFAULT_QPS if config.qps is None else config.qps,
        burst=c.DEFAULT_BURST if config.burst is None else config.burst,
        enable_metrics=bool(config.enable_metrics),
        use_kubernetes_proxy=bool(config.use_kubernetes_proxy),
        options=dataclasses.replace(settings.options, pod_defaults=config.pod_defaults()),
    )
