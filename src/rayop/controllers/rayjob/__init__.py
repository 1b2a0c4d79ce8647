"""The RayJob controller: KubeRay v1.7's RayJob state machine (kuberay-v1.md §5).

A RayJob runs one Ray job on a RayCluster the controller creates (or on an existing one named by
``clusterSelector``), submits it in one of four modes, follows it through the dashboard, retries
it on a new cluster up to ``backoffLimit`` times and cleans up after it.

Modules:

- ``setup``: :func:`~rayop.controllers.rayjob.setup.setup_rayjob_controller`, the wiring.
- ``reconciler``: one pass: deletion/finalizer, validation, the phase dispatch, the status write.
- ``phases``: one async function per ``JobDeploymentStatus`` (the dispatch table).
- ``checks``: pure transition checks (suspend, deadlines, grace periods, backoff).
- ``status``: pure status helpers (job info mapping, reset, when to write).
- ``cluster``: names and the RayCluster / head Service built for a RayJob.
- ``submitter``: the K8sJobMode submitter Job, the SidecarMode container, the HTTPMode request.
- ``deletion``: what to delete once the job finished (rules, legacy policies, TTL).
- ``actions``: the API side effects (create/delete cluster and Job, head service, events).
- ``context``: per-controller dependencies and the per-pass context.
"""
