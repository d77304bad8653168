"""``V = L^-1 K_uf`` of every row, stored or recomputed: what the passes over all rows read.

A pass of the all-rows EP (:mod:`skgpsparse.inference._ep_passes`) reads ``V`` (``p x n``) a
block of rows at a time. Held whole, ``V`` is ``8 p n`` bytes: 8 GB at ``n = 10^7``, ``p = 100``,
five times the 20 features' rows themselves. :func:`row_columns` keeps it while it is small
(:data:`STORE_BYTES`, or no larger than ``X``) and otherwise gives an object with the same
interface that forms each block again from ``X`` in every pass (the kernel block and one
triangular solve, ``O(p^2)`` per row): memory ``O(p x block)`` in place of ``O(p n)``, for a
pass that costs about twice a stored one's (``benchmarks/scale/fit_memory.py``). Both yield
the same blocks ``(J, V_J)``, formed by the same arithmetic, so the two agree to rounding.
"""

import numpy as np
from scipy.linalg import solve_triangular

from ..kernels._columns import iter_cross_kernel

__all__ = [
    "STORE_BYTES",
    "RecomputedColumns",
    "StoredColumns",
    "block_rows",
    "formed_blocks",
    "row_columns",
    "row_slices",
    "stores_columns",
]

# Entries of one p x rows block of V (4 MiB): a block stays in the cache between its solve and
# its SYRK.
_BLOCK_ENTRIES = 1 << 19
# V is kept whole while it takes at most this many bytes, or no more than X itself (a pass
# that recomputes its blocks costs about twice a stored one's: at 10^6 x 20 rows and p = 100,
# 800 MB, V is kept, as before; at 10^7 rows, 8 GB, it is recomputed). Tests lower it.
STORE_BYTES = 1 << 30


def block_rows(p):
    """Rows per block of a pass over the ``p x n`` array ``V``."""
    return max(64, _BLOCK_ENTRIES // max(p, 1))


def row_slices(n, rows):
    """Consecutive slices of ``rows`` rows (the last one shorter) covering ``range(n)``."""
    return (slice(start, min(start + rows, n)) for start in range(0, n, rows))


def stores_columns(n, p, x_bytes):
    """Whether ``V`` (``p x n`` float64) is kept whole for rows whose inputs take ``x_bytes``
    bytes: while it takes at most :data:`STORE_BYTES` bytes or no more than the inputs
    themselves (the fit then holds at most twice its data in these two, and a pass that forms
    its blocks again would cost a fit on data that small more time than the memory is
    worth)."""
    return 8 * n * p <= max(STORE_BYTES, x_bytes)


def formed_blocks(kernel, X, X_u, L, rows):
    """``(J, V[:, J])`` over consecutive blocks of ``rows`` rows, each formed from ``X[J]``:
    the kernel block ``K(X[J], X_u)`` and one triangular solve with ``L``."""
    for J, K in iter_cross_kernel(kernel, X, X_u, chunk_size=rows):
        yield J, solve_triangular(L, K.T, lower=True, check_finite=False)


class StoredColumns:
    """``V`` held whole (``p x n``, Fortran order: a block of rows is contiguous).

    Parameters
    ----------
    V : ndarray of shape (p, n)
    """

    stored = True

    def __init__(self, V):
        self.V = V
        self.shape = V.shape

    def blocks(self, rows=None):
        """``(J, V[:, J])`` over consecutive blocks of ``rows`` rows (None: :func:`block_rows`)."""
        p, n = self.shape
        for J in row_slices(n, rows or block_rows(p)):
            yield J, self.V[:, J]

    def block(self, J):
        """``V[:, J]`` for a slice ``J`` of rows."""
        return self.V[:, J]

    def array(self):
        """``V`` whole (this object's)."""
        return self.V

    def dot(self, x):
        """``V x`` (``x`` of shape ``(n,)`` or ``(n, k)``)."""
        return self.V @ x

    def rdot(self, w):
        """``V^T w`` (``w`` of shape ``(p,)`` or ``(p, k)``)."""
        return self.V.T @ w


class RecomputedColumns(StoredColumns):
    """``V = L^-1 K_uf`` formed again from the rows in every pass, never held whole.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : ndarray of shape (n, n_features)
    X_u : ndarray of shape (p, n_features)
    L : ndarray of shape (p, p)
        The lower factor of ``K_uu`` (with its jitter).
    """

    stored = False

    def __init__(self, kernel, X, X_u, L):
        self.kernel, self.X, self.X_u, self.L = kernel, X, X_u, L
        self.shape = (X_u.shape[0], X.shape[0])

    def blocks(self, rows=None):
        """``(J, V[:, J])`` as :meth:`StoredColumns.blocks`, each block formed from ``X[J]``."""
        yield from formed_blocks(self.kernel, self.X, self.X_u, self.L,
                                 rows or block_rows(self.shape[0]))

    def block(self, J):
        """``V[:, J]`` for a slice ``J`` of rows, formed from ``X[J]``."""
        X_J = self.X[J]
        ((_, V_J),) = formed_blocks(self.kernel, X_J, self.X_u, self.L, max(X_J.shape[0], 1))
        return V_J

    def array(self):
        """``V`` whole: a new ``p x n`` array (for a caller that needs it so; one pass)."""
        V = np.empty(self.shape, order="F")
        for J, V_J in self.blocks():
            V[:, J] = V_J
        return V

    def dot(self, x):
        """``V x`` by one pass over the blocks."""
        out = np.zeros((self.shape[0],) + np.shape(x)[1:])
        for J, V_J in self.blocks():
            out += V_J @ x[J]
        return out

    def rdot(self, w):
        """``V^T w`` by one pass over the blocks."""
        out = np.empty((self.shape[1],) + np.shape(w)[1:])
        for J, V_J in self.blocks():
            out[J] = V_J.T @ w
        return out


def row_columns(kernel, X, X_u, L, *, store=None, norms=True):
    """``(columns, sq_norms)``: ``V = L^-1 K_uf`` stored or recomputed, and ``|v_i|^2``
    (``diag(Q_ff)``) of every row, by one pass.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : ndarray of shape (n, n_features)
    X_u : ndarray of shape (p, n_features)
    L : ndarray of shape (p, p)
        The lower factor of ``K_uu``.
    store : bool, default=None
        Keep ``V`` whole (:class:`StoredColumns`) or form its blocks in each pass
        (:class:`RecomputedColumns`); None: :func:`stores_columns`.
    norms : bool, default=True
        Whether to form ``sq_norms`` (else it is None).
    """
    p, n = X_u.shape[0], X.shape[0]
    if store is None:
        store = stores_columns(n, p, X.nbytes)
    if store:  # formed once by the same blocks: beside V a few p x block arrays
        V = np.empty((p, n), order="F")
        for J, V_J in formed_blocks(kernel, X, X_u, L, block_rows(p)):
            V[:, J] = V_J
        return StoredColumns(V), (np.einsum("ij,ij->j", V, V) if norms else None)
    columns = RecomputedColumns(kernel, X, X_u, L)
    if not norms:
        return columns, None
    sq_norms = np.empty(n)
    for J, V_J in columns.blocks():
        sq_norms[J] = np.einsum("ij,ij->j", V_J, V_J)
    return columns, sq_norms
