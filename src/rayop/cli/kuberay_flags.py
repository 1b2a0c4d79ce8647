"""The rest of KubeRay v1.7.0's operator flags, so ``rayop run`` takes its chart's args unchanged.

Two option groups of ``rayop run``:

- :class:`KubeRayLogFlags`: ``--log-stdout-encoder``, ``--log-file-encoder``, ``--log-file-path``
  and the controller-runtime zap flags (``--zap-log-level``, ``--zap-encoder``, ``--zap-devel``,
  ``--zap-stacktrace-level``, ``--zap-time-encoding``), resolved against rayop's ``--log-level``
  and ``--log-format`` into one :class:`~rayop.cli.log_plan.LogPlan`.
- :class:`KubeRayFeatureFlags`: ``--forced-cluster-upgrade``, ``--use-kubernetes-proxy``,
  ``--batch-scheduler``, ``--enable-batch-scheduler`` and ``--config`` (KubeRay's Configuration
  file, :mod:`rayop.cli.kuberay_config`); :meth:`check` makes KubeRay's batch scheduler checks
  (exit status 2 and KubeRay's message when they fail).

Every value is validated as KubeRay (Go's ``flag`` package and controller-runtime's zap flags)
validates it. A flag KubeRay ignores is accepted and ignored in the same way; docs/compatibility.md
says what each one does in rayop.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Final

import typer

from rayop.cli.flags import parse_bool
from rayop.cli.log_plan import LogPlan
from rayop.cli.option_groups import OptionGroup

if TYPE_CHECKING:
    from rayop.controllers.config.configuration import Configuration

__all__ = [
    "ZAP_LEVELS",
    "ZAP_STACKTRACE_LEVELS",
    "ZAP_TIME_ENCODINGS",
    "KubeRayFeatureFlags",
    "KubeRayLogFlags",
]

log = logging.getLogger("rayop.cli")

ENCODERS: Final = ("json", "console")
"""KubeRay's ``--log-stdout-encoder`` / ``--log-file-encoder`` values (empty means json)."""

ZAP_LEVELS: Final[dict[str, int]] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "error": logging.ERROR,
    "panic": logging.CRITICAL,
}
"""controller-runtime's ``--zap-log-level`` names (a positive integer, a debug verbosity, too)."""

ZAP_STACKTRACE_LEVELS: Final[dict[str, int]] = {
    "info": logging.INFO,
    "error": logging.ERROR,
    "panic": logging.CRITICAL,
}
"""controller-runtime's ``--zap-stacktrace-level`` names."""

ZAP_TIME_ENCODINGS: Final = ("rfc3339nano", "rfc3339", "iso8601", "millis", "nanos", "epoch")
"""controller-runtime's ``--zap-time-encoding`` names."""

