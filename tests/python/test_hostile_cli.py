"""Hostile input through the CLI (issue 13): non-regular files are refused without hanging, a
non-finite reference fails `verify`, out-of-range flags are usage errors, writes are checked and
leave no partial files, pools with stride 0 and external data outside the model's folder are
refused with messages that name the node / tensor."""
import os

import numpy as np
import onnx
import pytest
from onnx import helper

from opv_util import assert_error, describe, load_npz


def small_model(tmp_path):
    """y = Relu(x), x: f32[1,2,4,4]; returns (model path, reference npz path)."""
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, 4, 4])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2, 4, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "relu.onnx"
    onnx.save(m, str(path))
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(1, 2, 4, 4)
    ref = tmp_path / "relu_ref.npz"
    np.savez(ref, x=x, y=np.maximum(x, 0))
    return path, ref, x


@pytest.mark.parametrize("kind", ["devzero", "fifo", "dir"])
def test_non_regular_model_and_inputs_are_refused(cli, tmp_path, kind):
    if kind == "devzero":
        bad = "/dev/zero"
    elif kind == "fifo":
        bad = tmp_path / "pipe"
        os.mkfifo(bad)
    else:
        bad = tmp_path / "somedir"
        bad.mkdir()
    # Each used to read forever or ask for 9.2e18 bytes; now an error within seconds.
    assert_error(cli.run("run", bad, timeout=30), "not a regular file")
    assert_error(cli.run("ir3", "dis", bad, timeout=30), "not a regular file")
    model, _, _ = small_model(tmp_path)
    assert_error(cli.run("run", model, "--input", f"x={bad}", timeout=30), "not a regular file")
    assert_error(cli.run("run", model, "--inputs", bad, timeout=30), "not a regular file")


def test_verify_fails_on_non_finite_reference(cli, tmp_path):
    model, ref, x = small_model(tmp_path)
    p = cli.run("verify", model, "--ref", ref, "--backend", "reference")
    assert p.returncode == 0, describe(p)
    nan_ref = tmp_path / "nan_ref.npz"
    np.savez(nan_ref, x=x, y=np.full((1, 2, 4, 4), np.nan, np.float32))
    p = cli.run("verify", model, "--ref", nan_ref, "--backend", "reference")
    assert p.returncode == 1, describe(p)  # used to pass with rel_l2=0
    assert "rel_l2=inf" in p.stdout, describe(p)
    assert "output 'y' has 32 non-finite" in p.stderr, describe(p)
    assert "FAIL" in p.stderr, describe(p)
    one_inf = tmp_path / "inf_ref.npz"
    y = np.maximum(x, 0)
    y[0, 0, 0, 0] = np.inf
    np.savez(one_inf, x=x, y=y)
    p = cli.run("verify", model, "--ref", one_inf, "--backend", "reference")
    assert p.returncode == 1, describe(p)


def test_integer_flags_are_range_checked(cli, tmp_path):
    model, _, _ = small_model(tmp_path)
    assert_error(cli.run("run", model, "--threads", "4294967297"),
                 "option --threads: '4294967297' is not an integer in [0, 1024]")
    assert_error(cli.run("run", model, "--threads", "-1"), "--threads")
    assert_error(cli.run("bench", model, "--iters", "0"), "--iters")
    assert_error(cli.run("bench", model, "--cuda-overlap", "maybe"), "--cuda-overlap must be on or off, not 'maybe'")
    # on|off switches of the cuda target are checked before anything is compiled
    for flag in ("--cuda-ffn", "--cuda-ffn-dw", "--cuda-pack", "--cuda-se", "--cuda-stage", "--cuda-heads"):
        assert_error(cli.run("compile", model, "-o", tmp_path / "x.opv", "--target", "cuda", flag, "yes"),
                     f"{flag} must be on or off, not 'yes'")
    assert not (tmp_path / "x.opv").exists()
    assert_error(cli.run("compile", model, "-o", tmp_path / "x.opv", "--target", "cuda", "--cuda-layout", "nchwc"),
                 "--cuda-layout: cuda layout must be auto, nchw or nhwc, got 'nchwc'")
    assert_error(cli.run("compile", model, "-o", tmp_path / "x.opv", "--target", "cuda", "--cuda-sass", "sm_70"),
                 "--cuda-sass: cuda sass sm_70 is older than the architecture compute_75")
    assert_error(cli.run("compile", model, "-o", tmp_path / "x.opv", "--target", "cuda", "--cuda-sass", "sm90"),
                 "--cuda-sass: cuda sass must be auto, none or a comma list of sm_NN")
    assert not (tmp_path / "x.opv").exists()
    assert_error(cli.run("run", model, "--cuda-code", "sass"), "--cuda-code must be auto or ptx, not 'sass'")


