"""Plots workers and queue depth over time: the adaptive run's limit beside the fixed runs.

Each run's 0.5 s samples are ``(t, active workers, max workers, queue depth)``; for an adaptive
run ``max workers`` is its current limit (``controller_runtime_max_concurrent_reconciles``
follows it). The top panel draws the limit of every run (a fixed run is a flat line) and the
adaptive runs' busy workers; the bottom one the queue depth of every run.
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

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), dpi=100, sharex=True)
    for r in results:
        if not r.samples:
            continue
        ts = [s[0] for s in r.samples]
        name = r.label + (f" #{r.repeat + 1}" if r.repeat else "")
        style = "-" if r.adaptive else ":"
        top.step(ts, [s[2] for s in r.samples], style, where="post", label=f"limit c={name}")
        if r.adaptive:
            top.plot(ts, [s[1] for s in r.samples], alpha=0.5, label=f"busy c={name}")
        bottom.plot(ts, [s[3] for s in r.samples], style, label=f"c={name}")
    top.set_ylabel("workers")
    top.set_title("Workers and queue depth over time (the sampled controller)")
    bottom.set_ylabel("queue depth")
    bottom.set_xlabel("seconds since the measured phase began")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()
