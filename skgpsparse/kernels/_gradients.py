"""Hyperparameter gradients of scikit-learn kernels for cross-covariances K(X, Z).

scikit-learn kernels return ``dK/dtheta`` only for ``K(X, X)`` (``eval_gradient=True``), but the
sparse models need the cross-covariance between the data and the basis vectors, ``K(X, X_u)``, and
the diagonal ``k(x, x)`` for predictive variances. This module computes both, with derivatives
taken with respect to ``kernel.theta``: the log-transformed free hyperparameters, fixed ones
excluded, in exactly the order of ``kernel.theta`` (the convention of ``eval_gradient``).

The closed-form rules for the leaf kernels (and their formulas) are in
:mod:`skgpsparse.kernels._rules`; sums, products and powers are combined here by the
sum, product and power rules (GPML sec. 4.2.4).

Dispatch is on the exact type, so a subclass of a scikit-learn kernel (which may override
``__call__``) is never silently given the parent's formula. Any other kernel (node of the tree)
falls back to central finite differences in ``theta`` through ``kernel.clone_with_theta``, with a
:class:`KernelGradientWarning` once per kernel class.

References
----------
C. E. Rasmussen and C. K. I. Williams, *Gaussian Processes for Machine Learning*, MIT Press,
2006 (GPML), chapter 4.
"""

import warnings

import numpy as np
from sklearn.gaussian_process.kernels import Exponentiation, Kernel, Matern, Product, Sum

from ._rules import CROSS_RULES, DIAG_RULES, MATERN_NU, assemble

# Default memory budget of one chunk's largest array (dK for the gradient), in bytes.
_CHUNK_BYTES = 32 * 2**20

# Step in log-hyperparameter space: ~ eps^(1/3) balances truncation (h^2) and rounding (eps / h).
_FD_STEP = np.finfo(float).eps ** (1.0 / 3.0)

# Kernel classes that have already triggered the finite-difference warning.
_WARNED_CLASSES = set()

class KernelGradientWarning(UserWarning):
    """Warning issued when a kernel's gradient falls back to finite differences.

    It is issued once per kernel class; filter it like any warning once the slower, less
    accurate path is acceptable.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import ExpSineSquared
    >>> from skgpsparse.kernels import KernelGradientWarning, kernel_gradient
    >>> X = np.linspace(0, 1, 4).reshape(-1, 1)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", KernelGradientWarning)
    ...     K, dK = kernel_gradient(ExpSineSquared(), X, X[:2])
    >>> dK.shape
    (4, 2, 2)
    """


# ----------------------------------------------------------------------------- input checks


def _check_kernel(kernel):
    if not isinstance(kernel, Kernel):
        raise TypeError(
            "kernel must be a scikit-learn Kernel instance, got "
            f"{type(kernel).__name__}: {kernel!r}."
        )


def _check_inputs(X, Z=None):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(
            f"X must be a 2-D array of shape (n_samples, n_features), got {X.ndim}-D."
        )
    if Z is None:
        return X, None
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        raise ValueError(
            f"Z must be a 2-D array of shape (n_samples, n_features), got {Z.ndim}-D."
        )
    if Z.shape[1] != X.shape[1]:
        raise ValueError(
            f"X and Z must have the same number of features, got {X.shape[1]} and {Z.shape[1]}."
        )
    return X, Z


def chunk_rows(chunk_size, n_Z, n_theta):
    """Rows per chunk: as given, or so that a (rows, n_Z, n_theta) float block is ~32 MB."""
    if chunk_size is None:
        return max(1, _CHUNK_BYTES // (8 * max(1, n_Z) * max(1, n_theta)))
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)):
        raise TypeError(f"chunk_size must be a positive int or None, got {chunk_size!r}.")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int or None, got {chunk_size}.")
    return int(chunk_size)


def row_blocks(X, n_rows):
    n_X = X.shape[0]
    return (slice(start, min(start + n_rows, n_X)) for start in range(0, n_X, n_rows))


# ----------------------------------------------------------------------------- fallback


def _warn_fallback(kernel):
    cls = type(kernel)
    if cls in _WARNED_CLASSES:
        return
    _WARNED_CLASSES.add(cls)
    detail = f" with nu={kernel.nu}" if cls is Matern else ""
    warnings.warn(
        f"No analytic gradient for kernel class {cls.__name__}{detail}; using central finite "
        "differences in theta (2 * n_theta extra kernel evaluations, ~1e-10 relative error). "
        "This warning is shown once per kernel class.",
        KernelGradientWarning,
        stacklevel=4,
    )


