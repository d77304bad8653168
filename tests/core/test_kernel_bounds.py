"""Learned hyperparameters at their bounds (skgpsparse.kernels._bounds): the same judgement
and message as scikit-learn's ``Kernel._check_bounds_params``, silent only for the upper bounds
a package default names."""

import warnings

import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse.kernels._bounds import (
    describe_at_bounds,
    hyperparameters_at_bounds,
    warn_at_bounds,
)

KERNELS = [
    C(100.0, (1e-5, 100.0)) * RBF([1.0, 1e5, 1e-5]),  # upper, upper, lower
    C(1e-5) * RBF(2.0) + WhiteKernel(1e5),
    C(3.0) * RBF([1.0, 2.0]),  # none
    C(100.0, "fixed") * RBF(1e5, "fixed"),  # fixed values are not learned
]


def _messages(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    assert all(w.category is ConvergenceWarning for w in caught)
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("kernel", KERNELS)
def test_without_expected_names_the_warnings_are_scikit_learns(kernel):
    ours = _messages(lambda: warn_at_bounds(kernel, ()))
    theirs = _messages(kernel._check_bounds_params)
    assert ours == theirs
    # the same judgement, one warning per listed bound
    assert len(hyperparameters_at_bounds(kernel)) == len(theirs)


@pytest.mark.parametrize("kernel", KERNELS)
def test_our_message_is_scikit_learns_word_for_word(kernel):
    # any expected name switches to our loop; an unrelated one silences nothing
    assert _messages(lambda: warn_at_bounds(kernel, ("k9__nothing",))) == _messages(
        kernel._check_bounds_params
    )


def test_expected_upper_bounds_are_silent_and_returned():
    kernel = KERNELS[0]
    quiet = []
    messages = _messages(lambda: quiet.extend(
        warn_at_bounds(kernel, ("k1__constant_value", "k2__length_scale"))
    ))
    # the per-feature length scale at its LOWER bound still warns
    assert len(messages) == 1 and "dimension 2 of parameter k2__length_scale" in messages[0]
    assert "lower bound" in messages[0]
    assert [(q.name, q.dim, q.side) for q in quiet] == [
        ("k1__constant_value", 0, "upper"), ("k2__length_scale", 1, "upper")
    ]
    line = describe_at_bounds(quiet)
    assert "features [1] switched off" in line
    assert "k1__constant_value at its upper bound 100" in line


def test_a_single_length_scale_at_its_upper_bound_still_warns():
    # one length scale for all features at 1e5 leaves no feature in the model
    kernel = C(2.0) * RBF(1e5)
    messages = _messages(lambda: warn_at_bounds(kernel, ("k2__length_scale",)))
    assert len(messages) == 1 and "k2__length_scale" in messages[0]


def test_the_bounds_are_judged_on_the_log_scale_as_scikit_learn():
    # np.isclose on log values: 1e5 * (1 + 1e-6) is at the bound, 0.99e5 is not
    near = C(2.0) * RBF([1.0, 1e5 * (1 + 1e-6)])
    far = C(2.0) * RBF([1.0, 0.99e5])
    assert [at.dim for at in hyperparameters_at_bounds(near)] == [1]
    assert hyperparameters_at_bounds(far) == []
