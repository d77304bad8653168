"""The Student-t likelihood of real targets: Gaussian noise with a heavy tail (outliers).

The Student-t density is a scale mixture of Gaussians (Rasmussen & Williams 2006, §9.3;
Geweke 1993): with ``lambda ~ Gamma(nu / 2, rate nu / 2)``,

    p(y | f) = int N(y; f, s^2 / lambda) Gamma(lambda) d lambda,

so under a Gaussian marginal ``N(f; m, v)`` the tilted normaliser is one integral over the
mixing variable, with the latent value integrated in closed form:

    Z(m, v) = int N(y; m, q) Gamma(lambda) d lambda,    q = v + s^2 / lambda.

Integrated over ``f`` directly, the tilted density of an outlier has two modes (the marginal's
and the target's), which Gauss-Hermite rules centred at one of them miss; over the mixing
variable the integrand is smooth and is integrated by Gauss-Laguerre or a checked trapezoid
rule (:mod:`._scale_mixture`). With ``r = y - m`` the derivatives are expectations under the
integrand's normalised weights (differentiate ``N(r; 0, q)`` under the integral):

    d log Z / dm = r E[1/q],    d log Z / dv = (r^2 E[1/q^2] - E[1/q]) / 2,

and those in the likelihood's own parameters, with ``dq / d log s = 2 s^2 / lambda`` and
``d log Gamma(lambda; a, a) / da = log a - psi(a) + (log lambda - lambda + 1)`` (``a = nu / 2``;
both terms are ``O(1 / a)``, so large ``dof`` loses nothing to cancellation):

    d log Z / d log s = E[(s^2 / (lambda q)) (r^2 / q - 1)],
    d log Z / d log nu = a (log a - psi(a) + E[log lambda - lambda + 1]).
"""

import numpy as np
from scipy.special import gammaln
from sklearn.gaussian_process.kernels import Hyperparameter

from ._base import Likelihood
from ._scale_mixture import digamma_gap, mixture_moments

__all__ = ["StudentT"]