def _finite_difference(kernel, X, Z):
    """Central differences of K (or of the diagonal when Z is None) in each theta."""
    _warn_fallback(kernel)

    def evaluate(k):
        return np.asarray(k.diag(X) if Z is None else k(X, Z), dtype=np.float64)

    value = evaluate(kernel)
    theta = kernel.theta
    columns = []
    for i in range(theta.size):  # a loop over hyperparameters, not entries
        step = np.zeros_like(theta)
        step[i] = _FD_STEP
        plus = evaluate(kernel.clone_with_theta(theta + step))
        minus = evaluate(kernel.clone_with_theta(theta - step))
        columns.append((plus - minus) / (2.0 * _FD_STEP))
    if not columns:
        return value, np.empty(value.shape + (0,))
    return value, np.stack(columns, axis=-1)


# ----------------------------------------------------------------------------- recursion


def _value_and_gradient(kernel, X, Z):
    """(K, dK) for Z given, (diag, dDiag) for Z None; the last axis of the gradient is theta."""
    kind = type(kernel)
    if kind in (Sum, Product):
        K1, dK1 = _value_and_gradient(kernel.k1, X, Z)
        K2, dK2 = _value_and_gradient(kernel.k2, X, Z)
        if kind is Sum:
            return K1 + K2, np.concatenate([dK1, dK2], axis=-1)
        # product rule: d(K1 K2) = dK1 K2 + K1 dK2
        dK = np.concatenate([dK1 * K2[..., np.newaxis], K1[..., np.newaxis] * dK2], axis=-1)
        return K1 * K2, dK
    if kind is Exponentiation:
        K, dK = _value_and_gradient(kernel.kernel, X, Z)
        p = kernel.exponent
        # d(K^p) = p K^(p-1) dK; skip K^(p-1) when there is nothing to scale
        if dK.shape[-1]:
            dK = p * (K ** (p - 1))[..., np.newaxis] * dK
        return K**p, dK
    rules = DIAG_RULES if Z is None else CROSS_RULES
    rule = rules.get(kind)
    # the Matern diagonal is 1 for every nu; K(X, Z) needs a closed form (eqs. 4.16-4.17)
    if rule is None or (kind is Matern and Z is not None and kernel.nu not in MATERN_NU):
        return _finite_difference(kernel, X, Z)
    value, grads = rule(kernel, X) if Z is None else rule(kernel, X, Z)
    return value, assemble(kernel, value, grads)


# ----------------------------------------------------------------------------- public API


def kernel_gradient(kernel, X, Z):
    """Cross-covariance ``K(X, Z)`` and its gradient with respect to ``kernel.theta``.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Any scikit-learn kernel. RBF, Matern (nu in 0.5, 1.5, 2.5, inf), RationalQuadratic,
        DotProduct, ConstantKernel, WhiteKernel and their Sum, Product and Exponentiation are
        differentiated analytically; other kernels by central finite differences (with a
        :class:`KernelGradientWarning` once per kernel class).
    X : array-like of shape (n_X, n_features)
        First inputs.
    Z : array-like of shape (n_Z, n_features)
        Second inputs, e.g. the basis vectors. ``WhiteKernel`` contributes zero for any ``Z``,
        as in ``kernel(X, Z)``.

    Returns
    -------
    K : ndarray of shape (n_X, n_Z)
        ``kernel(X, Z)``.
    dK : ndarray of shape (n_X, n_Z, n_theta)
        ``dK[..., i]`` is the derivative of ``K`` with respect to ``kernel.theta[i]`` (the log of
        a free hyperparameter), the convention of ``kernel(X, eval_gradient=True)``.

    See Also
    --------
    iter_kernel_gradient : The same, block by block over rows of ``X``.
    kernel_diag_gradient : The diagonal ``k(x, x)`` and its gradient.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgpsparse.kernels import kernel_gradient
    >>> kernel = ConstantKernel(2.0) * RBF(length_scale=[1.0, 3.0])
    >>> X, Z = np.arange(10.0).reshape(5, 2), np.zeros((3, 2))
    >>> K, dK = kernel_gradient(kernel, X, Z)
    >>> K.shape, dK.shape
    ((5, 3), (5, 3, 3))
    >>> bool(np.allclose(K, kernel(X, Z)))
    True
    """
    _check_kernel(kernel)
    X, Z = _check_inputs(X, Z)
    return _value_and_gradient(kernel, X, Z)


