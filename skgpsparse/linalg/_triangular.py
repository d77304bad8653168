"""Triangular solves and Cholesky factors by LAPACK directly: scipy's results to the bit.

``scipy.linalg.solve_triangular`` spends tens of microseconds per call on argument handling
(array-API dispatch, batching, validation) around one LAPACK ``trtrs``: more than the solve
itself for a vector against a ``p x p`` factor at ``p`` of a few hundred, which the
streaming updates of ``partial_fit`` make several times per row. :func:`solve_lower` makes
the call ``solve_triangular(L, B, lower=True, trans=trans, check_finite=False)`` makes
(``trtrs`` on ``L`` itself when it is Fortran-ordered, else on its transposed view with the
opposite triangle and transposition), so the results are equal to the bit; inputs it does
not cover (not float64, empty, not two-dimensional) go through ``solve_triangular``.
:func:`cholesky_lower` and :func:`cho_solve_lower` do the same for ``cholesky(C, lower=True,
check_finite=False)`` (LAPACK ``potrf``) and ``cho_solve((L, True), B, check_finite=False)``
(``potrs``): an exact GP's objective calls both on every evaluation of a hyperparameter
search, where scipy's wrappers cost ~0.1 ms a call, about a tenth of the evaluation at a
hundred rows.
"""

import numpy as np
from scipy.linalg import LinAlgError, cho_solve, cholesky, solve_triangular
from scipy.linalg.lapack import dpotrf, dpotrs, dtrtrs

__all__ = ["cho_solve_lower", "cholesky_lower", "solve_lower"]

_F8 = np.dtype(np.float64)


def solve_lower(L, B, trans=0):
    """``L^-1 B`` (``trans=0``) or ``L^-T B`` (``trans=1``) for a lower-triangular ``L``.

    Equal to ``solve_triangular(L, B, lower=True, trans=trans, check_finite=False)``; nothing
    is checked for finiteness, as there.

    Parameters
    ----------
    L : ndarray of shape (p, p)
        Lower triangular (the strict upper triangle is not read).
    B : ndarray of shape (p,) or (p, k)
    trans : {0, 1}, default=0

    Returns
    -------
    X : ndarray of B's shape

    Raises
    ------
    LinAlgError
        If a diagonal entry of ``L`` is zero.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.linalg import solve_triangular
    >>> from skgpsparse.linalg import solve_lower
    >>> L = np.array([[2.0, 0.0], [1.0, 4.0]]); b = np.array([4.0, 6.0])
    >>> solve_lower(L, b).tolist(), solve_lower(L, b, trans=1).tolist()
    ([2.0, 1.0], [1.25, 1.5])
    >>> bool(np.array_equal(solve_lower(L, b, 1), solve_triangular(L, b, lower=True, trans=1)))
    True
    """
    if not (
        type(L) is np.ndarray and type(B) is np.ndarray and L.dtype == _F8 and B.dtype == _F8
        and L.ndim == 2 and L.shape[0] == L.shape[1] and B.ndim in (1, 2)
        and B.shape[0] == L.shape[0] and B.size > 0
    ):
        return solve_triangular(L, B, lower=True, trans=trans, check_finite=False)
    if L.flags.f_contiguous:
        x, info = dtrtrs(L, B, lower=1, trans=trans)
    else:  # trtrs expects Fortran order: the transposed system, as scipy solves it
        x, info = dtrtrs(L.T, B, lower=0, trans=1 - trans)
    if info > 0:
        raise LinAlgError(f"singular matrix: resolution failed at diagonal {info - 1}")
    return x


def _plain(A, ndims):
    return type(A) is np.ndarray and A.dtype == _F8 and A.ndim in ndims and A.size > 0


def cholesky_lower(C):
    """Lower Cholesky factor of a symmetric positive definite ``C`` (a new, Fortran-ordered
    array with zeros above the diagonal; ``C`` is not modified).

    Equal to ``scipy.linalg.cholesky(C, lower=True, check_finite=False)`` (the same
    ``potrf`` call), and the same ``LinAlgError`` when ``C`` is not positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.linalg import cholesky
    >>> from skgpsparse.linalg._triangular import cholesky_lower
    >>> C = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> bool(np.array_equal(cholesky_lower(C), cholesky(C, lower=True)))
    True
    """
    if not (_plain(C, (2,)) and C.shape[0] == C.shape[1]):
        return cholesky(C, lower=True, check_finite=False)
    L, info = dpotrf(C, lower=1, clean=1, overwrite_a=0)
    if info > 0:
        raise LinAlgError(f"{info}-th leading minor of the array is not positive definite")
    return L


def cho_solve_lower(L, B):
    """``C^-1 B`` from the lower Cholesky factor ``L`` of ``C`` (``B`` is not modified).

    Equal to ``scipy.linalg.cho_solve((L, True), B, check_finite=False)`` (the same
    ``potrs`` call).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.linalg import cho_solve, cholesky
    >>> from skgpsparse.linalg._triangular import cho_solve_lower
    >>> L = cholesky(np.array([[4.0, 2.0], [2.0, 3.0]]), lower=True); b = np.array([1.0, 2.0])
    >>> bool(np.array_equal(cho_solve_lower(L, b), cho_solve((L, True), b)))
    True
    """
    if not (_plain(L, (2,)) and _plain(B, (1, 2)) and L.shape[0] == L.shape[1] == B.shape[0]):
        return cho_solve((L, True), B, check_finite=False)
    x, _ = dpotrs(L, B, lower=1, overwrite_b=0)  # info < 0 only for an illegal argument
    return x
