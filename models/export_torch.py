#!/usr/bin/env python3
"""Export fixture models with PyTorch's real ONNX exporters (models/torch_<name>/).

    pip install -r models/requirements.txt torch onnxscript   # torch is large
    python3 models/export_torch.py

Two small modules, each exported with the TorchScript exporter (dynamo=False) and with the
dynamo exporter (dynamo=True, needs onnxscript), with a fixed batch and with a dynamic
batch dim "N":

    TorchSlice:      (x[1:-1, ::2], x[..., None, 1])
    TorchAsStrided:  (torch.as_strided(x, (3, 3), (2, 1), 1), x.unfold(1, 3, 2))

The layout is the one of generate.py: torch_<name>/model.onnx, inputs/<name>.npy,
expected/<name>.npy, where expected = torch's own eager output. Entries are added to
manifest.json (entries of generate.py are kept; generate.py keeps ours in turn).
Each exported model is checked with onnx.checker and, when onnxruntime is installed,
run by onnxruntime against torch's output.

The ONNX files are written as the exporters make them, except that text fields that
would change from run to run or machine to machine (doc strings holding stack traces or
file paths, metadata_props) are cleared, so reruns with the same versions give the same
bytes. The torch / onnxscript versions used are recorded in each model's doc_string.
"""

import io
import json
import os
import shutil
import sys
import warnings

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in models/
sys.path.insert(0, HERE)
from generate import escape  # noqa: E402  (same escaping rule as the other fixtures)

import torch  # noqa: E402

PREFIX = "torch_"


class TorchSlice(torch.nn.Module):
    def forward(self, x):
        return x[1:-1, ::2], x[..., None, 1]


class TorchAsStrided(torch.nn.Module):
    def forward(self, x):
        return torch.as_strided(x, (3, 3), (2, 1), 1), x.unfold(1, 3, 2)


MODULES = {
    "slice": dict(
        module=TorchSlice,
        x=np.arange(5 * 6 * 4, dtype=np.float32).reshape(5, 6, 4),
        outputs=["inner_even", "new_axis"],
        expression="(x[1:-1, ::2], x[..., None, 1])",
        text="torch module returning (x[1:-1, ::2], x[..., None, 1])",
    ),
    "as_strided": dict(
        module=TorchAsStrided,
        x=np.arange(4 * 8, dtype=np.float32).reshape(4, 8),
        outputs=["as_strided", "unfold"],
        expression="(np.lib.stride_tricks.as_strided(x.ravel()[1:], (3, 3), "
                   "(2 * x.itemsize, 1 * x.itemsize)), "
                   "np.lib.stride_tricks.as_strided(x.ravel(), (4, 3, 3), "
                   "(8 * x.itemsize, 2 * x.itemsize, 1 * x.itemsize)))",
        text="torch module returning (torch.as_strided(x, (3, 3), (2, 1), 1), "
             "x.unfold(1, 3, 2))",
    ),
}


def strip_volatile(model):
    """Clear text that depends on the run or the machine (stack traces, paths)."""
    def clean_graph(g):
        g.doc_string = ""
        for n in g.node:
            n.doc_string = ""
            del n.metadata_props[:]
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    clean_graph(a.g)
                for sub in a.graphs:
                    clean_graph(sub)
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            vi.doc_string = ""
            del vi.metadata_props[:]
        for t in g.initializer:
            t.doc_string = ""
            del t.metadata_props[:]
        del g.metadata_props[:]
    clean_graph(model.graph)
    for fn in model.functions:
        fn.doc_string = ""
        for n in fn.node:
            n.doc_string = ""
            del n.metadata_props[:]
        del fn.metadata_props[:]
    del model.metadata_props[:]
    return model


