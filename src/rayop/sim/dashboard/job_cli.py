"""What ``ray job submit`` needs of a dashboard beyond the Jobs REST API, simulated.

Ray 2.60's CLI (through ``JobSubmissionClient``) and KubeRay's ``kubectl ray job submit`` call
three more of the dashboard's endpoints: ``GET /`` (the plugin probes the dashboard's page until
it answers 2xx before submitting), the runtime-environment package store
(``GET``/``PUT /api/packages/<protocol>/<name>``: a ``--working-dir`` is zipped and uploaded
once, by its content hash, then named in the submission's ``runtime_env``), and
``/api/jobs/<id>/logs/tail``, a WebSocket on which the driver's log arrives as text messages
until the job ends. :class:`JobCliEndpoints` answers them for one simulated head: the page is a
plain one saying what it is, packages are kept in memory (lost with the head, as in a real GCS),
and the tail sends the simulated driver log as it grows
(:meth:`~rayop.sim.dashboard.jobs.JobTable.logs`), closing once the job is terminal.
"""

from __future__ import annotations

from aiohttp import web

from rayop.sim.dashboard.clock import SimClock
from rayop.sim.dashboard.jobs import TERMINAL, JobTable

__all__ = ["TAIL_POLL_SECONDS", "JobCliEndpoints"]

TAIL_POLL_SECONDS = 0.2
"""How often a log tail looks for new driver output."""

_PAGE = (
    "<!DOCTYPE html><html><head><title>Ray Dashboard</title></head><body>"
    "<p>Simulated Ray dashboard of head pod {pod} (rayop's embedded control plane): the Jobs, "
    "Serve and health APIs answer; this page has no UI.</p></body></html>"
)


class JobCliEndpoints:
    """The page, package store and log tail of one simulated dashboard.

    Args:
        jobs: The head's jobs.
        clock: Its clock (the tail sleeps on it).
        pod_name: The head pod (named on the page).
    """

    def __init__(self, jobs: JobTable, clock: SimClock, pod_name: str) -> None:
        self._jobs = jobs
        self._clock = clock
        self._pod_name = pod_name
        self.packages: dict[str, bytes] = {}
        """Uploaded runtime-environment packages by URI (``<protocol>://<name>``)."""

    def page(self) -> web.Response:
        """``GET /``: the dashboard's page."""
        return web.Response(
            status=200, text=_PAGE.format(pod=self._pod_name), content_type="text/html"
        )

    async def package(
        self, method: str, protocol: str, name: str, request: web.Request
    ) -> web.Response:
        """``GET`` (exists?) or ``PUT`` (upload) ``/api/packages/<protocol>/<name>``."""
        uri = f"{protocol}://{name}"
        if method == "GET":
            if uri in self.packages:
                return web.Response(status=200)
            return web.Response(status=404, text=f"Package {uri} does not exist")
        if method == "PUT":
            self.packages[uri] = await request.read()
            return web.Response(status=200)
        return web.Response(status=405, text="405: Method Not Allowed")

    async def tail_logs(self, job_id: str, request: web.Request) -> web.StreamResponse:
        """``/api/jobs/<id>/logs/tail``: the driver log over a WebSocket until the job ends.

        Raises:
            DashboardHttpError: 404 when the job does not exist.
        """
        job = self._jobs.require(job_id)
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        sent = 0
        while not ws.closed:
            text = self._jobs.logs(job)
            if len(text) > sent:
                await ws.send_str(text[sent:])
                sent = len(text)
            if job.status_at(self._clock.time()) in TERMINAL and len(self._jobs.logs(job)) == sent:
                break
            await self._clock.sleep(TAIL_POLL_SECONDS)
        await ws.close()
        return ws