StdoutEncoderOpt = Annotated[
    str | None,
    typer.Option(
        "--log-stdout-encoder",
        help="KubeRay's encoder for stdout logs: json or console (overrides --log-format).",
    ),
]
FileEncoderOpt = Annotated[
    str, typer.Option("--log-file-encoder", help="Encoder of --log-file-path: json or console.")
]
FilePathOpt = Annotated[
    str,
    typer.Option(
        "--log-file-path",
        help="Also write info-and-above logs to this file, rotated at 500 MB, 10 backups kept.",
    ),
]
ZapLevelOpt = Annotated[
    str | None,
    typer.Option(
        "--zap-log-level",
        help="debug, info, error, panic or a positive debug verbosity (overrides --log-level).",
    ),
]
ZapEncoderOpt = Annotated[
    str | None,
    typer.Option(
        "--zap-encoder",
        help="json or console; validated and, as in KubeRay, superseded by --log-stdout-encoder.",
    ),
]
ZapDevelOpt = Annotated[
    str,
    typer.Option(
        "--zap-devel",
        help="Development defaults (true/false): debug level, stack traces from warnings on.",
    ),
]
ZapStacktraceOpt = Annotated[
    str | None,
    typer.Option(
        "--zap-stacktrace-level",
        help="info, error or panic: records at or above it carry a stacktrace.",
    ),
]
ZapTimeOpt = Annotated[
    str | None,
    typer.Option(
        "--zap-time-encoding",
        help="Validated; as in KubeRay (whose encoders fix ISO 8601 times), it has no effect.",
    ),
]
ForcedUpgradeOpt = Annotated[
    str,
    typer.Option(
        "--forced-cluster-upgrade", help="Deprecated in KubeRay and without effect (true/false)."
    ),
]
KubernetesProxyOpt = Annotated[
    str | None,
    typer.Option(
        "--use-kubernetes-proxy",
        help="Reach Ray dashboards through the API server's services proxy (true) or directly "
        "at the head service's cluster DNS name (false, the default).",
    ),
]
BatchSchedulerOpt = Annotated[
    str,
    typer.Option(
        "--batch-scheduler", help="volcano, yunikorn, scheduler-plugins or kai-scheduler."
    ),
]
EnableBatchSchedulerOpt = Annotated[
    str,
    typer.Option(
        "--enable-batch-scheduler", help="Deprecated KubeRay flag for volcano (true/false)."
    ),
]
ConfigOpt = Annotated[
    str,
    typer.Option(
        "--config",
        help="KubeRay's Configuration file (config.ray.io/v1alpha1); the flags it has fields "
        "for are then ignored, as in KubeRay.",
    ),
]


def _encoder(value: str, *, flag: str) -> str:
    encoder = value or "json"
    if encoder not in ENCODERS:
        raise typer.BadParameter(f"{flag}: invalid encoder {value!r} (must be 'json' or 'console')")
    return encoder


def _zap_level(value: str) -> str:
    lowered = value.lower()
    if lowered in ZAP_LEVELS:
        return logging.getLevelName(ZAP_LEVELS[lowered]).lower()
    if value.isdigit() and int(value) > 0:
        return "debug"  # a V-level above 0 is more verbose than info: debug in rayop
    raise typer.BadParameter(f"--zap-log-level: invalid log level {value!r}")


@dataclass(frozen=True, kw_only=True)
class KubeRayLogFlags(OptionGroup):
    """KubeRay's logging flags (its defaults); :meth:`plan` resolves them with rayop's."""

    log_stdout_encoder: StdoutEncoderOpt = None
    log_file_encoder: FileEncoderOpt = "json"
    log_file_path: FilePathOpt = ""
    zap_log_level: ZapLevelOpt = None
    zap_encoder: ZapEncoderOpt = None
    zap_devel: ZapDevelOpt = "false"
    zap_stacktrace_level: ZapStacktraceOpt = None
    zap_time_encoding: ZapTimeOpt = None

    def plan(self, *, log_level: str, log_format: str) -> LogPlan:
        """Returns the logging these flags ask for, given rayop's ``--log-level``/``--log-format``.

        A KubeRay flag that is given wins over rayop's: ``--zap-log-level`` (else ``debug`` under
        ``--zap-devel``) over ``--log-level``, ``--log-stdout-encoder`` over ``--log-format``.

        Raises:
            typer.BadParameter: a value KubeRay would refuse.
        """
        devel = parse_bool(self.zap_devel, flag="--zap-devel")
        if self.zap_encoder is not None and self.zap_encoder.lower() not in ENCODERS:
            raise typer.BadParameter(f"--zap-encoder: invalid encoder value {self.zap_encoder!r}")
        if (
            self.zap_time_encoding is not None
            and self.zap_time_encoding.lower() not in ZAP_TIME_ENCODINGS
        ):
            raise typer.BadParameter(
                f"--zap-time-encoding: invalid time-encoding value {self.zap_time_encoding!r}"
            )
        level = log_level
        if self.zap_log_level is not None:
            level = _zap_level(self.zap_log_level)
        elif devel:
            level = "debug"
        stacktrace: int | None = logging.WARNING if devel else None
        if self.zap_stacktrace_level is not None:
            try:
                stacktrace = ZAP_STACKTRACE_LEVELS[self.zap_stacktrace_level.lower()]
            except KeyError:
                given = self.zap_stacktrace_level
                raise typer.BadParameter(
                    f"--zap-stacktrace-level: invalid stacktrace level {given!r}"
                ) from None
        stdout = log_format
        if self.log_stdout_encoder is not None:
            stdout = _encoder(self.log_stdout_encoder, flag="--log-stdout-encoder")
        return LogPlan(
            level=level,
            stdout_format=stdout,
            file_path=self.log_file_path or None,
            file_format=_encoder(self.log_file_encoder, flag="--log-file-encoder"),
            stacktrace_level=stacktrace,
        )