def test_writes_are_checked(cli, tmp_path):
    src = tmp_path / "a.s"
    src.write_text("nop\nend\n")
    assert_error(cli.run("ir3", "asm", src, "-o", "/dev/full"), "no space left on device")
    # make-model into a missing folder: an error with the reason, and nothing left behind.
    out = tmp_path / "missing" / "m.onnx"
    assert_error(cli.run("make-model", out), "no such file or directory")
    assert not out.parent.exists()
    # A planted symlink at the output name is replaced, never written through.
    model, _, _ = small_model(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    link = tmp_path / "out.opv"
    link.symlink_to(victim)
    p = cli.run("compile", model, "-o", link, "--target", "reference")
    assert p.returncode == 0, describe(p)
    assert victim.read_text() == "keep"
    assert not link.is_symlink()
    assert [f.name for f in tmp_path.iterdir() if ".tmp" in f.name] == []


@pytest.mark.parametrize("op,auto_pad", [("MaxPool", "NOTSET"), ("AveragePool", "SAME_UPPER"),
                                         ("MaxPool", "SAME_LOWER")])
def test_pool_stride_zero_is_an_error(cli, tmp_path, op, auto_pad):
    node = helper.make_node(op, ["x"], ["y"], name="pool", kernel_shape=[2, 2], strides=[0, 0], auto_pad=auto_pad)
    g = helper.make_graph([node], "t", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 4, 4])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "pool.onnx"
    onnx.save(m, str(path))
    # Used to die with SIGFPE.
    assert_error(cli.run("compile", path, "-o", tmp_path / "p.opv"),
                 f"node 'pool' ({op}): attribute 'strides' must be >= 1")


def test_external_data_outside_the_model_folder_is_refused(cli, tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(4, dtype=np.float32).tobytes())
    d = tmp_path / "model"
    d.mkdir()
    for loc, needle in [("../secret.bin", "contains '..'"), (str(secret), "absolute path")]:
        w = onnx.TensorProto()
        w.name, w.data_type = "w", onnx.TensorProto.FLOAT
        w.dims.append(4)
        w.data_location = onnx.TensorProto.EXTERNAL
        for k, v in (("location", loc), ("offset", "0"), ("length", "16")):
            e = w.external_data.add()
            e.key, e.value = k, v
        node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
        g = helper.make_graph([node], "t", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4])], initializer=[w])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        path = d / "m.onnx"
        path.write_bytes(m.SerializeToString())
        assert_error(cli.run("run", path, "--seed", "1", "-o", tmp_path / "o.npz"), "initializer 'w'", needle)
        assert not (tmp_path / "o.npz").exists()


def test_tensor_limits_are_set_before_the_command(cli, tmp_path):
    """The global --max-tensor-elems/--max-tensor-bytes options set the one limits policy that
    import, artifact loading and .npy/.npz reading apply."""
    model, ref, x = small_model(tmp_path)  # tensors of 32 f32 elements = 128 bytes
    art = tmp_path / "relu.opv"
    assert_error(cli.run("--max-tensor-elems", "31", "compile", model, "-o", art), "more than 31 elements")
    assert_error(cli.run("--max-tensor-bytes=127", "compile", model, "-o", art), "per-tensor limit of 127 bytes")
    p = cli.run("--max-tensor-elems", "32", "--max-tensor-bytes", "1K", "compile", model, "-o", art)
    assert p.returncode == 0, describe(p)
    # the same limits at load (the artifact's buffers) and for inputs
    assert_error(cli.run("--max-tensor-elems", "16", "run", art), "more than 16 elements")
    big = tmp_path / "x.npy"
    np.save(big, np.zeros((1, 2, 4, 4), np.float32))
    p = cli.run("run", art, "--input", f"x={big}")
    assert p.returncode == 0, describe(p)
    for bad in ("0", "-5", "12Q", "99999999999999999999"):
        assert_error(cli.run("--max-tensor-bytes", bad, "run", art), "expected a positive count")
    assert_error(cli.run("--max-tensor-elems"), "needs a value")
