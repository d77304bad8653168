"""The binary default fit with Anderson-accelerated EP against plain (damped) EP.

One default ``SparseGPClassifier(random_state=0)`` fit per case and EP mode, in a child
process each (one BLAS thread), on ``million.py``'s splits (``adult``: pmlb adult, 40,000
training rows; ``synth100k`` / ``synth1m``: the issue-35 synthetic rows, 10^5 / 10^6 x 20) or
``speed.py``'s twonorm split (``twonorm``: 2,000 rows, ``max_basis=200``). The mode toggles
``_ep_evidence.ACCELERATE`` and may set the search tolerance (``accel+tol3e-3``). Reported:
fit CPU (process time) and wall, test NLP and error, the kept round's loss (minus log
evidence and hyperprior per learning row), and EP's sweeps and calls by phase of the fit
(``_rounds``, ``_per_feature_choice``, ``_round_on_all_rows``, ``_converged``) and EP
tolerance, from counting wrappers on ``all_rows_ep`` and ``ep_sweep``.

Usage::

    python benchmarks/studies/ep_acceleration.py --cases adult,synth100k --modes accel,plain

Prints one ``RESULT`` JSON line per fit (``benchmarks/README.md`` quotes the last run).
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
CASES = {"adult": ("pmlb_adult", 40_000), "synth100k": ("synthetic", 100_000),
         "synth1m": ("synthetic", 1_000_000)}


def _instrument(stats):
    """Count EP sweeps and calls by fit phase and tolerance; time the phases (CPU)."""
    from skgpsparse.inference import _ep as E
    from skgpsparse.latent.learning import _ep_rounds as F

    stack, clock, tol = [], [time.process_time()], [E._EP_TOL]

    def charge():
        now = time.process_time()
        key = stack[-1] if stack else "other"
        stats["phase"][key] = stats["phase"].get(key, 0.0) + now - clock[0]
        clock[0] = now

    def phase(name, fn):
        def wrapped(*args, **kwargs):
            charge()
            stack.append(name)
            try:
                return fn(*args, **kwargs)
            finally:
                charge()
                stack.pop()
        return wrapped

    for name in ["_rounds", "_per_feature_choice", "_round_on_all_rows", "_converged"]:
        setattr(F, name, phase(name, getattr(F, name)))

    def key():
        return f"{stack[-1] if stack else 'other'}@{tol[0]:g}"

    sweep, ep = E.ep_sweep, E.all_rows_ep

    def counting_sweep(*args, **kwargs):
        stats["sweeps"][key()] = stats["sweeps"].get(key(), 0) + 1
        return sweep(*args, **kwargs)

    def timed_ep(*args, **kwargs):
        tol[0] = kwargs.get("tol", E._EP_TOL)
        stats["calls"][key()] = stats["calls"].get(key(), 0) + 1
        tic = time.process_time()
        try:
            return ep(*args, **kwargs)
        finally:
            stats["ep_cpu"] += time.process_time() - tic

    E.ep_sweep, E.all_rows_ep = counting_sweep, timed_ep
    return charge, clock


def child(case, mode):
    """One fit in this process; prints a RESULT line."""
    sys.path.insert(0, str(HERE.parents[1]))
    sys.path.insert(0, str(HERE.parent))  # _common
    sys.path.insert(0, str(HERE.parent / "peers"))  # speed.py
    sys.path.insert(0, str(HERE.parent / "scale"))  # million.py
    from skgpsparse import SparseGPClassifier
    from skgpsparse.latent.learning import _ep_rounds as F
    from skgpsparse.latent.objectives import _ep_evidence as O

    parts = mode.split("+")
    O.ACCELERATE = parts[0] == "accel"
    for extra in parts[1:]:
        F._SEARCH_TOL = float(extra.removeprefix("tol"))
    stats = {"sweeps": {}, "calls": {}, "ep_cpu": 0.0, "phase": {}}
    charge, clock = _instrument(stats)
    if case == "twonorm":
        from speed import split

        X, y, X_t, y_t = split(2000, 3000, 0)
        model = SparseGPClassifier(max_basis=200, random_state=0)
    else:
        from million import default_split

        data, n = CASES[case]
        X, y, X_t, y_t = default_split("classifier", data, n, 20)
        model = SparseGPClassifier(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu, wall = time.process_time(), time.perf_counter()
        clock[0] = cpu
        model.fit(X, y)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        charge()
    p1 = model.predict_proba(X_t)[:, 1]
    positive = np.asarray(y_t) == model.classes_[1]
    nlp = float(-np.mean(np.log(np.clip(np.where(positive, p1, 1.0 - p1), 1e-300, None))))
    out = dict(case=case, mode=mode, fit_cpu=round(cpu, 2), fit_wall=round(wall, 2), nlp=nlp,
               err=float(np.mean((p1 > 0.5) != positive)), ep_cpu=round(stats["ep_cpu"], 2),
               loss=min(model.loss_curve_), kernel=str(model.kernel_), bias=model.bias_,
               n_iter=model.n_iter_, sweeps=stats["sweeps"], calls=stats["calls"],
               phase={k: round(v, 2) for k, v in stats["phase"].items()},
               load=os.getloadavg()[0])
    print("RESULT " + json.dumps(out), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="adult,synth100k")
    parser.add_argument("--modes", default="accel,plain")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(*args.child)
    for case in args.cases.split(","):
        for mode in args.modes.split(","):
            subprocess.run([sys.executable, __file__, "--child", case, mode], check=True,
                           env={**os.environ, **ONE_THREAD})
    return None


if __name__ == "__main__":
    main()
