"""The RVM's probit site moments equal the plain formulas (series over the whole array) to the bit.

:func:`~skgpsparse.rvm._mean_field.probit_site` evaluates the asymptotic series of ``r + z``
only where ``z < -30`` (its powers cost more than the rest over all rows); the values must be
those of the plain expressions below, so that fitted classifiers do not change.
"""

import numpy as np
from scipy.special import log_ndtr

from skgpsparse.rvm._mean_field import probit_site


def test_probit_site_equals_the_whole_array_series_to_the_bit():
    rng = np.random.RandomState(4)
    yc = np.concatenate([rng.randn(3000) * 40.0, -np.logspace(0, 6, 200)])
    V, t = np.abs(rng.randn(yc.size)), np.where(rng.rand(yc.size) > 0.5, 1.0, -1.0)
    logz, tau, dtau = probit_site(yc, V, t, 1.0)
    s = np.sqrt(V + 1.0)
    z = t * yc / s
    assert np.any(z < -30.0)
    r = np.exp(-0.5 * z * z - 0.5 * np.log(2 * np.pi) - log_ndtr(z))
    w = np.maximum(-z, 30.0)
    r_plus_z = np.where(z < -30.0, 1 / w - 2 / w**3 + 10 / w**5, r + z)
    np.testing.assert_array_equal(logz, log_ndtr(z))
    np.testing.assert_array_equal(tau, t * r / s)
    np.testing.assert_array_equal(dtau, -r * np.maximum(r_plus_z, 0.0) / (s * s))
