"""The likelihoods' tilted moments against an independent integral on a fine grid.

``log Z``, ``d log Z / d mean`` and ``d log Z / d var`` of each likelihood under ``N(f; m, v)``
equal ``log int p(y | f) N(f; m, v) df``, ``E[f - m] / v`` and ``(E[(f - m)^2] / v - 1) / (2 v)``
under the tilted density, integrated by the trapezoid rule on 2 x 10^6 points over 30
standard deviations (an independent computation: no quadrature rule of the package).
"""

import numpy as np
import pytest
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
