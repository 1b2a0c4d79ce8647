"""The process runtime of ``--real-ray``: each pod's containers run as processes on this machine.

``ray_install`` finds the local Ray, ``loopback`` gives each pod its own 127.x.y.z address (and
builds the small ``LD_PRELOAD`` library that binds a pod's sockets to it), ``pod_env`` resolves
a container's environment, ``volumes`` materializes its volumes under a per-pod directory,
``rewrite`` maps in-container paths and Service DNS names in commands, ``container_process``
runs and stops one container's process tree, ``probes`` runs exec/httpGet/tcpSocket probes,
``image_version`` warns about images naming another Ray, ``pod_runner`` drives one pod's life
and ``runtime`` ties them to the kubelet.
"""
