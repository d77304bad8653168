"""The probit likelihood's ADF site update: the inverse Mills ratio and moment matching.

Likelihood: probit with bias, ``p(y | f) = Phi(y (f + b))``, ``y in {-1, +1}``. Moment
matching gives the site parameters of one observation from the current marginal
``N(f_hat_j, A_jj)`` (additive-model paper eq. (2)); both the ADF posterior and the site
optimisation and evidence objectives use the inverse Mills ratio ``N(z) / Phi(z)``.
"""

import numpy as np
from scipy.special import erfcx

__all__ = ["inverse_mills", "mills_ratio", "moment_matching"]

# Site precisions are at most 1 for the probit likelihood (see moment_matching); a cap in case.
_MAX_PRECISION = 1e12
# Below z = -_SERIES_Z, r + z (r = N(z) / Phi(z)) comes from its asymptotic series.
_SERIES_Z = 100.0

def mills_ratio(z):
    """``r = N(z) / Phi(z)`` alone, stable for all ``z`` (no overflow, no 0/0).

    The ``r`` of :func:`inverse_mills`, for callers that do not need ``r + z`` (the site
    optimisation's gradient evaluates it on n x kappa arrays about 30 times a step).
    """
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


def moment_matching(f, a, y, bias):
    """ADF site parameters of probit observations, additive-model paper eq. (2), vectorised.

    Parameters
    ----------
    f, a : ndarray of shape (k,)
        Current posterior means ``f_hat_j`` and variances ``A_jj`` (clipped at 0).
    y : ndarray of shape (k,)
        Labels in {-1, +1}.
    bias : float
        Bias ``b`` of the likelihood ``Phi(y (f + b))``.

    Returns
    -------
    precision : ndarray of shape (k,)
        ``p_j = nu_j / (1 - A_jj nu_j)``, written as ``c / (1 + A_jj (1 - c))`` with
        ``c = r (r + z) in [0, 1]``; so ``0 <= p_j <= 1`` and ``1 - A_jj nu_j`` never vanishes.
    mean_shift : ndarray of shape (k,)
        ``m_j - f_hat_j = alpha_j / nu_j = y_j sqrt(1 + A_jj) / (r + z)``.
    alpha, nu : ndarray of shape (k,)
        ``alpha_j`` and ``nu_j`` of eq. (2); the update of eq. (3) is
        ``f_hat += alpha_j A_.j`` and ``diag(A) -= nu_j A_.j^2``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.classification._probit import moment_matching
    >>> p, dm, alpha, nu = moment_matching(np.zeros(1), np.ones(1), np.ones(1), 0.0)
    >>> bool(0 < p[0] <= 1), bool(dm[0] > 0)
    (True, True)
    """
    a = np.maximum(a, 0.0)
    s = 1.0 + a
    sqrt_s = np.sqrt(s)
    # z_j = y_j (f_j + b) / sqrt(1 + A_jj); alpha_j = y_j N(z)/Phi(z) / sqrt(1 + A_jj)
    z = y * (f + bias) / sqrt_s
    r, r_plus_z = inverse_mills(z)
    alpha = y * r / sqrt_s
    # nu_j = alpha_j (alpha_j + (f_j + b) / (1 + A_jj)) = c / (1 + A_jj), c = r (r + z) in (0, 1)
    c = np.clip(r * r_plus_z, 0.0, 1.0)
    nu = c / s
    precision = np.minimum(c / (1.0 + a * (1.0 - c)), _MAX_PRECISION)
    mean_shift = y * sqrt_s / r_plus_z
    return precision, mean_shift, alpha, nu
