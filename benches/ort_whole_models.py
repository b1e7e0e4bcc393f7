#!/usr/bin/env python3
"""Compare sliceops with onnxruntime on every real export in models/real/, whole model by whole model.

For every model of `models/real/manifest.json`, on the inputs of one size (`a` by default, `--sizes a,b`
for both):

- onnxruntime: `InferenceSession(...).run` (CPU provider, default graph optimizations and its
  default spinning thread pool), warm-up runs, then the median of N timed runs, in a child process of
  this script that has exited before sliceops runs (its pool, spinning after each run, never shares
  the cores with a sliceops measurement, nor sliceops' with it);
- sliceops: `sliceops bench MODEL --input NAME=FILE.npy ... --runs N --format json --threads T`, the
  median it reports (`{"runs", "median_s", "min_s", ...}`; its own warm-up run first).

With `--rounds R` each cell is measured R times, the two runtimes alternating, and each side's
smallest median is kept (what a passing load disturbs least).

Each thread setting of `--threads` (default `1,default`) is measured on both sides: a number T is
onnxruntime's `intra_op_num_threads = T` and sliceops' `--threads T`; `default` is each runtime's default
(onnxruntime: all cores; sliceops: no `--threads`). The ratio is sliceops / onnxruntime, measured in the
same run of this script; below 1.0 sliceops is faster. With more than one setting, the last columns
compare sliceops with itself: its median under each further setting over its median under the first
(below 1.0 that setting is faster), same run. Settings are measured model by model, one after the
other, so a passing load falls on all of them alike. A model that does not run on one side is listed
with the reason.

With `--profile MODEL`, it also prints the time per op type on both sides for that model, side by side:
onnxruntime's profiler (`SessionOptions.enable_profiling`, the trace's node events summed by op type and
divided by the number of runs) and `sliceops bench --profile` (the optimized plan's nodes timed one by
one, summed by op type). Op types are each runtime's own: onnxruntime's are ONNX op types (after its
fusions: `FusedConv`, `LayerNormalization`, ...), sliceops' are tract's ops after optimization
(`OptMatMul`, `Conv`, `Softmax`, ...), so the two columns line up by what they compute, not by name.

With `--corpus bench`, it times the generated corpus of full-size networks instead
(`models/bench/`, written by `benches/bench_corpus.py`, git-ignored): every model at batch 1 and 8,
at one thread and at all cores (`os.cpu_count()`; onnxruntime `intra_op_num_threads`, sliceops
`--threads`), both runtimes side by side, model by model, and prints the four-column table of
sliceops / onnxruntime (batch 1/8 x one thread/all cores) with the times and the geometric means.
`--threads 1,2` picks the thread counts (default 1 and all cores), and a second table gives each
runtime's time on more threads over its time on the first. `--check` first runs `sliceops run` on each and compares its outputs with onnxruntime's saved ones
(largest difference over the largest magnitude of the expected output); `--cpu-time` takes the
one-thread columns in CPU time per run instead of wall time (what a loaded machine disturbs least).

Usage:
    python3 -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip install -r benches/requirements.txt
    cargo build --release
    /tmp/benchvenv/bin/python benches/ort_whole_models.py [--runs 50] [--sizes a,b] [--models swin,yolo]
    /tmp/benchvenv/bin/python benches/ort_whole_models.py --threads 1,2   # sliceops 2 threads vs 1
    /tmp/benchvenv/bin/python benches/ort_whole_models.py --profile swin_torch_legacy [--top 15]
    python3 benches/bench_corpus.py && \
        /tmp/benchvenv/bin/python benches/ort_whole_models.py --corpus bench --runs 5 [--check]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

try:
    import numpy as np
except ImportError as e:  # pragma: no cover - environment problem, not a bench result
    sys.exit(f"error: {e}; install the pinned tools: pip install -r benches/requirements.txt")

try:
    import onnxruntime as ort
except ImportError:
    ort = None

REPO = Path(__file__).resolve().parent.parent
REAL = REPO / "models" / "real"
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
DEFAULT_BIN = TARGET / "release" / "sliceops"

# What the targets of the performance issue are stated for: transformers (token and patch sequences)
# and vision models (convolutions, windows, FPNs). silero-vad is neither.
KIND = {
    "gpt2": "transformer",
    "bert": "transformer",
    "llama": "transformer",
    "vit": "transformer",
    "timm_vit": "transformer",
    "speech2text": "transformer",
    "keras_gpt": "transformer",
    "swin": "vision",
    "yolov8": "vision",
    "timm_efficientnet": "vision",
    "keras_convnet": "vision",
    "ocr_det": "vision",
    "ocr_rec": "vision",
    "ocr_cls": "vision",
    "faster_rcnn": "vision",
    "ssdlite": "vision",
    "retinanet": "vision",
}


def kind_of(model: dict) -> str:
    name = model["name"]
    for prefix in sorted(KIND, key=len, reverse=True):
        if name.startswith(prefix):
            return KIND[prefix]
    return KIND.get(model.get("family", ""), "other")


def unescape(stem: str) -> str:
    """A value name from its .npy file stem (`%2F` is `/`, `%25` is `%`)."""
    return stem.replace("%2F", "/").replace("%25", "%")


def load_inputs(name: str, size: str) -> dict[str, Path]:
    folder = REAL / name / "inputs" / size
    return {unescape(p.stem): p for p in sorted(folder.glob("*.npy"))}


def median_time(fn, runs: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ort_session(model: Path, threads: int | None, profile_dir: Path | None = None):
    opts = ort.SessionOptions()
    if threads is not None:
        opts.intra_op_num_threads = threads
    if profile_dir is not None:
        opts.enable_profiling = True
        opts.profile_file_prefix = str(profile_dir / "ort_profile")
    return ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])


def time_ort_here(model: Path, feeds: dict, threads: int | None, runs: int, warmup: int) -> float | str:
    """onnxruntime's median in this process (the session is closed before this returns)."""
    if ort is None:
        return "no onnxruntime"
    try:
        sess = ort_session(model, threads)
        return median_time(lambda: sess.run(None, feeds), runs, warmup)
    except Exception as e:  # noqa: BLE001 - reported in the table
        return "error: " + str(e).strip().splitlines()[0][:120]


