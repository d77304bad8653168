"""The classifier's ``partial_fit`` on real data: Raetsch sets and MAGIC streamed in chunks.

Each training set is shuffled (seed 0: the Raetsch files store the rows sorted
lexicographically, so their stored order streams them sorted by the first feature, the worst
order for assumed density filtering) and streamed in ``--chunks`` equal chunks through
``SparseGPClassifier.partial_fit``; compared on the test set (NLP, natural log, and error):

- ``fixed``: ``stream_buffer=0`` (basis, kernel and bias learned on the first chunk, then fixed),
  with ``stream_ep_sweeps`` 10 (the default) and 0 (ADF only), against the **batch** posterior
  with the same basis, kernel and bias: EP over all training rows at once (what ``fit`` computes
  for that basis and those hyperparameters). The issue's goal: test NLP within 1 %.
- ``batch's``: the default batch ``fit``'s own basis, kernel and bias, its posterior rebuilt
  by streaming the training rows through ``OnlinePosterior`` (``classification/_online.py``)
  (ADF + 10 EP sweeps per chunk), against that fit (the same model, the posterior batch or
  streamed).
- ``default``: the streamed default (``stream_buffer=2000``: refits, warm-started, on the rows
  seen while they are at most 2,000) against the default batch ``fit`` on all training rows.

MAGIC (``pmlb_magic``, 19,020 x 10, labels 0/1) is split once (seed 0): 12,000 training rows,
the rest for testing; features standardised by the training rows. CPU times with one BLAS
thread. Usage::

    python benchmarks/scale/stream_datasets.py                       # the sets below
    python benchmarks/scale/stream_datasets.py --sets banana german --realizations 2

Writes ``benchmarks/scale/results/stream_datasets.md``.
"""

import argparse
import copy
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import norm
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common.clf_bench import header, split, test_scores
from _common.data import load_dataset

from skgpsparse import SparseGPClassifier
from skgpsparse.inference._ep import all_rows_ep
from skgpsparse.inference._online import OnlinePosterior
from skgpsparse.inference._sparse_prior import SparsePrior
from skgpsparse.latent._predictors import AllRowsPredictor

RESULTS = Path(__file__).resolve().parent / "results"


def magic():
    d = load_dataset("pmlb_magic")
    X, y = d["X"].astype(float), d["y"].astype(int)
    order = np.random.default_rng(0).permutation(y.size)
    tr, te = order[:12000], order[12000:]
    mu, sd = X[tr].mean(axis=0), X[tr].std(axis=0)
    return (X[tr] - mu) / sd, y[tr], (X[te] - mu) / sd, y[te]


def stream(model, X, y, n_chunks, classes):
    tic = time.process_time()
    for rows in np.array_split(np.arange(y.size), n_chunks):
        model.partial_fit(X[rows], y[rows], classes=classes)
    return model, time.process_time() - tic


def batch_same_basis(model, X, y, X_test, y_test):
    """Test (NLP, error) of EP over all rows with ``model``'s basis, kernel and bias."""
    y_pm = np.where(y == model.classes_[1], 1.0, -1.0)
    prior = SparsePrior(model.kernel_, X, model.basis_vectors_)
    tau, nu, _, _ = all_rows_ep(prior, y_pm, model.bias_)
    pred = AllRowsPredictor(model.kernel_, model.basis_vectors_, X, y_pm, tau, nu, model.bias_)
    p1 = norm.cdf(pred.moderated_margin(X_test))
    p = np.where(y_test == model.classes_[1], p1, 1.0 - p1)
    error = np.mean((p1 > 0.5) != (y_test == model.classes_[1]))
    return float(-np.mean(np.log(np.maximum(p, 1e-300)))), float(error)


def stream_batch_model(batch, X, y, X_test, y_test, n_chunks):
    """Test (NLP, error) of ``batch``'s basis, kernel and bias with the posterior streamed."""
    model = batch._binary
    post = OnlinePosterior(model.kernel_, model.basis_vectors_, model.bias_)
    y_pm = np.where(y == batch.classes_[1], 1.0, -1.0)
    for rows in np.array_split(np.arange(y.size), n_chunks):
        post.update(X[rows], y_pm[rows], ep_sweeps=10)
    predictor = AllRowsPredictor.from_posterior(
        post.kernel, post.basis_vectors, *post.weight_posterior(), post.bias
    )
    p1 = norm.cdf(predictor.moderated_margin(X_test))
    positive = y_test == batch.classes_[1]
    p = np.where(positive, p1, 1.0 - p1)
    return float(-np.mean(np.log(np.maximum(p, 1e-300)))), float(np.mean((p1 > 0.5) != positive))


