"""Robust regression: the Student-t likelihood's EP posterior over all rows, and its learning.

With a heavy-tailed likelihood ``p(y | f + b) = t_nu(y; f + b, s)``
(:class:`~skgpsparse.likelihoods.StudentT`) EP over every row under the sparse prior of a basis
(:mod:`skgpsparse.inference._ep`) keeps negative site precisions for the rows it discounts
(:mod:`skgpsparse.inference._ep_signed`; Jylanki, Vanhatalo and Vehtari 2011, JMLR 12, "Robust
Gaussian process regression with a Student-t likelihood"). :func:`fit_student_t` learns the
kernel's ``theta``, the bias ``b`` and the likelihood's scale ``s`` (``dof`` fixed) by the EP
evidence (GPML eq. (3.65) under the sparse prior):

- At EP's fixed point the evidence is stationary in the sites, so its gradient is the explicit
  one (GPML §5.5.2): in ``theta`` and ``b``
  :func:`~skgpsparse.inference._ep.negative_log_evidence_all_rows`'s, and in ``log s`` the sum
  over rows of ``d log Z_i / d log s`` at the cavities (the only terms with ``s``; the
  likelihood's ``parameter_gradient``). This holds only where EP converged with the sites
  it matched: clipping negative precisions at 0 breaks it (the gradient in ``theta`` was off by
  a factor 1.6), and an evaluation whose EP did not converge is refused (the line search then
  steps back).
- The start is the caller's (the Gaussian fit's kernel and basis, its residuals' robust scale).
"""

from collections import namedtuple

import numpy as np
from scipy.optimize import minimize
from sklearn.utils import check_random_state

from ..likelihoods import StudentT
from ._ep import _EP_TOL, all_rows_ep, negative_log_evidence_all_rows
from ._ep_passes import WeightPosterior
from ._sparse_prior import SparsePrior

__all__ = ["StudentTFit", "fit_student_t", "robust_scale"]

# EP's tolerance on the sites while L-BFGS-B searches (the evidence is stationary in the
# sites), then the kept point's sites to _EP_TOL.
_SEARCH_TOL = 1e-3
# Bounds of log s relative to the standard deviation of the targets, and of the bias in
# standard deviations of the targets.
_SCALE_RANGE = (1e-4, 10.0)
_BIAS_RANGE = 5.0
# The Gaussian scale-mixture's constant 1.4826: a MAD of the residuals is this times their sd.
_MAD_TO_SD = 1.4826

StudentTFit = namedtuple(
    "StudentTFit",
    ["kernel", "likelihood", "bias", "sites", "posterior", "log_evidence", "converged",
     "n_evaluations"],
)
StudentTFit.__doc__ = """The learned model: ``kernel``, ``likelihood`` (its scale learned),
``bias``, the EP ``sites`` ``(tau~, nu~)`` of every row, the ``posterior`` of ``w``
(:class:`~skgpsparse.inference._ep_passes.WeightPosterior`: predictions are
``k_*u L^-T mean_w + b``), the EP ``log_evidence``, whether EP ``converged`` there, and the
number of evidence evaluations."""


def robust_scale(residuals):
    """``1.4826 MAD``: the scale of the residuals' bulk, which gross errors do not widen (their
    standard deviation if half or more of them are equal)."""
    r = np.asarray(residuals, dtype=float)
    scale = float(_MAD_TO_SD * np.median(np.abs(r - np.median(r))))
    # half or more of the residuals equal: their standard deviation
    return scale if scale > 0 else float(np.std(r)) or 1.0


class _Evidence:
    """``-log Z_EP / n`` and its gradient in ``z = [theta, b, log s]``, EP warm-started."""

    def __init__(self, kernel, X, y, X_u, dof, prior, sites, weights=None):
        self.kernel, self.X, self.y, self.X_u = kernel, X, y, X_u
        self.dof, self.prior, self.weights = dof, prior, weights
        self.sites, self.best, self.evaluations = sites, None, 0

    def split(self, z):
        k = self.kernel.n_dims
        likelihood = StudentT(self.dof, float(np.exp(z[k + 1])), dof_bounds="fixed")
        return self.kernel.clone_with_theta(z[:k]), float(z[k]), likelihood

    def __call__(self, z, tol=_SEARCH_TOL):
        self.evaluations += 1
        kernel, bias, likelihood = self.split(z)
        refused = np.finfo(float).max / 1e10, np.zeros(z.shape)  # the line search steps back
        start = self.sites if self.best is None else self.best[1]
        try:
            prior = SparsePrior(kernel, self.X, self.X_u, self.prior, weights=self.weights)
            tau, nu, _, converged = all_rows_ep(
                prior, self.y, bias, *start, tol=tol, accelerate=True, likelihood=likelihood
            )
            if not converged:  # the fixed-point gradient holds only at the fixed point
                return refused
            # EP's converged run is remembered (inference._ep._converged_run): no sweeps here
            value, grad, _ = negative_log_evidence_all_rows(
                prior, self.y, bias, tau, nu, eval_gradient=True, tol=tol, likelihood=likelihood
            )
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            return refused
        if not np.isfinite(value) or not np.all(np.isfinite(grad)):
            return refused
        self.sites = (tau, nu)
        if self.best is None or value <= self.best[0]:
            self.best = (value, self.sites)
        n = self.y.size if self.weights is None else float(np.sum(self.weights))
        # the engine's order is [theta, log s, b]; z's is [theta, b, log s]
        k = self.kernel.n_dims
        return value / n, np.concatenate([grad[:k], grad[k + 1:], grad[k:k + 1]]) / n


