"""Cholesky append, Givens-rotation delete, rank-one update and downdate, and rotation."""

from dataclasses import dataclass

import numpy as np
from scipy.linalg import blas

from ._storage import _active, _work_copy
from ._triangular import solve_lower

__all__ = [
    "GivensRotations",
    "cholesky_append",
    "cholesky_delete",
    "cholesky_downdate",
    "cholesky_rotate",
    "cholesky_update",
]


def cholesky_append(L, b, c, *, size=None, overwrite_L=False):
    """Factor of ``[[A, b], [b^T, c]]`` given the lower factor ``L L^T = A``.

    With ``l = L^-1 b`` the new last row is ``[l^T, sqrt(c - l^T l)]`` (Golub & Van Loan §4.2.5).
    Cost O(p^2).

    Parameters
    ----------
    L : ndarray of shape (p, p) or (p_max, p_max)
        Lower Cholesky factor of ``A``. Only the lower triangle is read. With ``size`` given,
        ``L`` is a storage whose leading ``size x size`` block is the factor.
    b : array-like of shape (p,)
        The new column of the matrix, without its diagonal entry.
    c : float
        The new diagonal entry.
    size : int, default=None
        Active size of a preallocated storage ``L``; ``None`` means ``L.shape[0]``.
    overwrite_L : bool, default=False
        With ``size`` given and room in the storage, write the new row into ``L`` in place and
        return a view of its leading ``(size + 1) x (size + 1)`` block. Without ``size`` the
        factor cannot grow in place and a new array is returned.

    Returns
    -------
    L_new : ndarray of shape (p + 1, p + 1)
        Lower Cholesky factor of the bordered matrix.

    Raises
    ------
    numpy.linalg.LinAlgError
        If the bordered matrix is not positive definite (``c - |L^-1 b|^2 <= 0``).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.linalg import cholesky_append
    >>> A = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> L = cholesky_append(np.linalg.cholesky(A[:1, :1]), A[:1, 1], A[1, 1])
    >>> np.allclose(L, np.linalg.cholesky(A))
    True
    """
    L, p = _active(L, size)
    b = np.asarray(b, dtype=L.dtype).reshape(-1)
    if b.shape[0] != p:
        raise ValueError(f"`b` must have length {p} (the factor's size), got {b.shape[0]}.")
    # Seeger et al. 2003 eq. (6): l = L^-1 b, l_pp = sqrt(c - l^T l).
    l = solve_lower(L[:p, :p], b) if p else b
    d2 = float(c) - float(l @ l)
    if not np.isfinite(d2) or d2 <= 0.0:
        raise np.linalg.LinAlgError(
            f"cholesky_append: the bordered matrix is not positive definite "
            f"(c - |L^-1 b|^2 = {d2:.3g} <= 0); the new point is (numerically) a linear "
            f"combination of the current ones. Add jitter to the diagonal."
        )
    if overwrite_L and size is not None and p < L.shape[0]:
        W = L
    else:
        W = _work_copy(L, p, extra=1)
    W[p, :p] = l
    W[p, p] = np.sqrt(d2)
    return W[: p + 1, : p + 1]


