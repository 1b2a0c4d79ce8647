"""The options ``rayop run`` and ``rayop up`` share, and the settings they build.

Each option is declared once here as an ``Annotated`` type (KubeRay's flag names and help) and
gathered in two option groups: :class:`OperatorFlags`, whose :meth:`~OperatorFlags.settings`
(:func:`shared_settings`) builds :class:`~rayop.controllers.assembly.operator_settings.OperatorSettings`, and
:class:`LogFlags`. The two commands cannot drift apart. Heavy imports stay inside functions:
``rayop --help`` must not load the controllers.
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NewType

import typer

from rayop.cli.flags import parse_bool
from rayop.cli.option_groups import OptionGroup

if TYPE_CHECKING:
    from rayop.controllers.assembly.operator_settings import OperatorSettings
    from rayop.controllers.config.options import OperatorOptions

log = logging.getLogger("rayop.cli")

AUTO_CONCURRENCY = 0
"""How :func:`parse_reconcile_concurrency` reports ``--reconcile-concurrency=auto``."""


def parse_reconcile_concurrency(value: str | int) -> int:
    """Parses ``--reconcile-concurrency``: a worker count >= 1, or ``auto`` (:data:`AUTO_CONCURRENCY`).

    Raises:
        typer.BadParameter: neither a positive integer nor ``auto``.
    """
    if isinstance(value, int):
        number = value
    elif value.strip().lower() == "auto":
        return AUTO_CONCURRENCY
    else:
        try:
            number = int(value)
        except ValueError:
            number = AUTO_CONCURRENCY
    if number < 1:
        raise typer.BadParameter(
            f"--reconcile-concurrency expects a worker count >= 1 or auto, got {value!r}"
        )
    return number


ConcurrencyOpt = Annotated[
    int,
    typer.Option(
        "--reconcile-concurrency",
        parser=parse_reconcile_concurrency,
        metavar="N|auto",
        help="Workers per controller; the RayCluster, RayJob and RayService controllers each get "
        "this many. It does not change Ray task concurrency. auto: each controller adapts its "
        "workers between 1 and --max-reconcile-concurrency to its queue, API latency, "
        "throttling and errors.",
    ),
]
MaxConcurrencyOpt = Annotated[
    int,
    typer.Option(
        "--max-reconcile-concurrency",
        min=1,
        help="With --reconcile-concurrency=auto: the most workers one controller may run.",
    ),
]
MetricsAddrOpt = Annotated[
    str, typer.Option("--metrics-addr", help='Address of /metrics ("0" disables it).')
]
HealthAddrOpt = Annotated[
    str,
    typer.Option(
        "--health-probe-bind-address", help='Address of /healthz and /readyz ("0" disables it).'
    ),
]
QpsOpt = Annotated[
    float, typer.Option("--qps", help="Client-side API request rate; negative disables throttling.")
]
BurstOpt = Annotated[int, typer.Option("--burst", help="Client-side API request burst.")]
PriorityQueueOpt = Annotated[
    str,
    typer.Option(
        "--use-priority-queue",
        help="Use controller-runtime's priority queue (true) or the classic rate-limited queue.",
    ),
]
PollIntervalOpt = Annotated[
    float,
    typer.Option(
        "--rayjob-dashboard-poll-interval",
        min=0.0,
        help="Experimental: seconds between two background GETs of each Running RayJob's job "
        "info (one connection per head; the RayJob is reconciled when the answer changes), e.g. "
        "3; 0 (the default): every Running pass GETs it and is requeued in 3 s, as KubeRay "
        "v1.7.0.",
    ),
]
LogLevelOpt = Annotated[str, typer.Option("--log-level", help="debug, info, warning or error.")]
LogFormatOpt = Annotated[str, typer.Option("--log-format", help="json or console.")]
FeatureGatesOpt = Annotated[
    str,
    typer.Option(
        "--feature-gates",
        help="Comma-separated Name=bool KubeRay feature gates, for example "
        "RayClusterNetworkPolicy=true; an unknown name is an error.",
    ),
]

WebhookCertDirOpt = Annotated[
    str,
    typer.Option(
        "--webhook-cert-dir",
        help="With ENABLE_WEBHOOKS=true: the directory of the webhook server's tls.crt and "
        "tls.key (controller-runtime's default); a self-signed pair is made there when it "
        "holds none.",
    ),
]
WebhookPortOpt = Annotated[
    int,
    typer.Option(
        "--webhook-port", min=0, help="With ENABLE_WEBHOOKS=true: the webhook server's port."
    ),
]

GoBool = NewType("GoBool", bool)
"""A bool option that takes Go's ``--flag=true|false`` (typer turns a plain ``bool`` into a switch)."""


