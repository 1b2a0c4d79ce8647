"""Example manifests shipped with rayop: a RayCluster, a RayJob and a RayService to start from.

Each is a YAML file beside this module (``rayop samples NAME`` prints it). They are written to
run as they are, on rayop's embedded control plane (``rayop up``, simulated or ``--real-ray``)
and on a real cluster: the RayJob's entrypoint and the RayService's Serve application are
Python files in ConfigMaps mounted into the pods, so nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

__all__ = ["SAMPLES", "Sample", "sample_text"]


@dataclass(frozen=True)
class Sample:
    """One shipped manifest.

    Attributes:
        name: What ``rayop samples`` calls it.
        filename: The YAML file in this package.
        summary: One line saying what it shows.
    """

    name: str
    filename: str
    summary: str


SAMPLES: tuple[Sample, ...] = (
    Sample("raycluster", "raycluster.yaml", "RayCluster raycluster-sample: a head and one worker"),
    Sample(
        "rayjob",
        "rayjob.yaml",
        "RayJob rayjob-sample: counts primes with Ray tasks; its code is in a ConfigMap",
    ),
    Sample(
        "rayservice",
        "rayservice.yaml",
        "RayService rayservice-sample: a Serve app (greeter) whose module is in a ConfigMap",
    ),
)
"""Every shipped sample, in the order ``rayop samples`` lists them."""


def sample_text(name: str) -> str:
    """Returns the YAML of the sample called ``name``.

    Raises:
        KeyError: No sample has that name.
    """
    for sample in SAMPLES:
        if sample.name == name:
            return resources.files(__package__).joinpath(sample.filename).read_text()
    raise KeyError(name)
