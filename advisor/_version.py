"""The package's version: a module of its own, so that a module inside the package names it
without importing the package root (whose public names reach the API and the config)."""

__version__ = "0.1.0"
