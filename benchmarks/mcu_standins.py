"""Our own int8 stand-in models for the MCU comparison (issue 25; section 7 of benchmarks/c_runtime.py with
--mcu-zoo): model families the zoo (benchmarks/zoo.py, image networks through our converter) does not cover --
recurrent (LSTM, SVDF), 1-D temporal convolution, attention, element-wise-heavy networks -- written by our own
writer at several sizes, so that the kernels are measured against TFLM + CMSIS-NN (benchmarks/tflm_cmsis.py) on
more than ../shared's few models of each kind.

A family is a function returning its models' paths, registered with @family("a title"); c_runtime.py's section 7
shows one table per family. Each model is built once and cached under the zoo's cache folder by a hash of its
family function's source and its name (an edit of that function rebuilds its models, no other), written
atomically.

    python benchmarks/mcu_standins.py            # build every family, print the paths
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

FAMILIES: dict[str, Callable[[], list[Path]]] = {}  # title: function -> model paths


def family(title: str):
    """Register a family function under the title its section-7 table carries."""

    def register(fn: Callable[[], list[Path]]):
        FAMILIES[title] = fn
        return fn

    return register


def cached(name: str, builder: Callable, build: Callable[[], bytes]) -> Path:
    """The model ``name`` of family function ``builder``: built by ``build()`` when its cache file is missing.
    The key is the builder's source and the name, so an edit of one family rebuilds that family only."""
    import zoo

    key = hashlib.sha256(inspect.getsource(builder).encode() + name.encode()).hexdigest()[:16]
    path = zoo.cache_folder() / f"{name}_{key}.tflite"
    if not path.is_file():
        data = build()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path


def main() -> int:
    for title, fn in FAMILIES.items():
        print(title)
        for p in fn():
            print(f"   {p}")
    return 0


# ---------------------------------------------------------------------------------------------- families
# (each family below in its own section; keep the sections apart)


# ---------------------------------------------------------------------------------- streaming temporal conv
# openWakeWord / microWakeWord / TC-ResNet-like keyword nets (hey_jarvis's kind): a window of audio features
# [1, T, C] viewed as [1, T, 1, C], a Kx1 stem conv with a temporal stride, blocks of a Kx1 depthwise (K 3..21) and
# a 1x1 conv, a FULLY_CONNECTED + LOGISTIC head. The streaming form keeps each layer's past input rows in a resource
# variable ring buffer, as hey_jarvis does: CALL_ONCE (an init subgraph assigning the zero-point rows), VAR_HANDLE,
# READ_VARIABLE [1, R, 1, C] -> CONCATENATION with the new rows [1, R + P, 1, C] (the layer's input) ->
# STRIDED_SLICE of the last R rows -> ASSIGN_VARIABLE; P output positions per invoke. The windowed form runs the
# same kinds of layers over the whole window at once (SAME depthwise, a stride-2 temporal conv). int8 written
# directly by our writer: random weights (seeded), per-channel symmetric filters, each activation's scale and zero
# point from the range of the float layer over random inputs (a frame-wise sample: taps drawn independently).

