"""The Poisson likelihood of counts, with the log link.

Its tilted moments have no closed form: they come from Gauss-Hermite quadrature centred at
the mode of the tilted density, which is log-concave, with the width of its Laplace fit (as
:meth:`~skgpsparse.likelihoods.Likelihood.tilted` does for a likelihood with derivatives): a
peaked likelihood (many counts) under a wide marginal stays accurate where quadrature centred
at the marginal's mean is not (``tests/core/test_likelihoods.py``). The tilted density is
close to its Laplace fit where the marginal is narrow, so the rule takes fewer nodes there
(:data:`_NODES_BY_VARIANCE`), and ``log y!`` is added once per row, not per node: EP sweeps
over a million rows call it on every row.
"""

import numpy as np
from scipy.special import gammaln

from ._base import Likelihood

# Newton steps of the mode's equation (quadratic convergence from the start: a few suffice).
_NEWTON_STEPS = 30
# Below this L the mode's z = W(e^L) is e^L to float64 precision (relative error e^L).
_W_LINEAR = -700.0

__all__ = ["Poisson"]

# Gauss-Hermite nodes by the marginal's variance v (the largest v of each class): relative
# errors of log Z and its derivatives against a fine grid in f, 300-400 rows with counts
# drawn at rates exp(m + N(0, 1)): 16 nodes for v <= 0.5 below 2e-9 (24: 5e-11); 32 for
# v <= 2 below 5e-8 (48: 1e-9); 48 for v <= 5 below 1e-6 (64: 1e-7); 80 beyond (4e-5 for v
# in 5..20, 2e-3 for v in 20..100, where a small count's tilted density ends at a cliff a
# rule centred at its mode covers badly: a latent standard deviation above 4.5). EP stops at
# site changes of 1e-6, so the rules are chosen at about that accuracy, for speed.
_NODES_BY_VARIANCE = ((0.5, 16), (2.0, 32), (5.0, 48), (np.inf, 80))
# Their nodes x_k and log(w_k / sqrt(pi)) + x_k^2, computed once (an eigenvalue problem each).
_RULES = {}


def _rule(n_nodes):
    if n_nodes not in _RULES:
        x, w = np.polynomial.hermite.hermgauss(n_nodes)
        _RULES[n_nodes] = (x, np.log(w / np.sqrt(np.pi)) + x * x)
    return _RULES[n_nodes]
# Rows per block of the quadrature (its n x nodes temporaries stay in cache).
_BLOCK = 4096


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

    def tilted(self, y, mean, var):
        """``(log Z, d log Z / d mean, d log Z / d var)`` by Gauss-Hermite quadrature at the
        tilted density's mode (module docstring), ``var`` clipped at 1e-10."""
        y, mean, var = np.broadcast_arrays(
            np.asarray(y, dtype=float), np.asarray(mean, dtype=float),
            np.maximum(np.asarray(var, dtype=float), 1e-10),
        )
        shape = y.shape
        y, mean, var = np.ravel(y), np.ravel(mean), np.ravel(var)
        out = np.empty((3, y.size))
        lower = -np.inf
        for upper, n_nodes in _NODES_BY_VARIANCE:
            rows = np.flatnonzero((var > lower) & (var <= upper))
            lower = upper
            x, shift = _rule(n_nodes)
            for start in range(0, rows.size, _BLOCK):
                block = rows[start:start + _BLOCK]
                out[:, block] = self._quadrature(y[block], mean[block], var[block], x, shift)
        return tuple(a.reshape(shape) for a in out)

    def _mode(self, y, mean, var):
        """The tilted density's mode and the width of its Laplace fit, in closed form.

        ``g'(f) = y - e^f - (f - m) / v = 0`` is ``z e^z = v e^(m + v y)`` with
        ``z = m + v y - f > 0`` (Lambert's W): Newton steps on ``z + log z = L``,
        ``L = log v + m + v y``, from a start below the root (the function is concave and
        increasing, so the steps approach it from below without overshooting); then
        ``e^f = z / v`` and the width ``(-1 / g'')^1/2 = (v / (1 + z))^1/2``. Where ``L <
        -700`` (a cavity mean far below the data's rates) ``z = e^L``: ``W(x) = x (1 - x +
        ...)`` is ``x`` in float64 there, and ``e^L`` may underflow to 0 (so does Newton's
        ``z``, and ``log z`` with it)."""
        L = np.log(var) + mean + var * y
        linear = L < _W_LINEAR
        any_linear = bool(np.any(linear))
        L_newton = np.where(linear, 0.0, L) if any_linear else L
        t = np.exp(np.minimum(L_newton, 1.0))
        z = np.where(L_newton < 1.0, t / (1.0 + t),
                     L_newton - np.log(np.maximum(L_newton, 1.0)))
        for _ in range(_NEWTON_STEPS):
            step = (z + np.log(z) - L_newton) * z / (z + 1.0)
            z = z - step
            if np.all(np.abs(step) <= 1e-13 * z):
                break
        if any_linear:
            z = np.where(linear, np.exp(np.minimum(L, _W_LINEAR)), z)
        return mean + var * y - z, np.sqrt(var / (1.0 + z))

    def _quadrature(self, y, mean, var, x, shift):
        """:meth:`tilted` of one block of rows: ``Z = sum_k w_k e^(x_k^2) p(y | f_k)
        N(f_k; m, v) / N(f_k; c, s^2)`` at ``f_k = c + sqrt(2) s x_k``."""
        centre, width = self._mode(y, mean, var)
        nodes = centre[:, None] + (np.sqrt(2.0) * width)[:, None] * x
        offsets = nodes - mean[:, None]  # f_k - m
        log_terms = y[:, None] * nodes - np.exp(nodes) - offsets**2 / (2.0 * var[:, None])
        log_terms += shift
        top = np.max(log_terms, axis=1, keepdims=True)
        weights = np.exp(log_terms - top)
        total = np.sum(weights, axis=1)
        log_z = (np.log(total) + top[:, 0] + np.log(width / np.sqrt(var))
                 - gammaln(y + 1.0))
        first = np.einsum("ij,ij->i", weights, offsets) / total  # E[f - m]
        second = np.einsum("ij,ij->i", weights, offsets * offsets) / total  # E[(f - m)^2]
        return log_z, first / var, (second / var - 1.0) / (2.0 * var)

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

