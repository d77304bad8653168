"""Helpers of the tests that check how many BLAS threads a computation runs on."""

from threadpoolctl import threadpool_info


def blas_thread_counts():
    """Thread counts of the loaded BLAS libraries, as threadpoolctl reports them."""
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def record_blas_threads(monkeypatch, module, name):
    """Patch ``module.name`` to record :func:`blas_thread_counts` at each call; return the list."""
    seen = []
    original = getattr(module, name)

    def spy(*args, **kwargs):
        seen.append(blas_thread_counts())
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return seen
