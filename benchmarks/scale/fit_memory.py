"""Fit memory at 10^6-10^7 rows: the default constructors' peak against the size of their data.

Issue 49's goal: 10^7 x 20 rows (1.6 GB) fitted within 15 minutes and a peak of at most twice
the data plus O(p^2), for both estimators. The ``p x n`` block ``V = L^-1 K_uf`` of the
all-rows stage (8 GB at 10^7 rows, p = 100) is held whole only below a budget
(``skgpsparse/inference/_row_columns.py``: 1 GiB, or the size of ``X``); above it the passes
form its blocks again from ``X``. This script fits ``SparseGPClassifier(random_state=0)`` and
``SparseGPRegressor(random_state=0)`` on the law of ``million.py`` / ``paired_refs.py`` (``X``
standard normal n x 20, ``f = sin(x0) + x1^2 / 2 - x2 x3 / 2``, regression targets ``f + 0.3
noise`` standardised by the training rows, labels ``f + 0.3 noise > median(f)``, both constants
from the first 10^6 training rows, which are the same rows at every ``n >= 10^6``; 20,000 test
rows drawn on their own, the same at every ``n``), each fit in its own subprocess with one BLAS
thread, and records the fit's CPU and wall time, the CPU of its all-rows stage (the
classifier's EP on every row, the regressor's posterior and calibration on every row, after
learning on the subsample), the process's peak resident memory (``VmHWM``), the resident memory
before the fit (the interpreter, ``X`` with the test rows and the targets), the peak over the
training ``X``'s bytes, and the test NLP (classifier) or NLPD and NMSE (regressor).

``--paths`` chooses how ``V`` is held: ``default`` (the package's rule), ``stored`` (the
budget raised so that ``V`` is held whole, as before) or ``recomputed`` (the budget at
128 MB: ``V`` of the learning subsample held, of all rows formed by blocks);
``stored,recomputed`` at the same size measures the time the recomputed passes cost.

Usage (from the repository root)::

    python benchmarks/scale/fit_memory.py --sizes 1000000 --paths stored,recomputed
    python benchmarks/scale/fit_memory.py --sizes 10000000 --out results/fit_memory_1e7.md
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from _common.machine import machine

N_TEST = 20_000
# "recomputed": 128 MB keeps V of the 20,000 learning rows (16 MB at p = 100), as the
# default does, and forms V of all rows by blocks whatever their number
BUDGETS = {"default": None, "stored": 1 << 62, "recomputed": 1 << 27}

_CHILD = r"""
import json, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
from skgpsparse import SparseGPClassifier, SparseGPRegressor
from skgpsparse.inference import _row_columns
name, n, budget, n_test = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
if budget != "None":
    _row_columns.STORE_BYTES = int(budget)


def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) * 1024


X = np.empty((n + n_test, 20))
rng = np.random.default_rng(1)  # the test rows: the same ones at every n
X[n:] = rng.standard_normal((n_test, 20))
test_noise = rng.standard_normal(n_test)
rng = np.random.default_rng(0)  # the training rows: the first 10^6 the same at every n
for start in range(0, n, 1_000_000):  # block by block: no second copy of X
    block = slice(start, min(start + 1_000_000, n))
    X[block] = rng.standard_normal(X[block].shape)
f = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.5 * X[:, 2] * X[:, 3]
noisy = f + 0.3 * np.concatenate([rng.standard_normal(n), test_noise])
Xtr, Xte = X[:n], X[n:]
# the law's constants from the first (at most) 10^6 training rows, the same at every n >= 10^6
ref = slice(0, min(n, 1_000_000))
if name == "classifier":
    y = (noisy > np.median(f[ref])).astype(np.int8)
else:
    y = (noisy - noisy[ref].mean()) / noisy[ref].std()
del f, noisy
stage = [0.0]  # CPU of the all-rows stage (after learning on the subsample)


def timed(fn):
    def run(*args, **kwargs):
        c = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            stage[0] += time.process_time() - c
    return run


