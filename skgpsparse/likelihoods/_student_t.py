"""The Student-t likelihood of real targets: Gaussian noise with a heavy tail (outliers).

The Student-t density is a scale mixture of Gaussians (Rasmussen & Williams 2006, §9.3;
Geweke 1993): with ``lambda ~ Gamma(nu / 2, rate nu / 2)``,

    p(y | f) = int N(y; f, s^2 / lambda) Gamma(lambda) d lambda,

so under a Gaussian marginal ``N(f; m, v)`` the tilted normaliser is one integral over the
mixing variable, with the latent value integrated in closed form:

    Z(m, v) = int N(y; m, v + s^2 / lambda) Gamma(lambda) d lambda.

Integrated over ``f`` directly, the tilted density of an outlier has two modes (the marginal's
and the target's), which Gauss-Hermite rules centred at one of them miss. Over
``u = log lambda`` the integrand is smooth (analytic) and decays fast on both sides, though it
too can have two peaks, so it is integrated by the trapezoid rule (geometric convergence for
such integrands) over the range where it is within ``e^-36`` of its peak: a coarse grid brackets
the mass, Newton steps refine the peak and bisection the range's ends. With
``q = v + s^2 / lambda`` and ``r = y - m`` the derivatives are

    d log Z / dm = E[r / q],    d log Z / dv = E[(r^2 / q^2 - 1 / q) / 2]

under the integrand's normalised weights.
"""

import numpy as np
from scipy.special import gammaln

from ._base import Likelihood

__all__ = ["StudentT"]

# Trapezoid nodes in u = log(lambda) over the range where the integrand is within e^-36 of
# its peak (the rule converges geometrically for a smooth integrand).
_N_NODES = 160
_DROP = 36.0
# The coarse grid in u that brackets the integrand's mass before the refinements.
_GRID = np.linspace(-40.0, 10.0, 101)
_NEWTON_STEPS = 30
_BISECTIONS = 40


