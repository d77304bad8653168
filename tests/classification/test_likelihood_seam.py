"""The likelihood seam: a likelihood defined here, not in the package, runs through every engine.

``ScaledProbit(s)``, ``p(y | g) = Phi(y g / s)``, with kernel ``k`` and bias ``b`` is the same
model as the package's probit with kernel ``k / s^2`` and bias ``b / s`` (the latent scaled by
``1 / s``): the same selection scores, sites scaled by ``s``, the same probabilities. So a fit
with it equals the probit fit of the scaled kernel exactly where every engine, objective and
predictor asks the likelihood (ADF on the basis, EP over every row, ``partial_fit``, a fit on
row partitions), and differs wherever one still calls the probit itself. ``Logistic`` has only
``log_density``: its moments come from the interface's Gauss-Hermite defaults, checked against
``scipy.integrate.quad``.
"""

import warnings

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import log_expit, log_ndtr, ndtri
from scipy.stats import norm
from sklearn.datasets import make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPClassifier
from skgpsparse.classification.partitioned._fit import fit_rows
from skgpsparse.likelihoods import Likelihood, Probit
from skgpsparse.rows._store import LocalRows

SCALE = 2.0


class ScaledProbit(Likelihood):
    """``Phi(y g / s)``: the probit of ``g / s``, moments by the chain rule."""

    def __init__(self, scale):
        self.scale = scale
        self._probit = Probit()

    def log_density(self, y, f):
        return log_ndtr(np.multiply(y, f) / self.scale)

    def target_statistic(self, y):
        return np.asarray(y) > 0

    def initial_bias(self, target_mean, prior_variance):
        # s times the probit's start under the kernel k / s^2
        frac = np.clip(target_mean, 0.01, 0.99)
        return float(np.sqrt(self.scale**2 + prior_variance) * ndtri(frac))

    def tilted(self, y, mean, var):
        s = self.scale
        log_z, d1, d2 = self._probit.tilted(y, np.asarray(mean) / s, np.asarray(var) / s**2)
        return log_z, d1 / s, d2 / s**2


class Logistic(Likelihood):
    """``p(y | f) = 1 / (1 + exp(-y f))``: ``log_density`` alone."""

    def log_density(self, y, f):
        return log_expit(np.multiply(y, f))


def _data(n=160):
    return make_moons(n_samples=n, noise=0.3, random_state=0)


def _pair(**params):
    """The scaled likelihood's classifier and the probit one it must equal."""
    kernel = C(1.0, "fixed") * RBF(0.7)
    scaled_kernel = C(1.0 / SCALE**2, "fixed") * RBF(0.7)
    params = {"max_basis": 12, "optimizer": None, "random_state": 0, **params}
    mine = SparseGPClassifier(kernel, likelihood=ScaledProbit(SCALE), **params)
    probit = SparseGPClassifier(scaled_kernel, **params)
    return mine, probit


def _assert_same_model(mine, probit, X, atol=1e-9):
    np.testing.assert_array_equal(mine.basis_indices_, probit.basis_indices_)
    np.testing.assert_allclose(mine.bias_ / SCALE, probit.bias_, rtol=0, atol=atol)
    np.testing.assert_allclose(mine.predict_proba(X), probit.predict_proba(X), rtol=0, atol=atol)
    np.testing.assert_allclose(
        mine.predict_log_proba(X), probit.predict_log_proba(X), rtol=0, atol=atol
    )
    np.testing.assert_allclose(
        mine.decision_function(X), probit.decision_function(X), rtol=0, atol=atol
    )


@pytest.mark.parametrize("posterior", ["all_rows", "basis"])
@pytest.mark.parametrize("selection", ["entropy", "info_gain", "nlp", "adaptive"])
def test_own_likelihood_fits_and_predicts_as_the_equivalent_probit(posterior, selection):
    X, y = _data()
    mine, probit = _pair(posterior=posterior, selection=selection)
    mine.fit(X, y)
    probit.fit(X, y)
    # EP stops at a site change below 1e-6, and the scaled sites change by other amounts:
    # its fixed point to that tolerance; ADF on the basis has none
    atol = 1e-6 if posterior == "all_rows" else 1e-9
    _assert_same_model(mine, probit, X, atol=atol)
    np.testing.assert_allclose(
        mine.log_marginal_likelihood_value_, probit.log_marginal_likelihood_value_,
        rtol=1e-6,
    )


