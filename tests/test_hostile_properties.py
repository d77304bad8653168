"""Property-based hostile input for the four estimators (issue 22).

For random shapes (1-60 rows, 1-6 columns), scales, duplicated rows, constant columns, labels
of any kind and input containers, each estimator either returns finite, well-formed output
(scikit-learn's GPR/GPC shapes, probabilities summing to 1, non-negative standard deviations)
or raises a ValueError naming the offending argument; and it never modifies its inputs.
Strategies and checks: ``tests/_support/hostile.py``.
"""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from _support.hostile import (
    CLASSIFIERS,
    ESTIMATORS,
    LABEL_KINDS,
    PROPERTY,
    Frozen,
    assert_well_formed,
    estimators,
    fit_quietly,
    problems,
)
from hypothesis import assume, example, given
from hypothesis import strategies as st
from sklearn.exceptions import FitFailedWarning
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score


def _pick(name, problem):
    """``(X, y)`` for estimator ``name`` from a ``problems()`` draw (targets or labels)."""
    X, y, labels = problem
    if name in CLASSIFIERS:
        assume(labels is not None)
        return X, labels
    return X, y


# Found by the first property: a constant column at 1e-218 and one target of 1.9e76 gave the
# regressor's L-BFGS-B a gradient of 1e154 beside a subnormal entry, and it stepped to a NaN
# noise variance (fixed in skgpsparse._optimize by rescaling such objectives).
_SUBNORMAL_COLUMN_HUGE_TARGET = (
    np.column_stack([np.full(13, 1.17186287e-218), np.zeros(13)]),
    np.r_[1.9e76, np.zeros(12)],
    np.r_[["dog"], np.full(12, "cat")],
)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@PROPERTY
@given(problem=problems(), options=st.data())
@example(problem=_SUBNORMAL_COLUMN_HUGE_TARGET, options=None).via("found by hypothesis")
def test_finite_input_gives_well_formed_output_and_is_never_modified(name, problem, options):
    X, y = _pick(name, problem)
    frozen = Frozen(X, y)
    est = ESTIMATORS[name]() if options is None else options.draw(estimators(name))
    fit_quietly(est, X, y)
    X_test = np.vstack([X[::-1][:5], X.mean(axis=0, keepdims=True)])
    with warnings.catch_warnings():
        # no UserWarning (numpy's RuntimeWarning that a round-off covariance is not PSD in
        # sample_y, as with scikit-learn's GPR, is allowed)
        warnings.simplefilter("error", UserWarning)
        assert_well_formed(est, X_test, y)
    frozen.assert_unchanged()


_MESSAGE = {"X": r"Input X contains (NaN|infinity)", "y": r"Input y contains (NaN|infinity)"}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@PROPERTY
@given(
    problem=problems(),
    where=st.sampled_from(["X", "y"]),
    bad=st.sampled_from([np.nan, np.inf, -np.inf]),
    position=st.integers(0, 10**6),
)
def test_non_finite_values_are_rejected_naming_the_argument(name, problem, where, bad, position):
    X, y = _pick(name, problem)
    if name in CLASSIFIERS:
        y = np.unique(y, return_inverse=True)[1].astype(np.float64)
    X_bad, y_bad = X.copy(), y.copy()
    if where == "X":
        X_bad.flat[position % X.size] = bad
    else:
        y_bad[position % y.size] = bad
    frozen = Frozen(X_bad, y_bad)
    with pytest.raises(ValueError, match=_MESSAGE[where]):
        ESTIMATORS[name]().fit(X_bad, y_bad)
    frozen.assert_unchanged()
    if where == "X":
        est = fit_quietly(ESTIMATORS[name](), X, y)
        methods = ["predict", "predict_proba", "decision_function", "sample_y"]
        for method in [m for m in methods if hasattr(est, m)]:
            with pytest.raises(ValueError, match=_MESSAGE["X"]):
                getattr(est, method)(X_bad)
            frozen.assert_unchanged()


def _as_kind(X, y, kind):
    """``(X, y)`` in another container, and the float64 arrays scikit-learn converts it to."""
    if kind == "int":
        X = np.round(X / np.abs(X).max() * 50 if np.abs(X).max() > 0 else X).astype(np.int64)
        return X, y, X.astype(np.float64)
    if kind == "float32":
        with np.errstate(over="ignore"):
            X = X.astype(np.float32)
        X[~np.isfinite(X)] = 0  # the cast overflows beyond float32's range: keep what is finite
        return X, y, X.astype(np.float64)
    if kind == "DataFrame":
        columns = [f"x{j}" for j in range(X.shape[1])]
        return pd.DataFrame(X, columns=columns), pd.Series(y, name="target"), X
    return X.tolist(), y.tolist(), X