def kernel_diag_gradient(kernel, X):
    """Diagonal ``k(x, x)`` and its gradient with respect to ``kernel.theta``.

    Costs O(n_X n_theta) time and memory; no ``n_X x n_X`` array is formed.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Any scikit-learn kernel (analytic for the same kernels as :func:`kernel_gradient`,
        finite differences of ``kernel.diag`` otherwise).
    X : array-like of shape (n_X, n_features)
        Inputs.

    Returns
    -------
    diag : ndarray of shape (n_X,)
        ``kernel.diag(X)``; includes the ``WhiteKernel`` noise level.
    dDiag : ndarray of shape (n_X, n_theta)
        ``dDiag[:, i]`` is the derivative of ``diag`` with respect to ``kernel.theta[i]``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
    >>> from skgpsparse.kernels import kernel_diag_gradient
    >>> kernel = ConstantKernel(2.0) * RBF() + WhiteKernel(0.5)
    >>> diag, dDiag = kernel_diag_gradient(kernel, np.zeros((4, 3)))
    >>> diag
    array([2.5, 2.5, 2.5, 2.5])
    >>> dDiag[0]  # d/dlog c, d/dlog length_scale, d/dlog noise_level
    array([2. , 0. , 0.5])
    """
    _check_kernel(kernel)
    X, _ = _check_inputs(X)
    return _value_and_gradient(kernel, X, None)


def iter_kernel_gradient(kernel, X, Z, *, chunk_size=None):
    """Yield :func:`kernel_gradient` over blocks of rows of ``X``.

    Lets callers contract gradients block by block without holding the full
    ``(n_X, n_Z, n_theta)`` array.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Any scikit-learn kernel, as in :func:`kernel_gradient`.
    X, Z
        As :func:`iter_kernel`'s: ``X`` split into blocks of rows, ``Z`` whole in each.
    chunk_size : int, default=None
        Rows per block. By default chosen so that one block's ``dK`` takes about 32 MB:
        ``max(1, 2**25 // (8 * n_Z * max(1, n_theta)))``.

    Yields
    ------
    rows, K
        As :func:`iter_kernel`'s: the rows of ``X`` in this block and ``kernel(X[rows], Z)``.
    dK : ndarray of shape (n_rows, n_Z, n_theta)
        Its gradient with respect to ``kernel.theta``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import Matern
    >>> from skgpsparse.kernels import iter_kernel_gradient
    >>> X, Z = np.random.RandomState(0).rand(10, 2), np.zeros((3, 2))
    >>> for rows, K, dK in iter_kernel_gradient(Matern(nu=2.5), X, Z, chunk_size=4):
    ...     print(rows, dK.shape)
    slice(0, 4, None) (4, 3, 1)
    slice(4, 8, None) (4, 3, 1)
    slice(8, 10, None) (2, 3, 1)
    """
    _check_kernel(kernel)
    X, Z = _check_inputs(X, Z)
    n_rows = chunk_rows(chunk_size, Z.shape[0], kernel.n_dims)
    # a plain function returning a generator, so bad arguments raise at the call
    return ((rows, *_value_and_gradient(kernel, X[rows], Z)) for rows in row_blocks(X, n_rows))


def iter_kernel(kernel, X, Z, *, chunk_size=None):
    """Yield ``kernel(X, Z)`` over blocks of rows of ``X``.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Any scikit-learn kernel.
    X : array-like of shape (n_X, n_features)
        First inputs, split into blocks of rows.
    Z : array-like of shape (n_Z, n_features)
        Second inputs, used whole in every block.
    chunk_size : int, default=None
        Rows per block. By default chosen so that one block takes about 32 MB:
        ``max(1, 2**25 // (8 * n_Z))``.

    Yields
    ------
    rows : slice
        The rows of ``X`` in this block.
    K : ndarray of shape (n_rows, n_Z)
        ``kernel(X[rows], Z)``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.kernels import iter_kernel
    >>> X = np.random.RandomState(0).rand(5, 2)
    >>> [K.shape for rows, K in iter_kernel(RBF(), X, X[:2], chunk_size=3)]
    [(3, 2), (2, 2)]
    """
    _check_kernel(kernel)
    X, Z = _check_inputs(X, Z)
    n_rows = chunk_rows(chunk_size, Z.shape[0], 1)
    return ((rows, kernel(X[rows], Z)) for rows in row_blocks(X, n_rows))
