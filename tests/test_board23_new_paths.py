"""Issue 23: the C paths of session 18 (tests/test_litert23_edges.py: SQRT on INT16, uint8 RESIZE_BILINEAR,
FULLY_CONNECTED of depth 0, CONV_2D / DEPTHWISE_CONV_2D over a batch of 0, their hybrid forms:
tests/test_hybrid23_depthwise_batch0.py) were compiled for the
Cortex-M4 but only run on the host. Here each runs in a Cortex-M4 image on the QEMU mps2-an386 board
(tools/image_main.c: its seeded input bytes, the FNV hash of output 0) and gives the host's bytes: the Python
interpreter's (the reference LiteRT is held to in test_litert23_edges.py) and the host C runtime's, hashed alike."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from edge_sdk.model import schema
from edge_sdk.model.types import Operator, OperatorCode, Tensor, Quantization
from edge_sdk.model.writer import write_model
from tests.conftest import needs_c_runtime
from tests.oprunner import T, image_main_hash, image_main_inputs, m4_image_mismatches, op_model, op_model_object

pytestmark = [
    pytest.mark.slow,
    needs_c_runtime,
    pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                       reason="needs arm-none-eabi-gcc and qemu-system-arm"),
]


def _sqrt_int16_model(s_in: float, s_mid: float, s_out: float) -> bytes:
    """ABS then SQRT, INT16 (zero points 0): the image's random input bytes hold negative values, which SQRT refuses
    at invoke as LiteRT does; ABS makes them |x| (1, 8) -> (1, 8) -> (1, 8)."""
    m = op_model_object("ABS", [T((1, 8), "INT16", scale=s_in, zero_point=0)],
                        [T((1, 8), "INT16", scale=s_mid, zero_point=0)])
    g = m.subgraphs[0]
    q = Quantization(scale=np.array([s_out], np.float32), zero_point=np.array([0], np.int64))
    g.tensors.append(Tensor("sqrt_out", (1, 8), "INT16", quantization=q))
    m.operator_codes.append(OperatorCode(schema.BUILTIN_OPERATOR_CODES["SQRT"], None, 2))
    g.operators.append(Operator(1, [g.operators[0].outputs[0]], [len(g.tensors) - 1], None, {}))
    g.outputs = [len(g.tensors) - 1]
    return write_model(m)


def _resize_uint8(in_hw, out_hw, align: bool, half: bool) -> bytes:
    x = T((1, *in_hw, 3), "UINT8", scale=0.1, zero_point=3)
    size = T((2,), "INT32", data=np.array(out_hw, np.int32))
    return op_model("RESIZE_BILINEAR", [x, size], [T((1, *out_hw, 3), "UINT8", scale=0.1, zero_point=3)],
                    {"align_corners": align, "half_pixel_centers": half}, version=3 if half else 1)


def _fc_depth_zero(type_: str) -> bytes:
    """Weights [4, 0]: LiteRT's output is zero bytes; the output zero point is not 0 (zero bytes != a quantized 0)."""
    q = {"INT8": {"scale": 0.1, "zero_point": 1}, "INT16": {"scale": 0.001, "zero_point": 0}, "FLOAT32": {}}[type_]
    wq = {"scale": 0.05, "zero_point": 0} if q else {}
    btype = {"INT8": "INT32", "INT16": "INT64", "FLOAT32": "FLOAT32"}[type_]
    bq = {"scale": q["scale"] * 0.05, "zero_point": 0} if q else {}
    yq = {"scale": q["scale"] * 0.2, "zero_point": q["zero_point"] - 4 * (type_ == "INT8")} if q else {}
    wtype = "FLOAT32" if type_ == "FLOAT32" else "INT8"
    bias = T((4,), btype, data=np.linspace(-300, 1000, 4).astype(np.dtype(btype.lower())), **bq)
    return op_model("FULLY_CONNECTED", [T((3, 0), type_, **q), T((4, 0), wtype, data=np.zeros((4, 0)), **wq), bias],
                    [T((3, 4), type_, **yq)])