def ort_worker(spec: str) -> int:
    """`--ort-worker JSON`: time onnxruntime alone in this process and print `{"median_s": ...}` or
    `{"error": ...}` (what [`time_ort`] runs, so that no session of it lives beside sliceops)."""
    job = json.loads(spec)
    feeds = {k: np.load(p) for k, p in job["inputs"].items()}
    t = time_ort_here(Path(job["model"]), feeds, job["threads"], job["runs"], job["warmup"])
    print(json.dumps({"median_s": t} if isinstance(t, float) else {"error": t}))
    return 0


def time_ort(model: Path, inputs: dict[str, Path], threads: int | None, runs: int, warmup: int) -> float | str:
    """onnxruntime's median wall time per run, measured in a process of its own that has exited
    before this returns: its intra-op pool (which spins for a while after each run, its default, kept
    here) never runs beside a sliceops measurement, and sliceops' never beside it."""
    if ort is None:
        return "no onnxruntime"
    job = {"model": str(model), "inputs": {k: str(p) for k, p in inputs.items()}, "threads": threads,
           "runs": runs, "warmup": warmup}
    try:
        res = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--ort-worker", json.dumps(job)],
                             capture_output=True, text=True, timeout=3600)
    except subprocess.TimeoutExpired:
        return "timeout"
    try:
        out = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return "error: " + ((res.stderr.strip().splitlines() or ["exit status %d" % res.returncode])[-1][:120])
    return float(out["median_s"]) if "median_s" in out else str(out["error"])


