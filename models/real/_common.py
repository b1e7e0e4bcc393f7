"""Shared helpers of generate.py: cleaning, writing and checking one exported model.

Each exporter module (_torch_models, _tf_models, _paddle_models, _wheel_models) builds its
models and hands every one to `write_model`, which

* clears text that changes from run to run or machine to machine (doc strings holding stack
  traces or file paths, metadata_props holding dates and source locations) at every level:
  model, graph, nodes, subgraphs, functions, value infos, initializers;
* saves model.onnx with the weights inside (no external data files);
* runs onnx.checker (the result goes to the manifest: a wheel model may fail it);
* runs onnxruntime (CPUExecutionProvider, default options) on the two input sets `a` and `b`
  and saves inputs/<set>/<input>.npy and expected/<set>/<output>.npy;
* returns the model's manifest entry.

This module imports only numpy, onnx and onnxruntime, so every exporter's worker can use it.
"""

import os
import shutil

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
SETS = ("a", "b")


def escape(name):
    """File-name form of a value name: '%' -> '%25', '/' -> '%2F', nothing else."""
    return name.replace("%", "%25").replace("/", "%2F")


def _clear_graph(graph):
    _clear_doc(graph)
    _clear_list(graph, "metadata_props")
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        _clear_doc(vi)
        _clear_list(vi, "metadata_props")
    for init in graph.initializer:
        _clear_doc(init)
        _clear_list(init, "metadata_props")
    for node in graph.node:
        _clear_node(node)


def _clear_node(node):
    _clear_doc(node)
    _clear_list(node, "metadata_props")
    for attr in node.attribute:
        _clear_doc(attr)
        if attr.type == onnx.AttributeProto.GRAPH:
            _clear_graph(attr.g)
        elif attr.type == onnx.AttributeProto.GRAPHS:
            for g in attr.graphs:
                _clear_graph(g)


def _clear_doc(proto):
    if proto.doc_string:  # an empty one is left as it is, present or not
        proto.ClearField("doc_string")


def _clear_list(proto, field):
    # metadata_props: not in every proto of older onnx releases
    if field in proto.DESCRIPTOR.fields_by_name and len(getattr(proto, field)):
        proto.ClearField(field)


def clean(model):
    """Clear every doc string and metadata_props of `model` in place; returns it."""
    _clear_doc(model)
    _clear_list(model, "metadata_props")
    _clear_graph(model.graph)
    for fn in model.functions:
        _clear_doc(fn)
        _clear_list(fn, "metadata_props")
        for node in fn.node:
            _clear_node(node)
    return model


def declared_dims(value_info):
    """Dims as the file declares them: dim_param str, dim_value int, or None when unset.

    Returns None for an input without a shape at all."""
    ttype = value_info.type.tensor_type
    if not ttype.HasField("shape"):
        return None
    out = []
    for d in ttype.shape.dim:
        if d.HasField("dim_param"):
            out.append(d.dim_param)
        elif d.HasField("dim_value"):
            out.append(d.dim_value)
        else:
            out.append(None)
    return out


def graph_inputs(model):
    """Graph inputs that are not initializers (IR < 4 models list weights as inputs)."""
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def run_onnxruntime(path, feeds):
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def _save_npys(folder, arrays):
    os.makedirs(folder, exist_ok=True)
    for name, arr in arrays.items():
        np.save(os.path.join(folder, escape(name) + ".npy"), np.asarray(arr))


def opsets(model):
    return {(o.domain or "ai.onnx"): o.version for o in model.opset_import}


def write_model(name, family, exporter, description, model, inputs, reference=None, rtol=1e-3, atol=1e-4):
    """Write models/real/<name>/ and return its manifest entry.

    model: onnx.ModelProto or serialized bytes, as the exporter made it. Bytes with nothing
      to clear are written unchanged (a wheel's file is then a byte-exact copy).
    inputs: {"a": {input: array}, "b": {input: array}}, every non-initializer graph input.
    reference: optional {"a": {output: array}, "b": ...}, the source framework's own outputs
      (by graph output order when given as a list); onnxruntime's must match within
      rtol/atol, which catches an export whose dynamic dims were silently baked in."""
    raw = None
    if isinstance(model, (bytes, bytearray)):
        raw = bytes(model)
        model = onnx.load_from_string(raw)
    cleaned = clean(type(model).FromString(model.SerializeToString()))
    folder = os.path.join(HERE, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    path = os.path.join(folder, "model.onnx")
    if raw is not None and cleaned.SerializeToString() == model.SerializeToString():
        with open(path, "wb") as f:  # nothing to clear: keep the exporter's bytes
            f.write(raw)
    else:
        model = cleaned
        onnx.save_model(model, path, save_as_external_data=False)

    try:
        onnx.checker.check_model(path)
        checker = "ok"
    except Exception as e:  # noqa: BLE001  (recorded, not fatal: wheel models may fail it)
        checker = "fails: " + str(e).strip().splitlines()[0][:300]

    in_names = [i.name for i in graph_inputs(model)]
    out_names = [o.name for o in model.graph.output]
    sizes = {}
    for s in SETS:
        feeds = inputs[s]
        assert sorted(feeds) == sorted(in_names), (name, sorted(feeds), in_names)
        outs = run_onnxruntime(path, feeds)
        _save_npys(os.path.join(folder, "inputs", s), feeds)
        _save_npys(os.path.join(folder, "expected", s), {k: outs[k] for k in out_names})
        sizes[s] = {k: list(feeds[k].shape) for k in in_names}
        if reference is not None:
            ref = reference[s]
            if isinstance(ref, (list, tuple)):
                ref = dict(zip(out_names, ref))
            for k, want in ref.items():
                got = outs[k]
                assert got.shape == tuple(want.shape), (name, s, k, got.shape, want.shape)
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{name} {s} {k}")

    return {
        "name": name,
        "family": family,
        "exporter": exporter,
        "description": description,
        "opset": opsets(model),
        "checker": checker,
        "inputs": in_names,
        "outputs": out_names,
        "sizes": sizes,
        "symbolic_dims": {i.name: declared_dims(i) for i in graph_inputs(model)},
    }