def _conv_batch_zero(op: str, type_: str, hybrid: bool = False) -> bytes:
    """A 3x3 VALID conv (depthwise: multiplier 2) over a batch of 0: (0, 5, 5, 3) -> (0, 3, 3, o)."""
    rng = np.random.default_rng(23)
    q = {"INT8": {"scale": 0.1, "zero_point": 1}, "INT16": {"scale": 0.001, "zero_point": 0}, "FLOAT32": {}}[type_]
    o = 6 if op == "DEPTHWISE_CONV_2D" else 4
    wshape = (1, 3, 3, o) if op == "DEPTHWISE_CONV_2D" else (o, 3, 3, 3)
    int_weights = bool(q) or hybrid
    wq = {"scale": [0.05] * o, "zero_point": 0, "quantized_dimension": 3 if op == "DEPTHWISE_CONV_2D" else 0} \
        if int_weights else {}
    w = T(wshape, "INT8" if int_weights else "FLOAT32",
          data=rng.integers(-127, 128, wshape).astype(np.int8 if int_weights else np.float32), **wq)
    btype = {"INT8": "INT32", "INT16": "INT64", "FLOAT32": "FLOAT32"}[type_]
    bq = {"scale": [q["scale"] * 0.05] * o, "zero_point": 0} if q else {}
    b = T((o,), btype, data=np.arange(o).astype(np.dtype(btype.lower())), **bq)
    yq = {"scale": q["scale"] * 2, "zero_point": q["zero_point"]} if q else {}
    options = {"padding": "VALID", "stride_w": 1, "stride_h": 1}
    if op == "DEPTHWISE_CONV_2D":
        options["depth_multiplier"] = 2
    version = 6 if hybrid and op == "DEPTHWISE_CONV_2D" else 3
    return op_model(op, [T((0, 5, 5, 3), type_, **q), w, b], [T((0, 3, 3, o), type_, **yq)], options, version=version)


def board_models() -> dict[str, bytes]:
    models = {f"sqrt_int16_{k}": _sqrt_int16_model(*s) for k, s in
              enumerate([(0.001, 0.001, 0.0005), (1e-4, 1e-4, 0.01), (0.05, 0.05, 1e-4)])}
    for k, (in_hw, out_hw, align, half) in enumerate([((4, 4), (8, 8), False, False), ((5, 3), (2, 7), True, False),
                                                       ((3, 4), (7, 5), False, True)]):
        models[f"resize_bilinear_uint8_{k}"] = _resize_uint8(in_hw, out_hw, align, half)
    for type_ in ("INT8", "INT16", "FLOAT32"):
        models[f"fc_depth0_{type_.lower()}"] = _fc_depth_zero(type_)
        for op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            models[f"{op.lower()}_batch0_{type_.lower()}"] = _conv_batch_zero(op, type_)
    for op in ("CONV_2D", "DEPTHWISE_CONV_2D"):  # hybrid: LiteRT refuses the depthwise one at invoke; we run it empty
        models[f"{op.lower()}_batch0_hybrid"] = _conv_batch_zero(op, "FLOAT32", hybrid=True)
    return models


def _host_hash(model: bytes, backend: str) -> int:
    from edge_sdk import Interpreter

    interp = Interpreter(model_content=model, backend=backend)
    interp.allocate_tensors()
    for d, x in zip(interp.get_input_details(), image_main_inputs(interp)):
        interp.set_tensor(d["index"], x)
    interp.invoke()
    return image_main_hash(np.ascontiguousarray(interp.get_tensor(interp.get_output_details()[0]["index"])).tobytes())


def test_new_c_paths_give_the_host_bytes_on_the_qemu_board(tmp_path):
    from edge_sdk.runtime.c_loaded import c_bytes

    models = board_models()
    host_differs = [name for name, model in models.items() if _host_hash(model, "c") != _host_hash(model, "python")]
    assert not host_differs, f"host C differs from the Python interpreter on {host_differs}"
    # the bytes `edge flash` embeds: a legacy UINT8 model presented as INT8 (runtime/uint8.py; the firmware's kernels
    # take no UINT8 tensor), any other model as it is
    presented = {name: c_bytes(model)[0] for name, model in models.items()}
    assert presented["resize_bilinear_uint8_0"] != models["resize_bilinear_uint8_0"]
    failures = m4_image_mismatches(presented, tmp_path / "b")
    assert not failures, f"the M4 board's output differs from the host's on {failures}"
