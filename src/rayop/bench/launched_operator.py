"""An operator binary the bench starts itself for every run (``rayop bench --operator-command``).

``--external-operator`` observes an operator that is already running, so it measures one
``--reconcile-concurrency`` value on one cluster. To compare values for another operator (KubeRay,
say) on the bench's own fresh planes, with their fault injection, the bench must start that
operator per run: :class:`LaunchedOperator` formats the command template with the run's values,
starts it with ``KUBECONFIG`` naming the run's plane, waits until its RayCluster controller runs
its workers, reads its /metrics like :class:`~rayop.bench.environment.ExternalOperator`, and
stops it (SIGTERM, then SIGKILL) when the run ends.

Template placeholders: ``{kubeconfig}``, ``{concurrency}``, ``{metrics_port}``, ``{qps}``,
``{burst}``. For KubeRay v1.7.0::

    ray-operator --kubeconfig={kubeconfig} --reconcile-concurrency={concurrency}
        --metrics-addr=127.0.0.1:{metrics_port} --health-probe-bind-address=0
        --enable-leader-election=false --qps={qps} --burst={burst}
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shlex
import socket
import string
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rayop.advise.exposition import Snapshot
from rayop.bench.child_lifetime import end_with_parent
from rayop.bench.environment import ExternalOperator

__all__ = ["PLACEHOLDERS", "LaunchedOperator", "OperatorCommand", "controller_started"]

PLACEHOLDERS = ("kubeconfig", "concurrency", "metrics_port", "qps", "burst")

START_TIMEOUT = 90.0
"""Seconds the launched operator has to report its RayCluster controller and start its workers."""

STOP_TIMEOUT = 20.0
"""Seconds between SIGTERM and SIGKILL when the run ends."""


@dataclass(frozen=True)
class OperatorCommand:
    """A command template (``--operator-command``), checked when it is given.

    Raises (from :meth:`parse`):
        ValueError: the template is empty, does not split as a shell line, names a placeholder
            other than :data:`PLACEHOLDERS`, or lacks ``{metrics_port}`` (the bench reads
            the operator through it) or ``{concurrency}`` (the value under test).
    """

    template: str

    @classmethod
    def parse(cls, template: str) -> OperatorCommand:
        """Checks ``template``; see the class for what it refuses."""
        try:
            words = shlex.split(template)
        except ValueError as exc:
            raise ValueError(f"--operator-command does not split as a shell line: {exc}") from exc
        if not words:
            raise ValueError("--operator-command is empty")
        named = {
            field for _, field, _, _ in string.Formatter().parse(template) if field is not None
        }
        unknown = sorted(named - set(PLACEHOLDERS))
        if unknown:
            raise ValueError(
                f"--operator-command names unknown placeholder(s) {', '.join(unknown)}; "
                f"known: {', '.join(PLACEHOLDERS)}"
            )
        for needed in ("metrics_port", "concurrency"):
            if needed not in named:
                raise ValueError(f"--operator-command must contain {{{needed}}}")
        return cls(template)

    def argv(
        self, *, kubeconfig: Path, concurrency: int, metrics_port: int, qps: float, burst: int
    ) -> list[str]:
        """Returns the command line for one run."""
        values = {
            "kubeconfig": str(kubeconfig),
            "concurrency": str(concurrency),
            "metrics_port": str(metrics_port),
            "qps": f"{qps:g}",
            "burst": str(burst),
        }
        return [word.format(**values) for word in shlex.split(self.template)]


def controller_started(log: Path, controller: str = "raycluster") -> bool:
    """Whether ``log`` holds controller-runtime's ``Starting workers`` line for the controller
    (KubeRay and rayop both log it once their caches synced)."""
    if not log.exists():
        return False
    needle = controller.encode()
    with log.open("rb") as lines:
        return any(b"Starting workers" in line and needle in line.lower() for line in lines)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _spawn(argv: list[str], kubeconfig: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """Starts the operator, its output to ``log_path``; it ends when this process ends."""
    with log_path.open("wb") as log:
        return subprocess.Popen(
            argv,
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=end_with_parent(),
        )


class LaunchedOperator:
    """One run's operator process, started from an :class:`OperatorCommand`.

    ``kubeconfig(directory)`` returns the run's plane's kubeconfig file (written into the
    operator's temporary directory if the plane has none on disk).

    The bench waits for the RayCluster controller to start its workers before it creates
    anything: clusters that reach an operator in its caches' first list are filed at low priority
    by controller-runtime's priority queue (and rayop's), a start no user sees.
    """

    in_process = False

    def __init__(self, command: OperatorCommand, kubeconfig: Callable[[Path], Path], *,
                 concurrency: int, qps: float, burst: int,
                 start_timeout: float = START_TIMEOUT) -> None:
        self._argv = functools.partial(command.argv, concurrency=concurrency, qps=qps, burst=burst)
        self._kubeconfig_file = kubeconfig
        self._start_timeout = start_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._observer: ExternalOperator | None = None
        self.controller = "raycluster"
        self.pid: int | None = None
        self.log_path: Path | None = None

    async def __aenter__(self) -> LaunchedOperator:
        self._tmp = tempfile.TemporaryDirectory(prefix="rayop-bench-operator-")
        port = _free_port()
        kubeconfig = self._kubeconfig_file(Path(self._tmp.name))
        argv = self._argv(kubeconfig=kubeconfig, metrics_port=port)
        self.log_path = Path(self._tmp.name) / "operator.log"
        try:
            self._proc = await asyncio.to_thread(_spawn, argv, kubeconfig, self.log_path)
        except OSError as exc:
            self._cleanup()
            raise RuntimeError(f"--operator-command could not start {argv[0]}: {exc}") from exc
        self.pid = self._proc.pid
        try:
            await self._wait_ready(f"http://127.0.0.1:{port}/metrics")
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def _wait_ready(self, url: str) -> None:
        assert self._proc is not None and self.log_path is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._start_timeout
        self._observer = ExternalOperator(url, pid=self.pid, ready_timeout=self._start_timeout)
        observing = asyncio.create_task(self._observer.__aenter__(), name="bench:operator-up")
        while True:
            if self._proc.poll() is not None:
                observing.cancel()
                with contextlib.suppress(BaseException):
                    await observing
                raise RuntimeError(
                    f"the launched operator exited with code {self._proc.returncode} before it "
                    f"was ready; its last lines:\n{self._tail()}"
                )
            if observing.done() and controller_started(self.log_path):
                observing.result()  # raises if the metrics never showed the controller
                self.controller = self._observer.controller
                return
            if loop.time() > deadline:
                observing.cancel()
                with contextlib.suppress(BaseException):
                    await observing
                raise RuntimeError(
                    f"the launched operator did not start its RayCluster workers in "
                    f"{self._start_timeout:g} s; its last lines:\n{self._tail()}"
                )
            await asyncio.sleep(0.3)

    def _tail(self, lines: int = 5) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "(no output)"
        text = self.log_path.read_text(errors="replace").strip().splitlines()
        return "\n".join(text[-lines:]) or "(no output)"

    async def __aexit__(self, *exc: object) -> None:
        if self._observer is not None:
            await self._observer.__aexit__()
            self._observer = None
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.terminate()
                try:
                    await asyncio.to_thread(self._proc.wait, STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    await asyncio.to_thread(self._proc.wait)
            self._proc = None
        self._cleanup()

    def _cleanup(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    @property
    def exited(self) -> int | None:
        """The operator's exit code if it has ended during the run, else None."""
        return self._proc.poll() if self._proc is not None else None

    async def snapshot(self) -> Snapshot:
        """Scrapes the operator's /metrics.

        Raises:
            RuntimeError: the operator has exited (its last lines are in the message).
            MetricsUnavailable: it did not answer in time.
        """
        if self._proc is not None and self._proc.poll() is not None:
            raise RuntimeError(
                f"the launched operator exited with code {self._proc.returncode} during the "
                f"run; its last lines:\n{self._tail()}"
            )
        assert self._observer is not None
        return await self._observer.snapshot()
