"""The RayJob controller: KubeRay v1.7's RayJob state machine
(``ray-operator/controllers/ray/rayjob_controller.go``).

A RayJob runs one Ray job on a RayCluster the controller creates (or on an existing one named by
``clusterSelector``), submits it in one of four modes, follows it through the dashboard, retries
it on a new cluster up to ``backoffLimit`` times and cleans up after it.

A pass parses the RayJob once (its spec is read from the :class:`~rayop.api.rayjob.RayJob`
model; the wire dict is kept only for what is written back or copied verbatim), works from the
injected clock, never writes on top of a cached copy older than its own last write, and is a
short list of :mod:`rayop.runtime.steps` steps ending in the phase table.

Modules:

- ``blueprint``: the ``rayjob`` controller described once (its watches and dependencies).
- ``reconciler``: one pass: own-writes wait, managedBy, deletion/finalizer, validation, the
  phase dispatch, the status write.
- ``phases``: one async step per ``JobDeploymentStatus`` (the dispatch table).
- ``checks``: pure transition checks (suspend, deadlines, grace periods, timeouts).
- ``status``: pure status helpers (init, job info mapping, backoff, reset, when to write).
- ``cluster``: names and the RayCluster / head Service built for a RayJob.
- ``submitter``: the K8sJobMode submitter Job, the SidecarMode container, the HTTPMode request.
- ``deletion``: what to delete once the job finished (rules, legacy policies, TTL).
- ``actions``: the API side effects (finalizer, status, cluster, Job, head service, events).
- ``context``: per-controller dependencies (and the protocols they satisfy) and the per-pass
  context.
"""
