"""The process runtime of ``--real-ray``: each pod's containers run as processes on this machine.

Modules and subpackages:

- ``container_process``: one container's process tree: start it, copy its output to the log, stop
  all of it.
- ``container_state``: the container statuses and pod phase a kubelet reports for processes it
  really runs.
- ``image_entrypoint``: the command a container runs when its spec leaves it to the image, for the
  images ``--real-ray`` knows.
- ``image_version``: the Ray version a container image names, and the Warning ``--real-ray`` gives
  when it differs.
- ``loopback``: loopback pod IPs: each pod of ``--real-ray`` gets its own 127.x.y.z address.
- ``mount_launcher``: starts one container's command in a private mount namespace with the pod's
  mounts in place (a stdlib-only script).
- ``mount_namespace``: a container's private mount namespace: the plan of its mounts and the
  command that applies it.
- ``pod_env``: a container's environment as the kubelet resolves it: env, envFrom, the downward API,
  $(VAR).
- ``pod_runner``: drives one pod of ``--real-ray`` from its volumes to its end, with its processes.
- ``probes``: runs a container's probes for real: ``exec`` in the container,
  ``httpGet``/``tcpSocket`` at the pod's address, with the kubelet's timing fields and defaults.
- ``ray_install``: finds the Ray installation ``--real-ray`` runs: its ``bin`` directory and its
  version.
- ``rewrite``: rewrites what a container's command names inside the container into what exists here.
- ``service_account``: a pod's service account, as the kubelet gives it: the token files and
  ``KUBERNETES_SERVICE_*``.
- ``runtime``: the process runtime the kubelet uses under ``--real-ray`` (and the plane's Service
  routing).
- ``volumes``: materializes a pod's volumes under its directory on this machine, as a kubelet mounts
  them.
"""
