"""Stopping a run from Python: RunOptions.terminate set from another thread, a timeout, and the
session unharmed afterwards (issue 30, point 13)."""

import threading
import time

import numpy as np
import onnx
import pytest
import sliceops
from onnx import TensorProto, helper


def endless_loop():
    """A Loop with no trip count and a condition that stays true, its body squaring a [32, 32]
    matrix (scaled by 1/32: a matrix of ones stays ones, exactly) and counting its iterations: it
    would run to the iteration bound (millions of iterations, minutes)."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["c"], ["c_out"]),
            helper.make_node("MatMul", ["v", "v"], ["sq"]),
            helper.make_node("Mul", ["sq", "scale"], ["v_out"]),
            helper.make_node("Add", ["k", "one"], ["k_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v", TensorProto.FLOAT, [32, 32]),
            helper.make_tensor_value_info("k", TensorProto.FLOAT, []),
        ],
        [
            helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [32, 32]),
            helper.make_tensor_value_info("k_out", TensorProto.FLOAT, []),
        ],
        [
            helper.make_tensor("scale", TensorProto.FLOAT, [], [1 / 32]),
            helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
        ],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["", "yes", "v", "k0"], ["y", "count"], body=body)],
        "endless",
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, [32, 32])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 32]),
            helper.make_tensor_value_info("count", TensorProto.FLOAT, []),
        ],
        [helper.make_tensor("yes", TensorProto.BOOL, [], [True]), helper.make_tensor("k0", TensorProto.FLOAT, [], [0.0])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def counted_loop(n):
    """The same body run `n` times (a trip count): finishes, with a known result."""
    model = onnx.load_model_from_string(endless_loop())
    model.graph.initializer.append(helper.make_tensor("n", TensorProto.INT64, [], [n]))
    model.graph.node[0].input[0] = "n"
    return model.SerializeToString()


FEEDS = {"v": np.ones((32, 32), dtype=np.float32)}


def check_finished(outputs, n):
    """The outputs of `n` iterations: the matrix of ones and the count."""
    y, count = outputs
    np.testing.assert_array_equal(y, np.ones((32, 32), dtype=np.float32))
    assert count.dtype == np.float32 and count.shape == () and count == n


def stop_later(options, delay):
    def stop():
        time.sleep(delay)
        options.terminate = True

    t = threading.Thread(target=stop)
    t.start()
    return t


def test_terminate_from_another_thread_stops_an_inference_session_run():
    session = sliceops.InferenceSession(endless_loop())
    options = sliceops.RunOptions()
    assert options.terminate is False
    stopper = stop_later(options, 0.2)
    start = time.monotonic()
    with pytest.raises(sliceops.RunCancelled) as e:
        session.run(None, FEEDS, options)
    took = time.monotonic() - start
    stopper.join()
    assert 0.2 <= took < 5, took
    # onnxruntime's kind (code catching onnxruntime's Fail catches it) and a message saying why.
    assert isinstance(e.value, sliceops.Fail) and isinstance(e.value, RuntimeError)
    assert str(e.value).startswith("[sliceops] : 1 : FAIL : run cancelled after ")
    assert str(e.value).endswith(" s (cancel requested)")
    # While terminate stays set, runs given these options stop at once, as in onnxruntime.
    assert options.terminate is True
    with pytest.raises(sliceops.RunCancelled):
        session.run(None, FEEDS, options)
    # The session is unharmed: reset, the options run a finite model to its end; without options too.
    options.terminate = False
    finite = sliceops.InferenceSession(counted_loop(3))
    check_finished(finite.run(None, FEEDS, options), 3)
    check_finished(finite.run(None, FEEDS), 3)


def test_a_terminate_set_before_the_run_stops_it_before_its_first_node():
    session = sliceops.InferenceSession(counted_loop(2))
    options = sliceops.RunOptions()
    options.terminate = True
    with pytest.raises(sliceops.RunCancelled, match=r"cancel requested"):
        session.run(None, FEEDS, options)
    options.terminate = False
    check_finished(session.run(None, FEEDS, options), 2)


def test_a_timeout_stops_the_run_and_the_session_runs_again():
    session = sliceops.InferenceSession(endless_loop())
    options = sliceops.RunOptions()
    options.timeout = 0.25
    start = time.monotonic()
    with pytest.raises(sliceops.RunCancelled) as e:
        session.run(None, FEEDS, options)
    took = time.monotonic() - start
    assert 0.25 <= took < 5, took
    assert "(its timeout of 0.25 s)" in str(e.value)
    # The same options on a finite model run to its end; the endless session stops again.
    check_finished(sliceops.InferenceSession(counted_loop(4)).run(None, FEEDS, options), 4)
    with pytest.raises(sliceops.RunCancelled):
        session.run(None, FEEDS, options)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), 1e9, "1", True])
def test_a_timeout_out_of_range_is_invalid_argument(bad):
    session = sliceops.InferenceSession(counted_loop(1))
    options = sliceops.RunOptions()
    options.timeout = bad
    with pytest.raises(sliceops.InvalidArgument, match="timeout"):
        session.run(None, FEEDS, options)


def test_the_plain_session_takes_a_timeout_and_run_options():
    session = sliceops.Session(endless_loop())
    with pytest.raises(sliceops.RunCancelled, match=r"^run cancelled after .* \(its timeout of 0.2 s\)$"):
        session.run(None, FEEDS, timeout=0.2)
    options = sliceops.RunOptions()
    stopper = stop_later(options, 0.1)
    with pytest.raises(sliceops.RunCancelled, match=r"\(cancel requested\)$"):
        session.run(None, FEEDS, run_options=options)
    stopper.join()
    with pytest.raises(ValueError, match="the timeout must be more than 0"):
        session.run(None, FEEDS, timeout=-2)
    finite = sliceops.Session(counted_loop(2))
    check_finished(finite.run(None, FEEDS, timeout=60), 2)


def test_one_flag_stops_runs_on_several_threads_and_other_runs_go_on():
    """The interpreter lock is released while a run works: two runs of one session in two threads
    given the same options both stop on one terminate; a run in a third thread, given no options,
    ends normally meanwhile."""
    session = sliceops.InferenceSession(endless_loop())
    finite = sliceops.InferenceSession(counted_loop(200))
    options = sliceops.RunOptions()
    errors = []
    results = []

    def stopped():
        try:
            session.run(None, FEEDS, options)
        except sliceops.RunCancelled as e:
            errors.append(str(e))

    def finishes():
        results.append(finite.run(None, FEEDS))

    threads = [threading.Thread(target=stopped) for _ in range(2)] + [threading.Thread(target=finishes)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    options.terminate = True
    for t in threads:
        t.join(timeout=10)
        assert not t.is_alive()
    assert len(errors) == 2 and all("(cancel requested)" in e for e in errors), errors
    check_finished(results[0], 200)
