"""The 13 seed harness specs, shipped as package data."""