def export(module, x, exporter, dynamic, output_names):
    example = (torch.from_numpy(x),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            buf = io.BytesIO()
            kwargs = {}
            if dynamic:
                kwargs["dynamic_axes"] = {"x": {0: "N"}}
            torch.onnx.export(module, example, buf, input_names=["x"], output_names=output_names,
                              opset_version=17, dynamo=False, do_constant_folding=True, **kwargs)
            return onnx.load_from_string(buf.getvalue())
        kwargs = {}
        if dynamic:
            kwargs["dynamic_shapes"] = {"x": {0: torch.export.Dim("N", min=3, max=1024)}}
        prog = torch.onnx.export(module, example, input_names=["x"], output_names=output_names,
                                 opset_version=18, dynamo=True, verbose=False, **kwargs)
        return prog.model_proto


def symbolic_dims(model):
    out = {}
    for vi in model.graph.input:
        dims = [d.dim_param if d.dim_param else d.dim_value
                for d in vi.type.tensor_type.shape.dim]
        if any(isinstance(d, str) for d in dims):
            out[vi.name] = dims
    return out


def main():
    try:
        import onnxscript
        onnxscript_version = onnxscript.__version__
    except ImportError:
        onnxscript_version = None
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None

    entries = []
    for key, spec in MODULES.items():
        x = spec["x"]
        module = spec["module"]().eval()
        with torch.no_grad():
            eager = [t.contiguous().numpy().copy() for t in module(torch.from_numpy(x))]
        env = {"np": np, "x": x}
        check = eval(spec["expression"], {"__builtins__": {}}, env)  # noqa: S307
        for a, b in zip(check, eager):
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), key
        for exporter in ("torchscript", "dynamo"):
            if exporter == "dynamo" and onnxscript_version is None:
                print("skipping dynamo exports: onnxscript is not installed", file=sys.stderr)
                continue
            for dynamic in (False, True):
                name = "%s%s_%s%s" % (PREFIX, key, exporter, "_dynamic_batch" if dynamic else "")
                try:
                    model = export(module, x, exporter, dynamic, spec["outputs"])
                except Exception as e:  # report and go on with the other exports
                    print("%s: export failed: %s: %s" % (name, type(e).__name__,
                                                         str(e).splitlines()[0]),
                          file=sys.stderr)
                    continue
                strip_volatile(model)
                model.doc_string = "sliceops fixture %s: %s, exported by torch %s%s" % (
                    name, spec["text"], torch.__version__,
                    ", onnxscript %s" % onnxscript_version if exporter == "dynamo" else "")
                onnx.checker.check_model(model, full_check=True)
                out_names = [o.name for o in model.graph.output]
                in_names = [i.name for i in model.graph.input]
                assert in_names == ["x"], (name, in_names)
                assert len(out_names) == len(eager), (name, out_names)
                if ort is not None:
                    so = ort.SessionOptions()
                    so.log_severity_level = 3
                    sess = ort.InferenceSession(model.SerializeToString(), so,
                                                providers=["CPUExecutionProvider"])
                    got = sess.run(out_names, {"x": x})
                    for g, want in zip(got, eager):
                        assert g.dtype == want.dtype and g.shape == want.shape and \
                            g.tobytes() == want.tobytes(), (name, g.shape, want.shape)
                d = os.path.join(HERE, name)
                if os.path.isdir(d):
                    shutil.rmtree(d)
                os.makedirs(os.path.join(d, "inputs"))
                os.makedirs(os.path.join(d, "expected"))
                with open(os.path.join(d, "model.onnx"), "wb") as fh:
                    fh.write(model.SerializeToString())
                np.save(os.path.join(d, "inputs", escape("x") + ".npy"), x, allow_pickle=False)
                for out_name, arr in zip(out_names, eager):
                    np.save(os.path.join(d, "expected", escape(out_name) + ".npy"), arr,
                            allow_pickle=False)
                ops = sorted({"%s%s" % (n.domain + "." if n.domain else "", n.op_type)
                              for n in model.graph.node})
                entry = {
                    "name": name,
                    "description": "%s, exported with the %s exporter of torch.onnx (opset %d)%s; "
                                   "expected = torch eager output. Ops: %s." % (
                                       spec["text"], exporter,
                                       [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")][0],
                                       ", batch dim dynamic (N)" if dynamic else "",
                                       ", ".join(ops)),
                    "expression": spec["expression"],
                    "inputs": in_names,
                    "outputs": out_names,
                }
                sym = symbolic_dims(model)
                if sym:
                    entry["symbolic_inputs"] = sym
                entry["lowerable"] = True
                entries.append(entry)
                print("%s: ok (%s)" % (name, ", ".join(ops)))

    manifest_path = os.path.join(HERE, "manifest.json")
    old = {"fixtures": []}
    if os.path.exists(manifest_path):
        with open(manifest_path) as fh:
            old = json.load(fh)
    kept = [e for e in old.get("fixtures", []) if not e["name"].startswith(PREFIX)]
    with open(manifest_path, "w") as fh:
        json.dump({"fixtures": kept + sorted(entries, key=lambda e: e["name"])}, fh, indent=2,
                  ensure_ascii=False)
        fh.write("\n")
    print("wrote %d torch fixtures" % len(entries))


if __name__ == "__main__":
    main()
