"""The data-scaled start of a kernel's length scales (kernels/_scales.py) and its use."""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, Matern, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPClassifier
from skgpsparse.kernels._scales import data_scaled_start


def _inputs(n=60, d=20, seed=0):
    scales = np.linspace(0.5, 3.0, d)
    return np.random.RandomState(seed).randn(n, d) * scales, scales


def test_isotropic_and_ard_length_scales_go_to_the_data_scale():
    X, _ = _inputs()
    d = X.shape[1]
    std = X.std(axis=0)
    iso = data_scaled_start(C(1.0) * RBF(1.0), X)
    assert iso.k2.length_scale == pytest.approx(np.sqrt(d) * np.sqrt(np.mean(std**2)))
    ard = data_scaled_start(C(1.0) * RBF(np.ones(d)), X)
    np.testing.assert_allclose(ard.k2.length_scale, np.sqrt(d) * std)
    # the rest of the kernel is untouched, and so is the user's kernel
    mixed = C(2.0) * Matern(1.0, nu=2.5) + WhiteKernel(0.3)
    start = data_scaled_start(mixed, X)
    assert start.k1.k2.nu == 2.5 and start.k2.noise_level == 0.3 and start.k1.k1.constant_value == 2.0
    assert mixed.k1.k2.length_scale == 1.0


def test_nothing_to_compare_when_close_fixed_or_absent():
    X, _ = _inputs()
    scale = np.sqrt(X.shape[1]) * np.sqrt(np.mean(X.std(axis=0) ** 2))
    assert data_scaled_start(C(1.0) * RBF(1.5 * scale), X) is None
    assert data_scaled_start(C(1.0) * RBF(1.0, length_scale_bounds="fixed"), X) is None
    assert data_scaled_start(C(1.0) + WhiteKernel(), X) is None


def test_the_start_is_clipped_to_the_bounds():
    X, _ = _inputs()
    start = data_scaled_start(C(1.0) * RBF(0.1, length_scale_bounds=(1e-3, 2.0)), X)
    assert start.k2.length_scale == 2.0


def test_a_short_user_length_scale_reaches_the_default_kernels_fit():
    # 20 features, RBF(1.0): rows barely correlate at the start and the evidence has a local
    # optimum there (length scale 1.0, log evidence -208 here); the fit compares the
    # data-scaled start by the evidence and leaves it
    rng = np.random.RandomState(0)
    X = rng.randn(300, 20)
    w = rng.randn(20)
    y = (X @ w / np.sqrt(20) + rng.randn(300) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        user = SparseGPClassifier(C(1.0) * RBF(1.0), max_basis=60, random_state=0).fit(X, y)
        default = SparseGPClassifier(max_basis=60, random_state=0).fit(X, y)
    assert user.kernel_.k2.length_scale > 5.0
    # at least the default kernel's evidence (whose amplitude is capped), within 2 %
    assert user.log_marginal_likelihood_value_ >= 1.02 * default.log_marginal_likelihood_value_
