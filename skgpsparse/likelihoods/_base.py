"""The likelihood interface: tilted moments, site updates and predictive densities.

For one row with target ``y`` and a Gaussian marginal (or cavity) ``N(f; m, v)`` of its latent
value, the *tilted* distribution is ``p(y | f) N(f; m, v) / Z`` with normaliser

    Z(m, v) = int p(y | f) N(f; m, v) df,

which is also the predictive density of ``y`` under that marginal. Everything an engine needs
follows from ``log Z`` and its two derivatives ``d1 = d log Z / dm``, ``d2 = d log Z / dv``
(GPML §3.6, eqs. (3.56)-(3.59); additive-model paper eq. (2); Seeger 2005):

- the tilted mean and variance: ``m + v d1`` and ``v - v^2 (d1^2 - 2 d2)``;
- the ADF/EP site update: ``alpha = d1``, ``nu = d1^2 - 2 d2``, the site precision
  ``nu / (1 - v nu)`` and the site mean ``m + alpha / nu``;
- the gradient of an objective made of ``log Z`` terms (the NLP loss, the EP evidence) with
  respect to the hyperparameters, through ``dm`` and ``dv``.

The bias ``b`` of the classifier is a shift of the latent value: the engines pass
``m = f + b``, so a likelihood never sees it.

A likelihood may have parameters of its own (the Student-t's scale and degrees of freedom)
that a learning loop fits beside the kernel's. They follow scikit-learn's kernels:
:attr:`Likelihood.hyperparameters` lists them (``sklearn.gaussian_process.kernels.
Hyperparameter``: name, bounds, fixed), :attr:`Likelihood.theta` holds the logs of those not
fixed, :attr:`Likelihood.bounds` their log bounds, :meth:`Likelihood.clone_with_theta` makes
the likelihood at another ``theta``, and :meth:`Likelihood.parameter_gradient` gives each
row's ``d log Z / d theta`` at its cavity. An objective made of ``log Z`` terms (the EP
evidence) then has its gradient in ``theta`` as the sum of those rows (at an EP fixed point
the sites' own dependence drops out: GPML eq. (3.65) differentiated at fixed sites).
"""

import copy

import numpy as np
from scipy.special import ndtri

__all__ = ["Likelihood"]

# Gauss-Hermite nodes and weights of the default quadrature.
_N_QUADRATURE = 80
_RULE = []  # its nodes x_k and log(w_k / sqrt(pi)), computed once (an eigenvalue problem)
# Variance below which the default quadrature's derivatives are taken at this variance.
_MIN_VAR = 1e-10
# Newton steps to the tilted density's mode (the quadrature's centre).
_NEWTON_STEPS = 50


def _quadrature_rule():
    """The ``_N_QUADRATURE``-node Gauss-Hermite rule: nodes and log weights over sqrt(pi)."""
    if not _RULE:
        x, w = np.polynomial.hermite.hermgauss(_N_QUADRATURE)
        _RULE.append((x, np.log(w / np.sqrt(np.pi))))
    return _RULE[0]


