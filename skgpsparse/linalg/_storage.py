"""Argument handling shared by the Cholesky routines: the active block of a stored factor."""

import numpy as np


def _active(L, size, name="L"):
    """Validate ``L`` and return ``(storage, p)`` where the factor is ``storage[:p, :p]``."""
    L = np.asarray(L)
    if L.ndim != 2 or L.shape[0] != L.shape[1]:
        raise ValueError(f"`{name}` must be a square 2-D array, got shape {L.shape}.")
    if not np.issubdtype(L.dtype, np.floating):
        raise ValueError(f"`{name}` must be a floating point array, got dtype {L.dtype}.")
    p = L.shape[0] if size is None else int(size)
    if not 0 <= p <= L.shape[0]:
        raise ValueError(f"`size` must be in [0, {L.shape[0]}], got {size}.")
    return L, p


def _work_copy(L, p, extra=0):
    """A fresh array holding the lower triangle of ``L[:p, :p]`` (upper triangle zero)."""
    W = np.zeros((p + extra, p + extra), dtype=L.dtype)
    W[:p, :p] = np.tril(L[:p, :p])
    return W