def _go_bool(flag: str) -> Callable[[str | bool], GoBool]:
    """Returns the parser of a :data:`GoBool` option (the default arrives already a bool)."""
    return lambda value: GoBool(value if isinstance(value, bool) else parse_bool(value, flag=flag))


EnableMetricsOpt = Annotated[
    GoBool,
    typer.Option(
        "--enable-metrics",
        parser=_go_bool("--enable-metrics"),
        metavar="BOOL",
        help="KubeRay's control plane metrics (true/false).",
    ),
]

DecisionEventsOpt = Annotated[
    GoBool,
    typer.Option(
        "--decision-events",
        parser=_go_bool("--decision-events"),
        metavar="BOOL",
        help="Record a Normal 'Waiting' Event with the account's one line (what the pass waited "
        "for, when it looks again) each time a pass ends waiting, so kubectl describe shows it "
        "(true/false; off: the Events are KubeRay's).",
    ),
]


@dataclass(frozen=True, kw_only=True)
class OperatorFlags(OptionGroup):
    """The operator options of ``rayop run`` and ``rayop up`` (KubeRay's defaults)."""

    reconcile_concurrency: ConcurrencyOpt = 1
    max_reconcile_concurrency: MaxConcurrencyOpt = 16
    metrics_addr: MetricsAddrOpt = ":8080"
    health_probe_bind_address: HealthAddrOpt = ":8082"
    qps: QpsOpt = 100.0
    burst: BurstOpt = 200
    use_priority_queue: PriorityQueueOpt = "true"
    feature_gates: FeatureGatesOpt = ""
    enable_metrics: EnableMetricsOpt = GoBool(False)
    webhook_cert_dir: WebhookCertDirOpt = str(
        Path(tempfile.gettempdir()) / "k8s-webhook-server" / "serving-certs"
    )
    webhook_port: WebhookPortOpt = 9443
    rayjob_dashboard_poll_interval: PollIntervalOpt = 0.0
    decision_events: DecisionEventsOpt = GoBool(False)

    def settings(self) -> OperatorSettings:
        """Returns the operator settings of these flags (see :func:`shared_settings`).

        Raises:
            typer.BadParameter: a boolean or a feature gate does not parse.
        """
        from rayop.controllers.webhooks.serving import WebhookSettings

        values = dataclasses.asdict(self)
        enable_metrics = bool(values.pop("enable_metrics"))
        webhooks = WebhookSettings(
            cert_dir=Path(values.pop("webhook_cert_dir")), port=values.pop("webhook_port")
        )
        poll_interval = float(values.pop("rayjob_dashboard_poll_interval"))
        decision_events = bool(values.pop("decision_events"))
        return dataclasses.replace(
            shared_settings(**values),
            enable_metrics=enable_metrics,
            decision_events=decision_events,
            webhooks=webhooks,
            rayjob_dashboard_poll_interval=poll_interval,
        )


