"""A user's kernel with wide amplitude bounds must not make the classifier overconfident.

``ConstantKernel(1.0) * RBF(1.0)`` leaves the amplitude free up to 1e5. On a small noisy problem
(20 % of the labels flipped) the probabilities must stay as cautious as the data support: the
test NLP near scikit-learn's full GP classifier's, which learns the same kernel by its own
(Laplace) evidence, and the mean confidence no higher than the test accuracy.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.metrics import log_loss

from skgpsparse import SparseGPClassifier


def _noisy_problem(seed):
    X, y = make_classification(
        n_samples=700, n_features=4, n_informative=2, n_redundant=0, flip_y=0.2,
        class_sep=0.8, random_state=seed,
    )
    return X[:200], y[:200], X[200:], y[200:]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("max_basis", [40, 200])
def test_user_kernel_test_nlp_near_the_full_gp(seed, max_basis):
    X, y, X_test, y_test = _noisy_problem(seed)
    kernel = C(1.0) * RBF(1.0)  # amplitude bounds (1e-5, 1e5): no cap
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = GaussianProcessClassifier(kernel, random_state=0).fit(X, y)
        sparse = SparseGPClassifier(kernel, max_basis=max_basis, random_state=0).fit(X, y)
    proba = sparse.predict_proba(X_test)
    nlp_full = log_loss(y_test, full.predict_proba(X_test))
    nlp = log_loss(y_test, proba)
    # about a fifth of the labels are noise: a model confident beyond that pays for it here
    assert nlp <= 1.1 * nlp_full
    # the amplitude stays where the data put it, far from the kernel's upper bound
    assert sparse.kernel_.k1.constant_value < 1e3
    # calibrated on the whole: the mean confidence of the predicted class is no higher than
    # the test accuracy (an overconfident model's is far above: 0.99 against 0.5 and less)
    accuracy = np.mean(sparse.classes_[np.argmax(proba, axis=1)] == y_test)
    assert proba.max(axis=1).mean() <= accuracy + 0.03


def test_basis_posterior_warns_when_few_rows_are_left_for_its_objective():
    # eq. (4) over one held-out row fitted that row (a bias of -10, chance accuracy)
    X, y, _, _ = _noisy_problem(0)
    with pytest.warns(UserWarning, match="rows outside the basis, 1 of 200"):
        SparseGPClassifier(C(1.0) * RBF(1.0), max_basis=199, posterior="basis",
                           max_iter=1, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SparseGPClassifier(max_basis=100, posterior="basis", max_iter=1, random_state=0,
                           optimizer=None).fit(X, y)
