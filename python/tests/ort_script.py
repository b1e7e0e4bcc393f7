"""A script written for onnxruntime, as users write them: options, a session from a path and one from
bytes, the inputs' and outputs' names, shapes and types, the model's metadata, runs of every output and
of a subset in a chosen order, and the errors of bad feeds caught as onnxruntime raises them.

test_ort_script.py runs it as it is (onnxruntime), then with its import line alone changed to
`import sliceops as onnxruntime`, and compares the two reports.
"""

import numpy as np
import onnxruntime


def report(model_path, feeds):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 2
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = onnxruntime.InferenceSession(model_path, sess_options=options, providers=["CPUExecutionProvider"])
    out = {
        "inputs": [(i.name, i.shape, i.type) for i in session.get_inputs()],
        "outputs": [(o.name, o.shape, o.type) for o in session.get_outputs()],
        "providers": session.get_providers(),
        "threads": session.get_session_options().intra_op_num_threads,
    }
    meta = session.get_modelmeta()
    out["meta"] = (
        meta.producer_name,
        meta.graph_name,
        meta.domain,
        meta.description,
        meta.graph_description,
        meta.version,
        dict(meta.custom_metadata_map),
    )
    names = [o.name for o in session.get_outputs()]
    out["all"] = session.run(None, feeds)
    out["subset_names"] = names[::-1][:2]
    out["subset"] = session.run(out["subset_names"], feeds, onnxruntime.RunOptions())
    with open(model_path, "rb") as f:
        from_bytes = onnxruntime.InferenceSession(f.read(), providers=["CPUExecutionProvider"])
    out["from_bytes"] = from_bytes.run([names[0]], feeds)

    errors = {}

    def error(what, output_names, bad_feeds):
        try:
            session.run(output_names, bad_feeds)
            errors[what] = None
        except Exception as e:  # the kinds onnxruntime raises, compared by name and message
            errors[what] = (type(e).__name__, str(e))

    first = session.get_inputs()[0]
    error("unknown input", None, {**feeds, "no_such_input": np.zeros(1, np.float32)})
    error("missing input", None, {k: v for k, v in feeds.items() if k != first.name})
    wrong = np.float64 if feeds[first.name].dtype != np.float64 else np.float32
    error("wrong dtype", None, {**feeds, first.name: feeds[first.name].astype(wrong)})
    shaped = [i for i in session.get_inputs() if i.shape is not None]
    if shaped:
        i = shaped[0]
        error("wrong rank", None, {**feeds, i.name: feeds[i.name][None]})
        fixed = [k for k, d in enumerate(i.shape) if isinstance(d, int)]
        if fixed:
            grown = list(feeds[i.name].shape)
            grown[fixed[0]] += 1
            error("wrong dim", None, {**feeds, i.name: np.zeros(grown, feeds[i.name].dtype)})
    error("unknown output", ["no_such_output"], feeds)
    out["errors"] = errors
    return out
