"""The client of a Ray head's dashboard HTTP API (jobs, Serve applications), its transport,
errors and models.

Modules and subpackages:

- ``client``: an asyncio client for the Ray dashboard endpoints KubeRay uses (jobs, Serve, health).
- ``errors``: the errors of the Ray dashboard client; no aiohttp or kube exception escapes it.
- ``job_poller``: background polling of Ray jobs' status: one task and one dashboard connection per
  polled key.
- ``job_submissions``: HTTPMode job submissions outside the pass: at most one background POST per
  key.
- ``models``: typed answers and requests of the Ray dashboard API, with the JSON names KubeRay
  reads.
- ``transport``: how the Ray dashboard client reaches a head: directly, or through the services
  proxy.
"""
