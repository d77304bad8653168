"""The RVM's probit site moments against the plain formulas, over every range of ``z``.

:func:`~skgpsparse.rvm._mean_field.probit_site` takes its moments from the probit likelihood
(:class:`~skgpsparse.likelihoods.Probit` with the RVM's noise variance): ``log Z``, its first
derivative ``tau`` and its second ``d tau / d yc = -r (r + z) / s^2``, where ``r + z`` cancels
for ``z -> -inf`` and comes from its asymptotic series there. The plain expressions below
(logs for ``r``, the series below ``z = -30``) are an independent computation.
"""

import numpy as np
from scipy.special import log_ndtr

from skgpsparse.rvm._mean_field import probit_site


def test_probit_site_equals_the_plain_formulas_with_the_series():
    rng = np.random.RandomState(4)
    yc = np.concatenate([rng.randn(3000) * 40.0, -np.logspace(0, 6, 200)])
    V, t = np.abs(rng.randn(yc.size)), np.where(rng.rand(yc.size) > 0.5, 1.0, -1.0)
    for s2 in (1.0, 0.3):
        logz, tau, dtau = probit_site(yc, V, t, s2)
        s = np.sqrt(V + s2)
        z = t * yc / s
        assert np.any(z < -30.0)
        far = z < -30.0
        w = np.maximum(-z, 30.0)
        series = 1 / w - 2 / w**3 + 10 / w**5 - 74 / w**7  # r + z for z -> -inf
        # r = N(z) / Phi(z) from logs, and from the series where the logs lose digits
        r = np.where(far, series - z, np.exp(-0.5 * z * z - 0.5 * np.log(2 * np.pi)
                                             - log_ndtr(z)))
        r_plus_z = np.where(far, series, r + z)
        np.testing.assert_array_equal(logz, log_ndtr(z))
        np.testing.assert_allclose(tau, t * r / s, rtol=1e-10, atol=1e-300)
        np.testing.assert_allclose(dtau, -r * np.maximum(r_plus_z, 0.0) / (s * s), rtol=1e-8,
                                   atol=1e-300)
        assert np.all(np.isfinite(dtau)) and np.all(dtau <= 0.0)
