"""The probit likelihood ``p(y | f) = Phi(y f / sqrt(sigma2))``, ``y in {-1, +1}``, in closed form.

``sigma2`` is the probit's noise variance: 1 for the classifier (the papers' ``lambda = 1``), the
relevance vector classifier's ``probit_variance`` otherwise. With ``s = sigma2 + v`` and
``z = y m / sqrt(s)`` (validation paper eq. (2.7); GPML eq. (3.82); SSEM paper eq. (18)),

    log Z = log Phi(z),   d log Z / dm = y r / sqrt(s),   d log Z / dv = -z r / (2 s),

where ``r = N(z) / Phi(z)`` is the inverse Mills ratio, computed stably for every ``z``
through ``erfcx``. The ADF site (additive-model paper eq. (2)) is then ``alpha = y r /
sqrt(s)``, ``nu = c / s`` with ``c = r (r + z) in [0, 1]``, so the site precision is at most
``1 / sigma2``.
"""

import math

import numpy as np
from scipy.special import erfcx, log_ndtr, ndtr, ndtri

from ._base import Likelihood

__all__ = ["Probit"]

# Site precisions are at most 1 for the probit likelihood (see site_update); a cap in case.
_MAX_PRECISION = 1e12
# Below z = -_SERIES_Z, r + z (r = N(z) / Phi(z)) comes from its asymptotic series.
_SERIES_Z = 100.0
_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TINY = np.finfo(float).tiny
# The prior's class balance is read with the fraction of positives clipped to this range.
_FRACTION_CLIP = (0.01, 0.99)


def mills_ratio(z):
    """``r = N(z) / Phi(z)`` alone, stable for all ``z`` (no overflow, no 0/0)."""
    z = np.asarray(z, dtype=float)
    # Phi(z) = erfcx(-z / sqrt 2) exp(-z^2 / 2) / 2, so r = sqrt(2 / pi) / erfcx(-z / sqrt 2):
    # the Gaussian factors cancel analytically (the log-space ratio exp(log N - log Phi)).
    with np.errstate(over="ignore"):
        return np.sqrt(2.0 / np.pi) / erfcx(-z / np.sqrt(2.0))


def inverse_mills(z):
    """``r = N(z) / Phi(z)`` and ``r + z > 0``, stable for all ``z`` (no overflow, no 0/0)."""
    z = np.asarray(z, dtype=float)
    r = mills_ratio(z)
    r_plus_z = np.asarray(r + z)
    # For z -> -inf, r + z cancels; r + z = 1/t - 2/t^3 + 10/t^5 + O(t^-7) with t = -z. The
    # series is evaluated only where it is used (its powers cost more than erfcx over a
    # whole array, and such z are rare).
    far = z < -_SERIES_Z
    if np.any(far):
        t = -z[far]
        r_plus_z[far] = 1.0 / t - 2.0 / t**3 + 10.0 / t**5
    return r, np.maximum(r_plus_z, np.finfo(float).tiny)


