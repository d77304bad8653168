"""``warm_start=True``: a fit that starts from the previous fit's hyperparameters and basis.

scikit-learn's convention (``warm_start`` of its iterative estimators): a second ``fit``
reuses the previous solution as its starting point. Here that is the fitted kernel's
hyperparameters and noise variance (the learning starts from them instead of the exact GP
on a random subset of rows) and the basis: the previous basis vectors that are rows of the
new ``X`` (the case after ``partial_fit`` batches, or on a data set that grew) enter the
first selection first, and forward selection continues from them to ``max_basis``.
"""

import warnings
from typing import NamedTuple

import numpy as np
from sklearn.base import clone

from .._fitted_state import reset_fitted_state
from .._warm_start import fit_signature, warm_start_allowed
from ._white import check_function_part, split_white

__all__ = ["WarmStart", "basis_rows", "begin_fit", "warm_start_from"]


class WarmStart(NamedTuple):
    """The previous fit's solution."""

    kernel: object
    noise_variance: float
    basis_vectors: np.ndarray


def begin_fit(model, X, private):
    """What ``model.fit(X, ...)`` does first: refuse a kernel with no function part
    (:func:`~._white.check_function_part`), take the previous fit to warm-start from
    (:func:`warm_start_from`, kept as ``model._warm`` for :func:`~._alternation.alternate`),
    then clear the previous fitted state (``private``: the private names) and note the fit's
    :class:`~skgpsparse._warm_start.FitSignature` (``_fit_signature``: a fit that then fails
    puts the previous one back, :func:`~skgpsparse._fitted_state.keeps_previous_fit`)."""
    check_function_part(model.kernel)
    signature = fit_signature(model.kernel, X)
    warm = warm_start_from(model, signature)  # None unless the kernel and inputs match
    reset_fitted_state(model, private)
    model._warm, model._fit_signature = warm, signature


def warm_start_from(model, signature):
    """The previous fit of ``model`` to start a fit of ``signature`` from, or None (no warm
    start, unfitted, or with a warning when the kernel, the kind of input or the number of
    features changed: :func:`~skgpsparse._warm_start.warm_start_allowed`)."""
    if not model.warm_start or not hasattr(model, "basis_vectors_"):
        return None
    if not warm_start_allowed(model, signature):
        return None
    if model.likelihood != "gaussian" or not hasattr(model, "noise_variance_"):
        warnings.warn(
            "warm_start=True is not taken with a non-Gaussian likelihood (this fit's or the "
            "previous one's): the fit starts afresh.", UserWarning,
        )
        return None
    # the fit runs on the kernel without its WhiteKernel term, whose level is noise (_white)
    kernel, white, _ = split_white(clone(model.kernel_))
    # a noise_variance array: the learned common scale of the rows' noise (_row_noise)
    noise = getattr(model, "_noise_scale", None) if np.ndim(model.noise_variance_) else None
    noise = float(model.noise_variance_ if noise is None else noise)
    noise += 0.0 if white is None else white.noise_level
    return WarmStart(kernel, noise, model.basis_vectors_.copy())


def basis_rows(X, basis_vectors):
    """Indices of the rows of ``X`` equal to the previous basis vectors (in their order).

    A basis vector that is not a row of ``X`` (moved by ``refine_basis``, or from other
    data) is skipped. One pass over the rows, hashing each.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.regression._warm import basis_rows
    >>> X = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    >>> basis_rows(X, np.array([[4.0, 5.0], [9.0, 9.0], [0.0, 1.0]])).tolist()
    [2, 0]
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    wanted = {np.asarray(z, dtype=np.float64).tobytes(): k for k, z in enumerate(basis_vectors)}
    found = {}
    for i, row in enumerate(X):
        k = wanted.get(row.tobytes())
        if k is not None and k not in found:
            found[k] = i
    return np.array([found[k] for k in sorted(found)], dtype=np.intp)