def run(name, data, args):
    X, y, X_test, y_test = data
    order = np.random.default_rng(0).permutation(y.size)
    X, y = X[order], y[order]
    classes = np.unique(y)
    out = {}
    first = SparseGPClassifier(stream_buffer=0, random_state=0)
    rows = np.array_split(np.arange(y.size), args.chunks)[0]
    tic = time.process_time()
    first.partial_fit(X[rows], y[rows], classes=classes)
    first_cpu = time.process_time() - tic
    for sweeps in (10, 0):
        model = copy.deepcopy(first).set_params(stream_ep_sweeps=sweeps)
        rest = np.concatenate(np.array_split(np.arange(y.size), args.chunks)[1:])
        model, cpu = stream(model, X[rest], y[rest], args.chunks - 1, classes)
        out[f"fixed{sweeps}"] = (*test_scores(model, X_test, y_test), first_cpu + cpu)
    out["batch_same"] = (*batch_same_basis(model, X, y, X_test, y_test), 0.0)
    model, cpu = stream(SparseGPClassifier(random_state=0), X, y, args.chunks, classes)
    out["default"] = (*test_scores(model, X_test, y_test), cpu)
    tic = time.process_time()
    batch = SparseGPClassifier(random_state=0).fit(X, y)
    out["batch_default"] = (*test_scores(batch, X_test, y_test), time.process_time() - tic)
    out["batch_streamed"] = (*stream_batch_model(batch, X, y, X_test, y_test, args.chunks), 0.0)
    print(name, {k: tuple(round(v, 4) for v in vals) for k, vals in out.items()}, flush=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+",
                        default=["banana", "german", "image", "ringnorm", "waveform", "magic"])
    parser.add_argument("--realizations", type=int, default=2)
    parser.add_argument("--chunks", type=int, default=10)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    lines = header("partial_fit on the Raetsch sets and MAGIC", sys.argv) + [
        f"Training rows streamed in {args.chunks} chunks. Test NLP (x 1e-2) / error (%) / "
        "CPU s. `fixed`: basis and hyperparameters from the first chunk "
        "(`stream_buffer=0`), EP sweeps 10 or 0 (ADF only); `batch, same basis`: EP over all "
        "training rows with that basis, kernel and bias. `default`: `partial_fit` with the "
        "defaults (refits on the first 2,000 rows) against `fit` on all training rows. `batch's, "
        "streamed`: the batch fit's basis, kernel and bias, the posterior streamed (gap to the "
        "batch fit).",
        "",
        "| set | realization | fixed, EP 10 | fixed, ADF only | batch, same basis | "
        "NLP gap (EP 10 / ADF) | streamed default | batch default fit | default gap | "
        "batch's, streamed (gap) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    with threadpool_limits(limits=1, user_api="blas"):
        for name in args.sets:
            for r in range(1 if name == "magic" else args.realizations):
                data = magic() if name == "magic" else split(name, r)
                out = run(name, data, args)

                def cell(key):
                    nlp, err, cpu = out[key]
                    return f"{100 * nlp:.2f} / {100 * err:.1f} / {cpu:.0f}"

                ref, ref_d = out["batch_same"][0], out["batch_default"][0]
                gap = " / ".join(f"{100 * (out[k][0] - ref) / ref:+.2f} %"
                                 for k in ("fixed10", "fixed0"))
                lines.append(
                    f"| {name} | {r + 1 if name != 'magic' else '-'} | {cell('fixed10')} | "
                    f"{cell('fixed0')} | {100 * ref:.2f} / {100 * out['batch_same'][1]:.1f} | "
                    f"{gap} | {cell('default')} | {cell('batch_default')} | "
                    f"{100 * (out['default'][0] - ref_d) / ref_d:+.2f} % | "
                    f"{100 * out['batch_streamed'][0]:.2f} "
                    f"({100 * (out['batch_streamed'][0] - ref_d) / ref_d:+.2f} %) |"
                )
                (RESULTS / "stream_datasets.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
