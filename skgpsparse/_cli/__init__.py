"""The command-line report of ``python -m skgpsparse``: a sparse GP beside the full GP."""

from ._demo import main

__all__ = ["main"]
