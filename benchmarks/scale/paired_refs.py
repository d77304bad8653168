"""Paired speed of the default constructors between two commits: does a change keep the speed?

A structure change must leave the fit's speed as it was. This script checks out two commits
into temporary ``git worktree`` s and fits ``SparseGPClassifier(random_state=0)`` and
``SparseGPRegressor(random_state=0)`` on ``--n`` synthetic rows (``million.py``'s law:
``X`` standard normal n x 20, ``f = sin(x0) + x1^2 / 2 - x2 x3 / 2``, regression targets
``f + 0.3 noise``, labels ``f + 0.3 noise > median(f)``; 20,000 test rows), each fit in its
own subprocess with one BLAS thread, the two commits alternating ``--repeats`` times (A B, B A,
A B, ...) so that the machine's drift hits both alike. It prints, per estimator, the CPU
seconds of each pair, their ratio (B / A), the median ratio and the test metrics of both (NLP
for the classifier; NLPD and NMSE for the regressor: a speed-up that moves them is not a
structure change).

Usage (from the repository root)::

    python benchmarks/scale/paired_refs.py --a 9b09895 --b HEAD --n 100000 --repeats 3
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]

_CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
from scipy.special import log_ndtr
from skgpsparse import SparseGPClassifier, SparseGPRegressor
name, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
X = rng.standard_normal((n + 20000, 20))
f = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.5 * X[:, 2] * X[:, 3]
noisy = f + 0.3 * rng.standard_normal(f.size)
Xtr, Xte = X[:n], X[n:]
out = {}
t0, c0 = time.perf_counter(), time.process_time()
if name == "classifier":
    y = (noisy > np.median(f[:n])).astype(int)
    model = SparseGPClassifier(random_state=0).fit(Xtr, y[:n])
    out["cpu"] = time.process_time() - c0
    p = np.clip(model.predict_proba(Xte)[np.arange(20000), y[n:]], 1e-300, 1.0)
    out["nlp"] = float(-np.mean(np.log(p)))
else:
    mu, sd = noisy[:n].mean(), noisy[:n].std()
    y = (noisy - mu) / sd
    model = SparseGPRegressor(random_state=0).fit(Xtr, y[:n])
    out["cpu"] = time.process_time() - c0
    m, s = model.predict(Xte, return_std=True)
    var = s ** 2 + model.noise_variance_
    r = y[n:] - m
    out["nmse"] = float(np.mean(r ** 2) / np.var(y[n:]))
    out["nlpd"] = float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * r ** 2 / var))
    out["z2"] = float(np.mean(r ** 2 / var))
out["wall"] = time.perf_counter() - t0
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def _worktree(ref, tmp):
    path = Path(tmp) / ref.replace("/", "_")
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), ref],
                   check=True, capture_output=True)
    return path


def _fit(tree, name, n):
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", _CHILD, name, str(n)], env=env, cwd=tree,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--a", required=True, help="the reference commit")
    parser.add_argument("--b", default="HEAD", help="the changed commit")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=["classifier", "regressor"])
    args = parser.parse_args(argv)
    names = [args.only] if args.only else ["classifier", "regressor"]
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"a": _worktree(args.a, tmp), "b": _worktree(args.b, tmp)}
        try:
            for name in names:
                runs = {"a": [], "b": []}
                for k in range(args.repeats):
                    for side in (("a", "b") if k % 2 == 0 else ("b", "a")):
                        runs[side].append(_fit(trees[side], name, args.n))
                ratios = [b["cpu"] / a["cpu"] for a, b in zip(runs["a"], runs["b"])]
                metric = "nlp" if name == "classifier" else "nlpd"
                print(f"{name}, n = {args.n}: CPU s A {[round(r['cpu'], 1) for r in runs['a']]} "
                      f"B {[round(r['cpu'], 1) for r in runs['b']]}; B/A "
                      f"{[round(r, 3) for r in ratios]}, median {np.median(ratios):.3f}")
                for side in ("a", "b"):
                    r = runs[side][0]
                    extra = "" if name == "classifier" else (
                        f" NMSE {r['nmse']:.5f} z^2 {r['z2']:.4f}")
                    print(f"  {side.upper()} ({getattr(args, side)}): test {metric.upper()} "
                          f"{r[metric]:.6f}{extra}, peak {r['peak_mb']:.0f} MB")
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(tree)], capture_output=True)


if __name__ == "__main__":
    main()
