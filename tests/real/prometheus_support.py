"""Prometheus and promtool for the real tier, as scripts/prometheus-build leaves them."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from rayop.advise.evidence import Scrape

VERSION = "v0.316.0"
JOB, INSTANCE = "rayop", "operator:8080"


def prometheus_bin(name: str) -> Path:
    """Returns the built ``prometheus`` or ``promtool``; fails the test, naming the build, if absent."""
    cache = os.environ.get("RAYOP_CACHE_DIR") or os.path.expanduser("~/.cache/rayop")
    path = Path(cache) / "prometheus" / VERSION / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{name} {VERSION} is not built at {path}: run scripts/prometheus-build")
    return path


def input_series(window: list[Scrape]) -> list[dict[str, str]]:
    """Returns promtool ``input_series`` holding every sample of ``window`` (one value a scrape).

    Every series gets the ``job`` and ``instance`` labels a Prometheus scrape would add.
    """
    keys = sorted(
        {k for s in window for k in s.snapshot.samples if not k[0].endswith("_created")},
        key=str,
    )
    out = []
    for name, labels in keys:
        all_labels = {**dict(labels), "job": JOB, "instance": INSTANCE}
        text = ",".join(f'{k}="{v}"' for k, v in sorted(all_labels.items()))
        values = " ".join(
            f"{s.snapshot.samples[(name, labels)]:g}"
            if (name, labels) in s.snapshot.samples
            else "_"
            for s in window
        )
        out.append({"series": f"{name}{{{text}}}", "values": values})
    return out


def free_port() -> int:
    """A loopback port free at the time of the call."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def running_prometheus(targets: dict[str, str], tmp: Path) -> Iterator[str]:
    """Runs Prometheus scraping each ``job -> host:port`` every second; yields its URL."""
    port = free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": [target]}]}
            for job, target in targets.items()
        ],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    with (tmp / "prometheus.log").open("w") as log:
        proc = subprocess.Popen(
            [
                str(prometheus_bin("prometheus")),
                f"--config.file={tmp / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(timeout=30)
