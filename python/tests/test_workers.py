"""Sessions pickled and rebuilt: the same outputs in this process, in a multiprocessing.Pool of spawned
processes, and on a Dask LocalCluster of worker processes, as a single-process run gives."""

import multiprocessing
import os
import pickle

import numpy as np
import onnx
import pytest
import sliceops
import workers
from conftest import REAL_MODELS, assert_same, fixture_feeds, fixture_path, FIXTURES, real_path

MODEL = next(m for m in REAL_MODELS if m["name"] == "gpt2_torch_legacy")


def batch(n=6):
    """n different feeds for MODEL (batch 1, sequence 5..), seeded."""
    rng = np.random.default_rng(0)
    return [
        {
            "input_ids": rng.integers(0, 100, size=(1, 5 + k), dtype=np.int64),
            "attention_mask": np.ones((1, 5 + k), dtype=np.int64),
        }
        for k in range(n)
    ]


def assert_runs_same(got, want):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert len(g) == len(w)
        for a, b in zip(g, w):
            assert_same(a, b, f"item {k}")


def single_process(session, items):
    return [session.run(None, feeds) for feeds in items]


@pytest.mark.parametrize("kind", ["Session", "InferenceSession"])
def test_a_pickled_session_is_rebuilt_with_its_settings(kind):
    options = sliceops.SessionOptions()
    options.intra_op_num_threads = 3
    session = (
        sliceops.Session(real_path(MODEL), threads=3)
        if kind == "Session"
        else sliceops.InferenceSession(real_path(MODEL), options)
    )
    copy = pickle.loads(pickle.dumps(session))
    assert type(copy) is type(session)
    if kind == "Session":
        assert copy.threads == 3
    else:
        assert copy.get_session_options().intra_op_num_threads == 3
        assert copy._session.threads() == 3
        assert [(i.name, i.shape, i.type) for i in copy.get_inputs()] == [
            (i.name, i.shape, i.type) for i in session.get_inputs()
        ]
    items = batch(2)
    assert_runs_same(single_process(copy, items), single_process(session, items))


def test_external_data_travels_inlined(tmp_path):
    """A model whose weights live in a file next to it: the pickle carries them, so the session is
    rebuilt after that folder is gone."""
    model = onnx.load(str(real_path(MODEL)))
    folder = tmp_path / "external"
    folder.mkdir()
    onnx.save(model, str(folder / "model.onnx"), save_as_external_data=True, location="weights.bin", size_threshold=0)
    assert (folder / "weights.bin").stat().st_size > 1000
    session = sliceops.Session(folder / "model.onnx")
    data = pickle.dumps(session)
    (folder / "weights.bin").unlink()
    (folder / "model.onnx").unlink()
    folder.rmdir()
    items = batch(2)
    assert_runs_same(single_process(pickle.loads(data), items), single_process(sliceops.Session(real_path(MODEL)), items))


def test_fixture_sessions_pickle():
    for fixture in FIXTURES:
        session = sliceops.Session(fixture_path(fixture))
        feeds = fixture_feeds(fixture)
        assert_runs_same([pickle.loads(pickle.dumps(session)).run(None, feeds)], [session.run(None, feeds)])


@pytest.mark.parametrize("kind", ["Session", "InferenceSession"])
def test_multiprocessing_pool_of_spawned_processes(kind):
    session = getattr(sliceops, kind)(real_path(MODEL))
    items = batch()
    want = single_process(session, items)
    with multiprocessing.get_context("spawn").Pool(2, initializer=workers.keep, initargs=(session,)) as pool:
        got = pool.map(workers.run_kept, items)
        # The session itself as an argument of each task, too.
        again = pool.starmap(workers.run_one, [(session, feeds) for feeds in items])
    assert_runs_same(got, want)
    assert_runs_same(again, want)


def test_dask_local_cluster_of_processes():
    from dask import distributed

    session = sliceops.InferenceSession(str(real_path(MODEL)))
    items = batch()
    want = single_process(session, items)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        # Sent once to every worker, then used by each task there.
        shared = client.scatter(session, broadcast=True)
        futures = client.map(workers.run_one, [shared] * len(items), items)
        got = client.gather(futures)
        pids = client.run(os.getpid)
    assert_runs_same(got, want)
    # Two worker processes, neither of them this one.
    assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()
