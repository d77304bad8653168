"""The estimator's ``log_marginal_likelihood``: the EP evidence of its binary models at a
theta, with scikit-learn's ``GaussianProcessClassifier`` contract (one model, or the mean
over the one-vs-rest or one-vs-one models; ``clone_kernel``)."""

import numpy as np

__all__ = ["log_marginal_likelihood", "models_log_marginal_likelihood"]


def models_log_marginal_likelihood(models, theta, eval_gradient=False, clone_kernel=True):
    """The estimator's ``log_marginal_likelihood(theta)`` over its binary models.

    One model: its EP evidence at ``theta`` (and gradient). Several (one vs rest or one vs
    one, as scikit-learn's GPC): the mean of their evidences, ``theta`` one kernel's for all
    or every model's stacked (the ``CompoundKernel`` ``kernel_``'s); no gradient.
    ``clone_kernel=False`` then sets each model's ``kernel_.theta`` to its ``theta``
    (scikit-learn's contract).
    """
    theta = np.asarray(theta, dtype=float)
    n_dims = models[0].kernel_.n_dims
    if len(models) == 1:
        if theta.shape != (n_dims,):
            raise ValueError(
                f"`theta` must have the kernel's {n_dims} log hyperparameters, got shape "
                f"{theta.shape}."
            )
        out = models[0].log_marginal_likelihood(theta, eval_gradient)
        _set_thetas(models, [theta], clone_kernel)
        return out
    if eval_gradient:
        raise NotImplementedError(
            "Gradient of log-marginal-likelihood not implemented for multi-class GPC."
        )
    # the default kernel may give the one-vs-rest models different numbers of length scales
    sizes = [m.kernel_.n_dims for m in models]
    if theta.shape == (n_dims,) and all(size == n_dims for size in sizes):
        thetas = [theta] * len(models)
    elif theta.shape == (sum(sizes),):
        thetas = np.split(theta, np.cumsum(sizes)[:-1])
    else:
        one = f"({n_dims},) (one kernel's, for every class) or " if len(set(sizes)) == 1 else ""
        raise ValueError(
            f"`theta` must have shape {one}({sum(sizes)},) (every class's, stacked: "
            f"{sizes} log hyperparameters), got {theta.shape}."
        )
    value = float(np.mean([m.log_marginal_likelihood(t) for m, t in zip(models, thetas)]))
    _set_thetas(models, thetas, clone_kernel)
    return value


def _set_thetas(models, thetas, clone_kernel):
    """scikit-learn's ``clone_kernel=False``: the fitted kernels (the estimator's ``kernels_``
    and its ``kernel_``'s parts are the same objects) left at the evaluated ``theta``."""
    if not clone_kernel:
        for model, theta in zip(models, thetas):
            model.kernel_.theta = theta


# SparseGPClassifier.log_marginal_likelihood (assigned in the class body)
def log_marginal_likelihood(self, theta=None, eval_gradient=False, clone_kernel=True):
    """Approximate log marginal likelihood: the EP evidence of the basis labels.

    As scikit-learn's ``GaussianProcessClassifier.log_marginal_likelihood``, to compare
    kernels by evidence. The approximation is EP's (GPML eq. (3.65)) on the basis latents
    with the likelihoods of the basis labels (the probit by default), at the fitted bias
    ``bias_`` (the IVM's evidence); with ``posterior="all_rows"``, EP over every training
    label under the FITC prior. It is not scikit-learn's Laplace value.

    Parameters
    ----------
    theta : array-like of shape (n_kernel_params,) or (n_models * n_kernel_params,), \
            default=None
        Log hyperparameters of the kernel; ``None`` returns
        ``log_marginal_likelihood_value_``. With more than two classes (``n_models`` binary
        models, one per class or per pair), either one kernel's theta, used for every
        binary model, or their thetas stacked (``kernel_.theta``).
    eval_gradient : bool, default=False
        Also return the gradient with respect to ``theta`` (two classes only, as in
        scikit-learn).
    clone_kernel : bool, default=True
        As scikit-learn's: ``False`` leaves the fitted kernel(s) at ``theta``.

    Returns
    -------
    log_likelihood : float
        The EP log evidence (the mean over the binary models with more than two classes).
    log_likelihood_gradient : ndarray of shape (n_kernel_params,)
        Only if ``eval_gradient``.
    """
    models = self._models()
    if theta is None:
        if eval_gradient:
            raise ValueError("Gradient can only be evaluated for theta!=None")
        return np.float64(self.log_marginal_likelihood_value_)
    out = models_log_marginal_likelihood(models, theta, eval_gradient, clone_kernel)
    # a numpy float, as scikit-learn's (NumPy 2 then promotes comparisons with float32 alike)
    return (np.float64(out[0]), out[1]) if eval_gradient else np.float64(out)
