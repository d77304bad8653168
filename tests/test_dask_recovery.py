"""A dask fit that loses a worker finishes with the model of an undisturbed fit.

A 3-worker LocalCluster of processes; a worker process is killed (SIGKILL, as the kernel's
OOM killer or a reclaimed machine would) at a chosen call of the fit: between greedy steps
(before the call is sent) or inside an objective evaluation (after its messages are sent,
before its results arrive). The row store recomputes the lost chunk on a surviving worker and
replays the partition's journal (skgpsparse.rows._dask.DaskRows), so the finished model is
the undisturbed one, to the last bit.
"""

import os
import signal
import time
import warnings

import numpy as np
import pytest

from skgpsparse import SparseGPClassifier, SparseGPRegressor

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from skgpsparse.rows._dask import DaskRows  # noqa: E402


@pytest.fixture(scope="module")
def client():
    # processes, so that a worker can be killed without taking the test with it
    cluster = distributed.LocalCluster(
        n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _kill_worker_of(rows, partition):
    """SIGKILL the process of the worker holding ``partition``; wait until the scheduler knows."""
    address = rows.actors[partition]._address
    os.kill(rows.client.run(os.getpid)[address], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while address in rows.client.scheduler_info()["workers"] and time.monotonic() < deadline:
        time.sleep(0.05)
    return address


class _Killer:
    """Kills the worker of partition 0 once: at the ``at``-th call of ``fn_name`` (or any)."""

    def __init__(self, fn_name=None, at=1, before_sending=False):
        self.fn_name, self.at, self.before_sending = fn_name, at, before_sending
        self.seen, self.killed = 0, None

    def _due(self, fn):
        if self.killed is not None or (self.fn_name and fn.__name__ != self.fn_name):
            return False
        self.seen += 1
        return self.seen == self.at

    def install(self, monkeypatch):
        killer, call, dispatched = self, DaskRows._call, DaskRows._dispatched

        def _call(rows, fn, args):
            if killer.before_sending and killer._due(fn):  # between two steps
                killer.killed = (_kill_worker_of(rows, 0), fn.__name__)
            return call(rows, fn, args)

        def _dispatched(rows, fn):
            if not killer.before_sending and killer._due(fn):  # inside the call
                killer.killed = (_kill_worker_of(rows, 0), fn.__name__)
            return dispatched(rows, fn)

        monkeypatch.setattr(DaskRows, "_call", _call)
        monkeypatch.setattr(DaskRows, "_dispatched", _dispatched)
        return self


def _data(n=300, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 3))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.randn(n)
    return X, y, da.from_array(X, chunks=(100, 3))


@pytest.mark.parametrize(
    ("fn_name", "at", "before_sending", "learned"),
    [
        # between greedy steps: the worker is gone before the fourth append is sent (an
        # append that also fetches the next working set: RowStore.sum_and_fetch)
        ("_run_and_fetch", 4, True, False),
        # inside an objective's gradient, after the pass that kept its factors, three
        # evaluations in (the journal forgot the earlier ones: rows._store.state_scope)
        ("_p_contract", 3, False, True),
    ],
)
def test_regressor_fit_survives_a_killed_worker(
    client, monkeypatch, fn_name, at, before_sending, learned
):
    X, y, Xd = _data()
    params = {"max_basis": 8, "max_iter": 1, "refine_basis": 0, "random_state": 0}
    if not learned:
        params["optimizer"] = None
    else:  # learning on the partitions (the default gathers the learning rows)
        params["learning_rows"] = None
    yd = da.from_array(y, chunks=100)
    closed, close = [], DaskRows.close

    def record_and_close(rows):
        closed.append((rows.journal_bytes, rows.journal_peak, rows.bytes_sent))
        close(rows)

    monkeypatch.setattr(DaskRows, "close", record_and_close)
    reference = SparseGPRegressor(**params).fit(Xd, yd)
    killer = _Killer(fn_name, at, before_sending).install(monkeypatch)
    model = SparseGPRegressor(**params).fit(Xd, yd)
    assert killer.killed is not None and killer.killed[1] == fn_name
    if learned:
        # the journal keeps the calls since each scope's last reset (the final state and
        # one evaluation), a small part of what the learning sent over its evaluations
        journal, peak, sent = closed[-1]
        assert journal <= peak < 0.5 * sent
    assert killer.killed[0] not in client.scheduler_info()["workers"]
    np.testing.assert_array_equal(model.basis_indices_, reference.basis_indices_)
    np.testing.assert_array_equal(model.kernel_.theta, reference.kernel_.theta)
    np.testing.assert_array_equal(model.predict(X), reference.predict(X))


@pytest.mark.parametrize(
    ("params", "fn_name", "at"),
    [
        # learned on the partitions, two rounds: inside the third NLP evaluation (a
        # read-only pass, not journalled), after the first selection
        ({"max_iter": 2, "posterior": "basis"}, "_n_nlp", 3),
        # the default posterior, learning on a driver's subsample: inside an EP sweep
        ({"max_iter": 1, "learning_rows": 60}, "_p_sweep", 2),
    ],
)
def test_classifier_fit_survives_a_killed_worker(client, monkeypatch, params, fn_name, at):
    X, y, Xd = _data(seed=1)
    labels = da.from_array((y > 0).astype(int), chunks=100)
    params = {"max_basis": 8, "random_state": 0, **params}
    closed, close = [], DaskRows.close

    def record_and_close(rows):
        closed.append((rows.journal_bytes, rows.journal_peak, rows.bytes_sent))
        close(rows)

    monkeypatch.setattr(DaskRows, "close", record_and_close)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the short learning's ConvergenceWarning
        reference = SparseGPClassifier(**params).fit(Xd, labels)
        killer = _Killer(fn_name, at, False).install(monkeypatch)
        clf = SparseGPClassifier(**params).fit(Xd, labels)
    assert killer.killed is not None and killer.killed[1] == fn_name
    if params.get("posterior") == "basis":
        # the journal keeps the last selection's calls (a new selection state resets its
        # scope; the NLP passes are read-only), a small part of what the fit sent
        journal, peak, sent = closed[-1]
        assert journal <= peak < 0.5 * sent
    np.testing.assert_array_equal(clf.basis_indices_, reference.basis_indices_)
    np.testing.assert_array_equal(clf.predict_proba(X), reference.predict_proba(X))


def test_a_partition_function_error_is_not_taken_for_a_lost_worker(client):
    # an OSError raised by the partition's own code, on a live worker, reaches the caller
    X, y, Xd = _data(n=60)
    with DaskRows(Xd, da.from_array(y, chunks=100), lost_timeout=0.5) as rows:
        with pytest.raises(OSError, match="raised by the partition"):
            rows.map(_raise_os_error)
        assert rows.recoveries == 0
        assert float(rows.sum(_row_count)) == 60.0  # the store still works


def _raise_os_error(part):
    raise OSError("raised by the partition")


def _row_count(part):
    return float(part.n)
