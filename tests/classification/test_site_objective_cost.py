"""The cheaper site objective and inverse Mills ratio give the plain formulas' values.

The site optimisation (``site_update="optimize"``) evaluates its objective about 30 times per
working set on n x 2 kappa arrays; it works in place and skips the ``r + z`` series it does
not use. These tests write the objective and the ratio as plain numpy expressions (the form
they had before) and require identical values (the gradient, which the likelihood's tilted
derivatives now give, to rounding), so that fitted models do not change.
"""

import numpy as np
import pytest
from scipy.special import erfcx, log_ndtr

from skgpsparse.inference._site_optimization import _objective
from skgpsparse.likelihoods import Probit
from skgpsparse.likelihoods._probit import inverse_mills, mills_ratio


def _plain_inverse_mills(z):
    """``r`` and ``r + z`` with the series evaluated over the whole array (the old form)."""
    z = np.asarray(z, dtype=float)
    with np.errstate(over="ignore"):
        r = np.sqrt(2.0 / np.pi) / erfcx(-z / np.sqrt(2.0))
    t = np.maximum(-z, 100.0)
    series = 1.0 / t - 2.0 / t**3 + 10.0 / t**5
    r_plus_z = np.where(z < -100.0, series, r + z)
    return r, np.maximum(r_plus_z, np.finfo(float).tiny)


def _plain_objective(x, T, f, diag_A, y, bias, a_J, weights):
    """The site objective and gradient as plain expressions, additive-model paper eq. (7)."""
    k = a_J.size
    eta, alpha = x[:k], x[k:]
    new_var = diag_A[:, None] - eta * T * T
    free = new_var > 0.0
    s2 = 1.0 + np.where(free, new_var, 0.0)
    sd = np.sqrt(s2)
    z = y[:, None] * (f[:, None] + bias + alpha * T) / sd
    loss = -log_ndtr(z)
    r, _ = _plain_inverse_mills(z)
    w_r = weights * r
    d_alpha = -np.sum(w_r * y[:, None] * T / sd, axis=0)
    d_eta = -np.sum(np.where(free, w_r * z * T * T / (2.0 * s2), 0.0), axis=0)
    return np.sum(weights * loss, axis=0), np.concatenate([d_eta, d_alpha])


def _far_tail():
    rng = np.random.RandomState(0)
    return np.concatenate(
        [rng.randn(4000) * 60.0, -np.logspace(0, 60, 400), [0.0, -100.0, -100.5, 1e308]]
    )


def test_inverse_mills_equals_the_whole_array_series_to_the_bit():
    z = _far_tail()
    assert np.any(z < -100.0) and np.any(z > -100.0)
    for shaped in (z, z[:4000].reshape(40, 100)):
        r, rz = inverse_mills(shaped)
        r0, rz0 = _plain_inverse_mills(shaped)
        np.testing.assert_array_equal(r, r0)
        np.testing.assert_array_equal(rz, rz0)
        np.testing.assert_array_equal(mills_ratio(shaped), r0)


@pytest.mark.parametrize("z", [-150.0, -50.0, 3.0])
def test_inverse_mills_of_a_scalar(z):
    r, rz = inverse_mills(z)
    r0, rz0 = _plain_inverse_mills(z)
    assert np.ndim(r) == np.ndim(rz) == 0
    assert float(r) == float(r0) and float(rz) == float(rz0)
    # far tail: r + z from the asymptotic series, 1/t - 2/t^3 + ... ~ 1/t
    if z < -100:
        assert abs(float(rz) * -z - 1.0) < 1e-3


@pytest.mark.parametrize("uniform_weights", [True, False])
def test_site_objective_equals_the_plain_formula(uniform_weights):
    rng = np.random.RandomState(3)
    n, k = 700, 14
    T = rng.rand(n, 2 * k) * 0.8
    f, y = rng.randn(n) * 2.0, np.where(rng.rand(n) > 0.5, 1.0, -1.0)
    diag_A = rng.rand(n) * 0.3  # small variances: some eta T^2 exceed them (the clipped case)
    a_J = rng.rand(2 * k)
    if uniform_weights:
        weights = np.broadcast_to(np.full((n, 1), 1.0 / n), T.shape)
    else:
        weights = (rng.rand(n, 2 * k) > 0.1) / (n - 20.0)
    for scale in (0.05, 1.0, 20.0):
        x = np.concatenate([rng.rand(2 * k) * scale, rng.randn(2 * k) * scale])
        args = (T, f, diag_A, y, 0.3, a_J, weights)
        values, grad = _objective(x, *args, Probit())
        values0, grad0 = _plain_objective(x, *args)
        assert np.any(diag_A[:, None] - x[: 2 * k] * T * T <= 0.0)
        np.testing.assert_array_equal(values, values0)
        # the same sums of products taken in another order
        np.testing.assert_allclose(grad, grad0, rtol=1e-12, atol=1e-15)
    before = T.copy(), f.copy(), diag_A.copy(), weights.copy()
    _objective(x, *args, Probit())
    for a, b in zip(before, (T, f, diag_A, weights)):
        np.testing.assert_array_equal(a, b)  # the inputs are not written to