def best_of(rounds: int, measure) -> tuple[float | str, float | str]:
    """`measure()` gives (onnxruntime, sliceops) seconds; over `rounds` rounds, each side's smallest
    (a round that failed is reported when no round succeeded). The two sides alternate within a round,
    so a passing load falls on both."""
    best: list[float | str] = ["no round", "no round"]
    for _ in range(max(rounds, 1)):
        for i, v in enumerate(measure()):
            if isinstance(v, float):
                best[i] = v if not isinstance(best[i], float) else min(best[i], v)
            elif not isinstance(best[i], float):
                best[i] = v
    return best[0], best[1]


def sliceops_args(model: Path, inputs: dict[str, Path]) -> list[str]:
    args = [str(model)]
    for name, path in inputs.items():
        args += ["--input", f"{name}={path}"]
    return args


def run_sliceops(binary: Path, args: list[str], timeout: float = 1800) -> dict | str:
    try:
        res = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    if res.returncode != 0:
        lines = res.stderr.strip().splitlines() or ["exit status %d" % res.returncode]
        return lines[-1].removeprefix("error: ")[:160]
    try:
        return json.loads(res.stdout)
    except ValueError:
        return f"unexpected output: {res.stdout.strip()[:120]!r}"


def time_sliceops(binary: Path, model: Path, inputs: dict[str, Path], threads: int | None, runs: int) -> float | str:
    args = ["bench", *sliceops_args(model, inputs), "--runs", str(runs), "--format", "json"]
    if threads is not None:
        args += ["--threads", str(threads)]
    report = run_sliceops(binary, args)
    if isinstance(report, str):
        return report
    return float(report["median_s"])


def fmt_ms(v) -> str:
    return f"{v * 1e3:.3f}" if isinstance(v, float) else "-"


def fmt_ratio(a, b) -> str:
    return f"{a / b:.2f}" if isinstance(a, float) and isinstance(b, float) and b > 0 else "-"


# ---------------------------------------------------------------------------------------------------
# Profiles
# ---------------------------------------------------------------------------------------------------


def ort_profile(model: Path, feeds: dict, threads: int | None, runs: int, warmup: int) -> dict[str, dict]:
    """onnxruntime's time per op type: the profiler's node events (`<node>_kernel_time`) of the timed
    runs, summed by `args.op_name`, per run."""
    with tempfile.TemporaryDirectory() as tmp:
        sess = ort_session(model, threads, Path(tmp))
        for _ in range(warmup):
            sess.run(None, feeds)
        # Warm-up events are told apart by their run: only the last `runs` model_run events count.
        for _ in range(runs):
            sess.run(None, feeds)
        trace = json.loads(Path(sess.end_profiling()).read_text())
    run_events = sorted((e for e in trace if e.get("cat") == "Session" and e.get("name") == "model_run"),
                        key=lambda e: e["ts"])
    timed = run_events[-runs:]
    start = timed[0]["ts"] if timed else 0
    by_type: dict[str, dict] = defaultdict(lambda: {"total_us": 0.0, "nodes": set()})
    for e in trace:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time") or e["ts"] < start:
            continue
        op = e.get("args", {}).get("op_name", "?")
        by_type[op]["total_us"] += float(e["dur"])
        by_type[op]["nodes"].add(e["name"])
    return {op: {"per_run_s": v["total_us"] * 1e-6 / runs, "nodes": len(v["nodes"])} for op, v in by_type.items()}


