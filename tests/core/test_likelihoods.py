"""The likelihoods' tilted moments against independent integrals; their parameters.

``log Z``, ``d log Z / d mean`` and ``d log Z / d var`` of each likelihood under ``N(f; m, v)``
equal ``log int p(y | f) N(f; m, v) df``, ``E[f - m] / v`` and ``(E[(f - m)^2] / v - 1) / (2 v)``
under the tilted density, integrated by the trapezoid rule on 2 x 10^6 points over 30
standard deviations (an independent computation: no quadrature rule of the package); the
Student-t's also against adaptive quadrature in ``f`` over a grid of residuals (0..50 scales),
cavity variances (1e-6..1e3 scale^2) and degrees of freedom (1..100), with its derivatives in
its own parameters (also against central differences of ``log Z``).
"""

import warnings

import numpy as np
import pytest
from scipy import integrate
from scipy.special import digamma, gammaln
from scipy.stats import norm
from scipy.stats import t as student_t

from skgpsparse.likelihoods import Poisson, Probit, StudentT


def _reference(lik, y, m, v):
    sd = np.sqrt(v)
    f = np.linspace(m - 30 * sd, m + 30 * sd, 2_000_001)
    if isinstance(lik, StudentT):  # the tilted density's second mode, at the target
        near_y = np.linspace(y - 200 * lik.scale, y + 200 * lik.scale, 1_000_001)
        f = np.unique(np.concatenate([f, near_y]))
    p = np.exp(lik.log_density(y, f)) * norm.pdf(f, m, sd)
    z = np.trapezoid(p, f)
    first = np.trapezoid(p * (f - m), f) / z
    second = np.trapezoid(p * (f - m) ** 2, f) / z
    return np.log(z), first / v, (second / v - 1.0) / (2.0 * v)


CASES = [
    (Poisson(), 0.0, 0.0, 1.0),
    (Poisson(), 0.0, 2.0, 9.0),
    (Poisson(), 3.0, 1.0, 0.01),
    (Poisson(), 40.0, 0.0, 4.0),  # a large count under a wide marginal
    (Poisson(), 77.0, 4.0, 0.5),
    (Poisson(), 0.0, -800.0, 1.0),  # a rate e^-800: e^L underflows (NaN before)
    (Probit(), 1.0, -2.0, 3.0),
    (Probit(0.3), -1.0, 0.5, 2.0),
    (StudentT(4.0, 1.0), 0.3, 0.0, 1.0),
    (StudentT(4.0, 0.1), 5.0, 0.0, 1.0),  # an outlier: two modes (marginal's, target's)
    (StudentT(1.0, 0.05), 10.0, 0.0, 0.01),
    (StudentT(0.5, 1.0), 3.0, 0.0, 1e-6),  # a very heavy tail under a narrow marginal
    (StudentT(2.5, 0.2), -3.0, 1.0, 0.5),
    (StudentT(4.0, 1.0), 100.0, 0.0, 1.0),
    (StudentT(1e6, 0.5), 1.0, 0.2, 0.3),  # nearly Gaussian
]


@pytest.mark.parametrize(("lik", "y", "m", "v"), CASES)
def test_tilted_moments_against_a_fine_grid(lik, y, m, v):
    log_z, d1, d2 = lik.tilted(np.array([y]), np.array([m]), np.array([v]))
    want = _reference(lik, y, m, v)
    assert log_z[0] == pytest.approx(want[0], abs=1e-7)
    assert d1[0] == pytest.approx(want[1], rel=1e-6, abs=1e-7)
    assert d2[0] == pytest.approx(want[2], rel=1e-5, abs=1e-7)


def test_poisson_sites_are_finite_and_positive():
    rng = np.random.default_rng(0)
    counts = rng.poisson(3.0, size=50).astype(float)
    mean, var = rng.normal(size=50), rng.uniform(0.01, 5.0, size=50)
    precision, shift, alpha, nu = Poisson().site_update(counts, mean, var)
    assert np.all(np.isfinite(precision)) and np.all(precision > 0)  # log-concave
    assert np.all(np.isfinite(shift))


@pytest.mark.parametrize(("y", "m", "v"), [(2.0, -800.0, 1.0), (3.0, -701.0, 1.0),
                                         (0.0, -5000.0, 3000.0), (1.0, -760.0, 1e-2)])
