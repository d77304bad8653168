"""Closed-form values and theta-gradients of scikit-learn's leaf kernels, for K(X, Z) and diag.

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

References
----------
C. E. Rasmussen and C. K. I. Williams, *Gaussian Processes for Machine Learning*, MIT Press,
2006 (GPML), chapter 4.
"""

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)

__all__ = ["CROSS_RULES", "DIAG_RULES", "MATERN_NU", "assemble"]

MATERN_NU = (0.5, 1.5, 2.5, np.inf)


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


def _zero_beyond_overflow(far, *blocks):
    """Set the entries of pairs whose squared distance overflowed (``far``) to their limit 0.

    There the kernel is exactly 0 and a gradient ``K * D`` is ``0 * inf`` (NaN), whose limit is
    0 (the kernel decays faster than any power of the distance). Inputs of magnitude beyond
    ``~1e154`` times the length scale get there; ordinary inputs never do (no copy, no change).
    """
    if far.any():
        for block in blocks:
            block[far] = 0.0


# the far pairs' inf * 0 and inf / inf are set to their limit 0 below
@np.errstate(over="ignore", invalid="ignore")
def _rbf(kernel, X, Z):
    # GPML eq. 4.9; same distance computation as sklearn so K agrees to rounding.
    length_scale = _length_scale(kernel, X.shape[1])
    Xs, Zs = X / length_scale, Z / length_scale
    r2 = cdist(Xs, Zs, metric="sqeuclidean")
    K = np.exp(-0.5 * r2)
    grads = {}
    if _is_free(kernel, "length_scale"):
        grads["length_scale"] = K[:, :, np.newaxis] * _scaled_sq_diffs(Xs, Zs, r2, length_scale)
        _zero_beyond_overflow(np.isinf(r2), grads["length_scale"])
    return K, grads


# the far pairs' inf * 0 and inf / inf are set to their limit 0 below
@np.errstate(over="ignore", invalid="ignore")
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
    far = np.isinf(r * r)  # (1 + s) e and g D are inf * 0 there; K and g D tend to 0
    _zero_beyond_overflow(far, K)
    grads = {}
    if _is_free(kernel, "length_scale"):
        D = _scaled_sq_diffs(Xs, Zs, r**2, length_scale)
        grads["length_scale"] = g[:, :, np.newaxis] * D
        _zero_beyond_overflow(far, grads["length_scale"])
    return K, grads


# the far pairs' inf * 0 and inf / inf are set to their limit 0 below
@np.errstate(over="ignore", invalid="ignore")
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
    _zero_beyond_overflow(np.isinf(base), *grads.values())
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


CROSS_RULES = {
    RBF: _rbf,
    Matern: _matern,
    RationalQuadratic: _rational_quadratic,
    DotProduct: _dot_product,
    ConstantKernel: _constant,
    WhiteKernel: _white,
}

DIAG_RULES = {
    RBF: _stationary_diag,
    Matern: _stationary_diag,
    RationalQuadratic: _stationary_diag,
    DotProduct: _dot_product_diag,
    ConstantKernel: lambda kernel, X: _constant_diag(kernel, X, "constant_value"),
    WhiteKernel: lambda kernel, X: _constant_diag(kernel, X, "noise_level"),
}


def assemble(kernel, value, grads):
    """Stack the free hyperparameters' blocks in the order of ``kernel.theta``."""
    blocks = [
        grads.get(hp.name, np.zeros(value.shape + (hp.n_elements,)))
        for hp in kernel.hyperparameters
        if not hp.fixed
    ]
    if not blocks:
        return np.empty(value.shape + (0,))
    return np.concatenate(blocks, axis=-1)