class Likelihood:
    """An observation model ``p(y | f)`` of one latent value per row.

    A subclass defines :meth:`log_density`; the tilted moments, the site update and the
    predictive density then come from Gauss-Hermite quadrature. A likelihood with closed forms
    (:class:`~skgpsparse.likelihoods.Probit`) overrides :meth:`tilted` and
    :meth:`log_predictive` (and, for speed, :meth:`site_update`).

    Examples
    --------
    A logistic likelihood by quadrature, against the probit it resembles:

    >>> import numpy as np
    >>> from scipy.special import log_expit
    >>> from skgpsparse.likelihoods import Likelihood
    >>> class Logistic(Likelihood):
    ...     def log_density(self, y, f):
    ...         return log_expit(y * f)
    >>> log_z = Logistic().log_predictive(np.array([1.0]), np.array([0.0]), np.array([4.0]))
    >>> round(float(np.exp(log_z[0])), 6)
    0.5
    """

    #: Whether ``log p(y | f)`` is concave in ``f``. Then every EP site has a non-negative
    #: precision (:meth:`site_update`); a likelihood that is not (the Student-t) sets it False,
    #: and EP over all rows keeps its negative site precisions
    #: (:func:`~skgpsparse.inference._ep_passes.signed_sites`).
    log_concave = True

    def log_density(self, y, f):
        """``log p(y | f)``, elementwise with broadcasting.

        Parameters
        ----------
        y : ndarray
            Encoded targets (``{-1, +1}`` for a binary likelihood).
        f : ndarray
            Latent values (the bias included).

        Returns
        -------
        ndarray
        """
        raise NotImplementedError(f"{type(self).__name__} must define log_density(y, f).")

    # ------------------------------------------------------------------ parameters
    @property
    def hyperparameters(self):
        """The likelihood's own parameters, as scikit-learn kernels list theirs.

        A list of ``sklearn.gaussian_process.kernels.Hyperparameter`` named after attributes
        of the likelihood, in :attr:`theta`'s order; empty by default (Probit, Poisson).
        """
        return []

    @property
    def theta(self):
        """``log`` of the values of the hyperparameters that are not fixed, shape ``(k,)``."""
        return np.array([np.log(float(getattr(self, h.name)))
                         for h in self.hyperparameters if not h.fixed], dtype=float)

    @property
    def bounds(self):
        """``log`` of their bounds, shape ``(k, 2)`` (a kernel's ``bounds``)."""
        rows = [np.log(np.asarray(h.bounds, dtype=float)).reshape(2)
                for h in self.hyperparameters if not h.fixed]
        return np.array(rows, dtype=float).reshape(len(rows), 2)

    def clone_with_theta(self, theta):
        """A copy of the likelihood with the free hyperparameters at ``exp(theta)``.

        Parameters
        ----------
        theta : array-like of shape (k,)
            Log-values in :attr:`theta`'s order.

        Returns
        -------
        Likelihood
        """
        theta = np.asarray(theta, dtype=float).reshape(-1)
        free = [h.name for h in self.hyperparameters if not h.fixed]
        if theta.size != len(free):
            raise ValueError(f"theta must have {len(free)} values ({', '.join(free) or 'none'}"
                             f" of {type(self).__name__}), got {theta.size}.")
        clone = copy.copy(self)
        for name, value in zip(free, theta):
            setattr(clone, name, float(np.exp(value)))
        return clone

    def parameter_gradient(self, y, mean, var):
        """``d log Z / d theta`` of each row under ``N(f; mean, var)``.

        Parameters
        ----------
        y, mean, var : ndarray
            As :meth:`tilted`.

        Returns
        -------
        ndarray of shape ``broadcast shape + (k,)``
            Column ``j`` is the derivative in ``theta[j]``; ``k = 0`` (an empty array) for a
            likelihood without free hyperparameters.
        """
        shape = np.broadcast_shapes(np.shape(y), np.shape(mean), np.shape(var))
        if self.theta.size:
            raise NotImplementedError(
                f"{type(self).__name__} has hyperparameters and must define parameter_gradient.")
        return np.empty(shape + (0,))

    # ------------------------------------------------------------------ targets
    def target_statistic(self, y):
        """The per-row statistic whose mean :meth:`initial_bias` reads (the targets)."""
        return np.asarray(y, dtype=float)

    def target_centre(self, y, weights=None):
        """The centre of the targets :meth:`initial_bias` starts from: the mean of
        :meth:`target_statistic` over the rows (over their copies, given ``weights``)."""
        values = self.target_statistic(y)
        return np.mean(values) if weights is None else np.average(values, weights=weights)

    def initial_bias(self, target_mean, prior_variance):
        """The bias before learning, from :meth:`target_centre` (the mean of
        :meth:`target_statistic` over the rows) and the mean prior variance ``k(x, x)``; 0
        unless a subclass knows better."""
        return 0.0

    # ------------------------------------------------------------------ moments
    def tilted(self, y, mean, var):
        """``(log Z, d log Z / d mean, d log Z / d var)`` of each row, elementwise.

        ``var`` is clipped at 0. The default integrates :meth:`log_density` by Gauss-Hermite
        quadrature: with ``f_k = m + sqrt(2 v) x_k`` and ``w_k`` the normalised weights,
        ``Z = sum_k w_k p(y | f_k)``, ``d1 = E[f - m] / v`` and
        ``d2 = (E[(f - m)^2] / v - 1) / (2 v)`` under the tilted distribution; a likelihood
        that gives :meth:`log_density_derivatives` has its nodes at the tilted density's mode
        instead (:meth:`_mode_centred_terms`).

        Parameters
        ----------
        y, mean, var : ndarray
            Targets, marginal means (bias included) and marginal variances; broadcast together.

        Returns
        -------
        log_z, d1, d2 : ndarray
        """
        y, mean, var = np.broadcast_arrays(
            np.asarray(y, dtype=float), np.asarray(mean, dtype=float),
            np.maximum(np.asarray(var, dtype=float), _MIN_VAR),
        )
        x, log_w = _quadrature_rule()
        if type(self).log_density_derivatives is Likelihood.log_density_derivatives:
            # nodes of N(m, v): Z = sum_k w_k p(y | f_k)
            offsets = np.sqrt(2.0 * var)[..., None] * x  # f_k - m
            log_terms = self.log_density(y[..., None], mean[..., None] + offsets) + log_w
        else:
            offsets, log_terms = self._mode_centred_terms(y, mean, var, x, log_w)
        top = np.max(log_terms, axis=-1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        weights = np.exp(log_terms - top)
        total = np.sum(weights, axis=-1)
        log_z = np.log(total) + top[..., 0]
        weights /= total[..., None]
        first = np.sum(weights * offsets, axis=-1)  # E[f - m]
        second = np.sum(weights * offsets**2, axis=-1)  # E[(f - m)^2]
        d1 = first / var
        d2 = (second / var - 1.0) / (2.0 * var)
        return log_z, d1, d2

    def _mode(self, y, mean, var):
        """The mode of ``g(f) = log p(y | f) + log N(f; m, v)`` reached from ``m`` by Newton
        steps (a step of the prior's scale where ``g`` is not concave), and the width of its
        Laplace fit ``(-1 / g'')^1/2`` (the prior's where ``g'' >= 0``), at most ``v^1/2``."""
        f = mean.copy()
        sd = np.sqrt(var)
        for _ in range(_NEWTON_STEPS):
            d1, d2 = self.log_density_derivatives(y, f)
            grad = d1 - (f - mean) / var
            curv = d2 - 1.0 / var
            step = np.where(curv < 0.0, -grad / np.where(curv < 0.0, curv, -1.0), grad * var)
            step = np.clip(step, -3.0 * sd, 3.0 * sd)
            f = f + step
            if np.all(np.abs(step) <= 1e-10 * (1.0 + np.abs(f))):
                break
        curv = self.log_density_derivatives(y, f)[1] - 1.0 / var
        width = np.sqrt(np.where(curv < 0.0, -1.0 / np.where(curv < 0.0, curv, -1.0), var))
        return f, np.minimum(width, sd)

    def _mode_centred_terms(self, y, mean, var, x, log_w):
        """``(f_k - m, log term_k)`` of Gauss-Hermite quadrature with its nodes on the Laplace
        fit ``N(c, s^2)`` of the tilted density at its mode (:meth:`_mode`):
        ``Z = sum_k w_k p(y | f_k) N(f_k; m, v) / N(f_k; c, s^2)``."""
        centre, width = self._mode(y, mean, var)
        nodes = centre[..., None] + np.sqrt(2.0) * width[..., None] * x
        offsets = nodes - mean[..., None]
        log_terms = (self.log_density(y[..., None], nodes) + log_w + x * x
                     + np.log(width / np.sqrt(var))[..., None]
                     - offsets**2 / (2.0 * var[..., None]))
        return offsets, log_terms

    def log_density_derivatives(self, y, f):
        """``(d log p / df, d^2 log p / df^2)``, elementwise; optional.

        A likelihood that gives them has its moments by quadrature centred at the tilted
        density's mode (peaked likelihoods under wide marginals stay accurate)."""
        raise NotImplementedError

    def log_predictive(self, y, mean, var, *, overwrite=False):
        """``log Z``: the log predictive density of ``y`` under ``N(f; mean, var)``.

        Parameters
        ----------
        y, mean, var : ndarray
            As :meth:`tilted`.
        overwrite : bool, default=False
            The caller's ``mean`` and ``var`` arrays may be used as scratch (and the result
            written into ``mean``'s memory): the engines' hot loops pass their temporaries.

        Returns
        -------
        ndarray
        """
        return self.tilted(y, mean, var)[0]

    def predictive_moments(self, mean, var):
        """``(E[y], Var[y])`` of the target under ``N(f; mean, var)``: what a regressor's
        ``predict`` returns (optional; a regression likelihood defines it).

        Parameters
        ----------
        mean, var : ndarray
            The latent marginals (bias included).

        Returns
        -------
        mean_y, var_y : ndarray
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not give the predictive moments of its targets."
        )

    def predictive_covariance(self, mean, cov):
        """The covariance of the targets at several rows whose latents are jointly
        ``N(mean, cov)`` (optional: a regressor's ``return_cov``).

        Parameters
        ----------
        mean : ndarray of shape (k,)
        cov : ndarray of shape (k, k)

        Returns
        -------
        ndarray of shape (k, k)
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not give the predictive covariance of its targets."
        )

    def predictive_probability(self, y, mean, var):
        """``Z``: the predictive probability (or density) of ``y`` under ``N(f; mean, var)``."""
        return np.exp(self.log_predictive(y, mean, var))

    def predictive_margin(self, mean, var):
        """``Phi^-1`` of the predictive probability of ``y = +1``: a binary likelihood's
        decision function, monotone in that probability (for the probit, ``mean / sqrt(1 +
        var)``)."""
        return ndtri(self.predictive_probability(1.0, mean, var))

    def error_probability(self, y, mean, var):
        """``1 - Z``: the predictive probability of anything but ``y`` (the adaptive working
        set's sampling weights, additive-model paper eq. (11))."""
        return -np.expm1(self.log_predictive(y, mean, var))

    def site_update(self, y, mean, var):
        """ADF/EP site of each row from its marginal (cavity) ``N(mean, var)``.

        Additive-model paper eq. (2); GPML eqs. (3.58)-(3.59): the Gaussian site whose product
        with ``N(mean, var)`` has the tilted distribution's mean and variance.

        Parameters
        ----------
        y, mean, var : ndarray of shape (k,)
            Targets, cavity means (bias included) and variances (clipped at 0).

        Returns
        -------
        precision : ndarray of shape (k,)
            ``nu / (1 - var nu)``, at least 0.
        mean_shift : ndarray of shape (k,)
            The site mean less the cavity mean, ``alpha / nu``.
        alpha, nu : ndarray of shape (k,)
            ``d log Z / d mean`` and ``alpha^2 - 2 d log Z / d var``: the marginal moves by
            ``alpha A_.j`` and its variance by ``-nu A_.j^2`` (additive-model paper eq. (3)).
        """
        var = np.maximum(var, 0.0)
        _, alpha, d2 = self.tilted(y, mean, var)
        nu = np.maximum(alpha * alpha - 2.0 * d2, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            precision = np.where(nu > 0.0, nu / np.maximum(1.0 - var * nu, 1e-12), 0.0)
            mean_shift = np.where(nu > 0.0, alpha / np.where(nu > 0.0, nu, 1.0), 0.0)
        return precision, mean_shift, alpha, nu

    def site_update_one(self, y, mean, var):
        """:meth:`site_update` of one row in Python floats: ``(precision, mean_shift)``.

        The streaming ADF takes its rows one after the other; a subclass may answer it in
        scalar arithmetic.
        """
        precision, shift, _, _ = self.site_update(
            np.array([y], dtype=float), np.array([mean], dtype=float),
            np.array([var], dtype=float),
        )
        return float(precision[0]), float(shift[0])

    def __repr__(self):
        return f"{type(self).__name__}()"
