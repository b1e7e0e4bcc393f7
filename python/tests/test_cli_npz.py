"""The command line's .npz files against numpy's own reader and writer: inputs written by np.savez and
np.savez_compressed, outputs read back by np.load, on a real export."""

import numpy as np
import pytest
from conftest import REAL_MODELS, assert_same, real_expected, real_feeds, real_path

MODEL = next(m for m in REAL_MODELS if m["name"] == "gpt2_torch_legacy")


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed], ids=["savez", "savez_compressed"])
def test_npz_in_and_out_as_numpy_reads_and_writes_them(cli, tmp_path, save):
    feeds = real_feeds(MODEL, "b")
    save(tmp_path / "in.npz", **feeds)
    proc = cli("run", real_path(MODEL), "--input", tmp_path / "in.npz", "--output-npz", tmp_path / "out.npz")
    assert proc.returncode == 0, proc.stderr
    # The same run writing .npy files, for comparison.
    args = []
    for name, value in feeds.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += ["-i", f"{name}={tmp_path / (name + '.npy')}"]
    npy = cli("run", real_path(MODEL), *args, "-d", tmp_path / "npy")
    assert npy.returncode == 0, npy.stderr
    expected = real_expected(MODEL, "b")
    with np.load(tmp_path / "out.npz", allow_pickle=False) as out:
        assert list(out.keys()) == MODEL["outputs"]
        for name, want in zip(MODEL["outputs"], expected):
            assert_same(out[name], np.load(tmp_path / "npy" / f"{name}.npy"), name)
            np.testing.assert_allclose(out[name], want, rtol=1e-3, atol=1e-4)
