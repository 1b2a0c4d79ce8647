"""rayop: the KubeRay operator (ray.io/v1) re-implemented in Python on asyncio."""

__version__ = "0.1.0"