def print_profiles(binary: Path, model_info: dict, size: str, threads: int | None, runs: int, warmup: int,
                   top: int) -> None:
    name = model_info["name"]
    model = REAL / name / "model.onnx"
    inputs = load_inputs(name, size)
    feeds = {k: np.load(p) for k, p in inputs.items()}
    ours_args = ["bench", *sliceops_args(model, inputs), "--runs", str(runs), "--format", "json", "--profile"]
    if threads is not None:
        ours_args += ["--threads", str(threads)]
    ours = run_sliceops(binary, ours_args)
    theirs = ort_profile(model, feeds, threads, runs, warmup) if ort is not None else {}
    label = setting_label(threads)
    print(f"\n### {name} (size {size}, {label}): time per op type, per run\n")
    if isinstance(ours, str):
        print(f"sliceops: {ours}\n")
        ours_rows = []
        ours_total = 0.0
    else:
        prof = ours["profile"]
        ours_total = float(prof["total_s"])
        ours_rows = [(t["op_type"], t["nodes"], float(t["mean_s"]), float(t["share"])) for t in prof["op_types"]]
    ort_total = sum(v["per_run_s"] for v in theirs.values())
    ort_rows = sorted(((op, v["nodes"], v["per_run_s"], v["per_run_s"] / ort_total if ort_total else 0.0)
                       for op, v in theirs.items()), key=lambda r: -r[2])
    n = max(min(top, max(len(ours_rows), len(ort_rows))), 1)
    print("| sliceops op | nodes | ms | share | onnxruntime op | nodes | ms | share |")
    print("|---|---:|---:|---:|---|---:|---:|---:|")
    for i in range(n):
        left = ours_rows[i] if i < len(ours_rows) else None
        right = ort_rows[i] if i < len(ort_rows) else None
        cells = []
        for row in (left, right):
            if row is None:
                cells += ["", "", "", ""]
            else:
                cells += [row[0], str(row[1]), f"{row[2] * 1e3:.3f}", f"{row[3] * 100:.1f}%"]
        print("| " + " | ".join(cells) + " |")
    print(f"| **total (nodes timed)** | | {ours_total * 1e3:.3f} | | **total (kernel events)** | | "
          f"{ort_total * 1e3:.3f} | |")


# ---------------------------------------------------------------------------------------------------
# The generated corpus (models/bench/)
# ---------------------------------------------------------------------------------------------------

BENCH = REPO / "models" / "bench"


def check_outputs(binary: Path, folder: Path, outputs: list[str]) -> str:
    """`sliceops run` on the saved input against onnxruntime's saved outputs: the largest difference
    over the largest magnitude of the expected values, per output, or why it did not run."""
    with tempfile.TemporaryDirectory() as tmp:
        res = subprocess.run([str(binary), "run", str(folder / "model.onnx"), "--input",
                              f"x={folder / 'inputs' / 'x.npy'}", "--output-dir", tmp],
                             capture_output=True, text=True, timeout=1800)
        if res.returncode != 0:
            return "run failed: " + (res.stderr.strip().splitlines() or ["?"])[-1][:120]
        notes = []
        for name in outputs:
            want = np.load(folder / "expected" / f"{name}.npy")
            got_path = Path(tmp) / f"{name}.npy"
            if not got_path.exists():
                notes.append(f"{name}: missing")
                continue
            got = np.load(got_path)
            if got.shape != want.shape:
                notes.append(f"{name}: shape {list(got.shape)} vs {list(want.shape)}")
                continue
            if want.size == 0:
                notes.append(f"{name}: empty, same")
                continue
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64)).max()
            scale = max(float(np.abs(want.astype(np.float64)).max()), 1e-30)
            notes.append(f"{name}: {diff / scale:.1e}")
        return ", ".join(notes)


def cpu_ort(model: Path, feeds: dict, runs: int, warmup: int) -> float | str:
    """onnxruntime's CPU seconds per run on one thread (`time.process_time` around the runs): what a
    loaded machine disturbs least, for one-thread figures only."""
    try:
        sess = ort_session(model, 1)
        for _ in range(warmup):
            sess.run(None, feeds)
        t0 = time.process_time()
        for _ in range(runs):
            sess.run(None, feeds)
        return (time.process_time() - t0) / runs
    except Exception as e:  # noqa: BLE001 - reported in the table
        return "error: " + str(e).strip().splitlines()[0][:120]