# Found by the container property: sample_y on a regressor fitted with a DataFrame warned
# that X had no feature names (it validated X, then predicted on the bare array).
_ZEROS = (np.zeros((2, 1)), np.zeros(2), np.array([False, True]))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("kind", ["int", "float32", "DataFrame", "list"])
@PROPERTY
@given(problem=problems())
@example(problem=_ZEROS).via("found by hypothesis")
def test_input_containers_give_the_model_of_the_float64_array(name, kind, problem):
    X, y = _pick(name, problem)
    X_kind, y_kind, X_float = _as_kind(X, y, kind)
    frozen = Frozen(X_kind, y_kind)
    est = fit_quietly(ESTIMATORS[name](), X_kind, y_kind)
    reference = fit_quietly(ESTIMATORS[name](), X_float, y)
    frozen.assert_unchanged()
    X_test = X_kind[:7] if kind != "DataFrame" else X_kind.iloc[:7]
    frozen = Frozen(X_test)
    method = "predict_proba" if name in CLASSIFIERS else "predict"
    np.testing.assert_allclose(
        getattr(est, method)(X_test),
        getattr(reference, method)(X_float[:7]),
        rtol=1e-9,
        atol=0,
    )
    frozen.assert_unchanged()
    with warnings.catch_warnings():
        # no UserWarning such as "X does not have valid feature names"
        warnings.simplefilter("error", UserWarning)
        assert_well_formed(est, X_test, y)


_ONE_CLASS = re.compile(r"2 (or more distinct )?classes")


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
@PROPERTY
@given(problem=problems(), kind=st.sampled_from(sorted(LABEL_KINDS)), position=st.integers(0, 3))
def test_one_class_is_rejected_naming_the_classes(name, problem, kind, position):
    X = problem[0]
    y = np.full(len(X), LABEL_KINDS[kind][position % len(LABEL_KINDS[kind])])
    with pytest.raises(ValueError, match=_ONE_CLASS):
        ESTIMATORS[name]().fit(X, y)


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
@PROPERTY
@given(
    class_sizes=st.lists(st.integers(1, 10), min_size=2, max_size=3),
    n_splits=st.integers(2, 4),
    kind=st.sampled_from(["int", "str"]),
    seed=st.integers(0, 1000),
)
def test_single_class_training_folds_fail_as_scikit_learn_classifiers_do(
    name, class_sizes, n_splits, kind, seed
):
    # Labels in blocks and unshuffled folds: a test fold that holds every row of all classes
    # but one leaves a single class to train on. fit then raises a ValueError naming the
    # classes (as scikit-learn's GaussianProcessClassifier does), which cross-validation's
    # error_score turns into a NaN score for that fold only (or re-raises with "raise").
    n = sum(class_sizes)
    n_splits = min(n_splits, n)
    X = np.random.RandomState(seed).normal(size=(n, 2))
    y = LABEL_KINDS[kind][np.repeat(np.arange(len(class_sizes)), class_sizes)]
    cv = KFold(n_splits)
    single = np.array([len(np.unique(y[train])) < 2 for train, _ in cv.split(X)])
    frozen = Frozen(X, y)
    est = ESTIMATORS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FitFailedWarning, a basis that stops growing, ...
        if single.any():
            with pytest.raises(ValueError, match=_ONE_CLASS):
                cross_val_score(est, X, y, cv=cv, error_score="raise")
        if single.all():
            with pytest.raises(ValueError, match=_ONE_CLASS):
                cross_val_score(est, X, y, cv=cv)
            return
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FitFailedWarning)
            scores = cross_val_score(est, X, y, cv=cv)
        reference = cross_val_score(GaussianProcessClassifier(), X, y, cv=cv)
        search = GridSearchCV(est, {"max_iter": [1, 2]}, cv=cv).fit(X, y)
    np.testing.assert_array_equal(np.isnan(scores), single)
    np.testing.assert_array_equal(np.isnan(reference), single)
    assert np.all((scores[~single] >= 0) & (scores[~single] <= 1))
    assert any(issubclass(w.category, FitFailedWarning) for w in caught) == single.any()
    for i, failed in enumerate(single):
        split_scores = search.cv_results_[f"split{i}_test_score"]
        assert np.all(np.isnan(split_scores) == failed)
    assert_well_formed(search.best_estimator_, X, y)  # refitted on every class
    frozen.assert_unchanged()
