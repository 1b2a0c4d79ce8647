"""Simulated Ray heads: the dashboard, agent and Serve HTTP surfaces of every ready head pod,
their Jobs and Serve state, and KubeRay's K8sJobMode submitter pods.

Modules and subpackages:

- ``clock``: the simulated Ray dashboard's clock seam: wall time for timestamps and an async sleep.
- ``head_ports``: a simulated head's ports as TCP listeners: what ``pods/portforward`` dials on
  the plane.
- ``head``: one simulated Ray head's HTTP surface: the dashboard (8265), the agent (52365), Serve
  (8000).
- ``http_proxy``: an HTTP forward proxy into the embedded plane's network, for processes outside it.
- ``job_cli``: what ``ray job submit`` needs of a dashboard beyond the Jobs REST API, simulated.
- ``jobs``: the simulated Ray Jobs API state: submissions, their timeline, details, logs, stop and
  delete.
- ``registry``: runs a simulated Ray dashboard for every ready head pod and routes HTTP to it.
- ``serve``: the simulated Ray Serve state behind /api/serve/applications/ and the Serve proxy on
  8000.
- ``service_dns``: cluster DNS for the operator on the embedded control plane: service URLs to
  simulated heads.
- ``simulated_exec``: what ``pods/exec`` and ``pods/portforward`` reach in a simulated pod.
- ``submitter``: simulates KubeRay's K8sJobMode submitter pods (``ray job submit ...``) against the
  sim dashboards.
"""