class StudentT(Likelihood):
    """``p(y | f)``: Student-t with ``dof`` degrees of freedom, centre ``f`` and ``scale``.

    ``log p(y | f) = log Gamma((nu + 1) / 2) - log Gamma(nu / 2) - log(pi nu s^2) / 2
    - (nu + 1) / 2 log(1 + (y - f)^2 / (nu s^2))``; as ``dof`` grows it tends to the
    Gaussian ``N(y; f, scale^2)``. The density is not log-concave, so an EP site's
    precision may come out negative: :meth:`site_update` keeps it at 0 or above (the
    conservative update of the ADF engines), while EP over all rows keeps the negative
    precisions (``log_concave = False``; :mod:`skgpsparse.inference._ep_passes`).

    ``scale`` and ``dof`` are hyperparameters a learning loop may fit beside the kernel's:
    :attr:`theta` is ``[log scale, log dof]`` (those not ``"fixed"``), :attr:`bounds` their
    log bounds and :meth:`parameter_gradient` the derivatives of ``log Z`` in them.

    Parameters
    ----------
    dof : float, default=4.0
        Degrees of freedom ``nu > 0``; small values give heavy tails.
    scale : float, default=1.0
        The scale ``s > 0`` (the standard deviation of the Gaussian it tends to).
    dof_bounds : pair of floats >= 0 or "fixed", default=(1.0, 1000.0)
        The range a learning loop may move ``dof`` in; ``"fixed"`` keeps it out of
        :attr:`theta`.
    scale_bounds : pair of floats >= 0 or "fixed", default=(1e-5, 1e5)
        The range a learning loop may move ``scale`` in; ``"fixed"`` keeps it out of
        :attr:`theta`.

    Examples
    --------
    An outlier (``y = 10`` under ``N(f; 0, 1)``) moves the tilted mean ``m + v d log Z / dm``
    far less than under the Gaussian of the same scale (which moves it by
    ``v y / (v + s^2) = 5``):

    >>> import numpy as np
    >>> from skgpsparse.likelihoods import StudentT
    >>> lik = StudentT(dof=4.0, scale=1.0)
    >>> _, d_mean, _ = lik.tilted(np.array([10.0]), np.array([0.0]), np.array([1.0]))
    >>> bool(1.0 * d_mean[0] < 1.0)
    True
    >>> lik.theta.round(4), lik.parameter_gradient(
    ...     np.array([10.0]), np.array([0.0]), np.array([1.0])).shape
    (array([0.    , 1.3863]), (1, 2))
    """

    log_concave = False

    def __init__(self, dof=4.0, scale=1.0, *, dof_bounds=(1.0, 1000.0),
                 scale_bounds=(1e-5, 1e5)):
        self.dof = dof
        self.scale = scale
        self.dof_bounds = dof_bounds
        self.scale_bounds = scale_bounds

    @property
    def hyperparameters(self):
        return [Hyperparameter("scale", "numeric", self.scale_bounds),
                Hyperparameter("dof", "numeric", self.dof_bounds)]

    def _checked(self):
        """``(dof, scale)`` as floats; a ValueError names the one that is not positive."""
        nu, s = float(self.dof), float(self.scale)
        for name, value in (("dof", nu), ("scale", s)):
            if not (np.isfinite(value) and value > 0.0):
                raise ValueError(f"StudentT's {name} must be a positive number, got {value!r}.")
        return nu, s

    def log_density(self, y, f):
        nu, s = self._checked()
        s2 = s * s
        r2 = (np.asarray(y, dtype=float) - f) ** 2
        return (gammaln(0.5 * (nu + 1.0)) - gammaln(0.5 * nu) - 0.5 * np.log(np.pi * nu * s2)
                - 0.5 * (nu + 1.0) * np.log1p(r2 / (nu * s2)))

    def target_centre(self, y, weights=None):
        """The median target (over the rows' copies, given ``weights``): the gross outliers
        the heavy tail is for do not move the start. From the mean, 5 % of targets
        displaced by 300 spreads or more started the bias so far from the rest that every
        row was an outlier to it, and the fit ended flat (``tests/regression``). Over copies:
        the smallest target whose rows hold half the total weight or more at or below it.

        Examples
        --------
        >>> from skgpsparse.likelihoods import StudentT
        >>> t = StudentT()
        >>> t.target_centre([3.0, 1.0, 2.0]), t.target_centre([1.0, 2.0, 10.0], [1, 1, 3])
        (2.0, 10.0)
        """
        y = np.asarray(y, dtype=float)
        if weights is None:
            return float(np.median(y))
        order = np.argsort(y, kind="stable")
        cumulative = np.cumsum(np.asarray(weights, dtype=float)[order])
        return float(y[order][np.searchsorted(cumulative, 0.5 * cumulative[-1])])

    def initial_bias(self, target_mean, prior_variance):
        """The targets' centre (:meth:`target_centre`, their median): the latent offset
        before learning."""
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
    def _moments(self, y, mean, var, with_parameters):
        """Residuals, variances, the output shape and :func:`mixture_moments` of the rows."""
        nu, s = self._checked()
        y, mean, var = np.broadcast_arrays(
            np.asarray(y, dtype=float), np.asarray(mean, dtype=float),
            np.maximum(np.asarray(var, dtype=float), 0.0),
        )
        r = np.ravel(y - mean)
        var = np.ravel(var).astype(float, copy=True)
        return r, var, y.shape, mixture_moments(r, var, nu, s, with_parameters)

    def tilted(self, y, mean, var):
        """``(log Z, d log Z / d mean, d log Z / d var)`` by quadrature over the mixing
        variable (module docstring)."""
        r, _, shape, (log_z, inv_q, inv_q2) = self._moments(y, mean, var, False)
        d1 = r * inv_q
        d2 = 0.5 * (r * r * inv_q2 - inv_q)
        return log_z.reshape(shape), d1.reshape(shape), d2.reshape(shape)

    def parameter_gradient(self, y, mean, var):
        """``d log Z / d theta``: per row, the derivatives in ``log scale`` and ``log dof``
        (those not fixed, in :attr:`theta`'s order), by the quadrature of :meth:`tilted`
        (module docstring); costs about one :meth:`tilted` call."""
        nu, _ = self._checked()
        r, _, shape, moments = self._moments(y, mean, var, True)
        a = 0.5 * nu
        columns = {"scale": moments[3],
                   "dof": a * (digamma_gap(a) + moments[4])}
        free = [h.name for h in self.hyperparameters if not h.fixed]
        out = np.empty((r.size, len(free)))
        for j, name in enumerate(free):
            out[:, j] = columns[name]
        return out.reshape(shape + (len(free),))

    def __repr__(self):
        return f"StudentT(dof={self.dof!r}, scale={self.scale!r})"
