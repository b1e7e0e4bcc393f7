"""sliceops.Session against the fixtures' expected outputs, the CLI, and onnxruntime."""

import threading

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import sliceops
from conftest import (
    CANNOT_RUN,
    FIXTURES,
    REAL_MODELS,
    SIZES,
    assert_close,
    assert_same,
    cli_error,
    escape,
    fixture_expected,
    fixture_feeds,
    fixture_path,
    real_expected,
    real_feeds,
    real_path,
)

ort.set_default_logger_severity(3)
RUNNABLE = [m for m in REAL_MODELS if m["name"] not in CANNOT_RUN]


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f["name"])
def test_fixture_outputs_are_exact(fixture):
    session = sliceops.Session(fixture_path(fixture))
    outputs = session.run(None, fixture_feeds(fixture))
    expected = fixture_expected(fixture)
    assert len(outputs) == len(expected)
    for name, got, want in zip(fixture["outputs"], outputs, expected):
        assert_same(got, want, name)


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f["name"])
def test_fixture_outputs_equal_onnxruntime_on_the_lowered_model(fixture):
    lowered = sliceops.lower(onnx.load(str(fixture_path(fixture))))
    assert isinstance(lowered, onnx.ModelProto)
    feeds = fixture_feeds(fixture)
    want = ort.InferenceSession(lowered.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = sliceops.Session(lowered).run(None, feeds)
    for name, g, w in zip(fixture["outputs"], got, want):
        assert_same(g, w, name)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("model", RUNNABLE, ids=lambda m: m["name"])
def test_real_model_outputs(model, size, cli, tmp_path):
    feeds = real_feeds(model, size)
    outputs = sliceops.Session(str(real_path(model))).run(None, feeds)
    for name, got, want in zip(model["outputs"], outputs, real_expected(model, size)):
        assert_close(got, want, f"{model['name']} {size} {name}")
    # The CLI runs the same core: bit for bit the same outputs.
    args = []
    for name, value in feeds.items():
        path = tmp_path / f"{escape(name)}.npy"
        np.save(path, value)
        args += ["--input", f"{name}={path}"]
    proc = cli("run", real_path(model), *args, "--output-dir", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    for name, got in zip(model["outputs"], outputs):
        assert_same(got, np.load(tmp_path / "out" / f"{escape(name)}.npy"), name)


def test_model_that_cannot_run_raises_with_the_op():
    from onnx import TensorProto, helper

    # An operator nothing implements: the error names it with its opset.
    graph = helper.make_graph(
        [helper.make_node("RegexFullMatch", ["x"], ["y"], name="match")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [4])],
        [helper.make_tensor_value_info("y", TensorProto.BOOL, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)
    with pytest.raises(ValueError, match=r"node 'match' \(RegexFullMatch\): operator RegexFullMatch of opset 20 is not supported"):
        sliceops.Session(model).run(None, {"x": np.array([1, 2, 3, 4], np.uint8)})


def test_eight_threads_give_the_same_outputs():
    model = next(m for m in RUNNABLE if m["name"] == "gpt2_torch_legacy")
    session = sliceops.Session(real_path(model).read_bytes())
    feeds = {size: real_feeds(model, size) for size in SIZES}
    want = {size: session.run(None, feeds[size]) for size in SIZES}
    errors = []
    barrier = threading.Barrier(8)

    def work(k):
        try:
            barrier.wait()
            for i in range(6):
                size = SIZES[(k + i) % 2]
                for g, w in zip(session.run(None, feeds[size]), want[size]):
                    assert_same(g, w, f"thread {k} run {i}")
        except BaseException as e:  # reported below, with the thread
            errors.append(f"thread {k}: {e!r}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_outputs_are_not_copied():
    fixture = next(f for f in FIXTURES if f["name"] == "ss_dtype_float32")
    (out,) = sliceops.Session(fixture_path(fixture)).run(None, fixture_feeds(fixture))
    assert not out.flags.owndata
    assert type(out.base).__name__ == "Buffer"
    # The array stays valid once the session is gone.
    expected = fixture_expected(fixture)[0]
    import gc

    gc.collect()
    assert_same(out, expected)


def test_output_names_select_and_order():
    fixture = next(f for f in FIXTURES if f["name"] == "sym_batch_strided_slice")
    assert len(fixture["outputs"]) > 1
    session = sliceops.Session(fixture_path(fixture))
    feeds = fixture_feeds(fixture)
    expected = dict(zip(fixture["outputs"], fixture_expected(fixture)))
    names = list(reversed(fixture["outputs"])) + [fixture["outputs"][0]]
    got = session.run(names, feeds)
    assert len(got) == len(names)
    for name, g in zip(names, got):
        assert_same(g, expected[name], name)
    with pytest.raises(ValueError, match=r"the model has no output named 'nope' \(its outputs: "):
        session.run(["nope"], feeds)


@pytest.mark.parametrize("model", RUNNABLE[:6], ids=lambda m: m["name"])
def test_inputs_and_outputs_like_onnxruntime(model):
    ours = sliceops.Session(real_path(model))
    theirs = ort.InferenceSession(str(real_path(model)), providers=["CPUExecutionProvider"])
    for mine, other in ((ours.inputs(), theirs.get_inputs()), (ours.outputs(), theirs.get_outputs())):
        assert [a.name for a in mine] == [b.name for b in other]
        assert [a.type for a in mine] == [b.type for b in other]
        for a, b in zip(mine, other):
            assert len(a.shape) == len(b.shape)
            for x, y in zip(a.shape, b.shape):
                if isinstance(x, int):
                    assert x == y
                elif x is not None:
                    assert x == y


# --- bad inputs raise ValueError with the CLI's message ---


def fixture_named(name):
    return next(f for f in FIXTURES if f["name"] == name)


def cli_run_error(cli, tmp_path, model, feeds):
    args = []
    for name, value in feeds.items():
        path = tmp_path / f"{escape(name)}.npy"
        np.save(path, value)
        args += ["--input", f"{name}={path}"]
    return cli_error(cli("run", model, *args, "--output-dir", tmp_path / "out"))


def test_wrong_dtype_raises_the_cli_message(cli, tmp_path):
    fixture = fixture_named("ss_dtype_float32")
    feeds = {k: v.astype(np.float64) for k, v in fixture_feeds(fixture).items()}
    message = cli_run_error(cli, tmp_path, fixture_path(fixture), feeds)
    assert "is float64 but the model expects float32" in message
    with pytest.raises(ValueError) as e:
        sliceops.Session(fixture_path(fixture)).run(None, feeds)
    assert str(e.value) == message


def test_wrong_shape_raises_the_cli_message(cli, tmp_path):
    model = next(m for m in RUNNABLE if m["name"] == "gpt2_torch_legacy")
    feeds = real_feeds(model, "a")
    feeds["attention_mask"] = np.ones((3, 7), dtype=feeds["attention_mask"].dtype)
    message = cli_run_error(cli, tmp_path, real_path(model), feeds)
    assert "made it 1" in message
    with pytest.raises(ValueError) as e:
        sliceops.Session(real_path(model)).run(None, feeds)
    assert str(e.value) == message


def test_unknown_input_raises_the_cli_message(cli, tmp_path):
    fixture = fixture_named("ss_dtype_float32")
    feeds = dict(fixture_feeds(fixture), extra=np.zeros(2, np.float32))
    message = cli_run_error(cli, tmp_path, fixture_path(fixture), feeds)
    assert message.startswith("the model has no input named 'extra'")
    with pytest.raises(ValueError) as e:
        sliceops.Session(fixture_path(fixture)).run(None, feeds)
    assert str(e.value) == message


def test_missing_input_names_it_as_declared(cli, tmp_path):
    model = next(m for m in RUNNABLE if m["name"] == "gpt2_torch_legacy")
    feeds = real_feeds(model, "a")
    del feeds["attention_mask"]
    message = cli_run_error(cli, tmp_path, real_path(model), feeds)
    with pytest.raises(ValueError) as e:
        sliceops.Session(real_path(model)).run(None, feeds)
    assert message.endswith("; pass each as --input NAME=FILE.npy, or in an --input FILE.npz")
    assert str(e.value) == message.replace("pass each as --input NAME=FILE.npy, or in an --input FILE.npz", "pass each in feeds")


def test_bad_models_raise_the_cli_message(cli, tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07\x12\xff\xff\xff\xff\x0f not a model")
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    for path in (garbage, empty, tmp_path / "missing.onnx"):
        message = cli_error(cli("infer", path))
        for call in (sliceops.Session, sliceops.infer, sliceops.infer_shapes, sliceops.lower):
            with pytest.raises(ValueError) as e:
                call(path)
            assert str(e.value) == message, call
        with pytest.raises(ValueError) as e:
            sliceops.fold(path)
        assert str(e.value) == message
    with pytest.raises(ValueError, match="not a valid ONNX model"):
        sliceops.Session(garbage.read_bytes())
    with pytest.raises(TypeError):
        sliceops.Session(12)


def test_unsupported_numpy_dtype_raises():
    fixture = fixture_named("ss_dtype_float32")
    feeds = {k: v.astype(np.complex64) for k, v in fixture_feeds(fixture).items()}
    with pytest.raises(ValueError, match="numpy dtype complex64, which sliceops cannot run"):
        sliceops.Session(fixture_path(fixture)).run(None, feeds)


def test_bfloat16_model_is_refused_naming_the_type():
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.BFLOAT16), helper.make_node("Cast", ["h"], ["y"], to=TensorProto.FLOAT)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ValueError, match="bfloat16"):
        sliceops.Session(model).run(None, {"x": np.ones(2, np.float32)})


def test_tune_allocator_keeps_outputs_exact_on_large_tensors():
    # Process-wide malloc settings: checked in a child process of its own. Outputs of a 16 MB slice,
    # run three times (buffers freed and reused), equal numpy's.
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import numpy as np, onnx, sliceops
        from onnx import helper as h, TensorProto as T, numpy_helper as nh
        inits = [nh.from_array(np.array(v, np.int64), n) for n, v in [("s", [1]), ("e", [64]), ("a", [0])]]
        graph = h.make_graph([h.make_node("Slice", ["x", "s", "e", "a"], ["y"])], "g",
                             [h.make_tensor_value_info("x", T.FLOAT, [64, 256, 256])],
                             [h.make_tensor_value_info("y", T.FLOAT, None)], initializer=inits)
        model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], ir_version=8)
        sliceops.tune_allocator()
        session = sliceops.Session(model)
        x = np.arange(64 * 256 * 256, dtype=np.float32).reshape(64, 256, 256)
        for _ in range(3):
            (y,) = session.run(None, {"x": x})
            assert y.shape == (63, 256, 256) and np.array_equal(y, x[1:])
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_an_initializer_listed_as_an_input_is_a_default_feeds_may_replace():
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [helper.make_tensor("w", TensorProto.FLOAT, [2], [10.0, 20.0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = np.array([1.0, 2.0], np.float32)
    w = np.array([5.0, 6.0], np.float32)
    ours = sliceops.Session(model)
    theirs = ort.InferenceSession(model.SerializeToString())
    for feeds in ({"x": x}, {"x": x, "w": w}):
        want = theirs.run(None, feeds)[0]
        got = ours.run(None, feeds)[0]
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ours.run(None, {"x": x, "w": w})[0], [6.0, 8.0])
