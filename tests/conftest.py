"""Test-session settings shared by every test module."""

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="session")
def _one_blas_thread():
    # The tests use small matrices, where BLAS threads cost more than they give, and a
    # loaded machine makes oversubscribed threads spin: one thread keeps the suite fast.
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@pytest.fixture(autouse=True)
def _array_api_checks(monkeypatch):
    # scikit-learn's check_array_api_input skips itself unless SCIPY_ARRAY_API is set;
    # set it so that every estimator check runs.
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
