"""The likelihoods' tilted moments against an independent integral on a fine grid.

``log Z``, ``d log Z / d mean`` and ``d log Z / d var`` of each likelihood under ``N(f; m, v)``
equal ``log int p(y | f) N(f; m, v) df``, ``E[f - m] / v`` and ``(E[(f - m)^2] / v - 1) / (2 v)``
under the tilted density, integrated by the trapezoid rule on 2 x 10^6 points over 30
standard deviations (an independent computation: no quadrature rule of the package).
"""

import numpy as np
import pytest
from scipy.stats import norm

from skgpsparse.likelihoods import Poisson, Probit


def _reference(lik, y, m, v):
    sd = np.sqrt(v)
    f = np.linspace(m - 30 * sd, m + 30 * sd, 2_000_001)
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
