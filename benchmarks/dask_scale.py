"""SparseGPRegressor on a dask.distributed cluster: a fit beyond one worker's memory, and the
per-step overhead and traffic of the distributed fit against the in-memory fit.

Part 1 (memory): a LocalCluster of 2 worker processes, each with a ``memory_limit`` below the
size of the whole ``n x max_basis`` kernel block, fits SparseGPRegressor with fixed
hyperparameters on a dask array. Each worker holds its row chunks' part of the block in an
actor; the fit completes if no worker exceeds its limit (the nanny would kill it at 95 %).
The peak resident memory of each worker process is sampled during the fit.

Part 2 (overhead): on data that fits both, the same fit in memory (one thread, and two
threads) and on the 2-process cluster; the table gives the wall times, their ratio, the
per-step overhead ``(t_dask - t_memory) / steps`` and the bytes that cross the network per
greedy step (pickled arguments and results of the actor calls, driver <-> workers). Both
fits select the same basis (checked).

Part 3 (recovery): the same fit on 3 worker processes, undisturbed and with the worker of the
first chunk killed halfway through the fit: the time lost, the journal the driver keeps to
rebuild a partition, and whether the model is the undisturbed one.

Usage::

    python benchmarks/dask_scale.py            # both parts (5-10 minutes)
    python benchmarks/dask_scale.py --quick    # small sizes, a smoke run

Writes ``results/dask_scale.md``.
"""

import argparse
import threading
import time
from pathlib import Path

import numpy as np
import psutil
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

import skgpsparse.regression._rows_fit as rows_fit
from skgpsparse import SparseGPRegressor
from skgpsparse.rows._dask import DaskRows

try:
    from _machine import machine
except ImportError:  # run from elsewhere
    from benchmarks._machine import machine

RESULTS = Path(__file__).resolve().parent / "results"


class _RecordingRows(DaskRows):
    """DaskRows that keeps its traffic counters when it closes (the fit closes it)."""

    last = None

    def close(self):
        _RecordingRows.last = {
            "calls": self.calls,
            "sent": self.bytes_sent,
            "received": self.bytes_received,
            "partitions": self.n_partitions,
            "journal": self.journal_bytes,
            "recoveries": self.recoveries,
            "recovery_seconds": self.recovery_seconds,
        }
        super().close()

    kill_at = None  # the call after whose sending the worker of partition 0 is killed

    def _dispatched(self, fn):
        if _RecordingRows.kill_at is not None and self.calls + 1 == _RecordingRows.kill_at:
            _RecordingRows.kill_at = None
            address = self.actors[0]._address
            pid = self.client.run(__import__("os").getpid)[address]
            __import__("os").kill(pid, __import__("signal").SIGKILL)


rows_fit.DaskRows = _RecordingRows


def _data(n, d, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-2.0, 2.0, (n, d))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, 1] * X[:, 2]) + 0.1 * rng.randn(n)
    return X, y


def _model(p):
    return SparseGPRegressor(
        C(1.0) * RBF(2.0), max_basis=p, optimizer=None, noise_variance=0.01, random_state=0
    )


class _PeakMemory:
    """Samples the resident memory of the given processes every 0.2 s."""

    def __init__(self, pids):
        self.procs = [psutil.Process(pid) for pid in pids]
        self.peak = [0] * len(pids)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for i, proc in enumerate(self.procs):
                try:
                    self.peak[i] = max(self.peak[i], proc.memory_info().rss)
                except psutil.Error:
                    pass
            time.sleep(0.2)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _cluster(memory_limit, n_workers=2):
    import dask
    import distributed

    # The actors' arrays are unmanaged memory (not spillable): spilling and pausing cannot
    # help, so the binding limit is the nanny's, which kills a worker at 95 % of the limit.
    dask.config.set(
        {
            "distributed.worker.memory.target": False,
            "distributed.worker.memory.spill": False,
            "distributed.worker.memory.pause": False,
        }
    )
    cluster = distributed.LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True, memory_limit=memory_limit,
        dashboard_address=None,
    )
    return cluster, distributed.Client(cluster)


