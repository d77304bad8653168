"""Which is cheaper for an SSEM step's M-step: updating the factor of Sigma^-1, or refactorising.

The M-step (SSEM paper Figure 1, step 4; eq. 12) changes the active ``alpha``, i.e. the
diagonal of ``Sigma^-1 = A + G / s2`` (eq. 7). Its new Cholesky factor can be had two ways
with the same result up to round-off:

- updates of the old factor (:func:`skgpsparse.rvm._subspace_em.change_precisions`): a rank-k
  update for the increases, a rank-k downdate for the decreases, Givens deletions for the
  pruned and a delete + re-append for a collapsing pivot. Each is a Python loop over the rows
  from the first changed one down, with vector operations inside: cheap in flops, but each
  row step has a fixed interpreter cost;
- one LAPACK Cholesky factorisation of the new ``A + G / s2`` (``M^3 / 3`` flops, blocked).

The model below prices both in seconds from the active size ``M``, where the changes start
and how many there are; the constants are rough single-core figures (only their ratios decide)
and a wrong guess costs time, never accuracy.
"""

import numpy as np

__all__ = ["refactor_is_cheaper", "refactor_seconds", "update_seconds"]

# Fixed interpreter cost of one row step of a rank-k or Givens loop (numpy calls).
ROW_STEP = 8e-6
# Per element of a row step's column operations (strided access to the factor's columns),
# and per element and changed alpha (the reflection's vectors).
ROW_ELEMENT = 2e-8
ROW_ELEMENT_K = 1e-10
# Per element copied or gathered (a factor copy, G's active block).
COPY = 2e-9
# Per flop of LAPACK's blocked Cholesky on one core.
FLOP = 7e-11
# Fixed cost of one call of the factor routines (argument checks, allocation).
CALL = 3e-5


def refactor_seconds(M):
    """Time of one refactorisation of ``A + G / s2`` of size ``M``: gather, scale, ``potrf``."""
    return CALL + 3 * COPY * M * M + FLOP * M**3 / 3


def _loop_seconds(rows, M, k):
    """A row loop over ``rows`` rows of a factor of size ``M``, with ``k`` columns active."""
    return rows * (ROW_STEP + M * (ROW_ELEMENT + ROW_ELEMENT_K * k))


def update_seconds(M, first_up, k_up, first_down, k_down, deleted, moved):
    """Time of the update route on a factor of size ``M``.

    Parameters
    ----------
    M : int
        Active size before the step.
    first_up, first_down : int
        Row of the first increased and of the first decreased ``alpha`` (``M`` if none).
    k_up, k_down : int
        Number of increases and of decreases.
    deleted, moved : ndarray of int
        Rows of the pruned basis functions (Givens deletions) and of the collapsing pivots
        (deletion and re-append).
    """
    t = 2 * COPY * M * M  # the working copy and the downdate's saved copy
    for first, k in ((first_up, k_up), (first_down, k_down)):
        if k:
            t += CALL + _loop_seconds(M - first, M, k)
    for rows in (deleted, moved):
        t += len(rows) * CALL + _loop_seconds(np.sum(M - np.asarray(rows)), M, 1)
    t += len(moved) * (CALL + COPY * M * M)  # the re-append's triangular solve
    return t


def refactor_is_cheaper(alpha, alpha_new, change, prune, pivots, keep):
    """Whether refactorising beats the updates for this M-step.

    Parameters
    ----------
    alpha, alpha_new : ndarray of shape (M,)
        Current and proposed precisions, in the factor's row order.
    change, prune : ndarray of bool, shape (M,)
        Which ``alpha_new`` to apply, which basis functions to remove.
    pivots : ndarray of shape (M,)
        Squared diagonal of the current factor.
    keep : float
        A decrease keeping less than this fraction of its pivot is a delete + re-append
        (``DOWNDATE_KEEP``).
    """
    M = len(alpha)
    changed = change & ~prune
    delta = np.where(changed, alpha_new - alpha, 0.0)
    up = np.flatnonzero(delta > 0)
    down = delta < 0
    collapse = down & (pivots + delta <= keep * pivots)
    down = np.flatnonzero(down & ~collapse)
    t_update = update_seconds(
        M,
        up[0] if up.size else M,
        up.size,
        down[0] if down.size else M,
        down.size,
        np.flatnonzero(prune),
        np.flatnonzero(collapse),
    )
    return refactor_seconds(int(M - prune.sum())) < t_update
