"""The all-rows posterior's hyperparameter objective: minus the EP evidence of every label.

``AllRowsObjective(z)`` is ``-log Z_EP / n`` under the sparse (FITC) prior of the basis
(:func:`~skgpsparse.inference._ep.negative_log_evidence_all_rows`, GPML eq. (3.65) under the sparse
prior) and its gradient in ``z = [theta, theta_lik, b]``: the kernel's log hyperparameters, the
likelihood's free log parameters (the Student-t's scale and degrees of freedom; none for the
probit and the Poisson, whose ``z`` is ``[theta, b]``) and the bias (:func:`joint_theta`,
:func:`split_theta`). EP is warm-started from the sites of the best evaluation so far (the sites
belong to rows, not to the basis, so they carry over).
"""

import numpy as np

from ..._row_weights import total_weight
from ...inference._ep import _EP_TOL, negative_log_evidence_all_rows
from ...inference._ep_passes import PROBIT
from ...inference._sparse_prior import SparsePrior

__all__ = ["ACCELERATE", "PRIOR", "AllRowsObjective", "joint_theta", "split_theta"]

# The sparse prior of the all-rows posterior (FITC keeps each row's own prior variance).
PRIOR = "fitc"
# EP's sweeps Anderson-accelerated (:mod:`skgpsparse.inference._ep_acceleration`): the same fixed
# point in fewer sweeps (benchmarks/README.md, "studies").
ACCELERATE = True


def joint_theta(kernel, likelihood, bias):
    """``z = [kernel.theta, likelihood.theta, b]``: the point the objective is evaluated at."""
    return np.concatenate([kernel.theta, likelihood.theta, np.atleast_1d(bias)])


def split_theta(kernel, likelihood, z):
    """``(kernel, likelihood, b)`` at ``z`` (:func:`joint_theta`'s layout); ``likelihood``
    itself when it has no free parameters or ``z`` holds its own."""
    k = kernel.n_dims
    return kernel.clone_with_theta(z[:k]), _at(likelihood, z[k:-1]), float(z[-1])


def _at(likelihood, theta_lik):
    """``likelihood`` at its log parameters ``theta_lik``: itself at its own values."""
    if np.array_equal(likelihood.theta, theta_lik):
        return likelihood
    return likelihood.clone_with_theta(theta_lik)


class AllRowsObjective:
    """``obj_func(z, eval_gradient=True)``: ``-log Z_EP`` of all labels, per row, at
    ``z = [theta, theta_lik, b]`` (:func:`joint_theta`).

    Divided by ``n`` so that the optimiser's tolerances do not depend on the data size. EP is
    warm-started from the sites of the previous finite evaluation, its sweeps
    Anderson-accelerated unless ``accelerate`` is False (None: the module's ``ACCELERATE``).
    ``weights``: the rows' weights (each row counts as that many copies,
    :class:`~skgpsparse.inference._sparse_prior.SparsePrior`; ``n`` is then their sum).
    """

    def __init__(self, kernel, X, y, X_u, sites, prior=PRIOR, tol=_EP_TOL, progress=None,
                 accelerate=None, likelihood=PROBIT, weights=None):
        self.kernel, self.X, self.y, self.X_u, self.prior = kernel, X, y, X_u, prior
        self.weights = weights
        self.likelihood = likelihood
        self.sites, self.tol, self.progress = sites, tol, progress
        self.accelerate = ACCELERATE if accelerate is None else accelerate
        self._best = None

    def likelihood_at(self, theta_lik):
        """The likelihood at its log parameters ``theta_lik``: the same object for the same
        values (EP's converged run is remembered for it, :mod:`skgpsparse.inference._ep`)."""
        last = getattr(self, "_last_likelihood", None)
        if last is None or not np.array_equal(last.theta, theta_lik):
            self._last_likelihood = last = _at(self.likelihood, theta_lik)
        return last

    def _warm(self):
        """EP's start: the sites of the lowest evaluation so far (the optimiser's iterate; a
        line search's next trial lies between it and the last, often rejected, trial), or
        those given."""
        return self.sites if self._best is None else self._best[1]

    def __call__(self, theta, eval_gradient=True):
        k = self.kernel.n_dims
        kernel = self.kernel.clone_with_theta(theta[:k])
        likelihood = self.likelihood
        if likelihood.theta.size:  # theta = [kernel's, likelihood's, b] (joint_theta)
            likelihood = self.likelihood_at(theta[k:-1])
        n = total_weight(self.y.size, self.weights)
        try:
            prior = SparsePrior(kernel, self.X, self.X_u, self.prior, weights=self.weights)
            with np.errstate(over="ignore"):  # an overflow is a refused (non-finite) value
                out = negative_log_evidence_all_rows(
                    prior, self.y, theta[-1], *self._warm(), eval_gradient=eval_gradient,
                    tol=self.tol, progress=self.progress, accelerate=self.accelerate,
                    likelihood=likelihood,
                )
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            out = None
        if out is None or not np.isfinite(out[0]) or not np.all(np.isfinite(out[-1][0])):
            value = np.finfo(float).max / 1e10  # keep the line search away, never a NaN
            return (value, np.zeros(theta.shape)) if eval_gradient else value
        self.sites = out[-1]
        if self._best is None or out[0] <= self._best[0]:
            self._best = (out[0], self.sites)
        if not eval_gradient:
            return out[0] / n
        if not np.all(np.isfinite(out[1])):
            return np.finfo(float).max / 1e10, np.zeros(theta.shape)
        return out[0] / n, out[1] / n
