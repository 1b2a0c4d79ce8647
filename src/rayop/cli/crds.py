"""``rayop crds``: print the ray.io/v1 CustomResourceDefinitions as multi-document YAML."""

from __future__ import annotations

import typer

from rayop.cli.app import app


def render_crds() -> str:
    """Returns the four CRDs as one multi-document YAML string (``---`` before each)."""
    import yaml

    from rayop.api.crds import build_crds

    return yaml.safe_dump_all(build_crds(), explicit_start=True, sort_keys=False, width=1000)


@app.command("crds")
def crds() -> None:
    """Print the RayCluster, RayJob, RayService and RayCronJob CRDs (for `kubectl apply -f -`)."""
    typer.echo(render_crds(), nl=False)