if name == "classifier":
    from skgpsparse.latent.learning import _ep_rounds as module
    module._round_on_all_rows = timed(module._round_on_all_rows)
else:
    from skgpsparse.regression import _alternation as module
    module.posterior_on_all_rows = timed(module.posterior_on_all_rows)
    module.calibrate_noise = timed(module.calibrate_noise)
out = {"data_bytes": Xtr.nbytes, "before": status("VmRSS")}
t0, c0 = time.perf_counter(), time.process_time()
if name == "classifier":
    model = SparseGPClassifier(random_state=0).fit(Xtr, y[:n])
else:
    model = SparseGPRegressor(random_state=0).fit(Xtr, y[:n])
out["cpu"] = time.process_time() - c0
out["wall"] = time.perf_counter() - t0
out["stage"] = stage[0]
out["peak"] = status("VmHWM")
out["p"] = int(len(model.basis_indices_))
if name == "classifier":
    p = np.clip(model.predict_proba(Xte)[np.arange(n_test), y[n:]], 1e-300, 1.0)
    out["nlp"] = float(-np.mean(np.log(p)))
else:
    m, s = model.predict(Xte, return_std=True)
    var = s ** 2 + model.noise_variance_
    r = y[n:] - m
    out["nmse"] = float(np.mean(r ** 2) / np.var(y[n:]))
    out["nlpd"] = float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * r ** 2 / var))
print(json.dumps(out))
"""


def _fit(name, n, path):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run(
        [sys.executable, "-c", _CHILD, name, str(n), str(BUDGETS[path]), str(N_TEST)],
        env=env, cwd=REPO, capture_output=True, text=True, check=False,
    )
    if res.returncode != 0:
        return {"error": res.stderr.strip().splitlines()[-1] if res.stderr else "failed"}
    return json.loads(res.stdout.strip().splitlines()[-1])


def _row(name, n, path, r):
    if "error" in r:
        return f"| {name} | {n:,} | {path} | | | | | | | | | {r['error']} |"
    metric = (f"NLP {r['nlp']:.4f}" if name == "classifier"
              else f"NLPD {r['nlpd']:.4f}, NMSE {r['nmse']:.4f}")
    gb = 1e9
    return (f"| {name} | {n:,} | {path} | {r['p']} | {r['cpu']:.1f} | {r['stage']:.1f} | "
            f"{r['wall']:.1f} | "
            f"{r['data_bytes'] / gb:.2f} | {r['before'] / gb:.2f} | {r['peak'] / gb:.2f} | "
            f"{r['peak'] / r['data_bytes']:.2f} | {metric} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000000")
    parser.add_argument("--paths", default="default",
                        help="comma-separated: default, stored, recomputed")
    parser.add_argument("--only", choices=["classifier", "regressor"])
    parser.add_argument("--out", default=None, help="markdown file (default: print only)")
    args = parser.parse_args(argv)
    names = [args.only] if args.only else ["classifier", "regressor"]
    sizes = [int(s) for s in args.sizes.split(",")]
    paths = args.paths.split(",")
    lines = [
        "# Fit memory: the default constructors at scale",
        "",
        f"`python benchmarks/scale/fit_memory.py {' '.join(argv or sys.argv[1:])}`",
        "",
        (
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}; one BLAS "
            "thread, one subprocess per line, one at a time (the machine is shared: CPU time "
            "is the figure to compare). X standard normal n x 20 (+ 20,000 test rows, the same "
            "at every n); "
            "'before' is the resident memory just before `fit` (interpreter, X with the test "
            "rows, targets); 'peak' is the process's VmHWM; peak / data divides it by the "
            "training X's bytes."
        ),
        "",
        (
            "| estimator | rows | V | basis | fit CPU s | all-rows stage CPU s | fit wall s | "
            "data GB | before GB | peak GB | peak / data | test |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for n in sizes:
        for name in names:
            for path in paths:
                row = _row(name, n, path, _fit(name, n, path))
                print(row, flush=True)
                lines.append(row)
    if args.out:
        out = Path(args.out)
        if not out.is_absolute():
            out = HERE / out
        out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