def _tcn_build(model_name: str) -> bytes:
    """The stand-in ``model_name``: (seed, frames, features, stem, blocks, head rows, streaming) below. ``frames`` new
    input rows per invoke (streaming) or the window's rows; ``stem`` (kernel, stride, channels), a ReLU conv;
    ``blocks`` (depthwise kernel, 1x1 channels) each; ``head``: the rows the FC sees (streaming: a ring buffer of
    them; windowed: the last rows of a stride-2 3x1 conv's output). Channel counts not all multiples of four (30,
    42: the kernels' tails), 1..2 output positions per invoke (stride = frames / positions), kernels 3..21."""
    import numpy as np

    seed, frames, features, stem, blocks, head, streaming = {
        "tcn_stream_s": (251, 2, 20, (4, 2, 16), [(3, 16), (5, 24)], 3, True),
        "tcn_stream_m": (252, 3, 40, (5, 3, 30), [(5, 42), (9, 42), (13, 42)], 4, True),
        "tcn_stream_l": (253, 4, 40, (6, 2, 64), [(7, 64), (11, 96), (21, 96)], 6, True),
        "tcn_window": (254, 49, 40, (3, 1, 32), [(9, 32), (9, 48), (5, 64)], 4, False),
    }[model_name]

    from edge_sdk.model.schema import BUILTIN_OPERATOR_CODES
    from edge_sdk.model.types import Buffer, Model, Operator, OperatorCode, Quantization, SignatureDef, SubGraph, Tensor
    from edge_sdk.model.writer import option_defaults, write_model

    rng = np.random.default_rng(seed)
    buffers = [Buffer(b"")]
    codes: list[OperatorCode] = []
    versions = {"CONV_2D": 3, "DEPTHWISE_CONV_2D": 3, "FULLY_CONNECTED": 4, "LOGISTIC": 2, "CONCATENATION": 2,
                "STRIDED_SLICE": 2}
    tables = {"CONV_2D": "Conv2DOptions", "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions", "RESHAPE": None,
              "FULLY_CONNECTED": "FullyConnectedOptions", "LOGISTIC": None, "CONCATENATION": "ConcatenationOptions",
              "STRIDED_SLICE": "StridedSliceOptions", "CALL_ONCE": "CallOnceOptions", "VAR_HANDLE": "VarHandleOptions",
              "READ_VARIABLE": None, "ASSIGN_VARIABLE": None}

    class G:  # one subgraph's tensors and operators
        def __init__(self):
            self.tensors, self.ops = [], []

        def t(self, name, shape, type_="INT8", data=None, scale=None, zp=None, qdim=0):
            buf = 0
            if data is not None:
                buffers.append(Buffer(np.ascontiguousarray(data).tobytes()))
                buf = len(buffers) - 1
            q = None
            if scale is not None:
                sc = np.atleast_1d(np.asarray(scale, np.float32))
                z = np.zeros(sc.shape, np.int64) if zp is None else np.atleast_1d(np.asarray(zp, np.int64))
                q = Quantization(scale=sc, zero_point=z, quantized_dimension=qdim)
            self.tensors.append(Tensor(name=name, shape=tuple(shape), type=type_, buffer=buf, quantization=q))
            return len(self.tensors) - 1

        def op(self, name, ins, outs, **options):
            if name not in [c.name for c in codes]:
                codes.append(OperatorCode(BUILTIN_OPERATOR_CODES[name], None, versions.get(name, 1)))
            index = [c.name for c in codes].index(name)
            table = tables[name]
            opts = option_defaults(table) if table else {}
            opts.update(options)
            self.ops.append(Operator(opcode_index=index, inputs=ins, outputs=outs, options_type=table, options=opts))

    main, init = G(), G()

    def act_q(y):  # an activation's (scale, zero point) from a float sample's range (0 inside it)
        lo, hi = min(float(y.min()), 0.0), max(float(y.max()), 1e-3)
        scale = (hi - lo) / 255.0
        return scale, int(np.clip(round(-128 - lo / scale), -128, 127))

    def weights(shape_f, fan_in, qdim):  # float filter, its per-channel int8 form and scales along qdim
        wf = rng.normal(0, 1.0 / np.sqrt(fan_in), shape_f).astype(np.float32)
        axes = tuple(a for a in range(wf.ndim) if a != qdim)
        ws = np.maximum(np.abs(wf).max(axis=axes), 1e-6) / 127.0
        shape_s = [1] * wf.ndim
        shape_s[qdim] = -1
        wq = np.clip(np.round(wf / ws.reshape(shape_s)), -127, 127).astype(np.int8)
        return wq, ws

    def draw(sample, k):  # [N, k, C]: k frames drawn independently from the frame sample [N, C]
        n = sample.shape[0]
        return np.stack([sample[rng.integers(0, n, n)] for _ in range(k)], axis=1)

    cur = {}  # the current activation: tensor, rows, channels, scale, zp, frame sample [N, C] (float)

    def conv(name, k, stride, cout, relu, depthwise, x, rows_in):
        cin = cur["c"]
        rows = (rows_in - k) // stride + 1 if not (depthwise and not streaming) else rows_in  # windowed dw: SAME
        win = draw(cur["sample"], k)  # [N, k, cin]
        if depthwise:
            wq, ws = weights((1, k, 1, cin), k, 3)
            wf = wq.astype(np.float32) * ws
            y = np.einsum("nkc,kc->nc", win, wf[0, :, 0, :])
        else:
            wq, ws = weights((cout, k, 1, cin), k * cin, 0)
            wf = wq.astype(np.float32) * ws.reshape(-1, 1, 1, 1)
            y = np.einsum("nkc,okc->no", win, wf[:, :, 0, :])
        co = cin if depthwise else cout
        bf = rng.normal(0, 0.1, co).astype(np.float32)
        y = y + bf
        if relu:
            y = np.maximum(y, 0)
        s_out, z_out = act_q(y)
        wt = main.t(f"{name}/filter", wq.shape, data=wq, scale=ws, qdim=3 if depthwise else 0)
        bs = cur["scale"] * ws
        bt = main.t(f"{name}/bias", (co,), "INT32", data=np.round(bf / bs).astype(np.int32), scale=bs)
        out = main.t(name, (1, rows, 1, co), scale=s_out, zp=z_out)
        common = dict(padding="SAME" if depthwise and not streaming else "VALID", stride_w=1, stride_h=stride,
                      fused_activation_function="RELU" if relu else "NONE")
        if depthwise:
            main.op("DEPTHWISE_CONV_2D", [x, wt, bt], [out], depth_multiplier=1, **common)
        else:
            main.op("CONV_2D", [x, wt, bt], [out], **common)
        cur.update(t=out, c=co, scale=s_out, zp=z_out, sample=y)
        return out, rows

    streams = []  # (name, state rows, channels, scale, zp): the ring buffers, for the init subgraph

    def ring(name, x, rows_new, rows_state):  # the state [1, R, 1, C] ++ x: the layer's input; the last R kept
        c, s, z = cur["c"], cur["scale"], cur["zp"]
        h = main.t(f"{name}/states", (), "RESOURCE")
        main.op("VAR_HANDLE", [], [h], container="", shared_name=f"{name}/states")
        st = main.t(f"{name}/read", (1, rows_state, 1, c), scale=s, zp=z)
        main.op("READ_VARIABLE", [h], [st])
        cat = main.t(f"{name}/concat", (1, rows_state + rows_new, 1, c), scale=s, zp=z)
        main.op("CONCATENATION", [st, x], [cat], axis=1)
        b = main.t(f"{name}/begin", (4,), "INT32", data=np.array([0, -rows_state, 0, 0], np.int32))
        e = main.t(f"{name}/end", (4,), "INT32", data=np.array([0, 0, 0, 0], np.int32))
        one = main.t(f"{name}/strides", (4,), "INT32", data=np.ones(4, np.int32))
        kept = main.t(f"{name}/kept", (1, rows_state, 1, c), scale=s, zp=z)
        main.op("STRIDED_SLICE", [cat, b, e, one], [kept], begin_mask=0b1101, end_mask=0b1111)
        main.op("ASSIGN_VARIABLE", [h, kept], [])
        streams.append((name, rows_state, c, s, z))
        return cat, rows_state + rows_new

    if streaming:
        main.op("CALL_ONCE", [], [], init_subgraph_index=1)
    s_in = 0.1
    x_in = main.t("features", (1, frames, features), scale=s_in, zp=-128)
    shape = main.t("features/shape", (4,), "INT32", data=np.array([1, frames, 1, features], np.int32))
    x4 = main.t("features/4d", (1, frames, 1, features), scale=s_in, zp=-128)
    main.op("RESHAPE", [x_in, shape], [x4])
    cur.update(t=x4, c=features, scale=s_in, zp=-128, sample=rng.uniform(0, 25.5, (512, features)).astype(np.float32))
    k0, s0, c0 = stem
    x, rows = x4, frames
    if streaming:
        x, rows = ring("stem", x, rows, k0 - s0)
    x, rows = conv("stem/conv", k0, s0, c0, True, False, x, rows)
    for i, (k, cout) in enumerate(blocks):
        if streaming:
            x, rows = ring(f"block{i}", x, rows, k - 1)
        x, rows = conv(f"block{i}/depthwise", k, 1, 0, False, True, x, rows)
        x, rows = conv(f"block{i}/pointwise", 1, 1, cout, True, False, x, rows)
    if streaming:
        x, rows = ring("head", x, rows, head - rows)
    else:  # a stride-2 temporal conv, then the head's rows: the last ``head`` of its output
        x, rows = conv("reduce/conv", 3, 2, cur["c"], True, False, x, rows)
        b = main.t("head/begin", (4,), "INT32", data=np.array([0, rows - head, 0, 0], np.int32))
        e = main.t("head/end", (4,), "INT32", data=np.array([1, rows, 1, cur["c"]], np.int32))
        one = main.t("head/strides", (4,), "INT32", data=np.ones(4, np.int32))
        kept = main.t("head/rows", (1, head, 1, cur["c"]), scale=cur["scale"], zp=cur["zp"])
        main.op("STRIDED_SLICE", [x, b, e, one], [kept])
        x, rows = kept, head
    n_flat = rows * cur["c"]
    fshape = main.t("head/shape", (2,), "INT32", data=np.array([1, n_flat], np.int32))
    flat = main.t("head/flat", (1, n_flat), scale=cur["scale"], zp=cur["zp"])
    main.op("RESHAPE", [x, fshape], [flat])
    wf = rng.normal(0, 1.0 / np.sqrt(n_flat), (1, n_flat)).astype(np.float32)
    ws = max(float(np.abs(wf).max()), 1e-6) / 127.0
    wq = np.clip(np.round(wf / ws), -127, 127).astype(np.int8)
    y = draw(cur["sample"], rows).reshape(-1, n_flat) @ (wq.astype(np.float32) * ws).T
    s_fc, z_fc = act_q(y)
    w_t = main.t("head/fc/weights", (1, n_flat), data=wq, scale=ws)
    b_t = main.t("head/fc/bias", (1,), "INT32", data=np.zeros(1, np.int32), scale=cur["scale"] * ws)
    logit = main.t("head/logit", (1, 1), scale=s_fc, zp=z_fc)
    main.op("FULLY_CONNECTED", [flat, w_t, b_t], [logit])
    prob = main.t("probability", (1, 1), scale=1.0 / 256.0, zp=-128)
    main.op("LOGISTIC", [logit], [prob])
    subgraphs = [SubGraph(main.tensors, [x_in], [prob], main.ops, "main")]
    if streaming:  # the init subgraph: every ring buffer starts as its zero-point rows
        for name, r, c, s, z in streams:
            h = init.t(f"{name}/states_init", (), "RESOURCE")
            init.op("VAR_HANDLE", [], [h], container="", shared_name=f"{name}/states")
            v = init.t(f"{name}/zeros", (1, r, 1, c), data=np.full((1, r, 1, c), z, np.int8), scale=s, zp=z)
            init.op("ASSIGN_VARIABLE", [h, v], [])
        subgraphs.append(SubGraph(init.tensors, [], [], init.ops, "init"))
    sig = SignatureDef("serving_default", 0, {"features": x_in}, {"probability": prob})
    return write_model(Model(operator_codes=codes, subgraphs=subgraphs, buffers=buffers, signature_defs=[sig]))


TCN_STANDINS = ("tcn_stream_s", "tcn_stream_m", "tcn_stream_l", "tcn_window")


@family("streaming temporal conv")
def tcn_standins() -> list[Path]:
    """Streaming (resource-variable ring buffers) and windowed temporal conv nets, int8, several sizes."""
    return [cached(name, _tcn_build, lambda n=name: _tcn_build(n)) for name in TCN_STANDINS]


if __name__ == "__main__":
    raise SystemExit(main())
