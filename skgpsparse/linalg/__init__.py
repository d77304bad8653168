"""Cholesky factors grown and shrunk one row at a time: the core shared by both estimators.

Both sparse models keep a lower Cholesky factor ``L`` of a ``p x p`` matrix over the basis set
and change it one basis vector at a time. Refactorising costs O(p^3) per change; the functions
here cost O(p^2):

- :func:`cholesky_append` adds a row and column (Golub & Van Loan, *Matrix Computations*, 4th
  ed., §4.2.5, the bordering form of Cholesky; Seeger, Williams & Lawrence 2003, eq. (6)).
- :func:`cholesky_delete` removes row and column ``j``: deleting row ``j`` of ``L`` leaves a
  lower-Hessenberg block that Givens rotations from the right re-triangularise (Golub & Van Loan
  §5.1.8-5.1.9 and §6.5.4; Sun & Yao, exchange paper, step 2). The rotations are returned as a
  :class:`GivensRotations` so callers rotate the rows of their ``p x n`` matrices alike: if
  ``M = L^-1 K`` then the rotated ``M`` holds ``L_new^-1 K_(-j)`` in its first ``p - 1`` rows and,
  in its last row ``r``, exactly what leaves: ``M^T M - r r^T = M_new^T M_new``.
- :func:`cholesky_update` / :func:`cholesky_downdate` give the factor of ``A + v v^T`` /
  ``A - v v^T`` (Golub & Van Loan §6.5.4; the LINPACK ``dchud``/``dchdd`` recurrences).
- :func:`cholesky_update_rank_k` / :func:`cholesky_downdate_rank_k` give the factor of
  ``A + V V^T`` / ``A - V V^T`` for ``V`` of shape ``(p, k)``: one (hyperbolic) Householder
  reflection per column of ``L``, O(p^2 k) flops in ``p`` vectorised steps; e.g. a change of
  ``k`` diagonal entries at once.
- :func:`solve_lower` is scipy's lower-triangular ``solve_triangular`` (the same LAPACK
  call, so the same bits) without its per-call argument handling.
- :func:`cholesky_rotate` gives the factor of ``Q^T A Q`` for the rotations ``Q`` of a deletion:
  a second factor over the same basis (the regressor's ``M_p``) follows the first one through a
  deletion, the paper's ``M_p <- M_p R^2`` (exchange paper, step 2).

All functions read and write only the lower triangle of ``L``. They return new arrays unless
``overwrite_L=True``. A preallocated ``p_max x p_max`` storage with an active leading ``size x
size`` block is supported through ``size=``, so growing a factor to ``p`` rows costs O(p^2) per
step and no reallocation.
"""

from ._cholesky import (
    GivensRotations,
    cholesky_append,
    cholesky_delete,
    cholesky_downdate,
    cholesky_rotate,
    cholesky_update,
)
from ._rank_k import cholesky_downdate_rank_k, cholesky_update_rank_k
from ._triangular import solve_lower

__all__ = [
    "GivensRotations",
    "cholesky_append",
    "cholesky_delete",
    "cholesky_downdate",
    "cholesky_downdate_rank_k",
    "cholesky_rotate",
    "cholesky_update",
    "cholesky_update_rank_k",
    "solve_lower",
]
