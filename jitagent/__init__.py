"""jitagent: build the right agent harness for each task, just in time."""

__version__ = "0.1.0"