class Probit(Likelihood):
    """``p(y | f) = Phi(y f / sqrt(variance))`` for labels ``y in {-1, +1}``.

    With the classifier's bias ``b`` the latent value is ``f + b``; the moderated
    prediction under ``N(f + b; m, v)`` is ``Phi(m / sqrt(variance + v))`` (validation paper
    eq. (2.7)).

    Parameters
    ----------
    variance : float, default=1.0
        The probit's noise variance (1: the classifier's ``Phi(y f)``).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.likelihoods import Probit
    >>> p, shift, alpha, nu = Probit().site_update(np.ones(1), np.zeros(1), np.ones(1))
    >>> bool(0 < p[0] <= 1), bool(shift[0] > 0)
    (True, True)
    """

    def __init__(self, variance=1.0):
        self.variance = float(variance)

    def __repr__(self):
        return "Probit()" if self.variance == 1.0 else f"Probit(variance={self.variance!r})"

    def log_density(self, y, f):
        return log_ndtr(np.multiply(y, f) / np.sqrt(self.variance))

    def target_statistic(self, y):
        """Whether each label is the positive one (the fraction of positives is its mean)."""
        return np.asarray(y) > 0

    def initial_bias(self, target_mean, prior_variance):
        """Bias ``b`` with ``Phi(b / sqrt(variance + k(x, x)))`` equal to the fraction of
        positives: the prior's class balance, the fraction clipped to [0.01, 0.99]."""
        frac = np.clip(target_mean, *_FRACTION_CLIP)
        return float(np.sqrt(self.variance + prior_variance) * ndtri(frac))

    def _z(self, y, mean, var):
        """``z = y m / sqrt(variance + max(v, 0))`` and ``variance + max(v, 0)``."""
        s = self.variance + np.maximum(var, 0.0)
        return y * mean / np.sqrt(s), s

    def tilted(self, y, mean, var):
        z, s = self._z(y, mean, var)
        r = mills_ratio(z)
        return log_ndtr(z), y * r / np.sqrt(s), -r * z / (2.0 * s)

    def log_predictive(self, y, mean, var, *, overwrite=False):
        if not overwrite:
            return log_ndtr(self._z(y, mean, var)[0])
        # in place: z = y m / sqrt(variance + max(v, 0)), with m's and v's memory
        z = np.multiply(mean, y, out=mean)
        np.maximum(var, 0.0, out=var)
        var += self.variance
        np.sqrt(var, out=var)
        z /= var
        return log_ndtr(z, out=z)

    def predictive_margin(self, mean, var):
        return mean / np.sqrt(self.variance + np.maximum(var, 0.0))

    def predictive_probability(self, y, mean, var):
        return ndtr(self._z(y, mean, var)[0])

    def error_probability(self, y, mean, var):
        # Phi(-z): additive-model paper eq. (11)
        z = np.multiply(mean, -np.asarray(y, dtype=float))
        z /= np.sqrt(self.variance + np.maximum(var, 0.0))
        return ndtr(z, out=z)

    def site_update(self, y, mean, var):
        """Additive-model paper eq. (2), vectorised (see :meth:`Likelihood.site_update`).

        The precision ``nu / (1 - v nu)`` is written ``c / (sigma2 + v (1 - c))`` with
        ``c = r (r + z) in [0, 1]``, so ``0 <= precision <= 1 / sigma2`` and ``1 - v nu``
        never vanishes; the mean shift ``alpha / nu = y sqrt(sigma2 + v) / (r + z)``.
        """
        a = np.maximum(var, 0.0)
        s = self.variance + a
        sqrt_s = np.sqrt(s)
        # z_j = y_j m_j / sqrt(1 + A_jj); alpha_j = y_j N(z)/Phi(z) / sqrt(1 + A_jj)
        z = y * mean / sqrt_s
        r, r_plus_z = inverse_mills(z)
        alpha = y * r / sqrt_s
        # nu_j = alpha_j (alpha_j + m_j / (1 + A_jj)) = c / (1 + A_jj), c = r (r + z) in (0, 1)
        c = np.clip(r * r_plus_z, 0.0, 1.0)
        nu = c / s
        precision = np.minimum(c / (self.variance + a * (1.0 - c)), _MAX_PRECISION)
        mean_shift = y * sqrt_s / r_plus_z
        return precision, mean_shift, alpha, nu

    def site_update_one(self, y, mean, var):
        """:meth:`site_update` of one row in scalar arithmetic (the streaming ADF's rows come
        one after another; on length-one arrays the vectorised method's fixed cost was ten
        times the row's own arithmetic). ``z`` below ``-_SERIES_Z`` (where ``r + z``
        cancels) goes through the vectorised method."""
        s = self.variance + max(var, 0.0)
        z = y * mean / math.sqrt(s)
        if z < -_SERIES_Z:
            return super().site_update_one(y, mean, var)
        r = _SQRT_2_OVER_PI / float(erfcx(-z / _SQRT_2))  # N(z) / Phi(z), eq. (2)
        c = min(max(r * (r + z), 0.0), 1.0)
        v = self.variance
        return c / (v + (s - v) * (1.0 - c)), y * math.sqrt(s) / max(r + z, _TINY)
