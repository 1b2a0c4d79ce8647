"""The command a container runs when its spec leaves it to the image, for the images ``--real-ray``
knows.

Images are never pulled, so their ``ENTRYPOINT`` and ``CMD`` are unknown unless written down
here. Kubernetes runs ``command`` + ``args`` when ``command`` is set, the image's entrypoint
with ``args`` when only ``args`` is, and entrypoint + ``CMD`` when neither is
(https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/).
:func:`container_argv` applies that for the images in :data:`KNOWN_IMAGES`:

- ``redis`` (the official image, any tag or registry): ``redis-server``. Its entrypoint script
  puts ``redis-server`` before ``args`` that start with ``-`` or name a ``.conf`` file, and runs
  other ``args`` as they are; the image's build turns protected mode off
  (https://github.com/docker-library/redis/blob/master/7.4/debian/Dockerfile and
  docker-entrypoint.sh beside it), so ``--protected-mode no`` is added unless ``args`` set it.
  The machine's own ``redis-server`` (``scripts/redis-install``) runs it. The image's
  ``WORKDIR`` (and ``VOLUME``) ``/data`` is a directory of the pod (:func:`image_workdir`), the
  container's working directory unless it sets ``workingDir``: redis.conf files say ``dir
  /data``.
- Ray images (``rayproject/ray``, ``rayproject/ray-ml``, ``anyscale/ray``) with neither:
  refused with their own message; their default is an idle shell, and every Ray pod KubeRay
  builds sets a command.

Any other image with neither is refused with :class:`NoImageCommand`, whose message names the
image and the known ones. With ``args`` only, an image not in the table runs its ``args`` as
the command (its entrypoint is taken to be empty, as for images with a ``CMD`` alone).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = [
    "KNOWN_IMAGES",
    "NoImageCommand",
    "container_argv",
    "image_repository",
    "image_workdir",
]


class NoImageCommand(ValueError):
    """The container sets no command and ``--real-ray`` cannot know the image's."""


def _redis(args: Sequence[str]) -> list[str]:
    if args and not (args[0].startswith("-") or args[0].endswith(".conf")):
        return list(args)
    tail = list(args)
    if not any(a.lstrip("-") == "protected-mode" for a in tail):
        tail += ["--protected-mode", "no"]
    return ["redis-server", *tail]


KNOWN_IMAGES: dict[str, Callable[[Sequence[str]], list[str]]] = {"redis": _redis}
"""Image repository (as :func:`image_repository` names it) -> its entrypoint applied to ``args``."""

WORKDIRS: dict[str, str] = {"redis": "/data"}
"""Image repository -> its ``WORKDIR``, a directory the image has (and the pod gets)."""

RAY_IMAGES = frozenset({"rayproject/ray", "rayproject/ray-ml", "anyscale/ray"})


def image_repository(image: str) -> str:
    """Returns an image reference's repository without registry, tag or digest.

    ``docker.io/library/redis:7.4.0`` and ``redis@sha256:...`` are ``redis``;
    ``quay.io/rayproject/ray:2.52.0`` is ``rayproject/ray``.
    """
    name = image.split("@", 1)[0]
    head, _, last = name.rpartition("/")
    name = f"{head}/{last.split(':', 1)[0]}" if head else last.split(":", 1)[0]
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]
    if len(parts) > 1 and parts[0] == "library":
        parts = parts[1:]
    return "/".join(parts)


def image_workdir(image: str) -> str | None:
    """Returns the image's ``WORKDIR`` when this table knows one, else None."""
    return WORKDIRS.get(image_repository(image))


def container_argv(image: str, command: Sequence[str], args: Sequence[str]) -> list[str]:
    """Returns what the container runs (before ``$(VAR)`` expansion and path rewriting).

    Raises:
        NoImageCommand: no ``command``, and the image is a Ray image or, without ``args`` as
            well, one this table does not know.
    """
    if command:
        return [*command, *args]
    repository = image_repository(image)
    entrypoint = KNOWN_IMAGES.get(repository)
    if entrypoint is not None:
        return entrypoint(args)
    if args:
        return list(args)
    if repository in RAY_IMAGES:
        raise NoImageCommand(
            f'image "{image}" is a Ray image: --real-ray runs Ray containers only with a '
            "command (KubeRay's pods always set one)"
        )
    raise NoImageCommand(
        f'--real-ray does not know the default command of image "{image}" (it knows: '
        f"{', '.join(sorted(KNOWN_IMAGES))}); set the container's command"
    )
