"""The default kernel's amplitude cap does not warn; the same kernel passed by the user does.

Two well separated blobs: the evidence keeps rising with the amplitude (a latent that grows
with the distance from the boundary fits them ever better), so the default kernel's amplitude
ends at its cap of 100 (latent standard deviation 10) on every fit path below. That cap is the
package's choice, not the user's: it is reported on the verbose output, not warned about.
``C(1.0, (1e-5, 100.0)) * RBF(sqrt(d))`` passed as ``kernel`` is the same kernel, now the user's:
scikit-learn's ``ConvergenceWarning`` names its amplitude.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPClassifier
from skgpsparse.classification._fitting import default_kernel

CAP = 100.0
PATHS = {
    "all_rows": {},
    "basis": {"posterior": "basis"},
    "evidence": {"posterior": "basis", "hyperparameter_objective": "evidence"},
}


def _blobs(n_classes):
    centres = [[-3, 0], [3, 0], [0, 4]][:n_classes]
    return make_blobs(n_samples=60 * n_classes, centers=centres, cluster_std=0.5, random_state=0)


def _fit(X, y, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = SparseGPClassifier(max_basis=10, max_iter=5, random_state=0, **kwargs).fit(X, y)
    return model, [w for w in caught if w.category is ConvergenceWarning]


def _amplitudes(model):
    # one kernel per binary model (a multi-class kernel_ may be their CompoundKernel)
    kernels = getattr(model, "kernels_", None) or [model.kernel_]
    return np.array([k.k1.constant_value for k in kernels])


@pytest.mark.parametrize("path", list(PATHS))
def test_default_amplitude_at_its_cap_does_not_warn_a_user_kernel_does(path):
    X, y = _blobs(2)
    model, warned = _fit(X, y, **PATHS[path])
    assert np.allclose(_amplitudes(model), CAP, rtol=1e-6)  # the cap is reached
    assert warned == []
    user_kernel = C(1.0, (1e-5, CAP)) * RBF(np.sqrt(X.shape[1]))
    assert repr(user_kernel) == repr(default_kernel(X.shape[1]))  # the same kernel
    user, warned = _fit(X, y, kernel=user_kernel, **PATHS[path])
    assert np.allclose(_amplitudes(user), CAP, rtol=1e-6)
    assert warned and all("k1__constant_value" in str(w.message) for w in warned)
    assert all("upper bound 100.0" in str(w.message) for w in warned)


@pytest.mark.parametrize("multi_class", ["shared", "independent"])
def test_three_classes_default_silent_user_kernel_warns(multi_class):
    X, y = _blobs(3)
    model, warned = _fit(X, y, multi_class=multi_class)
    assert np.allclose(_amplitudes(model), CAP, rtol=1e-6)
    assert warned == []
    user, warned = _fit(X, y, multi_class=multi_class, kernel=default_kernel(X.shape[1]))
    assert np.allclose(_amplitudes(user), CAP, rtol=1e-6)
    assert warned and all("k1__constant_value" in str(w.message) for w in warned)


def test_the_cap_is_reported_on_the_verbose_output(capsys):
    X, y = _blobs(2)
    _fit(X, y, verbose=1)
    out = capsys.readouterr().out
    assert "default kernel: k1__constant_value at its upper bound 100" in out

