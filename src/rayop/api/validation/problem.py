"""What validation reports: a problem with the event reason KubeRay gives it, and those reasons."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Problem", "Reason"]


class Reason(StrEnum):
    """KubeRay v1.7's event reasons for an object its validation refuses."""

    INVALID_RAYCLUSTER_METADATA = "InvalidRayClusterMetadata"
    INVALID_RAYCLUSTER_SPEC = "InvalidRayClusterSpec"
    INVALID_RAYCLUSTER_STATUS = "InvalidRayClusterStatus"
    INVALID_RAYJOB_METADATA = "InvalidRayJobMetadata"
    INVALID_RAYJOB_SPEC = "InvalidRayJobSpec"
    INVALID_RAYJOB_STATUS = "InvalidRayJobStatus"
    INVALID_RAYSERVICE_METADATA = "InvalidRayServiceMetadata"
    INVALID_RAYSERVICE_SPEC = "InvalidRayServiceSpec"
    INVALID_RAYCRONJOB_SPEC = "InvalidRayCronJobSpec"


@dataclass(frozen=True)
class Problem:
    """One reason an object is refused.

    Attributes:
        reason: The event reason KubeRay gives this kind of problem (metadata, spec, status).
        message: The message; KubeRay's own for every check KubeRay makes (the status
            message, the webhook's cause).
        event: How KubeRay's controller words the Warning event (``{namespace}``, ``{name}``
            and ``{message}`` are filled in by :meth:`event_message`).
    """

    reason: Reason
    message: str
    event: str = "{namespace}/{name}: {message}"

    def __str__(self) -> str:
        return self.message

    def event_message(self, namespace: str, name: str) -> str:
        """Returns the Warning event's message for the object ``namespace/name``."""
        return self.event.format(namespace=namespace, name=name, message=self.message)
