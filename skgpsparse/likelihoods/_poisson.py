"""The Poisson likelihood of counts, with the log link.

Its tilted moments have no closed form. It gives ``log p(y | f)`` and its first two
derivatives in ``f``, so its moments come from Gauss-Hermite quadrature centred at the mode
of the tilted density (:meth:`~skgpsparse.likelihoods.Likelihood.tilted`): a peaked
likelihood (many counts) under a wide marginal stays accurate where quadrature centred at the
marginal's mean is not (``tests/core/test_likelihoods.py``).
"""

import numpy as np
from scipy.special import gammaln

from ._base import Likelihood

__all__ = ["Poisson"]


class Poisson(Likelihood):
    """``p(y | f) = exp(y f - e^f) / y!`` for counts ``y = 0, 1, 2, ...`` (the log link).

    The rate is ``exp(f)``; with a bias ``b`` the latent value is ``f + b``, so ``exp(b)`` is
    the rate of the prior's median function.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.likelihoods import Poisson
    >>> log_z, d_mean, d_var = Poisson().tilted(np.array([3.0]), np.array([1.0]), np.array([0.1]))
    >>> bool(d_mean[0] > 0)
    True
    """

    def log_density(self, y, f):
        y = np.asarray(y, dtype=float)
        return y * f - np.exp(f) - gammaln(y + 1.0)

    def log_density_derivatives(self, y, f):
        rate = np.exp(f)
        return y - rate, -rate

    def predictive_moments(self, mean, var):
        """The rate's log-normal moments: ``E[y] = exp(m + v / 2)`` and ``Var[y] = E[y] +
        (e^v - 1) E[y]^2`` (the Poisson's variance plus the rate's). The exponents are
        capped at 700 (finite in float64)."""
        mean_y = np.exp(np.minimum(mean + 0.5 * var, 700.0))
        return mean_y, mean_y + np.expm1(np.minimum(var, 700.0)) * mean_y * mean_y

    def predictive_covariance(self, mean, cov):
        """``Cov[y_i, y_j] = E[y_i] E[y_j] (e^C_ij - 1) + [i = j] E[y_i]``."""
        mean_y, _ = self.predictive_moments(mean, np.diag(cov))
        out = np.outer(mean_y, mean_y) * np.expm1(np.minimum(cov, 700.0))
        out[np.diag_indices_from(out)] += mean_y
        return out

    def initial_bias(self, target_mean, prior_variance):
        """``log`` of the mean count less half the prior variance: the prior's mean rate
        ``E[exp(f + b)] = exp(b + k / 2)`` is then the mean count."""
        return float(np.log(max(target_mean, 1e-3)) - 0.5 * prior_variance)

