"""The default regressor's kernel, before and after the per-feature choice, back to back.

``SparseGPRegressor(random_state=seed)`` (``kernel=None``, every other parameter at its
default unless ``--basis`` is given) on the regression sets of ``peers_regression.py``
(KIN40K, pol, pumadyn32nm, elevators fold 0: its splits and standardisation), fitted by two
checkouts of the package in turn: ``--old`` (a directory holding the previous
``skgpsparse``) and this one. Each fit runs in its own process on one thread, the two
checkouts interleaved per data set and seed, so that load drifts hit both alike. Prints and
appends one JSON line per fit to ``results/default_kernel_runs.jsonl``; ``--report`` writes
``results/default_kernel.md`` (medians over seeds, CPU ratios new / old).

Usage::

    git archive <old commit> skgpsparse | tar -x -C /tmp/old
    python benchmarks/studies/default_kernel.py --old /tmp/old --seeds 0,1,2
    python benchmarks/studies/default_kernel.py --report
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RUNS = HERE / "results" / "default_kernel_runs.jsonl"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def child(package_root, name, seed, basis):
    """One fit with the package under ``package_root``; prints a JSON line."""
    sys.path.insert(0, str(package_root))
    sys.path.insert(0, str(HERE.parent))  # _common
    sys.path.insert(0, str(HERE.parent / "peers"))  # peers_regression.py
    from _common.peers import fit_and_score
    from peers_regression import load

    import skgpsparse
    from skgpsparse import SparseGPRegressor

    X, y, X_t, y_t = load(name)
    kwargs = {} if basis is None else {"max_basis": basis}
    model = SparseGPRegressor(random_state=seed, **kwargs)
    rec = fit_and_score(model, X, y, X_t, y_t)
    ls = np.atleast_1d(model.kernel_.k2.length_scale)
    rec.update(dataset=name, seed=seed, basis=model.max_basis,
               package=str(Path(skgpsparse.__file__).parents[1]),
               per_feature=bool(ls.size > 1), relevant=int(np.sum(ls < 100.0)),
               kernel=str(model.kernel_)[:300], load=os.getloadavg()[0])
    print("RESULT " + json.dumps(rec), flush=True)


def run(args):
    sides = [("old", Path(args.old).resolve()), ("new", ROOT)]
    for name in args.datasets.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            for side, root in sides:
                cmd = [sys.executable, __file__, "--child", str(root), "--dataset", name,
                       "--seed", str(seed)] + ([] if args.basis is None
                                               else ["--basis", str(args.basis)])
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                                      env={**os.environ, **ONE_THREAD})
                lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
                if not lines:
                    print(proc.stderr[-2000:])
                    continue
                rec = dict(json.loads(lines[0][7:]), side=side)
                print(rec, flush=True)
                with RUNS.open("a") as fh:
                    fh.write(json.dumps(rec) + "\n")


def report():
    recs = [json.loads(ln) for ln in RUNS.read_text().splitlines() if ln.strip()]
    out = ["# The default regressor's kernel: one length scale, or one per feature\n",
           "`python benchmarks/studies/default_kernel.py` ([source](../default_kernel.py)): "
           "`SparseGPRegressor(random_state=seed)` (kernel=None), old checkout and this one "
           "interleaved, one process and one thread per fit; medians over the seeds "
           "(test NMSE / NLPD / mean z^2, fit CPU s); `ARD` = fits that kept one length "
           "scale per feature.\n",
           "| data set | basis | seeds | old: NMSE / NLPD / z^2 | new: NMSE / NLPD / z^2 | "
           "old CPU | new CPU | new / old CPU | ARD kept (new) |",
           "|---|---:|---|---|---|---:|---:|---:|---|"]
    keys = sorted({(r["dataset"], r["basis"]) for r in recs})
    for name, basis in keys:
        by = {s: [r for r in recs if (r["dataset"], r["basis"], r["side"]) == (name, basis, s)]
              for s in ("old", "new")}
        seeds = sorted({r["seed"] for r in by["old"]} & {r["seed"] for r in by["new"]})
        if not seeds:
            continue
        med = {s: {k: float(np.median([r[k] for r in by[s] if r["seed"] in seeds]))
                   for k in ("nmse", "nlpd", "z2", "fit_cpu")} for s in by}
        ard = sum(r["per_feature"] for r in by["new"] if r["seed"] in seeds)
        cells = [f"{med[s]['nmse']:.4f} / {med[s]['nlpd']:.3f} / {med[s]['z2']:.2f}"
                 for s in ("old", "new")]
        out.append(
            f"| {name} | {basis} | {','.join(map(str, seeds))} | {cells[0]} | {cells[1]} | "
            f"{med['old']['fit_cpu']:.1f} | {med['new']['fit_cpu']:.1f} | "
            f"{med['new']['fit_cpu'] / med['old']['fit_cpu']:.2f} | {ard}/{len(seeds)} |"
        )
    out.append("\nPer fit (side, seed: NMSE / NLPD / z^2, CPU s, relevant length scales "
               "< 100):\n")
    for r in recs:
        out.append(f"- {r['dataset']} basis {r['basis']} {r['side']} seed {r['seed']}: "
                   f"{r['nmse']:.4f} / {r['nlpd']:.3f} / {r['z2']:.2f}, {r['fit_cpu']:.1f} s, "
                   f"{r['relevant'] if r['per_feature'] else 'one length scale'}")
    (HERE / "results" / "default_kernel.md").write_text("\n".join(out) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", help="directory holding the previous skgpsparse package")
    parser.add_argument("--datasets", default="pumadyn32nm,kin40k,pol,elevators")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--basis", type=int, default=None, help="max_basis (default: its)")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--dataset", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.dataset, args.seed, args.basis)
    elif args.report:
        report()
    else:
        run(args)


if __name__ == "__main__":
    main()
