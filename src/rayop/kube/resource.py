"""Names an API resource (group, version, plural) and builds its REST paths."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class Resource:
    """One kind of object served by the API server, generic over any group/version.

    Attributes:
        group: The API group; ``""`` for the core group served under ``/api``.
        version: The API version within the group, for example ``"v1"``.
        plural: The lower-case plural resource name used in URLs, for example ``"pods"``.
        kind: The object kind, for example ``"Pod"``.
        namespaced: Whether objects live in namespaces (True) or are cluster-scoped.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` of objects of this resource: ``"v1"`` or ``"group/version"``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version_path(self) -> str:
        """The URL prefix of the group/version: ``/api/v1`` or ``/apis/<group>/<version>``."""
        if self.group:
            return f"/apis/{self.group}/{self.version}"
        return f"/api/{self.version}"

    def path(
        self,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """Builds the URL path of the collection, one object, or one object's subresource.

        Args:
            namespace: The namespace; None for cluster-scoped resources, or for a namespaced
                collection across all namespaces.
            name: The object's name; None for the collection.
            subresource: A subresource such as ``"status"``; needs ``name``.

        Returns:
            A path such as ``/api/v1/namespaces/default/pods/p1/status``.

        Raises:
            ValueError: A namespace was given for a cluster-scoped resource, or a subresource
                without a name.
        """
        parts = [self.group_version_path]
        if namespace is not None:
            if not self.namespaced:
                raise ValueError(f"{self.plural} is cluster-scoped; got namespace {namespace!r}")
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=""))
        if subresource is not None:
            if name is None:
                raise ValueError("a subresource needs an object name")
            parts.append(subresource)
        return "/".join(parts)

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural
