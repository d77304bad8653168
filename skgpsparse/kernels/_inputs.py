"""Gradients of kernel values with respect to the basis inputs, contracted against weights.

Refining the basis vectors (inducing inputs) ``Z`` of a sparse model needs
``d/dz_jk sum_ij W_ij k(x_i, z_j)`` for a weight matrix ``W`` of the shape of ``K(X, Z)``.
For the stationary kernels of scikit-learn the derivative has one form. With
``r^2 = sum_k (x_k - z_k)^2 / l_k^2``::

    dk(x, z) / dz_k = h(x, z) (x_k - z_k) / l_k^2,

with the leaf's radial weight ``h`` (the same ``g`` as in the length-scale derivatives of
:mod:`skgpsparse.kernels._rules`):

- ``RBF`` (GPML eq. 4.9): ``h = k``;
- ``Matern`` (GPML eqs. 4.14-4.17), ``h = -(dk/dr) / r``: ``nu=0.5``: ``k / r`` (0 at
  ``r = 0``, where the kernel has no derivative); ``nu=1.5``: ``3 exp(-sqrt(3) r)``;
  ``nu=2.5``: ``5/3 (1 + sqrt(5) r) exp(-sqrt(5) r)``; ``nu=inf``: ``k``;
- ``RationalQuadratic`` (GPML eq. 4.19), ``k = b^-alpha`` with
  ``b = 1 + d^2 / (2 alpha l^2)``: ``h = k / b``;
- ``ConstantKernel`` and ``WhiteKernel`` (zero between distinct arguments, scikit-learn's
  convention for ``kernel(X, Z)``): no term.

Sums, products and powers (GPML sec. 4.2.4) combine the terms by the sum rule, the product
rule ``d(k1 k2) = dk1 k2 + k1 dk2`` and ``d(k^p) = p k^(p-1) dk``: a kernel tree is a list of
terms ``(h, 1 / l^2)``. Each term's contraction is two matrix products, with ``M = W o h``::

    sum_i M_ij (x_ik - z_jk) / l_k^2 = ((M^T X)_jk - z_jk sum_i M_ij) / l_k^2,

after both ``X`` and ``Z`` are centred on the mean of ``Z`` (the difference is unchanged, the
cancellation smaller). So the cost is O(n p d) per term, and ``X`` is processed in row blocks:
no ``n x p x d`` array is formed.

References
----------
C. E. Rasmussen and C. K. I. Williams, *Gaussian Processes for Machine Learning*, MIT Press,
2006 (GPML), chapter 4. E. Snelson and Z. Ghahramani, "Sparse Gaussian processes using
pseudo-inputs", NIPS 18, 2006 (inducing inputs learned by their gradient).
"""

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    Exponentiation,
    Matern,
    Product,
    RationalQuadratic,
    Sum,
    WhiteKernel,
)

from ._rules import MATERN_NU

__all__ = ["input_gradient_contraction", "supports_input_gradient"]

# Entries of one block's K(X, Z) (and of each term's weight array).
_BLOCK_ENTRIES = 1 << 21

SUPPORTED = (
    "RBF, Matern (nu in 0.5, 1.5, 2.5, inf), RationalQuadratic, ConstantKernel, WhiteKernel, "
    "and their sums, products and powers"
)


def supports_input_gradient(kernel):
    """Whether :func:`input_gradient_contraction` has a closed form for ``kernel``."""
    kind = type(kernel)
    if kind in (Sum, Product):
        return supports_input_gradient(kernel.k1) and supports_input_gradient(kernel.k2)
    if kind is Exponentiation:
        return supports_input_gradient(kernel.kernel)
    if kind is Matern:
        return kernel.nu in MATERN_NU
    return kind in (RBF, RationalQuadratic, ConstantKernel, WhiteKernel)


def _inverse_squared_length(kernel, n_features):
    length_scale = np.asarray(kernel.length_scale, dtype=np.float64).reshape(-1)
    return np.broadcast_to(1.0 / length_scale**2, (n_features,))


def _terms(kernel, X, Z):
    """``(K, terms)``: ``K = kernel(X, Z)`` and ``dK_ij / dz_jk = sum h_ij (x_ik - z_jk) c_k``
    over the ``terms`` ``(h, c)``."""
    kind = type(kernel)
    if kind is Sum:
        K1, t1 = _terms(kernel.k1, X, Z)
        K2, t2 = _terms(kernel.k2, X, Z)
        return K1 + K2, t1 + t2
    if kind is Product:
        K1, t1 = _terms(kernel.k1, X, Z)
        K2, t2 = _terms(kernel.k2, X, Z)
        # product rule
        return K1 * K2, [(h * K2, c) for h, c in t1] + [(h * K1, c) for h, c in t2]
    if kind is Exponentiation:
        K, t = _terms(kernel.kernel, X, Z)
        p = float(kernel.exponent)
        outer = p * K ** (p - 1.0)
        return K**p, [(outer * h, c) for h, c in t]
    if kind is ConstantKernel:
        return np.full((X.shape[0], Z.shape[0]), float(kernel.constant_value)), []
    if kind is WhiteKernel:
        return np.zeros((X.shape[0], Z.shape[0])), []
    c = _inverse_squared_length(kernel, X.shape[1])
    if kind is RBF:
        # GPML eq. 4.9, the distance computed as scikit-learn does
        K = np.exp(-0.5 * cdist(X * np.sqrt(c), Z * np.sqrt(c), metric="sqeuclidean"))
        return K, [(K, c)]
    if kind is Matern:
        r = cdist(X * np.sqrt(c), Z * np.sqrt(c), metric="euclidean")
        if kernel.nu == 0.5:
            K = np.exp(-r)
            h = np.divide(K, r, out=np.zeros_like(r), where=r > 0)
        elif kernel.nu == 1.5:
            e = np.exp(-np.sqrt(3.0) * r)
            K, h = (1.0 + np.sqrt(3.0) * r) * e, 3.0 * e
        elif kernel.nu == 2.5:
            s = np.sqrt(5.0) * r
            e = np.exp(-s)
            K, h = (1.0 + s + s**2 / 3.0) * e, 5.0 / 3.0 * (1.0 + s) * e
        else:
            K = np.exp(-0.5 * r**2)
            h = K
        return K, [(h, c)]
    # RationalQuadratic (isotropic), GPML eq. 4.19
    alpha = float(kernel.alpha)
    base = 1.0 + cdist(X, Z, metric="sqeuclidean") * (c[0] / (2.0 * alpha))
    K = base**-alpha
    return K, [(K / base, c)]


def input_gradient_contraction(kernel, X, Z, W):
    """``G_jk = sum_i W_ij d kernel(x_i, z_j) / d z_jk``, block by block over rows of ``X``.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        One of the kernels listed by :data:`SUPPORTED` (see
        :func:`supports_input_gradient`).
    X : ndarray of shape (n, n_features)
        First arguments (float64).
    Z : ndarray of shape (p, n_features)
        Second arguments, the inputs differentiated (float64).
    W : ndarray of shape (n, p)
        Weights.

    Returns
    -------
    G : ndarray of shape (p, n_features)

    Raises
    ------
    ValueError
        If the kernel has no closed-form input gradient here.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgpsparse.kernels._inputs import input_gradient_contraction
    >>> rng = np.random.RandomState(0)
    >>> X, Z, W = rng.rand(5, 2), rng.rand(3, 2), rng.rand(5, 3)
    >>> kernel = ConstantKernel(2.0) * RBF([0.5, 2.0])
    >>> G = input_gradient_contraction(kernel, X, Z, W)
    >>> h = 1e-6; Zh = Z.copy(); Zh[1, 0] += h
    >>> fd = (np.sum(W * kernel(X, Zh)) - np.sum(W * kernel(X, Z))) / h
    >>> bool(abs(G[1, 0] - fd) < 1e-4)
    True
    """
    if not supports_input_gradient(kernel):
        raise ValueError(
            "Refining the basis vectors needs the kernel's gradient in its inputs, which is "
            f"available for {SUPPORTED}; got {kernel!r}."
        )
    centre = Z.mean(axis=0)
    Zc = Z - centre
    G = np.zeros_like(Z, dtype=np.float64)
    step = max(1, _BLOCK_ENTRIES // max(Z.shape[0], 1))
    for start in range(0, X.shape[0], step):
        rows = slice(start, start + step)
        Xc = X[rows] - centre
        _, terms = _terms(kernel, Xc, Zc)
        for h, c in terms:
            M = W[rows] * h
            # sum_i M_ij (x_ik - z_jk) c_k
            G += (M.T @ Xc - Zc * M.sum(axis=0)[:, None]) * c
    return G
