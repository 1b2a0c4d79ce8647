"""The ``rayop`` command line. Each sub-command lives in a module of its own here and
registers itself on :data:`app`.

Modules and subpackages:

- ``advise``: ``rayop advise``: should this running operator's --reconcile-concurrency change? Its
  metrics say.
- ``apiserver``: ``rayop apiserver``: run the embedded control plane in the foreground.
- ``app``: the typer application every ``rayop`` sub-command registers on.
- ``bench``: ``rayop bench``: should --reconcile-concurrency be raised? Measure it.
- ``bind_errors``: a server that cannot bind its address is reported in one line naming the flag
  to change.
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

from rayop.cli import advise as _advise  # noqa: F401  (registers `rayop advise`)
from rayop.cli import apiserver as _apiserver  # noqa: F401  (registers `rayop apiserver`)
from rayop.cli import bench as _bench  # noqa: F401  (registers `rayop bench`)
from rayop.cli import crds as _crds  # noqa: F401  (registers `rayop crds`)
from rayop.cli import dev as _dev  # noqa: F401  (registers `rayop dev real-cluster`)
from rayop.cli import explain as _explain  # noqa: F401  (registers `rayop explain`)
from rayop.cli import preview as _preview  # noqa: F401  (registers `rayop preview`)
from rayop.cli import render as _render  # noqa: F401  (registers `rayop render`)
from rayop.cli import run as _run  # noqa: F401  (registers `rayop run`)
from rayop.cli import samples as _samples  # noqa: F401  (registers `rayop samples`)
from rayop.cli import up as _up  # noqa: F401  (registers `rayop up`)
from rayop.cli import version as _version  # noqa: F401  (registers `rayop version`)
from rayop.cli.app import app
from rayop.cli.flags import normalize_argv


def main() -> None:
    """Entry point of the ``rayop`` console script."""
    app(args=normalize_argv(sys.argv[1:]), prog_name="rayop")


__all__ = ["app", "main"]
