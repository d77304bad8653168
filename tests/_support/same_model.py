"""What "the same model" means for a fit whose rows live in partitions (a dask array, a test's
own row backend) against the in-memory fit: the same basis, and the rest to the rounding of
sums taken in another order."""

import numpy as np


def assert_same_regressor(model, reference, X):
    """The same basis and refinement, ``theta`` to 1e-9, mean and std at ``X`` to 1e-8."""
    np.testing.assert_array_equal(model.basis_indices_, reference.basis_indices_)
    assert model.n_refine_iter_ == reference.n_refine_iter_
    np.testing.assert_allclose(model.basis_vectors_, reference.basis_vectors_)
    for got, want in zip(model.predict(X, return_std=True),
                         reference.predict(X, return_std=True)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)
    np.testing.assert_allclose(model.kernel_.theta, reference.kernel_.theta, atol=1e-9)


def assert_same_classifier(clf, reference, X):
    """The same classes and bases (one per binary model), probabilities at ``X`` to 1e-8."""
    np.testing.assert_array_equal(clf.classes_, reference.classes_)
    for got, want in zip(np.atleast_2d(clf.basis_indices_),
                         np.atleast_2d(reference.basis_indices_)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(clf.predict_proba(X), reference.predict_proba(X), rtol=0,
                               atol=1e-8)
    if hasattr(reference, "logit_weight_"):  # the one-vs-rest probabilities' combination
        assert abs(clf.logit_weight_ - reference.logit_weight_) <= 1e-6
