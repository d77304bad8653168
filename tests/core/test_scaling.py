"""The scales that bring targets of any magnitude to order one (``skgpsparse._scaling``)."""

import numpy as np
import pytest

from skgpsparse._scaling import power_of_two_scale, scaled_mean_std, target_scale


def test_power_of_two_scale_rule():
    assert power_of_two_scale(np.array([0.07, -15.9])) == 1.0  # ordinary: [1/16, 16)
    assert power_of_two_scale(np.zeros(3)) == 1.0
    for y in (np.array([16.0, 1.0]), np.array([3e-200, -1e-201]), np.array([-1e300])):
        c = power_of_two_scale(y)
        assert 1.0 <= np.max(np.abs(y)) / c < 2.0
        assert c == 2.0 ** np.round(np.log2(c))  # a power of two: y / c is exact


def test_target_scale_rule():
    y = np.array([0.3, -0.7, 0.5])
    assert target_scale(y) == 1.0 and target_scale(y * 20) == 1.0  # ordinary: [1/16, 16)
    assert target_scale(y * 40) == np.max(np.abs(y * 40)) and target_scale(np.zeros(2)) == 1.0
    for s in (1e-300, 3e-150, 1e150, 7e300):
        c = target_scale(y * s)
        assert c == np.max(np.abs(y * s))
        # every scale gives the same rescaled targets, up to one rounding
        np.testing.assert_allclose(y * s / c, y / 0.7, rtol=1e-15)


@pytest.mark.parametrize("s", [1.0, 1e-200, 1e200, 1e300])
def test_scaled_mean_std_against_the_unscaled_moments(s):
    rng = np.random.RandomState(1)
    y = rng.normal(size=(30, 2)) * [1.0, 3.0] + [0.5, -2.0]
    mean, std = scaled_mean_std(y * s)
    np.testing.assert_allclose(mean / s, y.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(std / s, y.std(axis=0), rtol=1e-13)
    if s == 1.0:  # ordinary targets: numpy's own moments, bit for bit
        np.testing.assert_array_equal(mean, np.mean(y, axis=0))
        np.testing.assert_array_equal(std, np.std(y, axis=0))
