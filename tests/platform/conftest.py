"""The fixtures of the platform tests (platformkit.py)."""

from platformkit import platform_server

__all__ = ["platform_server"]