def cpu_sliceops(binary: Path, model: Path, inputs: dict[str, Path], runs: int) -> float | str:
    """sliceops' CPU seconds per run on one thread: the difference of the CPU times of `bench` with
    `runs + 1` and with 1 timed run, over `runs` (load, planning and warm-up cancel out)."""
    def cpu(n: int) -> float | str:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        report = run_sliceops(binary, ["bench", *sliceops_args(model, inputs), "--runs", str(n), "--threads", "1",
                                       "--format", "json"])
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if isinstance(report, str):
            return report
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    one, more = cpu(1), cpu(runs + 1)
    if isinstance(one, str) or isinstance(more, str):
        return one if isinstance(one, str) else more
    return (more - one) / runs


def run_corpus(binary: Path, runs: int, warmup: int, only: str | None, check: bool, cpu: bool, rounds: int,
               bench: Path, thread_counts: list[int] | None) -> None:
    manifest_path = bench / "manifest.json"
    if not manifest_path.exists():
        sys.exit(f"error: {manifest_path} not found; write the corpus with benches/bench_corpus.py first")
    models = json.loads(manifest_path.read_text())["models"]
    if only:
        wanted = [w.strip() for w in only.split(",") if w.strip()]
        models = [m for m in models if any(w in m["name"] for w in wanted)]
    cores = os.cpu_count() or 1
    counts = thread_counts or [1, cores]
    columns = [(b, t) for b in (1, 8) for t in counts]
    rows, checks = [], []
    for info in models:
        row = {"model": info["name"]}
        for batch, threads in columns:
            folder = bench / info["name"] / f"b{batch}"
            if str(batch) not in info["batches"]:
                continue
            if check and threads == 1:
                checks.append(f"{info['name']} b{batch}: "
                              + check_outputs(binary, folder, info["batches"][str(batch)]["outputs"]))
                print(checks[-1], file=sys.stderr)
            inputs = {"x": folder / "inputs" / "x.npy"}
            print(f"{info['name']} b{batch} {threads}t...", file=sys.stderr)
            model = folder / "model.onnx"
            if cpu and threads == 1:
                feeds = {"x": np.load(inputs["x"])}
                o = cpu_ort(model, feeds, runs, warmup)
                s = cpu_sliceops(binary, model, inputs, runs)
            else:
                o, s = best_of(rounds, lambda: (time_ort(model, inputs, threads, runs, warmup),
                                                time_sliceops(binary, model, inputs, threads, runs)))
            print(f"  onnxruntime {fmt_ms(o)} ms, sliceops {fmt_ms(s)} ms", file=sys.stderr)
            row[f"b{batch}_{threads}t"] = (o, s)
        rows.append(row)
    labels = [f"b{b}, {t} thread" + ("" if t == 1 else "s") for b, t in columns]
    how = "one thread: CPU time per run; all cores: median wall time" if cpu else "median wall time"
    how += f", smallest of {rounds} rounds, each runtime in a process of its own"
    print(f"\n{cores} cores, load average {os.getloadavg()[0]:.1f}; sliceops / onnxruntime (ms: onnxruntime, "
          f"sliceops), {runs} runs ({how})\n")
    print("| model | " + " | ".join(labels) + " |")
    print("|---|" + "---:|" * len(labels))
    ratios: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        cells = [row["model"]]
        for (b, t), label in zip(columns, labels):
            o, s = row.get(f"b{b}_{t}t", ("-", "-"))
            r = fmt_ratio(s, o)
            if r != "-":
                ratios[label].append(s / o)
            cells.append(f"{r} ({fmt_ms(o)}, {fmt_ms(s)})" if r != "-" else f"- ({o if isinstance(o, str) else fmt_ms(o)}; {s if isinstance(s, str) else fmt_ms(s)})")
        print("| " + " | ".join(cells) + " |")
    gm = [f"{float(np.exp(np.mean(np.log(ratios[l])))):.2f}" if ratios[l] else "-" for l in labels]
    print("| geometric mean | " + " | ".join(gm) + " |")
    if len(counts) > 1 and not (cpu and counts[0] == 1):
        # Each runtime against itself: its time on more threads over its time on the first count
        # (not with --cpu-time, where the one-thread figures are CPU time, not wall time).
        more = counts[1:]
        print(f"\nEach runtime's time on more threads over its time on {counts[0]} (below 1: faster)\n")
        head = [f"b{b}, {t}/{counts[0]} {side}" for b in (1, 8) for t in more for side in ("onnxruntime", "sliceops")]
        print("| model | " + " | ".join(head) + " |")
        print("|---|" + "---:|" * len(head))
        for row in rows:
            cells = [row["model"]]
            for b in (1, 8):
                base = row.get(f"b{b}_{counts[0]}t", ("-", "-"))
                for t in more:
                    cur = row.get(f"b{b}_{t}t", ("-", "-"))
                    cells += [fmt_ratio(cur[0], base[0]), fmt_ratio(cur[1], base[1])]
            print("| " + " | ".join(cells) + " |")
    for c in checks:
        print(f"\n- check {c}", end="")
    print()


