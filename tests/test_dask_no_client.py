"""A dask array without an active dask.distributed client (its own module: no cluster up)."""

import numpy as np
import pytest

from skgpsparse import SparseGPRegressor

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


def test_dask_fit_without_a_client_says_so():
    with pytest.raises(ValueError):  # the precondition: no client is active here
        distributed.get_client()
    rng = np.random.RandomState(0)
    X = da.from_array(rng.rand(60, 2), chunks=(30, 2))
    y = da.from_array(rng.rand(60), chunks=30)
    with pytest.raises(ValueError, match="active dask.distributed Client"):
        SparseGPRegressor(optimizer=None, max_basis=5).fit(X, y)


def test_importing_the_package_does_not_import_dask():
    import subprocess
    import sys

    code = (
        "import sys, numpy as np, skgpsparse\n"
        "skgpsparse.SparseGPRegressor(max_basis=3, optimizer=None).fit(np.eye(4), np.ones(4))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
