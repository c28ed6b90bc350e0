"""Labelled example runs and the seeded generator that makes them (not part of the package)."""
