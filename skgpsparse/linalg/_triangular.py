"""Triangular solves by LAPACK ``trtrs`` directly: scipy's result to the bit, without its wrapper.

``scipy.linalg.solve_triangular`` spends tens of microseconds per call on argument handling
(array-API dispatch, batching, validation) around one LAPACK ``trtrs``: more than the solve
itself for a vector against a ``p x p`` factor at ``p`` of a few hundred, which the
streaming updates of ``partial_fit`` make several times per row. :func:`solve_lower` makes
the call ``solve_triangular(L, B, lower=True, trans=trans, check_finite=False)`` makes
(``trtrs`` on ``L`` itself when it is Fortran-ordered, else on its transposed view with the
opposite triangle and transposition), so the results are equal to the bit; inputs it does
not cover (not float64, empty, not two-dimensional) go through ``solve_triangular``.
"""

import numpy as np
from scipy.linalg import LinAlgError, solve_triangular
from scipy.linalg.lapack import dtrtrs

__all__ = ["solve_lower"]

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
