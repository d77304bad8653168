"""Predictions of a regressor fitted with a non-Gaussian likelihood: the moments and the
density of the target.

The latent model's predictor (:mod:`skgpsparse.latent._predictors`) gives the marginal
``N(f_* + b; m, v)`` at each query row; the likelihood turns it into the target's predictive
mean and variance (:meth:`~skgpsparse.likelihoods.Likelihood.predictive_moments`: for the
Poisson ``E[y] = exp(m + v / 2)``, for the Student-t ``m``) and its log density
``log int p(y | f) N(f; m, v) df`` (the tilted normaliser, ``log_predictive``). The targets
were fitted as ``(y - centre) / scale`` (:mod:`._likelihood_fit`); the outputs are in the
units of ``y``.
"""

import numpy as np

__all__ = ["TargetPredictor"]


class TargetPredictor:
    """The target's predictive moments and density from a fitted latent model.

    Parameters
    ----------
    latent : BinaryPredictor or AllRowsPredictor
        The latent model's predictor (``latent_mean_and_variance`` by blocks of rows).
    kernel : Kernel
        The fitted kernel (the prior covariance of ``return_cov``).
    likelihood : Likelihood
        ``p(y | f + b)``.
    """

    def __init__(self, latent, kernel, likelihood):
        self.latent, self.kernel, self.likelihood = latent, kernel, likelihood

    def predict(self, X, return_std=False, return_cov=False, centre=0.0, scale=1.0):
        """``E[y]`` at the rows of ``X`` and, optionally, the standard deviation of ``y`` or
        the covariance of the targets (the shapes of the Gaussian regressor's)."""
        if return_cov:
            mean, cov = self._latent_covariance(X)
            mean_y, _ = self.likelihood.predictive_moments(mean, np.diag(cov))
            cov_y = self.likelihood.predictive_covariance(mean, cov)
            return centre + scale * mean_y, scale * scale * cov_y
        mean, var = self.latent.latent_mean_and_variance(X)
        mean_y, var_y = self.likelihood.predictive_moments(mean, var)
        if not return_std:
            return centre + scale * mean_y
        return centre + scale * mean_y, scale * np.sqrt(var_y)

    def log_density(self, X, y, centre=0.0, scale=1.0):
        """``log p(y_* | x_*, data)`` of each row (in the units of ``y``)."""
        mean, var = self.latent.latent_mean_and_variance(X)
        return self.likelihood.log_predictive((y - centre) / scale, mean, var) - np.log(scale)

    def _latent_covariance(self, X):
        """The joint latent marginal at the rows of ``X``: mean of ``f_* + b`` and
        ``K_** - P P^T`` with ``P = K_*u W^T`` (the predictor's projection)."""
        projection = self.latent.projection
        P = np.empty((X.shape[0], projection.shape[1]))
        for rows, K in self.latent.cross.blocks(X):
            P[rows] = K @ projection
        mean = P[:, 0] + self.latent.bias
        V = P[:, 1:]
        return mean, self.kernel(X) - V @ V.T
