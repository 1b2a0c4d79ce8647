"""Fake nodes: the scheduler that places pods on them, the kubelet that runs the pods, and the
pod statuses it reports at each stage (``pod_status``, pure functions).

Modules and subpackages:

- ``container_exec``: the seam between a kubelet that runs real processes and
  ``pods/exec``/``pods/portforward``.
- ``container_logs``: the simulated kubelet's container log files: what ``pods/log`` reads.
- ``container_output``: what the simulated kubelet writes into a container's log: its command, Ray's
  start, its exit.
- ``kubelet``: the simulated scheduler and kubelet: places every pod on a fake node and runs it.
- ``kubelet_config``: the simulated kubelet's settings: timings, failure rates, and the nodes it
  runs.
- ``node_manifests``: Node manifests (``--node-file``) as the simulated kubelet registers them.
- ``node_presets``: node pool presets (``--node-pool``): GKE GPU nodes and TPU slices with GKE's
  labels, taints and machine sizes.
- ``node_specs``: what the kubelet makes its Node objects from: one node's spec, a pool of like
  nodes.
- ``pod_scheduling``: schedules one pod as kube-scheduler would, retrying until it fits; used by the
  kubelet.
- ``pod_status``: pure functions that build the pod status a kubelet reports at each stage of a
  pod's life.
- ``processes``: the process runtime of ``--real-ray``: each pod's containers run as processes on
  this machine.
- ``scheduler``: the simulated scheduler's placement: fake nodes, node choice by kube-scheduler's
  filters, pod IPs.
"""