@dataclass(frozen=True)
class GivensRotations:
    """The plane rotations made by :func:`cholesky_delete`, to be applied to other matrices.

    Rotation ``i`` acts in the plane of rows ``(start + i, start + i + 1)`` as
    ``[x, y] <- [c x + s y, c y - s x]`` with ``c = cos[i]``, ``s = sin[i]``; they are applied
    in order. For ``M = L^-1 K`` (``p`` rows) the rotated matrix holds ``L_new^-1 K_(-j)`` in its
    first ``p - 1`` rows and the departing contribution ``r`` in row ``p - 1``.

    Attributes
    ----------
    start : int
        Index ``j`` of the deleted row; the first rotation acts on rows ``(j, j + 1)``.
    cos, sin : ndarray of shape (p - j - 1,)
        Cosines and sines of the rotations.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.linalg import cholesky_delete
    >>> A = np.array([[4.0, 2.0, 1.0], [2.0, 3.0, 0.5], [1.0, 0.5, 2.0]])
    >>> _, rot = cholesky_delete(np.linalg.cholesky(A), 0)
    >>> rot.start, rot.size, len(rot.cos)
    (0, 3, 2)
    >>> Q = rot.apply(np.eye(3)).T  # the orthogonal matrix of the rotations
    >>> np.allclose(Q.T @ Q, np.eye(3))
    True
    """

    start: int
    cos: np.ndarray
    sin: np.ndarray

    @property
    def size(self):
        """The number of rows ``p`` of the matrices these rotations apply to."""
        return self.start + len(self.cos) + 1

    def apply(self, M, *, overwrite=False):
        """Rotate the rows of ``M`` as the factor's columns were rotated (``Q^T M``).

        Parameters
        ----------
        M : ndarray of shape (p, ...) or (p_max, ...)
            Matrix (or vector) whose leading ``p`` rows are rotated; rows beyond ``p`` (spare
            capacity) are left alone. O(p n) for ``n`` columns, by BLAS ``rot`` on whole rows.
            Without ``overwrite`` the result is a float64 copy.
        overwrite : bool, default=False
            Rotate ``M`` in place (it must then be a writable float array).

        Returns
        -------
        M_rot : ndarray
            The rotated matrix. Its row ``p - 1`` is the contribution that leaves.

        Examples
        --------
        >>> import numpy as np
        >>> from skgpsparse.linalg import cholesky_delete
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(3, 3)); A = X @ X.T + 3 * np.eye(3)
        >>> K = rng.normal(size=(3, 5))
        >>> L_new, rot = cholesky_delete(np.linalg.cholesky(A), 0)
        >>> M = rot.apply(np.linalg.solve(np.linalg.cholesky(A), K))
        >>> np.allclose(M[:2], np.linalg.solve(L_new, K[1:]))
        True
        """
        M = np.asarray(M)
        if M.shape[0] < self.size:
            raise ValueError(f"`M` must have at least {self.size} rows, got {M.shape[0]}.")
        if not overwrite or not np.issubdtype(M.dtype, np.floating):
            M = np.array(M, dtype=np.result_type(M.dtype, np.float64), copy=True)
        if M.ndim == 2 and M.shape[1] and M.flags.c_contiguous and M.dtype.char in "fd":
            rot = blas.get_blas_funcs("rot", (M,))
            for i, (c, s) in enumerate(zip(self.cos, self.sin)):
                k = self.start + i
                # Whole rows are contiguous: BLAS rot updates them in place.
                rot(M[k], M[k + 1], c, s, overwrite_x=True, overwrite_y=True)
        else:
            for i, (c, s) in enumerate(zip(self.cos, self.sin)):
                k = self.start + i
                x, y = M[k].copy(), M[k + 1]
                M[k] = c * x + s * y
                M[k + 1] = c * y - s * x
        return M


def cholesky_delete(L, j, *, size=None, overwrite_L=False):
    """Factor of ``A`` with row and column ``j`` removed, by Givens rotations.

    Removing row ``j`` of ``L`` leaves ``L'`` (``(p-1) x p``) with ``L' L'^T = A_(-j)`` and one
    non-zero above the diagonal in each row below ``j``. Rotations of columns ``(k, k+1)``,
    ``k = j, ..., p-2``, zero those entries: ``L' Q = [L_new, 0]`` (Golub & Van Loan §6.5.4;
    exchange paper, step 2). Cost O(p^2) for ``L``, plus O(p n) for each ``p x n`` matrix the
    caller rotates with the returned :class:`GivensRotations`.

    Parameters
    ----------
    L : ndarray of shape (p, p) or (p_max, p_max)
        Lower Cholesky factor; only the lower triangle is read and written.
    j : int
        Row and column to delete, ``0 <= j < p``.
    size : int, default=None
        Active size of a preallocated storage ``L``; ``None`` means ``L.shape[0]``.
    overwrite_L : bool, default=False
        Re-triangularise in place: the new factor is ``L[:p-1, :p-1]`` and row ``p - 1`` of the
        active block is zeroed. Otherwise a new ``(p - 1) x (p - 1)`` array is returned.

    Returns
    -------
    L_new : ndarray of shape (p - 1, p - 1)
        Lower Cholesky factor of ``A`` without row and column ``j``.
    rotations : GivensRotations
        The rotations, to apply to the rows of matrices such as ``L^-1 K``.

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``L`` is singular (a zero or non-finite diagonal entry): it is not the factor of a
        positive definite matrix, and the rotations would divide by zero. ``L`` is unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.linalg import cholesky_delete
    >>> A = np.array([[4.0, 2.0, 1.0], [2.0, 3.0, 0.5], [1.0, 0.5, 2.0]])
    >>> L_new, rot = cholesky_delete(np.linalg.cholesky(A), 1)
    >>> np.allclose(L_new @ L_new.T, A[np.ix_([0, 2], [0, 2])])
    True
    """
    L, p = _active(L, size)
    j = int(j)
    if not 0 <= j < p:
        raise ValueError(f"`j` must be in [0, {p - 1}], got {j}.")
    diag = np.diagonal(L)[:p]
    bad = np.flatnonzero(~np.isfinite(diag) | (diag == 0.0))
    if bad.size:
        k = int(bad[0])
        raise np.linalg.LinAlgError(
            f"cholesky_delete: the factor is singular (L[{k}, {k}] = {diag[k]:.3g}); it is not "
            f"the Cholesky factor of a positive definite matrix. Add jitter to the diagonal."
        )
    W = L if overwrite_L else _work_copy(L, p)
    n_rot = p - j - 1
    cos = np.empty(n_rot)
    sin = np.empty(n_rot)
    # Rotation k works in the original row indexing: rows k+1..p-1 of columns (k, k+1), which
    # are all in the lower triangle; it zeroes W[k+1, k+1], after which row k+1 (columns
    # 0..k) is final and moves up to row k. The upper triangle is never touched.
    for i, k in enumerate(range(j, p - 1)):
        a, b = W[k + 1, k], W[k + 1, k + 1]
        r = np.hypot(a, b)
        c, s = a / r, b / r
        x = W[k + 1 : p, k].copy()
        y = W[k + 1 : p, k + 1]
        W[k + 1 : p, k] = c * x + s * y
        W[k + 1 : p, k + 1] = c * y - s * x
        W[k + 1, k] = r  # exact, and positive: the new diagonal entry
        W[k, : k + 1] = W[k + 1, : k + 1]
        cos[i], sin[i] = c, s
    W[p - 1, :p] = 0.0
    L_new = W[: p - 1, : p - 1]
    if not overwrite_L:
        L_new = np.ascontiguousarray(L_new)
    return L_new, GivensRotations(j, cos, sin)


