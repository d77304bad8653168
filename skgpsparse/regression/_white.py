"""A ``WhiteKernel`` term of the regressor's kernel taken as the noise, as scikit-learn's GPR.

scikit-learn's ``GaussianProcessRegressor(kernel=k + WhiteKernel(w), alpha=a)`` models the
targets as ``N(0, K + (w + a) I)``: the ``WhiteKernel``'s level ``w`` is a learned noise and
``alpha`` a fixed one. The sparse objectives (GPML eq. (8.17), Titsias' bound) see the kernel
only through ``K_uu``, ``K_uf`` and ``diag K_ff``, where a ``WhiteKernel`` enters the diagonal
alone: its level would be charged as prior variance no basis explains, not fitted as noise.
So a ``WhiteKernel`` term of the kernel's top-level sum is folded into the noise variance:
the fit runs on the other term with noise ``s2 = noise_variance + w`` (``noise_variance``
fixed, scikit-learn's ``alpha``; ``w`` within the ``WhiteKernel``'s bounds), and the fitted
``kernel_`` carries ``WhiteKernel(s2 - noise_variance)`` again, so that its bound warnings and
``predict``'s standard deviation (``k(x, x)`` includes ``w``) are scikit-learn's. With every
training row in the basis the model is then scikit-learn's GPR.
"""

from typing import NamedTuple, Optional

import numpy as np
from sklearn.gaussian_process.kernels import Sum, WhiteKernel

from ..kernels._bounds import describe_at_bounds
from ..kernels._bounds import warn_at_bounds as warn_kernel_at_bounds
from ._hyperparameters import check_noise_bounds, warn_at_noise_bound

__all__ = [
    "NoiseSpec", "check_function_part", "fold_white", "split_white", "unfold_white",
    "warn_at_bounds", "white_gradient",
]


class NoiseSpec(NamedTuple):
    """The noise a fit learns: its start, its bounds (``None``: fixed) and, when a
    ``WhiteKernel`` term is folded in, the fixed part ``alpha`` and the term's place."""

    noise_variance: float
    bounds: Optional[tuple]
    alpha: Optional[float] = None  # noise_variance, the fixed part, with a folded WhiteKernel
    white: Optional[WhiteKernel] = None
    white_first: bool = False  # the WhiteKernel is the sum's k1


def split_white(kernel):
    """``(rest, white, white_first)`` for ``rest + WhiteKernel`` (either order), else
    ``(kernel, None, False)``."""
    if isinstance(kernel, Sum):
        if isinstance(kernel.k2, WhiteKernel):
            return kernel.k1, kernel.k2, False
        if isinstance(kernel.k1, WhiteKernel):
            return kernel.k2, kernel.k1, True
    return kernel, None, False


def check_function_part(kernel):
    """A ``ValueError`` naming ``kernel`` if it is noise only (a ``WhiteKernel``, alone or
    beside another): a white kernel's covariance between distinct inputs is zero, so there
    is no function to put on a basis (and with it as noise, no kernel left to fit)."""
    if kernel is not None and isinstance(split_white(kernel)[0], WhiteKernel):
        raise ValueError(
            f"kernel={kernel!r} has no function part: a WhiteKernel is noise (its "
            "covariance between distinct inputs is zero), so there is nothing to put on a "
            "basis. Give a kernel with a function part and the WhiteKernel as a term of its "
            "top-level sum (e.g. ConstantKernel() * RBF() + WhiteKernel()); the noise alone "
            "is the variance of y."
        )


def fold_white(kernel, noise_variance, noise_variance_bounds):
    """``(kernel to fit, NoiseSpec)``: a top-level ``WhiteKernel`` term becomes noise.

    ``noise_variance=0`` (scikit-learn's ``alpha=0``) needs such a term: the noise is then
    the ``WhiteKernel``'s alone.

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import RBF, WhiteKernel
    >>> from skgpsparse.regression._white import fold_white
    >>> rest, spec = fold_white(RBF(1.0) + WhiteKernel(0.1, (1e-3, 1.0)), 0.0, "fixed")
    >>> rest, spec.noise_variance, spec.bounds
    (RBF(length_scale=1), 0.1, (0.001, 1.0))
    """
    rest, white, first = split_white(kernel)
    if white is None:
        if noise_variance == 0:
            raise ValueError(
                "noise_variance=0 needs a WhiteKernel term in the kernel's top-level sum "
                "(kernel = k + WhiteKernel(...)), whose noise_level is then the noise, as "
                f"scikit-learn's alpha=0; got kernel={kernel!r}. Give the noise as "
                "noise_variance > 0 otherwise."
            )
        return kernel, NoiseSpec(noise_variance, check_noise_bounds(noise_variance_bounds))
    alpha = float(noise_variance)
    bounds = None
    if not white.hyperparameter_noise_level.fixed:
        low, high = np.asarray(white.noise_level_bounds, dtype=float).ravel()
        bounds = (alpha + float(low), alpha + float(high))
    start = alpha + white.noise_level
    return rest, NoiseSpec(start, bounds, alpha, white, first)


def unfold_white(spec, kernel, s2):
    """``(kernel_, noise_variance_)`` of a fit that ended at ``(kernel, s2)``."""
    if spec.white is None:
        return kernel, s2
    level = max(s2 - spec.alpha, np.finfo(float).tiny)
    white = WhiteKernel(level, spec.white.noise_level_bounds)
    return (white + kernel if spec.white_first else kernel + white), spec.alpha


def warn_at_bounds(spec, kernel, s2, expected=(), progress=None):
    """scikit-learn's ``ConvergenceWarning`` for each learned value at a bound: the fitted
    kernel's (a folded ``WhiteKernel``'s level as ``k1__noise_level`` or ``k2__...``), and the
    noise variance's when it is learned apart from the kernel. ``expected``: the names whose
    upper bound the package's default kernel reaches by design
    (:func:`~skgpsparse.kernels._bounds.warn_at_bounds`), which go to ``progress`` (the
    estimator's verbose output) instead; returns those reached."""
    quiet = warn_kernel_at_bounds(unfold_white(spec, kernel, s2)[0], expected)
    if quiet and progress is not None:
        progress.line(f"default kernel: {describe_at_bounds(quiet)} (by design, not warned)")
    if spec.white is None:
        warn_at_noise_bound(s2, spec.bounds)
    return quiet


def white_gradient(kernel, grad, level, s2):
    """The gradient over ``kernel.theta`` (``rest + WhiteKernel``) from the fold's
    ``grad`` over ``[rest.theta, log s2]`` (``d/dlog w = w / s2 * d/dlog s2``)."""
    rest, white, first = split_white(kernel)
    if white.hyperparameter_noise_level.fixed:
        return grad[:-1]
    d_white = grad[-1] * level / s2
    return np.concatenate([[d_white], grad[:-1]] if first else [grad[:-1], [d_white]])
