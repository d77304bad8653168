"""Shared helpers of the classifier benchmarks: data splits, timed fits, scores, paired tests."""

import platform
import time
from datetime import UTC, datetime

import numpy as np
from scipy.stats import ttest_rel
from threadpoolctl import threadpool_limits

from .data import load_dataset


def split(name, realization):
    """Training and test arrays of realization ``realization`` (0-based) of ``raetsch_<name>``."""
    d = load_dataset(f"raetsch_{name}")
    X, y = d["X"], d["y"]
    tr, te = d["train_idx"][realization], d["test_idx"][realization]
    return X[tr], y[tr], X[te], y[te]


def initial_kernel(n_features):
    """``ConstantKernel(1) * RBF(sqrt(d))``, the start used by benchmarks/papers/raetsch.py."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    return ConstantKernel(1.0) * RBF(np.sqrt(n_features))


def timed_fit(model, X, y):
    """Fit with one BLAS thread; return the model and its CPU time in seconds."""
    with threadpool_limits(limits=1, user_api="blas"):
        tic = time.process_time()
        model.fit(X, y)
        return model, time.process_time() - tic


def test_scores(model, X, y):
    """Test NLP (natural log, mean) and error rate of a fitted binary classifier."""
    log_p = model.predict_log_proba(X)
    idx = np.searchsorted(model.classes_, y)
    return float(-np.mean(log_p[np.arange(y.size), idx])), float(np.mean(model.predict(X) != y))


def paired(a, b):
    """Mean difference ``a - b`` and the paired t-test p-value (nan with fewer than 2 pairs)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size < 2 or np.allclose(a, b):
        return float(np.mean(a - b)), float("nan")
    return float(np.mean(a - b)), float(ttest_rel(a, b).pvalue)


def mean_std(values, scale=1.0, digits=2):
    v = np.asarray(values, dtype=float) * scale
    return f"{v.mean():.{digits}f} +- {v.std(ddof=1) if v.size > 1 else 0.0:.{digits}f}"


def header(title, argv):
    """Markdown header with machine and date."""
    return [
        f"# {title}",
        "",
        f"Machine: {platform.machine()}, {platform.processor() or 'cpu'}, Python "
        f"{platform.python_version()}, numpy {np.__version__}; one BLAS thread, CPU time. "
        f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Command: `python {' '.join(argv)}`.",
        "",
    ]