def _rank_one(L, v, size, overwrite_L, overwrite_v, sign):
    """Shared recurrence of :func:`cholesky_update` (sign=+1) and downdate (sign=-1)."""
    L, p = _active(L, size)
    v = np.asarray(v)
    if v.ndim != 1 or v.shape[0] != p:
        raise ValueError(f"`v` must be a vector of length {p}, got shape {v.shape}.")
    W = L if overwrite_L else _work_copy(L, p)
    if not (overwrite_v and v.dtype == W.dtype and v.flags.writeable):
        v = np.array(v, dtype=W.dtype, copy=True)
    # Golub & Van Loan §6.5.4: one hyperbolic (downdate) or ordinary (update) rotation per
    # column; column k below the diagonal and the tail of v are updated as whole vectors.
    for k in range(p):
        lkk = W[k, k]
        r2 = lkk * lkk + sign * v[k] * v[k]
        if not np.isfinite(r2) or r2 <= 0.0:
            name, what = (
                ("cholesky_downdate", "A - v v^T")
                if sign < 0
                else ("cholesky_update", "A + v v^T (L has a zero or non-finite diagonal)")
            )
            raise np.linalg.LinAlgError(
                f"{name}: {what} is not positive definite (pivot {k} would be {r2:.3g} <= 0)."
                + (" The downdate removes more than the matrix holds." if sign < 0 else "")
            )
        r = np.sqrt(r2)
        c, s = r / lkk, v[k] / lkk
        W[k, k] = r
        if k + 1 < p:
            col = W[k + 1 : p, k]
            col += sign * s * v[k + 1 :]
            col /= c
            v[k + 1 :] = c * v[k + 1 :] - s * col
    return W[:p, :p]


def cholesky_update(L, v, *, size=None, overwrite_L=False, overwrite_v=False):
    """Factor of ``A + v v^T`` given the lower factor ``L L^T = A``. Cost O(p^2).

    Parameters
    ----------
    L : ndarray of shape (p, p) or (p_max, p_max)
        Lower Cholesky factor; only the lower triangle is read and written.
    v : array-like of shape (p,)
        The update vector.
    size : int, default=None
        Active size of a preallocated storage ``L``.
    overwrite_L, overwrite_v : bool, default=False
        Work in place on ``L`` (result in its leading block) / use ``v`` as scratch space.

    Returns
    -------
    L_new : ndarray of shape (p, p)
        Lower Cholesky factor of ``A + v v^T``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.linalg import cholesky_update
    >>> A = np.array([[4.0, 2.0], [2.0, 3.0]]); v = np.array([1.0, -1.0])
    >>> np.allclose(cholesky_update(np.linalg.cholesky(A), v),
    ...             np.linalg.cholesky(A + np.outer(v, v)))
    True
    """
    return _rank_one(L, v, size, overwrite_L, overwrite_v, +1.0)


