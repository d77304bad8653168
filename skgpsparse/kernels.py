"""Hyperparameter gradients of scikit-learn kernels for cross-covariances K(X, Z).

scikit-learn kernels return ``dK/dtheta`` only for ``K(X, X)`` (``eval_gradient=True``), but the
sparse models need the cross-covariance between the data and the basis vectors, ``K(X, X_u)``, and
the diagonal ``k(x, x)`` for predictive variances. This module computes both, with derivatives
taken with respect to ``kernel.theta``: the log-transformed free hyperparameters, fixed ones
excluded, in exactly the order of ``kernel.theta`` (the convention of ``eval_gradient``).

Derivative formulas (``theta = log(parameter)``, so ``dK/dtheta = parameter * dK/dparameter``);
``D_k = (x_k - z_k)^2 / l_k^2`` is the scaled squared difference in dimension k (one term summed
over all dimensions for an isotropic length scale) and ``r^2 = sum_k D_k``:

- ``RBF``, squared exponential (GPML eq. 4.9): ``K = exp(-r^2 / 2)``,
  ``dK/dlog l_k = K D_k``.
- ``Matern`` (GPML eq. 4.14; half-integer forms eqs. 4.16-4.17). Every supported ``nu`` gives
  ``dK/dlog l_k = g(r) D_k`` with ``g = -(dK/dr) / r``:
  ``nu=0.5``: ``K = exp(-r)``, ``g = K / r`` (0 at r = 0);
  ``nu=1.5``: ``K = (1 + sqrt(3) r) exp(-sqrt(3) r)``, ``g = 3 exp(-sqrt(3) r)``;
  ``nu=2.5``: ``K = (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r)``,
  ``g = 5/3 (1 + sqrt(5) r) exp(-sqrt(5) r)``;
  ``nu=inf``: the RBF, ``g = K``. Other ``nu`` (Bessel functions) use the fallback for
  ``K(X, Z)``; the diagonal is 1 for every ``nu``.
- ``RationalQuadratic`` (GPML eq. 4.19): ``K = b^-alpha`` with
  ``b = 1 + d^2 / (2 alpha l^2)``, ``d = |x - z|``;
  ``dK/dlog l = K d^2 / (l^2 b)`` and
  ``dK/dlog alpha = K (d^2 / (2 l^2 b) - alpha log b)``.
- ``DotProduct`` (GPML sec. 4.2.2): ``K = sigma_0^2 + x.z``, ``dK/dlog sigma_0 = 2 sigma_0^2``.
- ``ConstantKernel``: ``K = c``, ``dK/dlog c = c``.
- ``WhiteKernel``: ``K(X, Z) = 0`` with zero gradient whenever ``Z`` is passed, even ``Z is X``
  (scikit-learn's own convention for ``kernel(X, Z)``); its diagonal is ``noise_level``, with
  gradient ``noise_level``. Hence for a ``WhiteKernel`` term ``kernel_gradient(kernel, X, X)``
  differs from ``kernel(X, eval_gradient=True)``, which puts the noise on the diagonal.
- ``Sum``, ``Product``, ``Exponentiation`` (GPML sec. 4.2.4): sum rule, product rule
  ``d(K1 K2) = dK1 K2 + K1 dK2``, and ``d(K^p) = p K^(p-1) dK``, recursively over the kernel tree;
  ``theta`` of a sum or product is ``concat(k1.theta, k2.theta)``.

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
from scipy.spatial.distance import cdist
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    Exponentiation,
    Kernel,
    Matern,
    Product,
    RationalQuadratic,
    Sum,
    WhiteKernel,
)

__all__ = [
    "KernelGradientWarning",
    "iter_kernel",
    "iter_kernel_gradient",
    "kernel_diag_gradient",
    "kernel_gradient",
]

# Default memory budget of one chunk's largest array (dK for the gradient), in bytes.
_CHUNK_BYTES = 32 * 2**20

# Step in log-hyperparameter space: ~ eps^(1/3) balances truncation (h^2) and rounding (eps / h).
_FD_STEP = np.finfo(float).eps ** (1.0 / 3.0)

# Kernel classes that have already triggered the finite-difference warning.
_WARNED_CLASSES = set()

_MATERN_NU = (0.5, 1.5, 2.5, np.inf)


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


def _chunk_rows(chunk_size, n_Z, n_theta):
    """Rows per chunk: as given, or so that a (rows, n_Z, n_theta) float block is ~32 MB."""
    if chunk_size is None:
        return max(1, _CHUNK_BYTES // (8 * max(1, n_Z) * max(1, n_theta)))
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)):
        raise TypeError(f"chunk_size must be a positive int or None, got {chunk_size!r}.")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int or None, got {chunk_size}.")
    return int(chunk_size)


def _row_blocks(X, n_rows):
    n_X = X.shape[0]
    return (slice(start, min(start + n_rows, n_X)) for start in range(0, n_X, n_rows))


# ----------------------------------------------------------------------------- leaf kernels
# Each leaf rule returns (value, grads): value is K(X, Z) (or the diagonal when Z is None) and
# grads maps a hyperparameter name to its gradient block of shape value.shape + (n_elements,).
# Blocks are only computed for free hyperparameters; missing blocks are zero.


def _is_free(kernel, name):
    return not getattr(kernel, f"hyperparameter_{name}").fixed


def _length_scale(kernel, n_features):
    """Length scale as 0-d (isotropic) or 1-d (ARD) float array, as sklearn squeezes it."""
    length_scale = np.squeeze(np.asarray(kernel.length_scale, dtype=np.float64))
    if length_scale.ndim > 1:
        raise ValueError("length_scale cannot be of dimension greater than 1.")
    if length_scale.ndim == 1 and length_scale.shape[0] != n_features:
        raise ValueError(
            "An anisotropic length_scale must have one entry per feature, got "
            f"{length_scale.shape[0]} entries for {n_features} features."
        )
    return length_scale


def _scaled_sq_diffs(Xs, Zs, r2, length_scale):
    """D of shape (n_X, n_Z, 1) (isotropic: r^2) or (n_X, n_Z, n_features) (ARD)."""
    if length_scale.ndim == 0:
        return r2[:, :, np.newaxis]
    return (Xs[:, np.newaxis, :] - Zs[np.newaxis, :, :]) ** 2


def _rbf(kernel, X, Z):
    # GPML eq. 4.9; same distance computation as sklearn so K agrees to rounding.
    length_scale = _length_scale(kernel, X.shape[1])
    Xs, Zs = X / length_scale, Z / length_scale
    r2 = cdist(Xs, Zs, metric="sqeuclidean")
    K = np.exp(-0.5 * r2)
    grads = {}
    if _is_free(kernel, "length_scale"):
        grads["length_scale"] = K[:, :, np.newaxis] * _scaled_sq_diffs(Xs, Zs, r2, length_scale)
    return K, grads


def _matern(kernel, X, Z):
    # GPML eqs. 4.16-4.17; dK/dlog l_k = g(r) D_k with g = -(dK/dr) / r.
    length_scale = _length_scale(kernel, X.shape[1])
    Xs, Zs = X / length_scale, Z / length_scale
    r = cdist(Xs, Zs, metric="euclidean")
    nu = kernel.nu
    if nu == 0.5:
        K = np.exp(-r)
        g = np.divide(K, r, out=np.zeros_like(r), where=r > 0)
    elif nu == 1.5:
        s = np.sqrt(3.0) * r
        e = np.exp(-s)
        K, g = (1.0 + s) * e, 3.0 * e
    elif nu == 2.5:
        s = np.sqrt(5.0) * r
        e = np.exp(-s)
        K, g = (1.0 + s + s**2 / 3.0) * e, 5.0 / 3.0 * (1.0 + s) * e
    else:  # nu == inf: squared exponential
        K = np.exp(-(r**2) / 2.0)
        g = K
    grads = {}
    if _is_free(kernel, "length_scale"):
        D = _scaled_sq_diffs(Xs, Zs, r**2, length_scale)
        grads["length_scale"] = g[:, :, np.newaxis] * D
    return K, grads


def _rational_quadratic(kernel, X, Z):
    # GPML eq. 4.19: K = b^-alpha, b = 1 + d^2 / (2 alpha l^2).
    length_scale = float(np.squeeze(kernel.length_scale))
    alpha = float(np.squeeze(kernel.alpha))
    d2 = cdist(X, Z, metric="sqeuclidean")
    base = 1.0 + d2 / (2.0 * alpha * length_scale**2)
    K = base**-alpha
    grads = {}
    if _is_free(kernel, "length_scale"):
        grads["length_scale"] = (K * d2 / (length_scale**2 * base))[:, :, np.newaxis]
    if _is_free(kernel, "alpha"):
        dlog_alpha = d2 / (2.0 * length_scale**2 * base) - alpha * np.log(base)
        grads["alpha"] = (K * dlog_alpha)[:, :, np.newaxis]
    return K, grads


def _dot_product(kernel, X, Z):
    sigma2 = float(kernel.sigma_0) ** 2
    K = X @ Z.T + sigma2
    grads = {}
    if _is_free(kernel, "sigma_0"):
        grads["sigma_0"] = np.full(K.shape + (1,), 2.0 * sigma2)
    return K, grads


def _constant(kernel, X, Z):
    c = float(kernel.constant_value)
    K = np.full((X.shape[0], Z.shape[0]), c)
    grads = {}
    if _is_free(kernel, "constant_value"):
        grads["constant_value"] = np.full(K.shape + (1,), c)
    return K, grads


def _white(kernel, X, Z):
    # sklearn: WhiteKernel(X, Z) is zero whenever Z is given; gradient blocks stay zero.
    return np.zeros((X.shape[0], Z.shape[0])), {}


def _stationary_diag(kernel, X):
    # RBF, Matern, RationalQuadratic: k(x, x) = 1 for every hyperparameter value.
    if hasattr(kernel, "length_scale"):
        _length_scale(kernel, X.shape[1])  # same shape validation as the cross covariance
    return np.ones(X.shape[0]), {}


def _dot_product_diag(kernel, X):
    sigma2 = float(kernel.sigma_0) ** 2
    diag = np.einsum("ij,ij->i", X, X) + sigma2
    grads = {}
    if _is_free(kernel, "sigma_0"):
        grads["sigma_0"] = np.full((X.shape[0], 1), 2.0 * sigma2)
    return diag, grads


def _constant_diag(kernel, X, name):
    value = float(getattr(kernel, name))
    grads = {name: np.full((X.shape[0], 1), value)} if _is_free(kernel, name) else {}
    return np.full(X.shape[0], value), grads


_CROSS_RULES = {
    RBF: _rbf,
    Matern: _matern,
    RationalQuadratic: _rational_quadratic,
    DotProduct: _dot_product,
    ConstantKernel: _constant,
    WhiteKernel: _white,
}

_DIAG_RULES = {
    RBF: _stationary_diag,
    Matern: _stationary_diag,
    RationalQuadratic: _stationary_diag,
    DotProduct: _dot_product_diag,
    ConstantKernel: lambda kernel, X: _constant_diag(kernel, X, "constant_value"),
    WhiteKernel: lambda kernel, X: _constant_diag(kernel, X, "noise_level"),
}


def _assemble(kernel, value, grads):
    """Stack the free hyperparameters' blocks in the order of ``kernel.theta``."""
    blocks = [
        grads.get(hp.name, np.zeros(value.shape + (hp.n_elements,)))
        for hp in kernel.hyperparameters
        if not hp.fixed
    ]
    if not blocks:
        return np.empty(value.shape + (0,))
    return np.concatenate(blocks, axis=-1)


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
    rules = _DIAG_RULES if Z is None else _CROSS_RULES
    rule = rules.get(kind)
    # the Matern diagonal is 1 for every nu; K(X, Z) needs a closed form (eqs. 4.16-4.17)
    if rule is None or (kind is Matern and Z is not None and kernel.nu not in _MATERN_NU):
        return _finite_difference(kernel, X, Z)
    value, grads = rule(kernel, X) if Z is None else rule(kernel, X, Z)
    return value, _assemble(kernel, value, grads)


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
    X : array-like of shape (n_X, n_features)
        First inputs, split into blocks of rows.
    Z : array-like of shape (n_Z, n_features)
        Second inputs, used whole in every block.
    chunk_size : int, default=None
        Rows per block. By default chosen so that one block's ``dK`` takes about 32 MB:
        ``max(1, 2**25 // (8 * n_Z * max(1, n_theta)))``.

    Yields
    ------
    rows : slice
        The rows of ``X`` in this block.
    K : ndarray of shape (n_rows, n_Z)
        ``kernel(X[rows], Z)``.
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
    n_rows = _chunk_rows(chunk_size, Z.shape[0], kernel.n_dims)
    # a plain function returning a generator, so bad arguments raise at the call
    return ((rows, *_value_and_gradient(kernel, X[rows], Z)) for rows in _row_blocks(X, n_rows))


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
    n_rows = _chunk_rows(chunk_size, Z.shape[0], 1)
    return ((rows, kernel(X[rows], Z)) for rows in _row_blocks(X, n_rows))