def fit_student_t(kernel, X, y, X_u, *, scale, dof=4.0, bias=0.0, prior="dtc", max_iter=15,
                  learn=True, learning_rows=2000, random_state=None, weights=None):
    """The Student-t likelihood's EP posterior over all rows under the basis ``X_u``, with
    ``(theta, b, s)`` learned by the EP evidence (module docstring).

    Parameters
    ----------
    kernel : Kernel
        The start of the kernel (its ``theta`` is learned; e.g. the Gaussian fit's).
    X : ndarray of shape (n, n_features)
    y : ndarray of shape (n,)
        Real targets.
    X_u : ndarray of shape (p, n_features)
        The basis (inducing inputs), kept fixed.
    scale : float
        The start of the likelihood's scale ``s`` (e.g. :func:`robust_scale` of a Gaussian
        fit's training residuals).
    dof : float, default=4.0
        The degrees of freedom, fixed.
    bias : float, default=0.0
        The start of ``b``.
    prior : {"fitc", "dtc"}, default="dtc"
        The sparse prior (:class:`~skgpsparse.inference._sparse_prior.SparsePrior`). DTC is the
        Gaussian regressor's; under FITC the rows' own prior variances ``Lambda`` act as a
        second noise, and the learned scale fell toward 0 on clean targets while EP stopped
        converging.
    max_iter : int, default=15
        L-BFGS-B's iterations.
    learn : bool, default=True
        False: EP at the start, nothing learned.
    learning_rows : int or None, default=2000
        ``(theta, b, s)`` are learned on a random subsample of this many rows (None: all),
        then EP runs on every row at the learned values.
    random_state : int, RandomState or None, default=None
        Draws the learning subsample.
    weights : ndarray of shape (n,), default=None
        Row weights (each row counts as that many copies).

    Returns
    -------
    StudentTFit
    """
    y = np.asarray(y, dtype=float)
    spread = float(np.std(y)) or 1.0
    rows = slice(None)
    if learn and learning_rows is not None and y.size > learning_rows:
        rows = np.sort(check_random_state(random_state).choice(y.size, learning_rows,
                                                               replace=False))
    evidence = _Evidence(kernel, X[rows], y[rows], X_u, dof, prior, (None, None),
                         None if weights is None else weights[rows])
    z0 = np.concatenate([kernel.theta, [bias, np.log(scale)]])
    if learn:
        bounds = np.vstack([
            kernel.bounds.reshape(-1, 2),
            [[-_BIAS_RANGE * spread, _BIAS_RANGE * spread]],
            [np.log(np.array(_SCALE_RANGE) * spread)],
        ])
        result = minimize(evidence, z0, jac=True, method="L-BFGS-B", bounds=bounds,
                          options={"maxiter": max_iter})
        z = result.x
    else:
        z = z0
    kernel, bias, likelihood = evidence.split(z)
    sparse = SparsePrior(kernel, X, X_u, prior, weights=weights)
    start = (None, None)
    if isinstance(rows, slice) and evidence.best is not None:
        start = evidence.best[1]
    tau, nu, (_, _, factors), converged = all_rows_ep(sparse, y, bias, *start, tol=_EP_TOL,
                                                      accelerate=True, likelihood=likelihood)
    value, _ = negative_log_evidence_all_rows(sparse, y, bias, tau, nu, tol=_EP_TOL,
                                              accelerate=True, likelihood=likelihood)
    posterior = WeightPosterior(factors[3], factors[5], factors[6])
    return StudentTFit(kernel, likelihood, bias, (tau, nu), posterior, -value, converged,
                       evidence.evaluations)