# ---------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------


def parse_settings(text: str) -> list[int | None]:
    """`--threads`: comma-separated thread counts and `default` (`both` is `1,default`)."""
    if text == "both":
        text = "1,default"
    settings: list[int | None] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if part == "default":
            value = None
        else:
            try:
                value = int(part)
            except ValueError:
                raise argparse.ArgumentTypeError(f"not a thread count or 'default': {part!r}") from None
            if value < 1:
                raise argparse.ArgumentTypeError(f"a thread count is at least 1, got {value}")
        if value in settings:
            raise argparse.ArgumentTypeError(f"setting {part!r} given twice")
        settings.append(value)
    if not settings:
        raise argparse.ArgumentTypeError("no thread setting given")
    return settings


def setting_key(threads: int | None) -> str:
    return "default" if threads is None else f"{threads}t"


def setting_label(threads: int | None) -> str:
    return "default threads" if threads is None else f"{threads} thread" + ("" if threads == 1 else "s")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=50, help="timed runs per measurement (median reported)")
    p.add_argument("--warmup", type=int, default=5, help="untimed onnxruntime runs first")
    p.add_argument("--sizes", default="a", help="input sizes to run, comma-separated: a, b or a,b")
    p.add_argument("--models", help="comma-separated substrings: only models whose name contains one")
    p.add_argument("--threads", type=parse_settings, default=None,
                   help="thread settings to measure, comma-separated counts and 'default' "
                        "(default 1,default; 'both' is the same)")
    p.add_argument("--sliceops", type=Path, default=DEFAULT_BIN, help=f"the sliceops binary (default {DEFAULT_BIN})")
    p.add_argument("--profile", metavar="MODEL", help="also print both runtimes' time per op type for this model")
    p.add_argument("--top", type=int, default=15, help="op types shown per runtime with --profile")
    p.add_argument("--json", type=Path, help="also write the rows to this file")
    p.add_argument("--corpus", choices=["real", "bench"], default="real",
                   help="real: the exports of models/real/ (default); bench: the generated models/bench/")
    p.add_argument("--check", action="store_true", help="with --corpus bench: compare `sliceops run` with onnxruntime")
    p.add_argument("--cpu-time", action="store_true",
                   help="with --corpus bench: one-thread columns in CPU time per run (a loaded machine)")
    p.add_argument("--rounds", type=int, default=1,
                   help="measure each cell this many times, the two runtimes alternating, and keep each "
                        "side's smallest median (default 1)")
    p.add_argument("--bench-dir", type=Path, default=BENCH,
                   help=f"with --corpus bench: the generated corpus (default {BENCH})")
    p.add_argument("--ort-worker", metavar="JSON", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.ort_worker:
        return ort_worker(args.ort_worker)
    threads_given = args.threads is not None
    if not threads_given:
        args.threads = parse_settings("1,default")

    if ort is None:
        print("warning: onnxruntime is not installed; its columns are empty", file=sys.stderr)
    binary = args.sliceops.resolve()
    if not binary.is_file():
        sys.exit(f"error: sliceops binary not found at {binary}; build it with `cargo build --release` "
                 "or pass --sliceops PATH")
    if args.corpus == "bench":
        counts = [os.cpu_count() or 1 if t is None else t for t in args.threads] if threads_given else None
        run_corpus(binary, args.runs, args.warmup, args.models, args.check, args.cpu_time, args.rounds,
                   args.bench_dir, counts)
        return 0
    manifest = json.loads((REAL / "manifest.json").read_text())["models"]
    if args.models:
        wanted = [w.strip() for w in args.models.split(",") if w.strip()]
        manifest = [m for m in manifest if any(w in m["name"] for w in wanted)]
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    settings = args.threads

    print(f"numpy {np.__version__}, onnxruntime {ort.__version__ if ort else '-'}, {os.cpu_count()} cpus, "
          f"load average {os.getloadavg()[0]:.2f}; median of {args.runs} runs "
          f"(onnxruntime after {args.warmup} warm-up runs, sliceops after one)", file=sys.stderr)

    rows = []
    if not args.profile or args.models:
        for info in manifest:
            name = info["name"]
            model = REAL / name / "model.onnx"
            for size in sizes:
                inputs = load_inputs(name, size)
                row = {"model": name, "kind": kind_of(info), "size": size}
                for threads in settings:
                    key = setting_key(threads)
                    print(f"{name} [{size}] {key}...", file=sys.stderr)
                    o, s = best_of(args.rounds, lambda: (time_ort(model, inputs, threads, args.runs, args.warmup),
                                                         time_sliceops(binary, model, inputs, threads, args.runs)))
                    row[f"ort_{key}_s"], row[f"sliceops_{key}_s"] = o, s
                rows.append(row)

        head = ["model", "kind", "size"]
        for threads in settings:
            t = setting_label(threads)
            head += [f"onnxruntime ms ({t})", f"sliceops ms ({t})", f"sliceops / onnxruntime ({t})"]
        for threads in settings[1:]:
            head += [f"sliceops {setting_label(threads)} / {setting_label(settings[0])}"]
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" if i < 3 else "---:" for i in range(len(head))) + "|")
        notes = []
        for r in rows:
            cells = [r["model"], r["kind"], r["size"]]
            for threads in settings:
                key = setting_key(threads)
                o, s = r[f"ort_{key}_s"], r[f"sliceops_{key}_s"]
                cells += [fmt_ms(o), fmt_ms(s), fmt_ratio(s, o)]
                for side, v in (("onnxruntime", o), ("sliceops", s)):
                    if isinstance(v, str):
                        note = f"{r['model']}: {side} does not run it: {v}"
                        if note not in notes:
                            notes.append(note)
            first = r[f"sliceops_{setting_key(settings[0])}_s"]
            for threads in settings[1:]:
                cells.append(fmt_ratio(r[f"sliceops_{setting_key(threads)}_s"], first))
            print("| " + " | ".join(cells) + " |")
        for n in notes:
            print(f"\n- {n}", end="")
        print()
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2))

    if args.profile:
        matches = [m for m in json.loads((REAL / "manifest.json").read_text())["models"] if m["name"] == args.profile]
        if not matches:
            sys.exit(f"error: no real export named '{args.profile}' in models/real/manifest.json")
        for size in sizes:
            for threads in settings:
                print_profiles(binary, matches[0], size, threads, args.runs, args.warmup, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