def test_poisson_moments_where_the_rate_underflows(y, m, v):
    # e^f ~ 0 under the marginal: the tilted density is N(f; m, v) times e^(y f) / y!, the
    # Gaussian shifted to m + v y, so log Z = y m + y^2 v / 2 - log y!, d/dm = y, d/dv = y^2 / 2
    with np.errstate(divide="raise", invalid="raise"):  # underflow to 0 is the answer
        log_z, d_mean, d_var = Poisson().tilted(np.array([y]), np.array([m]), np.array([v]))
        precision, shift, _, _ = Poisson().site_update(np.array([y]), np.array([m]),
                                                       np.array([v]))
    assert log_z[0] == pytest.approx(y * m + y * y * v / 2 - gammaln(y + 1.0), rel=1e-12)
    assert d_mean[0] == pytest.approx(y, abs=1e-9)
    assert d_var[0] == pytest.approx(y * y / 2, abs=1e-9)
    assert np.isfinite(precision[0]) and np.isfinite(shift[0])


def test_student_t_centre_is_the_median_of_the_copies():
    rng = np.random.RandomState(3)
    values, weights = rng.randn(31), rng.randint(1, 5, 31)
    centre = StudentT().target_centre(values, weights)
    copies = np.sort(np.repeat(values, weights))
    assert centre == copies[(copies.size - 1) // 2]  # the lower middle one of an even count
    assert StudentT().target_centre(values) == np.median(values)


def test_poisson_bias_start_gives_the_mean_count():
    b = Poisson().initial_bias(4.0, 0.5)
    assert np.exp(b + 0.25) == pytest.approx(4.0)


def test_student_t_density_is_scipys():
    y, f = np.array([-3.0, 0.2, 7.5]), np.array([0.5, 0.0, -1.0])
    got = StudentT(dof=3.0, scale=0.7).log_density(y, f)
    np.testing.assert_allclose(got, student_t.logpdf(y, 3.0, loc=f, scale=0.7), rtol=1e-12)


def test_student_t_with_many_degrees_of_freedom_is_the_gaussian():
    # N(y; m, v + s^2): log Z and its derivatives in closed form
    y, m, v, s2 = np.array([1.3, -4.0]), np.array([0.1, 0.5]), np.array([0.4, 2.0]), 0.25
    log_z, d1, d2 = StudentT(dof=1e8, scale=0.5).tilted(y, m, v)
    q = v + s2
    np.testing.assert_allclose(log_z, -0.5 * np.log(2 * np.pi * q) - (y - m) ** 2 / (2 * q),
                               rtol=1e-6)
    np.testing.assert_allclose(d1, (y - m) / q, rtol=1e-6)
    np.testing.assert_allclose(d2, 0.5 * ((y - m) ** 2 / q**2 - 1 / q), rtol=1e-6)


def test_student_t_moments_keep_their_shape_and_are_finite():
    rng = np.random.default_rng(0)
    y, m = rng.standard_t(2.0, (3, 4)) * 5, rng.normal(size=(3, 4))
    v = np.exp(rng.uniform(-12, 3, (3, 4)))
    out = StudentT(dof=2.0, scale=0.3).tilted(y, m, v)
    assert all(o.shape == (3, 4) and np.all(np.isfinite(o)) for o in out)


# ---------------------------------------------------------------- Student-t: quadrature in f
def _student_t_quad(lik, r, v):
    """``[log Z, d1, d2, d log Z / d log s, d log Z / d log nu]`` at ``m = 0`` by adaptive
    quadrature in ``f``: ``dZ/dm = int p' N``, ``dZ/dv = int p'' N / 2`` (the Gaussian's heat
    equation), the parameter derivatives as tilted means of ``d log p / d log theta``."""
    nu, s = lik.dof, lik.scale
    c = nu * s * s
    sd = np.sqrt(v)
    lo, hi = -40 * sd, 40 * sd
    f_y = min(max(r, lo), hi)
    top = lik.log_density(r, f_y) + norm.logpdf(f_y, 0.0, sd)
    top = max(top, lik.log_density(r, 0.0) + norm.logpdf(0.0, 0.0, sd))

    def base(f):
        return np.exp(lik.log_density(r, f) + norm.logpdf(f, 0.0, sd) - top)

    def g1(f):
        return (nu + 1) * (r - f) / (c + (r - f) ** 2)

    def g2(f):
        return -(nu + 1) * (c - (r - f) ** 2) / (c + (r - f) ** 2) ** 2

    def g_scale(f):
        return -1.0 + (nu + 1) * (r - f) ** 2 / (c + (r - f) ** 2)

    def g_dof(f):
        z2 = (r - f) ** 2
        return nu * (0.5 * digamma(0.5 * (nu + 1)) - 0.5 * digamma(0.5 * nu) - 0.5 / nu
                     - 0.5 * np.log1p(z2 / c) + 0.5 * (nu + 1) * z2 / (nu * (c + z2)))

    points = sorted({0.0, f_y, min(max(r - s, lo), hi), min(max(r + s, lo), hi), -sd, sd})
    points = [p for p in points if lo < p < hi]

    def quad(fn):
        with warnings.catch_warnings():  # roundoff notices at epsrel 1e-12
            warnings.simplefilter("ignore", integrate.IntegrationWarning)
            return integrate.quad(fn, lo, hi, points=points, epsabs=0.0, epsrel=1e-12,
                                  limit=1000)[0]

    z = quad(base)
    return np.array([np.log(z) + top, quad(lambda f: base(f) * g1(f)) / z,
                     0.5 * quad(lambda f: base(f) * (g1(f) ** 2 + g2(f))) / z,
                     quad(lambda f: base(f) * g_scale(f)) / z,
                     quad(lambda f: base(f) * g_dof(f)) / z])


# (dof, scale); residuals in scale units; cavity variances in scale^2 units: both rules
# (Gauss-Laguerre up to v = 0.1 s^2, the trapezoid beyond), inliers and outliers
STUDENT_T = [(1.0, 0.7), (2.5, 2.0), (4.0, 0.05), (30.0, 1.0), (100.0, 0.3)]
RESIDUALS = np.array([0.0, 1.0, 2.5, 7.0, 50.0])
VARIANCES = [1e-6, 0.05, 0.2, 5.0, 100.0]


@pytest.mark.parametrize(("dof", "scale"), STUDENT_T)
@pytest.mark.parametrize("v_rel", VARIANCES)
def test_student_t_moments_and_parameter_gradient_against_quadrature(dof, scale, v_rel):
    lik = StudentT(dof, scale)
    r, v = RESIDUALS * scale, v_rel * scale**2
    want = np.array([_student_t_quad(lik, ri, v) for ri in r]).T
    zeros, var = np.zeros_like(r), np.full_like(r, v)
    got = list(lik.tilted(r, zeros, var)) + list(lik.parameter_gradient(r, zeros, var).T)
    # log Z absolutely; the rest relative to their size, or to their natural unit near 0
    units = [None, 1 / np.sqrt(v + scale**2), 1 / (v + scale**2), 1.0, 1.0]
    for k, (g, w, unit) in enumerate(zip(got, want, units)):
        if unit is None:
            np.testing.assert_allclose(g, w, rtol=0, atol=1e-8, err_msg="log Z")
        else:
            err = np.abs(g - w) / np.maximum(np.abs(w), 1e-4 * unit)
            assert err.max() < 1e-7, (k, err.max())


@pytest.mark.parametrize(("dof", "scale"), STUDENT_T)
def test_student_t_parameter_gradient_is_the_derivative_of_log_z(dof, scale):
    # central differences of log Z in theta = (log scale, log dof), step 1e-4
    rng = np.random.default_rng(1)
    r = scale * np.concatenate([rng.standard_t(3.0, 30), rng.uniform(5, 50, 10)])
    v = scale**2 * np.exp(rng.uniform(np.log(1e-5), np.log(1e2), r.size))
    lik = StudentT(dof, scale)
    grad = lik.parameter_gradient(r, np.zeros_like(r), v)
    assert grad.shape == (r.size, 2)
    step = 1e-4
    for j in range(2):
        up, down = lik.theta.copy(), lik.theta.copy()
        up[j] += step
        down[j] -= step
        fd = (lik.clone_with_theta(up).tilted(r, 0 * r, v)[0]
              - lik.clone_with_theta(down).tilted(r, 0 * r, v)[0]) / (2 * step)
        np.testing.assert_allclose(grad[:, j], fd, rtol=1e-5, atol=1e-6)


def test_student_t_rules_agree_where_they_meet():
    # Gauss-Laguerre at v <= 0.1 s^2, the trapezoid just above: no step between them
    lik = StudentT(3.0, 0.8)
    r = 0.8 * np.array([0.0, 0.5, 2.0, 6.0, 30.0])
    below = np.full_like(r, 0.1 * 0.64)
    above = below * (1 + 1e-12)
    for lo, hi in zip(lik.tilted(r, 0 * r, below), lik.tilted(r, 0 * r, above)):
        np.testing.assert_allclose(lo, hi, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dof", [1e3, 1e6, 1e8])
def test_student_t_with_many_degrees_of_freedom_under_a_narrow_marginal(dof):
    # the Gauss-Laguerre rule (v <= 0.1 s^2) where its weight x^(dof/2 - 1/2) e^-x is huge
    lik = StudentT(dof, 0.5)
    r, v = np.array([0.0, 1.3, -4.5]), np.array([1e-4, 0.02, 0.02])
    got = lik.tilted(r, 0 * r, v)
    want = np.array([_student_t_quad(lik, ri, vi)[:3] for ri, vi in zip(r, v)]).T
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-7)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-7)