class StudentT(Likelihood):
    """``p(y | f)``: Student-t with ``dof`` degrees of freedom, centre ``f`` and ``scale``.

    ``log p(y | f) = log Gamma((nu + 1) / 2) - log Gamma(nu / 2) - log(pi nu s^2) / 2
    - (nu + 1) / 2 log(1 + (y - f)^2 / (nu s^2))``; as ``dof`` grows it tends to the
    Gaussian ``N(y; f, scale^2)``. The density is not log-concave, so an EP site's
    precision may come out negative; :meth:`site_update` keeps it at 0 or above (the
    conservative update), as the engines expect.

    Parameters
    ----------
    dof : float, default=4.0
        Degrees of freedom ``nu > 0``; small values give heavy tails.
    scale : float, default=1.0
        The scale ``s > 0`` (the standard deviation of the Gaussian it tends to).

    Examples
    --------
    An outlier (``y = 10`` under ``N(f; 0, 1)``) moves the tilted mean ``m + v d log Z / dm``
    far less than under the Gaussian of the same scale (which moves it by
    ``v y / (v + s^2) = 5``):

    >>> import numpy as np
    >>> from skgpsparse.likelihoods import StudentT
    >>> _, d_mean, _ = StudentT(dof=4.0, scale=1.0).tilted(
    ...     np.array([10.0]), np.array([0.0]), np.array([1.0]))
    >>> bool(1.0 * d_mean[0] < 1.0)
    True
    """

    def __init__(self, dof=4.0, scale=1.0):
        self.dof = dof
        self.scale = scale

    def log_density(self, y, f):
        nu, s2 = float(self.dof), float(self.scale) ** 2
        r2 = (np.asarray(y, dtype=float) - f) ** 2
        return (gammaln(0.5 * (nu + 1.0)) - gammaln(0.5 * nu) - 0.5 * np.log(np.pi * nu * s2)
                - 0.5 * (nu + 1.0) * np.log1p(r2 / (nu * s2)))

    def initial_bias(self, target_mean, prior_variance):
        """The mean target: the latent offset before learning."""
        return float(target_mean)

    def noise_variance(self):
        """The variance of the noise, ``s^2 nu / (nu - 2)``; infinite for ``nu <= 2``."""
        nu = float(self.dof)
        return float(self.scale) ** 2 * nu / (nu - 2.0) if nu > 2.0 else np.inf

    def predictive_moments(self, mean, var):
        """``E[y] = m`` and ``Var[y] = v + s^2 nu / (nu - 2)`` (infinite for ``nu <= 2``)."""
        mean = np.asarray(mean, dtype=float)
        return mean.copy(), np.asarray(var, dtype=float) + self.noise_variance()

    def predictive_covariance(self, mean, cov):
        """The latent covariance plus the noise's variance on the diagonal."""
        out = np.array(cov, dtype=float)
        out[np.diag_indices_from(out)] += self.noise_variance()
        return out

    # ------------------------------------------------------------------ moments
    def _log_integrand(self, u, r2, var):
        """``h(u)``: log of the Gamma density of ``u = log lambda`` (its Jacobian included)
        times ``N(r; 0, q)``, ``q = v + s^2 e^-u``; and ``q``."""
        a, s2 = 0.5 * float(self.dof), float(self.scale) ** 2
        q = var + s2 * np.exp(-u)
        log_gamma = a * np.log(a) - gammaln(a) + a * u - a * np.exp(u)
        return log_gamma - 0.5 * np.log(2.0 * np.pi * q) - 0.5 * r2 / q, q

    def _derivatives(self, u, r2, var):
        """``(h'(u), h''(u))`` of :meth:`_log_integrand`."""
        a, s2 = 0.5 * float(self.dof), float(self.scale) ** 2
        extra = s2 * np.exp(-u)  # q - v = -dq/du
        q = var + extra
        grad = a - a * np.exp(u) + 0.5 * extra / q - 0.5 * r2 * extra / q**2
        curv = (-a * np.exp(u) - 0.5 * var * extra / q**2
                + 0.5 * r2 * extra * (2.0 * var - q) / q**3)
        return grad, curv

    def _range(self, r2, var):
        """The ends of the range of ``u`` where ``h`` is within ``e^-36`` of its peak.

        The highest point of a coarse grid starts Newton steps to the peak (a bounded
        gradient step where ``h`` is not concave); each end is then bisected between the
        outermost grid point above the threshold (or the peak) and its outer neighbour."""
        grid_h, _ = self._log_integrand(_GRID, r2[..., None], var[..., None])
        best = np.argmax(grid_h, axis=-1)
        spacing = _GRID[1] - _GRID[0]
        peak = _GRID[best]
        for _ in range(_NEWTON_STEPS):
            grad, curv = self._derivatives(peak, r2, var)
            step = np.where(curv < 0.0, -grad / np.where(curv < 0.0, curv, -1.0), grad)
            step = np.clip(step, -spacing, spacing)
            peak = peak + step
            if np.all(np.abs(step) <= 1e-9):
                break
        peak_h = self._log_integrand(peak, r2, var)[0]
        top = np.maximum(peak_h, grid_h[np.arange(best.size), best])
        threshold = top - _DROP
        above = grid_h > threshold[..., None]
        first = np.where(above.any(axis=-1), np.argmax(above, axis=-1), best)
        last = np.where(above.any(axis=-1),
                        _GRID.size - 1 - np.argmax(above[..., ::-1], axis=-1), best)
        # inner ends: the outermost grid point above the threshold, or the peak if outer
        left_in = np.minimum(_GRID[first], peak)
        right_in = np.maximum(_GRID[last], peak)
        ends = []
        for inner, direction in ((left_in, -1.0), (right_in, 1.0)):
            outer = inner + direction * spacing
            lo, hi = inner.copy(), outer.copy()  # h(lo) > threshold >= h(hi), approximately
            for _ in range(_BISECTIONS):
                mid = 0.5 * (lo + hi)
                inside = self._log_integrand(mid, r2, var)[0] > threshold
                lo = np.where(inside, mid, lo)
                hi = np.where(inside, hi, mid)
            ends.append(hi)
        return ends[0], ends[1]

    def tilted(self, y, mean, var):
        """``(log Z, d log Z / d mean, d log Z / d var)`` by the trapezoid rule over the
        mixing variable (module docstring)."""
        y, mean, var = np.broadcast_arrays(
            np.asarray(y, dtype=float), np.asarray(mean, dtype=float),
            np.maximum(np.asarray(var, dtype=float), 0.0),
        )
        shape = y.shape
        r = np.ravel(y - mean)
        var = np.ravel(var)
        r2 = r * r
        left, right = self._range(r2, var)
        t = np.linspace(0.0, 1.0, _N_NODES)
        step = (right - left) / (_N_NODES - 1)
        nodes = left[:, None] + (right - left)[:, None] * t
        h, q = self._log_integrand(nodes, r2[:, None], var[:, None])
        h[:, [0, -1]] += np.log(0.5)  # the trapezoid's end weights
        top = np.max(h, axis=-1, keepdims=True)
        weights = np.exp(h - top)
        total = np.sum(weights, axis=-1)
        log_z = np.log(total) + top[:, 0] + np.log(step)
        weights /= total[:, None]
        d1 = np.sum(weights / q, axis=-1) * r
        d2 = 0.5 * np.sum(weights * (r2[:, None] / q**2 - 1.0 / q), axis=-1)
        return log_z.reshape(shape), d1.reshape(shape), d2.reshape(shape)

    def __repr__(self):
        return f"StudentT(dof={self.dof!r}, scale={self.scale!r})"
