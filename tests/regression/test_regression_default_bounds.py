"""The default kernel's switched-off features do not warn; the same kernel passed by the user
does.

Twelve standard normal features of which four carry the signal (``f = sin(x0) + x1^2 / 2 -
x2 x3 / 2``, the scale benchmarks' law): with ``kernel=None`` the regressor keeps one length
scale per feature, and several irrelevant features' length scales end at their upper bound of
1e5, where the kernel is flat along them: the right answer, reported on the verbose output,
not as scikit-learn's ``ConvergenceWarning``. The per-feature kernel the default starts from
(:func:`~skgpsparse.regression._kernel_choice.per_feature_start`), passed as ``kernel``, is the
user's: each length scale it leaves at the bound warns.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPRegressor
from skgpsparse.regression._kernel_choice import per_feature_start

N, D, P = 800, 12, 50
UPPER = 1e5


def _data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, D))
    f = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.5 * X[:, 2] * X[:, 3]
    return X, f + 0.3 * rng.standard_normal(N)


def _fit(X, y, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = SparseGPRegressor(max_basis=P, random_state=0, **kwargs).fit(X, y)
    return model, [str(w.message) for w in caught if w.category is ConvergenceWarning]


def _at_upper(kernel):
    return np.flatnonzero(np.isclose(np.log(kernel.k2.length_scale), np.log(UPPER)))


def test_switched_off_features_of_the_default_kernel_do_not_warn(capsys):
    X, y = _data()
    model, warned = _fit(X, y, verbose=1)
    off = _at_upper(model.kernel_)
    assert off.size >= 2 and off.min() >= 4  # irrelevant features, at the bound
    assert warned == []
    out = capsys.readouterr().out
    assert f"features {off.tolist()} switched off" in out
    # the relevant features keep short length scales
    assert np.all(model.kernel_.k2.length_scale[:4] < 100.0)


def test_the_same_kernel_passed_by_the_user_warns_for_each_feature_at_the_bound():
    X, y = _data()
    user_kernel = per_feature_start(C(1.0) * RBF(1.0), X)
    model, warned = _fit(X, y, kernel=user_kernel)
    off = _at_upper(model.kernel_)
    assert off.size >= 1
    named = sorted(
        int(m.split("dimension ")[1].split(" ")[0]) for m in warned if "k2__length_scale" in m
    )
    assert named == off.tolist()
    assert all("upper bound 100000.0" in m for m in warned)