def test_student_t_parameter_gradient_at_many_degrees_of_freedom():
    # d log Z / d log dof is O(1 / dof) there: no cancellation of O(1) terms
    lik = StudentT(1e3, 1.0)
    r, v = np.array([0.5, 3.0, 20.0, 5.0]), np.array([0.01, 1.0, 1e-3, 30.0])
    got = lik.parameter_gradient(r, 0 * r, v)
    want = np.array([_student_t_quad(lik, ri, vi)[3:] for ri, vi in zip(r, v)])
    # atol: the reference's own digamma((dof + 1) / 2) - digamma(dof / 2), times dof
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-10)


# ---------------------------------------------------------------- likelihood parameters
def test_student_t_theta_bounds_and_clone():
    lik = StudentT(3.0, 0.5, scale_bounds=(1e-3, 10.0))
    np.testing.assert_allclose(lik.theta, np.log([0.5, 3.0]))
    np.testing.assert_allclose(lik.bounds, np.log([[1e-3, 10.0], [1.0, 1000.0]]))
    assert [h.name for h in lik.hyperparameters] == ["scale", "dof"]
    clone = lik.clone_with_theta(np.log([2.0, 7.0]))
    assert (clone.scale, clone.dof) == pytest.approx((2.0, 7.0))
    assert (lik.scale, lik.dof) == (0.5, 3.0)  # the original is left alone
    assert clone.scale_bounds == (1e-3, 10.0)
    with pytest.raises(ValueError, match="theta must have 2 values"):
        lik.clone_with_theta([0.0])


