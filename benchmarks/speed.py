"""Fit time and test quality of SparseGPClassifier against scikit-learn's full GPC on twonorm.

Twonorm (d = 20, the PMLB copy in the offline datasets folder, labels 0/1): a seeded subsample
of ``--n-train`` rows (default 2000) for training and a disjoint subsample of ``--n-test`` rows
(default 3000) for testing. Compares the default ``SparseGPClassifier(max_basis=200)`` with
scikit-learn's ``GaussianProcessClassifier(ConstantKernel(1.0) * RBF(1.0))`` (the same initial
kernel as the sparse default; Laplace approximation, one L-BFGS-B run): fit time (median of
``--repeats`` fits), test NLP (``-mean log p(y_true | x)``, natural log) and test error.

The goal of the classifier issue: the sparse fit at least 10x faster (50x for the later
performance issue) with a test NLP within 1.1x of the full GPC's.

Usage::

    python benchmarks/speed.py               # n = 2000, 3 repeats
    python benchmarks/speed.py --quick       # n = 1000, 1 repeat

Writes ``benchmarks/results/speed.md``.
"""

import argparse
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import load_dataset

RESULTS = Path(__file__).resolve().parent / "results"


def split(n_train, n_test, seed):
    data = load_dataset("pmlb_twonorm_subst_twonorm")
    X, y = data["X"], data["y"]
    if n_train + n_test > X.shape[0]:
        raise ValueError(
            f"n_train + n_test must be at most {X.shape[0]}, got {n_train} + {n_test}."
        )
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    train, test = perm[:n_train], perm[n_train : n_train + n_test]
    return X[train], y[train], X[test], y[test]


def scores(model, X, y):
    """Test NLP (natural log, mean over points) and error (%)."""
    proba = model.predict_proba(X)
    column = np.searchsorted(model.classes_, y)
    p_true = np.clip(proba[np.arange(len(y)), column], 1e-300, 1.0)
    error = np.mean(model.classes_[np.argmax(proba, axis=1)] != y)
    return float(-np.mean(np.log(p_true))), 100.0 * float(error)


def timed_fits(make, X, y, X_test, y_test, repeats):
    times, model = [], None
    for _ in range(repeats):
        model = make()
        start = time.perf_counter()
        model.fit(X, y)
        times.append(time.perf_counter() - start)
    nlp, err = scores(model, X_test, y_test)
    return {
        "times": times,
        "time": float(np.median(times)),
        "nlp": nlp,
        "error": err,
        "model": model,
    }


def machine():
    cpu = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=2000)
    parser.add_argument("--n-test", type=int, default=3000)
    parser.add_argument("--max-basis", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads for both models")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="n_train 1000, 1 repeat")
    parser.add_argument("--no-write", action="store_true", help="do not write results/speed.md")
    args = parser.parse_args(argv)
    if args.quick:
        args.n_train, args.repeats = 1000, 1

    import sklearn
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    from threadpoolctl import threadpool_limits

    from skgpsparse._classification import SparseGPClassifier

    X, y, X_test, y_test = split(args.n_train, args.n_test, args.seed)
    print(f"twonorm: {X.shape[0]} train / {X_test.shape[0]} test rows, d = {X.shape[1]}")
    with threadpool_limits(limits=args.threads):
        sparse = timed_fits(
            lambda: SparseGPClassifier(max_basis=args.max_basis, random_state=args.seed),
            X,
            y,
            X_test,
            y_test,
            args.repeats,
        )
        print(
            f"sparse: {sparse['time']:.2f} s  NLP {sparse['nlp']:.4f}  "
            f"err {sparse['error']:.2f}%  kernel {sparse['model'].kernel_}  "
            f"n_iter {sparse['model'].n_iter_}",
            flush=True,
        )
        full = timed_fits(
            lambda: GaussianProcessClassifier(
                ConstantKernel(1.0) * RBF(1.0), random_state=args.seed
            ),
            X,
            y,
            X_test,
            y_test,
            args.repeats,
        )
        print(
            f"full:   {full['time']:.2f} s  NLP {full['nlp']:.4f}  "
            f"err {full['error']:.2f}%  kernel {full['model'].kernel_}",
            flush=True,
        )

    ratio = full["time"] / sparse["time"]
    nlp_ratio = sparse["nlp"] / full["nlp"]
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    checks = [
        ("fit >= 10x faster", ratio >= 10.0),
        ("fit >= 50x faster (performance issue)", ratio >= 50.0),
        ("test NLP <= 1.1 x full GPC's", nlp_ratio <= 1.1),
    ]
    lines = [
        "# Speed: SparseGPClassifier vs scikit-learn GaussianProcessClassifier (twonorm)",
        "",
        (
            f"Machine: {machine()}; scikit-learn {sklearn.__version__}; {date}; "
            f"{args.threads} BLAS thread(s) for both models."
        ),
        (
            f"twonorm (PMLB copy), d = {X.shape[1]}: {X.shape[0]} training rows, "
            f"{X_test.shape[0]} disjoint test rows (seed {args.seed}); fit time is the median of "
            f"{args.repeats} fit(s); test NLP is -mean log p(y|x) (natural log)."
        ),
        "",
        "| model | fit time (s) | test NLP | test error (%) | fitted kernel |",
        "|---|---|---|---|---|",
        (
            f"| SparseGPClassifier(max_basis={args.max_basis}), defaults | {sparse['time']:.2f} | "
            f"{sparse['nlp']:.4f} | {sparse['error']:.2f} | {sparse['model'].kernel_} |"
        ),
        (
            f"| GaussianProcessClassifier(C(1.0) * RBF(1.0)) | {full['time']:.2f} | "
            f"{full['nlp']:.4f} | {full['error']:.2f} | {full['model'].kernel_} |"
        ),
        "",
        (
            f"Fit-time ratio (full / sparse): **{ratio:.1f}x**; test NLP ratio (sparse / full): "
            f"**{nlp_ratio:.3f}**. Sparse outer iterations: {sparse['model'].n_iter_}; individual "
            f"fit times: sparse {[round(t, 2) for t in sparse['times']]}, full "
            f"{[round(t, 2) for t in full['times']]}."
        ),
        "",
    ]
    lines += [f"- {name}: {'PASS' if ok else 'FAIL'}" for name, ok in checks]
    text = "\n".join(lines) + "\n"
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "speed.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
