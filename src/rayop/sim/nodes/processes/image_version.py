"""The Ray version a container image names, and the Warning ``--real-ray`` gives when it differs.

The image is never pulled: the local Ray runs whatever the pod says. An image tagged with a Ray
version (``rayproject/ray:2.52.0``, ``rayproject/ray:2.52.0-py311-gpu``,
``rayproject/ray-ml:nightly`` has none) that is not the local one gets a ``Warning`` event
``RayVersionMismatch`` on the pod saying which version actually runs.
"""

from __future__ import annotations

import re

from rayop.sim.nodes.processes.image_entrypoint import KNOWN_IMAGES, image_repository

__all__ = ["image_ray_version", "version_warning"]

_TAG = re.compile(r"^(\d+\.\d+\.\d+)(?:[-.].*)?$")


def image_ray_version(image: str) -> str | None:
    """Returns the Ray version of an image's tag, or None when the tag names none.

    The images of :data:`~.image_entrypoint.KNOWN_IMAGES` are not Ray's: ``redis:7.4.0`` is None.
    """
    if image_repository(image) in KNOWN_IMAGES:
        return None
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" not in last:
        return None
    match = _TAG.match(last.rsplit(":", 1)[1])
    return match.group(1) if match else None


def version_warning(container: str, image: str, local: str) -> str | None:
    """Returns the event message for a container whose image names another Ray, else None."""
    wanted = image_ray_version(image)
    if wanted is None or wanted == local:
        return None
    return (
        f'container {container} asks for image "{image}" (Ray {wanted}); the image is not '
        f"pulled: Ray {local} installed on this machine runs it"
    )
