"""Plots workers, queue depth and API latency over time: the adaptive run beside the fixed runs.

Each run's 0.5 s samples are ``(t, active workers, max workers, queue depth)``; for an adaptive
run ``max workers`` is its current limit (``controller_runtime_max_concurrent_reconciles``
follows it). Its ``api_latency_samples`` are ``(t, mean request latency excluding client
throttling)`` over each 0.5 s. The top panel draws the limit of every run (a fixed run is a
flat line) and the adaptive runs' busy workers, the middle one the queue depth of every run,
the bottom one the API latency of every run; a dashed vertical line marks when the API server
was slowed, if it was. With ``--repeat``, every adaptive run is drawn and the fixed values' first
runs only (their repeats differ by the noise), each panel's legend beside it.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

from rayop.bench.results import ConcurrencyResult


def workers_chart(results: Sequence[ConcurrencyResult]) -> str:
    """Returns the chart as a base64 PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, middle, bottom) = plt.subplots(3, 1, figsize=(10, 7), dpi=100, sharex=True)
    for r in results:
        if not r.samples or (r.repeat and not r.adaptive):
            continue
        ts = [s[0] for s in r.samples]
        name = r.label + (f" #{r.repeat + 1}" if r.repeat else "")
        style = "-" if r.adaptive else ":"
        top.step(ts, [s[2] for s in r.samples], style, where="post", label=f"limit c={name}")
        if r.adaptive:
            top.plot(ts, [s[1] for s in r.samples], alpha=0.5, label=f"busy c={name}")
        middle.plot(ts, [s[3] for s in r.samples], style, label=f"c={name}")
        if r.api_latency_samples:
            bottom.plot(
                [s[0] for s in r.api_latency_samples],
                [s[1] * 1000 for s in r.api_latency_samples],
                style,
                label=f"c={name}",
            )
    for at in sorted({r.api_slowdown_at for r in results if r.api_slowdown_at is not None}):
        for ax in (top, middle, bottom):
            ax.axvline(at, color="grey", ls="--", lw=1)
    top.set_ylabel("workers")
    top.set_title("Workers, queue depth and API latency (the sampled controller)")
    middle.set_ylabel("queue depth")
    bottom.set_ylabel("API latency excl.\nthrottling (ms)")
    bottom.set_xlabel("seconds since the measured phase began")
    for ax in (top, middle, bottom):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()