@dataclass(frozen=True, kw_only=True)
class KubeRayFeatureFlags(OptionGroup):
    """KubeRay's remaining operator flags (its defaults)."""

    forced_cluster_upgrade: ForcedUpgradeOpt = "false"
    use_kubernetes_proxy: KubernetesProxyOpt = None
    batch_scheduler: BatchSchedulerOpt = ""
    enable_batch_scheduler: EnableBatchSchedulerOpt = "false"
    config: ConfigOpt = ""

    def configuration(self) -> Configuration | None:
        """Returns the ``--config`` file's Configuration, validated; None without ``--config``.

        Raises:
            typer.BadParameter: the file is not a valid Configuration (file, line and field).
        """
        if not self.config:
            return None
        from rayop.cli.kuberay_config import load_config_file

        return load_config_file(self.config)

    def check(self, config: Configuration | None = None, *, kubernetes_was: bool = False) -> str:
        """Checks the batch scheduler choice as KubeRay does; logs what KubeRay logs.

        Args:
            config: The ``--config`` file's Configuration: its batch scheduler fields replace
                the flags, as in KubeRay.
            kubernetes_was: The ``KubernetesWAS`` feature gate (exclusive with the flags).

        Returns:
            The batch scheduler to run with ("" for none; ``volcano`` for the deprecated flag).

        Raises:
            typer.BadParameter: KubeRay's batch scheduler checks fail (both flags, the gate with
                a flag, an unknown name: the message lists the valid ones); a boolean does not
                parse.
        """
        from rayop.controllers.batchscheduler.registry import (
            BatchSchedulerConfigError,
            check_batch_scheduler_config,
        )

        if config is not None:
            enable = bool(config.enable_batch_scheduler)
            scheduler = config.batch_scheduler or ""
        else:
            enable = parse_bool(self.enable_batch_scheduler, flag="--enable-batch-scheduler")
            scheduler = self.batch_scheduler
        try:
            chosen = check_batch_scheduler_config(
                enable=enable, scheduler=scheduler, kubernetes_was=kubernetes_was
            )
        except BatchSchedulerConfigError as exc:
            raise typer.BadParameter(f"batch scheduler configs validation failed: {exc}") from exc
        if parse_bool(self.forced_cluster_upgrade, flag="--forced-cluster-upgrade"):
            log.info(
                "Deprecated feature flag forced-cluster-upgrade is enabled, which has no effect."
            )
        return chosen

    def kubernetes_proxy(self) -> bool:
        """Returns whether dashboards are reached through the services proxy.

        As in KubeRay, unset means a direct connection to the head service.

        Raises:
            typer.BadParameter: the value is not a boolean.
        """
        if self.use_kubernetes_proxy is None:
            return False
        return parse_bool(self.use_kubernetes_proxy, flag="--use-kubernetes-proxy")


KUBERAY_LOG_DEFAULTS = KubeRayLogFlags()
"""KubeRay's logging flags at their defaults."""
KUBERAY_FEATURE_DEFAULTS = KubeRayFeatureFlags()
"""KubeRay's remaining flags at their defaults."""