def test_fixed_parameters_leave_theta():
    lik = StudentT(3.0, 0.5, dof_bounds="fixed")
    np.testing.assert_allclose(lik.theta, [np.log(0.5)])
    assert lik.bounds.shape == (1, 2)
    y, m, v = np.array([0.3, 9.0]), np.zeros(2), np.array([0.01, 1.0])
    np.testing.assert_allclose(lik.parameter_gradient(y, m, v)[:, 0],
                               StudentT(3.0, 0.5).parameter_gradient(y, m, v)[:, 0])
    both = StudentT(3.0, 0.5, dof_bounds="fixed", scale_bounds="fixed")
    assert both.theta.shape == (0,) and both.parameter_gradient(y, m, v).shape == (2, 0)


@pytest.mark.parametrize("lik", [Poisson(), Probit()])
def test_likelihoods_without_parameters(lik):
    assert lik.theta.shape == (0,) and lik.bounds.shape == (0, 2)
    assert lik.hyperparameters == []
    y = np.ones((3, 2))
    assert lik.parameter_gradient(y, np.zeros((3, 2)), 1.0).shape == (3, 2, 0)
    assert lik.clone_with_theta([]) is not lik


@pytest.mark.parametrize(("name", "kwargs"), [("dof", {"dof": 0.0}), ("scale", {"scale": -1.0}),
                                               ("dof", {"dof": np.nan})])
def test_student_t_refuses_bad_parameters(name, kwargs):
    with pytest.raises(ValueError, match=name):
        StudentT(**kwargs).tilted(np.ones(2), np.zeros(2), np.ones(2))
