"""The regressor's predictions: ``predict`` and ``log_predictive_density``.

Both route a query to the fitted predictor: the Gaussian model's
(:class:`~._prediction.RegressionPredictor`) or a non-Gaussian likelihood's
(:class:`~._likelihood_prediction.TargetPredictor`), by row partitions on a partitioned ``X``
and by row numbers for structured inputs; unfitted, the prior.
"""

import numpy as np
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import plain_float_rows
from ..kernels._structured import indexed_predictors, is_structured, refuse_structured
from ..rows import backend_for
from ._partitioned_fit import predict_partitioned
from ._targets import prior_prediction

__all__ = ["log_predictive_density", "predict", "predict_validated"]


def predict(self, X, return_std=False, return_cov=False):
    """Predictive mean and, optionally, the latent standard deviation or covariance.

    With a non-Gaussian ``likelihood``, the predictive mean of ``y`` (for ``"poisson"`` the
    expected count, ``exp(m + v / 2)`` with ``m``, ``v`` the latent marginal's moments) and
    the standard deviation or covariance of ``y`` itself, its noise included (for
    ``"student_t"`` the variance ``v + scale^2 dof / (dof - 2)``, infinite for ``dof <= 2``).

    The variance is the projected-process one (GPML eq. (8.27)),
    ``k(x, x) - k_u(x)^T K_uu^-1 k_u(x) + s2 k_u(x)^T (s2 K_uu + K_uf K_fu)^-1 k_u(x)``,
    computed as ``k(x, x) - a^T S a`` with ``a = L^-1 k_u`` (``L`` the factor of the
    jittered ``K_uu``, used as a preconditioner; see
    :mod:`skgpsparse.regression._prediction`): O(p^2) per row. It is the variance of
    the latent function, without ``noise_variance_``. With every training point in the
    basis, the mean and the variance are the exact GP's.

    Parameters
    ----------
    X : array-like or partitioned array of shape (n_samples, n_features)
        Query points. A partitioned array (see ``fit``) gives arrays of its kind
        partitioned as its rows, computed lazily (one task per partition, the fitted
        model shipped with it).
    return_std : bool, default=False
        Also return the latent standard deviation.
    return_cov : bool, default=False
        Also return the latent covariance between the query points.

    Returns
    -------
    y_mean : ndarray of shape (n_samples,) or (n_samples, n_targets)
        Predictive mean ``k_u(x)^T alpha_`` (plus the target mean with ``normalize_y``).
    y_std : ndarray of shape (n_samples,) or (n_samples, n_targets)
        Latent standard deviation (add ``noise_variance_`` to the variance for the noisy
        targets; a ``WhiteKernel`` term's level is in it, as in scikit-learn). Only if
        ``return_std``.
    y_cov : ndarray of shape (n_samples, n_samples) or (n_samples, n_samples, n_targets)
        Latent covariance. Only if ``return_cov``.

    With several targets the shapes are scikit-learn's ``GaussianProcessRegressor``'s: a
    trailing target axis, dropped when there is a single column.

    Raises
    ------
    RuntimeError
        If both ``return_std`` and ``return_cov`` are requested (as scikit-learn's
        ``GaussianProcessRegressor``).
    """
    if return_std and return_cov:
        raise RuntimeError("At most one of return_std or return_cov can be requested.")
    backend = backend_for(X)
    if backend is not None:  # by row partition, lazily where the backend is
        return predict_partitioned(self, backend, X, return_std, return_cov)
    # A finite float ndarray skips validate_data's fixed cost (single rows, BO loops); the
    # array is the one validate_data would return, and every other input goes through it.
    if is_structured(self):  # strings, sequences...: their row numbers, looked up
        fitted = getattr(self, "_predictor", None)
        X_rows, (predictor,) = indexed_predictors(self, X, [fitted])
        return predictor.predict(
            X_rows, return_std, return_cov, self._y_train_mean, self._y_train_std
        )
    X_plain = plain_float_rows(self, X) if hasattr(self, "_predictor") else None
    if X_plain is None:
        X_plain = validate_data(self, X, reset=False, dtype=np.float64)
    return self._predict_validated(X_plain, return_std, return_cov)

def predict_validated(self, X_plain, return_std=False, return_cov=False):
    """:meth:`predict` on an ``X`` already validated (float64, the fitted width)."""
    predictor = getattr(self, "_predictor", None)
    if predictor is None:  # unfitted: the prior, as scikit-learn's GPR
        kernel = C(1.0) * RBF(1.0) if self.kernel is None else self.kernel
        return prior_prediction(kernel, X_plain, self.n_targets, return_std, return_cov)
    return predictor.predict(
        X_plain, return_std, return_cov, self._y_train_mean, self._y_train_std
    )


def log_predictive_density(self, X, y):
    """Log predictive density of the targets ``y`` at the rows of ``X``, one per row.

    ``log p(y_* | x_*, data) = log int p(y_* | f) q(f | x_*) df`` under the fitted latent
    marginal ``q`` and the likelihood (for the Gaussian, ``log N(y_*; mean, var +
    noise_variance_)``): the quantity whose negative mean is the test NLPD. For counts it is
    the log probability of each count.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Query points.
    y : array-like of shape (n_samples,)
        Their targets.

    Returns
    -------
    log_density : ndarray of shape (n_samples,)
    """
    check_is_fitted(self)
    refuse_structured(self, "log_predictive_density")
    X = validate_data(self, X, reset=False, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (X.shape[0],):
        raise ValueError(
            f"y must have shape ({X.shape[0]},) (one target per row of X); got {y.shape}."
        )
    predictor = self._predictor
    if hasattr(predictor, "log_density"):  # a non-Gaussian likelihood's
        return predictor.log_density(X, y, self._y_train_mean, self._y_train_std)
    if np.ndim(self.noise_variance_) > 0:
        raise ValueError(
            "log_predictive_density needs the noise of the query rows, which a fit with a "
            "noise_variance array does not know."
        )
    mean, std = self.predict(X, return_std=True)
    if np.ndim(mean) > 1:
        raise ValueError("log_predictive_density takes one target (y of shape (n_samples,)).")
    var = std**2 + float(self.noise_variance_) * self._y_train_std**2
    return -0.5 * (np.log(2.0 * np.pi * var) + (y - mean) ** 2 / var)
