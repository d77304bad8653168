"""The hyperparameter objective of a fitted regressor at another theta.

scikit-learn's ``GaussianProcessRegressor.log_marginal_likelihood(theta)`` takes the kernel's
``theta``; the sparse regressor also learns the noise variance, so it accepts ``theta`` of the
kernel's length (at the fitted noise variance) or one entry longer (then ``log`` of the noise
variance), on the fitted basis vectors and with the fitted jitter.
"""

from functools import partial

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..rows import backend_for
from ._exact import FULL_BASIS_OBJECTIVES
from ._partitioned_fit import objective_partitioned
from ._vfe import OBJECTIVES
from ._white import split_white, white_gradient

__all__ = ["every_row_in_basis", "log_marginal_likelihood", "objective_at"]


def every_row_in_basis(model):
    """Whether the fitted basis of ``model`` is every training row (the exact GP's fit,
    :mod:`._full_basis`): its objective is then the exact one, without the jitter."""
    X, basis = model._X_train, model.basis_indices_
    return (
        isinstance(X, np.ndarray) and len(basis) == X.shape[0]
        and np.array_equal(model.basis_vectors_, X[basis])
    )


def objective_at(model, theta, eval_gradient, clone_kernel=True):
    """``log_marginal_likelihood(theta, eval_gradient, clone_kernel)`` of a fitted
    ``SparseGPRegressor``; ``clone_kernel=False`` leaves ``kernel_.theta`` at the kernel's
    part of ``theta`` (scikit-learn's contract)."""
    if theta is None:
        if eval_gradient:
            raise ValueError("Gradient can only be evaluated for theta!=None")
        return model.log_marginal_likelihood_value_
    theta = np.asarray(theta, dtype=float)
    n_dims = model.kernel_.n_dims
    if theta.shape not in ((n_dims,), (n_dims + 1,)):
        raise ValueError(
            f"`theta` must have length kernel_.n_dims = {n_dims} (the kernel's theta, at "
            f"the fitted noise variance) or {n_dims + 1} (then log noise variance), got "
            f"shape {theta.shape}."
        )
    with_noise = theta.shape == (n_dims + 1,)
    if getattr(model, "_X_train", None) is None:
        raise ValueError(
            "log_marginal_likelihood(theta) needs the training data, which a pickled "
            "model, or one updated by partial_fit, does not keep (it stores only what "
            "prediction needs). Refit the model on (X, y) to evaluate the likelihood at "
            "another theta."
        )
    if clone_kernel:
        kernel = model.kernel_.clone_with_theta(theta[:n_dims])
    else:  # scikit-learn's GPR: `kernel = self.kernel_; kernel.theta = theta`
        kernel = model.kernel_
        kernel.theta = theta[:n_dims]
    # with per-row noise or weights (._row_noise) s2 is their common scale, not noise_variance_
    row_noise = getattr(model, "_row_noise", None)
    s2 = float(np.exp(theta[-1])) if with_noise else (
        model.noise_variance_ if row_noise is None else model._noise_scale)
    rest, white, _ = split_white(kernel) if model._noise.white is not None else (kernel, None, 0)
    if white is not None:  # the WhiteKernel term is noise beside noise_variance_ (_white)
        s2 += white.noise_level
    objective = OBJECTIVES[model.hyperparameter_objective]
    backend = backend_for(model._X_train)
    if backend is not None:  # fitted on row partitions: a sum over them
        objective = partial(objective_partitioned, backend, model.hyperparameter_objective)
    elif every_row_in_basis(model):  # the exact GP: the objective it learned on (_full_basis)
        objective = FULL_BASIS_OBJECTIVES[model.hyperparameter_objective]
    if row_noise is not None:
        objective = partial(objective, row_noise=row_noise)
    out = objective(
        rest,
        model._X_train,
        model._y_train,
        model.basis_vectors_,
        s2,
        eval_gradient=eval_gradient,
        # The fitted model's jitter, constant in theta, so the gradient is the value's.
        jitter=model._jitter_value,
    )
    if not eval_gradient:
        return out
    grad = out[1]
    if white is not None:  # d/dlog w = w / s2 d/dlog s2; d/dlog noise_variance likewise
        grad = np.append(white_gradient(kernel, grad, white.noise_level, s2),
                         grad[-1] * (s2 - white.noise_level) / s2)
    return out[0], (grad if with_noise else grad[:n_dims])


# SparseGPRegressor.log_marginal_likelihood (assigned in the class body)
def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
    """The hyperparameter objective on the fitted basis: GPML eq. (8.17) or the VFE bound.

    With every training row in the basis (``max_basis`` at least the rows), the model is the
    exact GP and this is its exact log marginal likelihood (GPML eq. (2.30); with ``"vfe"``
    minus the bound's trace term, zero but for a ``WhiteKernel``), the objective the fit
    learned on: at ``kernel_.theta`` its gradient vanishes where no bound is active.

    Parameters
    ----------
    theta : array-like of shape (kernel_.n_dims,) or (kernel_.n_dims + 1,), default=None
        Log hyperparameters at which to evaluate the objective. Of the kernel's length
        (as scikit-learn passes ``kernel_.theta``), the noise variance is the fitted
        ``noise_variance_``; one entry longer, the last entry is ``log(noise_variance)``,
        the layout the fit optimises when the noise is learned. ``None`` returns the
        stored ``log_marginal_likelihood_value_``.
    eval_gradient : bool, default=False
        Also return the gradient with respect to ``theta`` (the layout of ``theta``).
    clone_kernel : bool, default=True
        As scikit-learn's: ``False`` sets ``kernel_.theta`` to the kernel's part of
        ``theta`` (the fitted basis, ``alpha_`` and ``noise_variance_`` stay).

    Returns
    -------
    log_likelihood : float
        The approximate log marginal likelihood (``hyperparameter_objective="dtc"``) or
        Titsias' bound (``"vfe"``).
    log_likelihood_gradient : ndarray of the shape of ``theta``
        Only if ``eval_gradient`` is True.

    Raises
    ------
    ValueError
        If ``theta`` is given on a model restored from a pickle: the training data are
        not pickled, so refit the model first.
    """
    check_is_fitted(self)
    out = objective_at(self, theta, eval_gradient, clone_kernel)
    # a numpy float, as scikit-learn's (NumPy 2 then promotes comparisons with float32 alike)
    return (np.float64(out[0]), out[1]) if eval_gradient else np.float64(out)