KUBERAY_DEFAULTS = OperatorFlags()
"""The operator options as KubeRay's flags default them (``rayop run``)."""
LOCAL_DEFAULTS = dataclasses.replace(
    KUBERAY_DEFAULTS,
    metrics_addr="127.0.0.1:28080",
    health_probe_bind_address="127.0.0.1:28082",
)
"""``rayop up``'s defaults: metrics and probes on loopback, on ports no Ray pod uses.

Ray 2.60 listens on 6379 (GCS), 8000 (Serve HTTP), 8080 (metrics export), 8265 (dashboard),
9000 (Serve gRPC), 10001 (client), 10002-19999 (workers), 44217 and 44227 (autoscaler and
dashboard metrics), 52365 (dashboard agent) and ephemeral ports; 28080 and 28082 are none of
these, nor KubeRay's 8080/8082 that ``rayop run`` keeps.
"""


@dataclass(frozen=True, kw_only=True)
class LogFlags(OptionGroup):
    """``--log-level`` and ``--log-format`` (structured JSON unless a command says otherwise)."""

    log_level: LogLevelOpt = "info"
    log_format: LogFormatOpt = "json"

    def configure(self) -> None:
        """Sets up the root logger (see :func:`configure_logging`).

        Raises:
            typer.BadParameter: an unknown level or format.
        """
        configure_logging(self.log_level, self.log_format)


JSON_LOGS = LogFlags()
"""The logging defaults of the operator's own command (``rayop run``): structured JSON."""
CONSOLE_LOGS = LogFlags(log_format="console")
"""The logging defaults of an interactive command (``rayop up``)."""


def parse_feature_gates(value: str) -> dict[str, bool]:
    """Parses ``--feature-gates=A=true,B=false``.

    Raises:
        typer.BadParameter: an entry is not ``name=bool``.
    """
    gates: dict[str, bool] = {}
    for entry in filter(None, (e.strip() for e in value.split(","))):
        name, sep, raw = entry.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"--feature-gates expects name=bool entries, got {entry!r}")
        gates[name.strip()] = parse_bool(raw, flag=f"--feature-gates {name}")
    return gates


def operator_options(feature_gates: str) -> OperatorOptions:
    """Returns KubeRay's environment options with ``--feature-gates`` applied.

    Raises:
        typer.BadParameter: an entry does not parse, or names a gate KubeRay v1.7 does not have.
    """
    from rayop.controllers.config.options import OperatorOptions

    options = OperatorOptions.from_env()
    try:
        gates = options.feature_gates.with_overrides(parse_feature_gates(feature_gates))
    except ValueError as err:
        raise typer.BadParameter(f"--feature-gates: {err}") from err
    log.info("feature gates: %s", gates.by_name())
    return dataclasses.replace(options, feature_gates=gates)


def configure_logging(level: str, fmt: str) -> None:
    """Sets up the root logger (structured JSON by default).

    Raises:
        typer.BadParameter: an unknown level or format.
    """
    from rayop.runtime.process.logsetup import configure_logging as configure

    if fmt not in ("json", "console"):
        raise typer.BadParameter(f"--log-format expects json or console, got {fmt!r}")
    try:
        configure(level, "json" if fmt == "json" else "console")
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc


def shared_settings(
    *,
    reconcile_concurrency: int,
    max_reconcile_concurrency: int = 16,
    use_priority_queue: str,
    metrics_addr: str,
    health_probe_bind_address: str,
    qps: float,
    burst: int,
    feature_gates: str,
) -> OperatorSettings:
    """Returns the operator settings from the shared options (leader election on, all namespaces).

    Raises:
        typer.BadParameter: a boolean or a feature gate does not parse.
    """
    from rayop.controllers.assembly.operator_settings import OperatorSettings

    adaptive = reconcile_concurrency == AUTO_CONCURRENCY  # parsed by the option already
    return OperatorSettings(
        reconcile_concurrency=1 if adaptive else reconcile_concurrency,
        adaptive_concurrency=adaptive,
        max_reconcile_concurrency=max_reconcile_concurrency,
        use_priority_queue=parse_bool(use_priority_queue, flag="--use-priority-queue"),
        metrics_addr=metrics_addr,
        health_probe_bind_address=health_probe_bind_address,
        qps=qps,
        burst=burst,
        options=operator_options(feature_gates),
    )
