"""The ``rayop`` command line. Each sub-command lives in a module of its own here and
registers itself on :data:`~rayop.cli.app.app`; :func:`main` imports only the module of the
command it runs (:mod:`rayop.cli.commands`), with the cyclic collector off for those imports.

Modules and subpackages:

- ``advise``: ``rayop advise``: should this running operator's --reconcile-concurrency change? Its
  metrics say.
- ``apiserver``: ``rayop apiserver``: run the embedded control plane in the foreground.
- ``app``: the typer application every ``rayop`` sub-command registers on.
- ``bench``: ``rayop bench``: should --reconcile-concurrency be raised? Measure it.
- ``bind_errors``: a server that cannot bind its address is reported in one line naming the flag
  to change.
- ``commands``: the ``rayop`` sub-commands and the modules that register them: the CLI's lazy
  boundary.
- ``control_plane_flags``: the options of the embedded control plane that ``rayop apiserver`` and
  ``rayop up`` share.
- ``crd_install``: ``rayop up`` installs the ray.io CRDs and waits until every one is Established.
- ``crds``: ``rayop crds``: print the ray.io/v1 CustomResourceDefinitions as multi-document YAML.
- ``dev``: ``rayop dev real-cluster up|down``: a real kube-apiserver with kwok nodes, for
  development.
- ``explain``: ``rayop explain KIND/NAME``: a running operator's account of its last passes over one
  object.
- ``extras``: the optional extras a command needs, checked before the command imports them.
- ``flags``: Go-style flag values, so that KubeRay's Deployment arguments work unchanged.
- ``gateway_api_crds``: the Gateway API CRDs ``rayop up`` installs: from the cache, else
  downloaded from the Go module proxy.
- ``kubeconfig_file``: ``rayop up --kubeconfig-out``: the kubeconfig file appears whole, and only
  when it is usable.
- ``kuberay_config``: ``rayop run --config``: KubeRay's Configuration file in place of its flags, as
  KubeRay reads it.
- ``kuberay_flags``: the rest of KubeRay v1.7.0's operator flags, so ``rayop run`` takes its chart's
  args unchanged.
- ``log_plan``: the logging that ``rayop run``'s logging flags resolve to, and setting it up.
- ``operator_flags``: the options ``rayop run`` and ``rayop up`` share, and the settings they build.
- ``operator_setup``: what ``rayop run`` and ``rayop up`` do with their operator flags, in one place.
- ``option_groups``: groups of command-line options declared once and shared by several ``rayop``
  commands.
- ``preview``: ``rayop preview``: what this rayop would do on its first pass over each live ray.io
  object, writing nothing.
- ``realcluster``: a real Kubernetes control plane on loopback: etcd or kine, kube-apiserver, KCM,
  scheduler, kwok.
- ``realcluster_config``: what the real control plane is configured with so that kwok pods can play
  Ray heads.
- ``realcluster_http``: blocking helpers for starting a real control plane: a tiny API caller and a
  poll loop.
- ``realcluster_procs``: the pid file of a real control plane, and stopping its processes from that
  file alone.
- ``render``: ``rayop render -f FILE``: the objects the operator would create for a file's
  RayClusters, RayJobs and RayServices, as YAML, with no cluster.
- ``replica_flags``: the options that place one operator replica in a cluster: leader election and
  namespaces.
- ``run``: ``rayop run``: the operator against any Kubernetes API server, with KubeRay's flags.
- ``samples``: ``rayop samples``: list the shipped example manifests, print one, or write them all
  out.
- ``up``: ``rayop up``: the embedded control plane and the operator in one process (the main job).
- ``version``: ``rayop version``.
"""

from __future__ import annotations

import sys

from rayop.cli.app import app
from rayop.cli.commands import load_commands
from rayop.cli.flags import normalize_argv
from rayop.runtime.process.collector import collector_paused


def main() -> None:
    """Entry point of the ``rayop`` console script."""
    args = normalize_argv(sys.argv[1:])
    with collector_paused():  # the imports build only what the process keeps
        load_commands(args)
    app(args=args, prog_name="rayop")
