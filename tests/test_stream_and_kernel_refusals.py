"""Clear answers to three inputs of issue 48's sweep (point 6).

- ``SparseGPRegressor(kernel=WhiteKernel(...))``: a kernel with no function part, refused by a
  ``ValueError`` naming ``kernel`` (it failed deep in the selection, "X_basis must be ...").
- A kernel on structured inputs: ``partial_fit`` of both sparse GP estimators and ``fit`` of
  both RVMs refuse it by a ``ValueError`` naming ``kernel`` (they failed converting strings
  to float); ``fit`` and ``predict`` of the sparse GP estimators take it.
- The classifier's stream with ``stream_buffer=0`` and a one-row first batch: the first batch
  is kept and refitted with the next whole batch (its bias was frozen at +5, test NLP ~4),
  with a warning; the stream's test NLP is then that of a stream with a normal first batch.
"""

import warnings

import numpy as np
import pytest
from _support.sequences import _LABELS, _SEQUENCES, _Y, SequenceKernel
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.metrics import log_loss

from skgpsparse import (
    RelevanceVectorClassifier,
    RelevanceVectorRegressor,
    SparseGPClassifier,
    SparseGPRegressor,
)


@pytest.mark.parametrize(
    "kernel", [WhiteKernel(1.0), WhiteKernel(0.5) + WhiteKernel(0.1)], ids=["alone", "sum"]
)
def test_a_white_kernel_alone_is_refused_naming_kernel(kernel):
    X = np.random.RandomState(0).randn(30, 2)
    with pytest.raises(ValueError, match=r"kernel=WhiteKernel.* has no function part"):
        SparseGPRegressor(kernel=kernel).fit(X, X[:, 0])
    # with a function part beside it, the WhiteKernel is the noise (and fits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SparseGPRegressor(C(1.0) * RBF(1.0) + kernel, max_basis=10).fit(X, X[:, 0])
    assert model.score(X, X[:, 0]) > 0.9


@pytest.mark.parametrize("classify", [False, True], ids=["regressor", "classifier"])
def test_partial_fit_refuses_structured_inputs_naming_kernel(classify):
    est = (SparseGPClassifier if classify else SparseGPRegressor)(SequenceKernel(), max_basis=6)
    y = _LABELS if classify else _Y
    extra = {"classes": [0, 1]} if classify else {}
    with pytest.raises(ValueError, match=r"partial_fit is not available with a kernel on "
                                         r"structured inputs \(`kernel` SequenceKernel"):
        est.partial_fit(_SEQUENCES[:6], y[:6], **extra)
    assert not [k for k in vars(est) if k.endswith("_")]
    # fitted by fit, a later partial_fit is refused the same way, and the model stays
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(_SEQUENCES, y)
    before = est.predict(_SEQUENCES)
    with pytest.raises(ValueError, match="partial_fit is not available"):
        est.partial_fit(_SEQUENCES[:6], y[:6], **extra)
    np.testing.assert_array_equal(est.predict(_SEQUENCES), before)


@pytest.mark.parametrize("cls", [RelevanceVectorRegressor, RelevanceVectorClassifier])
def test_the_rvms_refuse_structured_inputs_naming_kernel(cls):
    y = _LABELS if cls is RelevanceVectorClassifier else _Y
    with pytest.raises(ValueError, match=r"fit is not available with a kernel on structured "
                                         r"inputs \(`kernel` SequenceKernel.*numeric X only"):
        cls(kernel=SequenceKernel()).fit(_SEQUENCES, y)


def _stream_nlp(first, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(700, 2)
    y = (X[:, 0] + 0.3 * rng.randn(700) > 0).astype(int)
    X_test, y_test = X[600:], y[600:]
    clf = SparseGPClassifier(max_basis=10, max_iter=2, stream_buffer=0, random_state=0)
    clf.partial_fit(X[:first], y[:first], classes=[0, 1])
    for rows in np.array_split(np.arange(first, 600), 5):
        clf.partial_fit(X[rows], y[rows])
    return log_loss(y_test, clf.predict_proba(X_test)), clf


def test_a_one_row_first_batch_does_not_freeze_the_stream():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        normal, _ = _stream_nlp(first=100)
    for first in (1, 2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            nlp, clf = _stream_nlp(first=first)
        assert any(f"the first batch has {first} row(s), fewer than max_basis=10"
                   in str(w.message) for w in caught)
        # was 4.6 (bias at +5, one basis vector); the normal first batch's is ~0.2
        assert nlp < 1.1 * normal, (first, nlp, normal)
        assert abs(clf.bias_) < 2.0 and clf.basis_vectors_.shape[0] == 10
        assert clf.n_samples_seen_ == 600