def cholesky_downdate(L, v, *, size=None, overwrite_L=False, overwrite_v=False):
    """Factor of ``A - v v^T`` given the lower factor ``L L^T = A``. Cost O(p^2).

    Parameters
    ----------
    L, v, size, overwrite_L, overwrite_v
        As in :func:`cholesky_update`, ``v`` the downdate vector. If the downdate fails, an
        overwritten ``L`` is left partly modified.

    Returns
    -------
    L_new : ndarray of shape (p, p)
        Lower Cholesky factor of ``A - v v^T``.

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``A - v v^T`` is not positive definite.

    Examples
    --------
    A downdate undoes the update by the same vector:

    >>> import numpy as np
    >>> from skgpsparse.linalg import cholesky_downdate, cholesky_update
    >>> L = np.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 3.0]])); v = np.array([1.0, 0.5])
    >>> np.allclose(cholesky_downdate(cholesky_update(L, v), v), L)
    True
    """
    return _rank_one(L, v, size, overwrite_L, overwrite_v, -1.0)


def cholesky_rotate(L, rotations, *, size=None, overwrite_L=False):
    """Factor of ``Q^T A Q`` given ``L L^T = A`` and the rotations ``Q`` of a deletion.

    When a basis vector leaves, :func:`cholesky_delete` rotates the coordinates of the basis by
    ``Q``; a second factor over the same coordinates must follow. Rotating the rows of ``L`` by
    ``Q^T`` leaves one entry above the diagonal per rotation, which a rotation of columns
    ``(k, k + 1)`` removes again (exchange paper, step 2: ``M_p <- Pi M_p R^2``; Golub & Van
    Loan §5.1.9). Cost O(p^2). The leading ``(p - 1) x (p - 1)`` block of the result factors
    the leading block of ``Q^T A Q``, the part that stays.

    Parameters
    ----------
    L : ndarray of shape (p, p) or (p_max, p_max)
        Lower Cholesky factor; only the lower triangle is read and written.
    rotations : GivensRotations
        The rotations returned by :func:`cholesky_delete` for a factor of the same size ``p``.
    size : int, default=None
        Active size of a preallocated storage ``L``.
    overwrite_L : bool, default=False
        Work in place on ``L``.

    Returns
    -------
    L_new : ndarray of shape (p, p)
        Lower Cholesky factor (positive diagonal) of ``Q^T L L^T Q``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.linalg import cholesky_delete, cholesky_rotate
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4, 6)); A = X @ X.T; S = A + np.eye(4)
    >>> _, rot = cholesky_delete(np.linalg.cholesky(A), 1)
    >>> Q = rot.apply(np.eye(4)).T
    >>> np.allclose(cholesky_rotate(np.linalg.cholesky(S), rot),
    ...             np.linalg.cholesky(Q.T @ S @ Q))
    True
    """
    L, p = _active(L, size)
    if rotations.size != p:
        raise ValueError(f"`rotations` act on {rotations.size} rows but the factor has size {p}.")
    W = L if overwrite_L else _work_copy(L, p)
    for i, (c, s) in enumerate(zip(rotations.cos, rotations.sin)):
        k = rotations.start + i
        # Rows (k, k+1) by Q^T: row k gains the entry f at (k, k+1), kept in a scalar so that
        # the upper triangle is never written.
        x = W[k, : k + 1].copy()
        y = W[k + 1, : k + 2].copy()
        f = s * y[k + 1]
        W[k, : k + 1] = c * x + s * y[: k + 1]
        W[k + 1, : k + 1] = c * y[: k + 1] - s * x
        W[k + 1, k + 1] = c * y[k + 1]
        # Columns (k, k+1), rows k..p-1: a rotation that zeroes f.
        a = W[k, k]
        r = np.hypot(a, f)
        c2, s2 = a / r, f / r
        u = W[k + 1 : p, k].copy()
        w = W[k + 1 : p, k + 1]
        W[k + 1 : p, k] = c2 * u + s2 * w
        W[k + 1 : p, k + 1] = c2 * w - s2 * u
        W[k, k] = r
    if p and W[p - 1, p - 1] < 0:
        # Only the last diagonal entry is not a hypot; flipping its column keeps L L^T.
        W[p - 1, p - 1] = -W[p - 1, p - 1]
    return W[:p, :p]