@pytest.mark.parametrize("posterior", ["all_rows", "basis"])
def test_own_likelihood_learns_the_equivalent_probit_optimum(posterior):
    # the learned amplitude of one is s^2 times the other's, the bias s times: the same
    # optimum of the evidence (all rows) or of the NLP (basis), reached along other paths
    X, y = _data()
    params = {"max_basis": 12, "max_iter": 2, "random_state": 0, "posterior": posterior,
              "selection": "entropy"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # the amplitude's bounds map onto each other too (the NLP can take it to one)
        bounds = np.array([1e-5, 1e5])
        mine = SparseGPClassifier(C(1.0, bounds * SCALE**2) * RBF(0.7),
                                  likelihood=ScaledProbit(SCALE), **params).fit(X, y)
        probit = SparseGPClassifier(C(1.0 / SCALE**2, bounds) * RBF(0.7), **params).fit(X, y)
    # two rounds of a few L-BFGS-B steps each, the bias in other units: near, not at, the
    # same optimum
    assert not np.allclose(mine.kernel_.theta, np.log([1.0, 0.7]))  # it learned
    np.testing.assert_allclose(mine.predict_proba(X), probit.predict_proba(X), atol=1e-2)
    amplitude = np.exp(mine.kernel_.theta[0]) / SCALE**2
    np.testing.assert_allclose(amplitude, np.exp(probit.kernel_.theta[0]), rtol=5e-2)


def test_own_likelihood_streams_as_the_equivalent_probit():
    X, y = _data(300)
    mine, probit = _pair(stream_buffer=0)
    for model in (mine, probit):
        model.partial_fit(X[:100], y[:100], classes=[0, 1])
        model.partial_fit(X[100:200], y[100:200])
        model.partial_fit(X[200:], y[200:])
    np.testing.assert_allclose(mine.predict_proba(X), probit.predict_proba(X), rtol=0,
                               atol=1e-6)


@pytest.mark.parametrize("posterior", ["all_rows", "basis"])
def test_own_likelihood_on_row_partitions_as_the_equivalent_probit(posterior):
    X, y = _data()
    fitted = []
    for model in _pair(posterior=posterior, selection="entropy"):
        model.classes_, model.n_features_in_ = np.unique(y), X.shape[1]
        fitted.append(fit_rows(model, LocalRows(X, y, 50), model.classes_))
    _assert_same_model(*fitted, X, atol=1e-6 if posterior == "all_rows" else 1e-9)


def test_own_likelihood_multiclass_as_the_equivalent_probit():
    X = np.random.default_rng(0).normal(size=(150, 2))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.5, 0.5])
    mine, probit = _pair(max_basis=10)
    np.testing.assert_allclose(mine.fit(X, y).predict_proba(X), probit.fit(X, y).predict_proba(X),
                               rtol=0, atol=1e-6)


def test_quadrature_moments_against_scipy_quad():
    rng = np.random.default_rng(1)
    y = np.where(rng.random(6) < 0.5, -1.0, 1.0)
    mean, var = rng.normal(scale=2.0, size=6), rng.uniform(0.01, 5.0, size=6)
    log_z, d1, d2 = Logistic().tilted(y, mean, var)
    for i in range(6):
        sd = np.sqrt(var[i])

        def moment(k):
            def integrand(f):
                return (f - mean[i]) ** k * np.exp(log_expit(y[i] * f)) * norm.pdf(
                    f, mean[i], sd)
            return quad(integrand, mean[i] - 12 * sd, mean[i] + 12 * sd, epsabs=1e-13)[0]

        z, first, second = moment(0), moment(1) / moment(0), moment(2) / moment(0)
        assert log_z[i] == pytest.approx(np.log(z), abs=1e-9)
        assert d1[i] == pytest.approx(first / var[i], abs=1e-8)
        assert d2[i] == pytest.approx((second / var[i] - 1.0) / (2.0 * var[i]), abs=1e-7)


def test_quadrature_defaults_reproduce_the_closed_form_probit():
    class QuadratureProbit(Likelihood):
        def log_density(self, y, f):
            return log_ndtr(np.multiply(y, f))

    rng = np.random.default_rng(2)
    y = np.where(rng.random(20) < 0.5, -1.0, 1.0)
    mean, var = rng.normal(scale=2.0, size=20), rng.uniform(0.0, 4.0, size=20)
    for got, want in zip(QuadratureProbit().site_update(y, mean, var),
                         Probit().site_update(y, mean, var)):
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(QuadratureProbit().predictive_margin(mean, var),
                               Probit().predictive_margin(mean, var), rtol=1e-7, atol=1e-9)


def test_logistic_by_quadrature_fits_every_path():
    X, y = _data()
    for posterior in ("basis", "all_rows"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf = SparseGPClassifier(likelihood=Logistic(), max_basis=12, max_iter=2,
                                     posterior=posterior, random_state=0).fit(X, y)
        proba = clf.predict_proba(X)
        assert np.all(np.isfinite(proba))
        assert clf.score(X, y) > 0.8
    clf.partial_fit(X[:40], y[:40])
    assert np.all(np.isfinite(clf.predict_proba(X)))


def test_likelihood_parameter_is_validated():
    X, y = _data(40)
    with pytest.raises(ValueError, match="likelihood"):
        SparseGPClassifier(likelihood="logit").fit(X, y)