def memory_part(n, d, p, limit_mb, lines):
    import dask.array as da

    block_mb = n * p * 8 / 2**20
    cluster, client = _cluster(f"{limit_mb}MiB")
    try:
        pids = list(client.run(lambda: __import__("os").getpid()).values())
        chunk = -(-n // 2)
        # generated on the workers, chunk by chunk: the driver never holds the rows
        Xd = da.random.RandomState(0).uniform(-2.0, 2.0, (n, d), chunks=(chunk, d))
        yd = (
            da.sin(Xd[:, 0]) + 0.5 * da.cos(Xd[:, 1] * Xd[:, 2])
            + 0.1 * da.random.RandomState(1).standard_normal(n, chunks=chunk)
        )
        with _PeakMemory(pids) as peak:
            tic = time.perf_counter()
            model = _model(p).fit(Xd, yd)
            seconds = time.perf_counter() - tic
        workers_alive = len(client.scheduler_info()["workers"])
    finally:
        client.close()
        cluster.close()
    lines += [
        "## A fit whose kernel block exceeds one worker's memory",
        "",
        f"n = {n:,} rows x {d} features, max_basis = {p}, fixed hyperparameters; the "
        f"n x max_basis block takes {block_mb:,.0f} MiB; 2 worker processes with "
        f"memory_limit = {limit_mb} MiB each (one chunk of {chunk:,} rows per worker, "
        "generated on the workers). Peak RSS: the worker processes' resident memory, sampled "
        "every 0.2 s during the fit (about 150 MiB of it is the worker's own, before any data).",
        "",
        "| completed | basis | wall time | peak RSS worker 1 | peak RSS worker 2 | limit |",
        "|---|---|---|---|---|---|",
        f"| {'yes' if workers_alive == 2 and len(model.basis_indices_) == p else 'no'} | "
        f"{len(model.basis_indices_)} | {seconds:.1f} s | {peak.peak[0] / 2**20:,.0f} MiB | "
        f"{peak.peak[1] / 2**20:,.0f} MiB | {limit_mb} MiB |",
        "",
    ]
    print("\n".join(lines[-8:]))


def overhead_part(sizes, d, p, lines, repeats=3):
    import dask.array as da

    cluster, client = _cluster("4GiB")
    rows = []
    try:
        for n in sizes:
            X, y = _data(n, d, seed=1)
            chunk = -(-n // 2)
            Xd = da.from_array(X, chunks=(chunk, d)).persist()
            yd = da.from_array(y, chunks=chunk).persist()
            runs = {1: [], 2: [], "dask": []}
            for _ in range(repeats):  # interleaved, medians: the machine may be shared
                for threads in (1, 2):
                    tic = time.perf_counter()
                    ref = _model(p).set_params(n_jobs=threads).fit(X, y)
                    runs[threads].append(time.perf_counter() - tic)
                tic = time.perf_counter()
                model = _model(p).fit(Xd, yd)
                runs["dask"].append(time.perf_counter() - tic)
            times = {key: float(np.median(v)) for key, v in runs.items()}
            t_dask = times["dask"]
            same = np.array_equal(model.basis_indices_, ref.basis_indices_)
            traffic = _RecordingRows.last
            steps = p
            rows.append(
                f"| {n:,} | {times[1]:.2f} s | {times[2]:.2f} s | {t_dask:.2f} s | "
                f"{t_dask / times[1]:.2f} | {1e3 * (t_dask - times[1]) / steps:+.1f} ms | "
                f"{traffic['calls'] / steps:.1f} | {traffic['sent'] / steps / 1024:.1f} KiB | "
                f"{traffic['received'] / steps / 1024:.1f} KiB | {'yes' if same else 'NO'} |"
            )
            print(rows[-1])
    finally:
        client.close()
        cluster.close()
    lines += [
        "## Per-step overhead and traffic (data that fits both)",
        "",
        f"{d} features, max_basis = {p} (so {p} greedy steps), fixed hyperparameters, "
        "matching_pursuit on working sets of 59; the dask fit on 2 worker processes, one "
        f"chunk per worker, the data persisted on the workers first. Wall times: medians of "
        f"{repeats} interleaved runs. Traffic: pickled "
        "arguments and results of the actor calls, per greedy step (all partitions).",
        "",
        "| n | memory, 1 thread | memory, 2 threads | dask, 2 workers | ratio dask / memory "
        "(1 thread) | overhead per step | calls per step | sent per step | received per step"
        " | same basis |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def recovery_part(n, d, p, lines):
    """The same fit undisturbed, then with a worker process killed halfway through it."""
    import dask.array as da

    cluster, client = _cluster("4GiB", n_workers=3)
    try:
        X, y = _data(n, d, seed=2)
        chunk = -(-n // 3)
        Xd, yd = da.from_array(X, chunks=(chunk, d)), da.from_array(y, chunks=chunk)
        tic = time.perf_counter()
        reference = _model(p).fit(Xd, yd)
        t_ref = time.perf_counter() - tic
        calls = _RecordingRows.last["calls"]
        _RecordingRows.kill_at = calls // 2
        tic = time.perf_counter()
        model = _model(p).fit(Xd, yd)
        t_kill = time.perf_counter() - tic
        record = _RecordingRows.last
        same = np.array_equal(model.basis_indices_, reference.basis_indices_) and np.array_equal(
            model.predict(X[:2000]), reference.predict(X[:2000])
        )
    finally:
        client.close()
        cluster.close()
    lines += [
        "## A worker killed mid-fit",
        "",
        f"n = {n:,} rows x {d} features, max_basis = {p}, fixed hyperparameters, 3 worker "
        "processes with one chunk each. The worker holding the first chunk is killed "
        f"(SIGKILL) after call {calls // 2} of {calls} is sent; its chunk is recomputed on "
        "a surviving worker and the partition's journal replayed (see the dask page).",
        "",
        "| undisturbed | worker killed | time lost | of it in the rebuild | partitions rebuilt "
        "| journal kept on the driver | same model |",
        "|---|---|---|---|---|---|---|",
        f"| {t_ref:.1f} s | {t_kill:.1f} s | {t_kill - t_ref:+.1f} s | "
        f"{record['recovery_seconds']:.1f} s | {record['recoveries']} | "
        f"{record['journal'] / 2**20:.2f} MiB | {'yes (bit for bit)' if same else 'NO'} |",
        "",
    ]
    print("\n".join(lines[-8:]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    args = parser.parse_args()
    lines = ["# SparseGPRegressor on a dask cluster", "", f"Machine: {machine()}", ""]
    if args.quick:
        memory_part(40_000, 10, 100, 1000, lines)
        overhead_part([5_000], 10, 50, lines, repeats=1)
        recovery_part(5_000, 10, 50, lines)
    else:
        memory_part(400_000, 10, 250, 700, lines)
        overhead_part([20_000, 100_000], 10, 100, lines)
        recovery_part(100_000, 10, 100, lines)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("dask_scale_quick.md" if args.quick else "dask_scale.md")
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
