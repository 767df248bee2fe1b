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


# ------------------------------------------------------------------------ recurrent: SVDF and small dense
# (svdf25, session 20) keyword_scrambled_8bit's kind of network -- stacked int8 SVDFs (TFLM's integer form: int8
# input / output, int8 weights_feature, int16 weights_time and state, int32 bias; one stack with int8 time weights
# and state as keyword_scrambled_8bit's) between small FULLY_CONNECTED layers, an int16 input QUANTIZE, a SOFTMAX
# head -- and small dense MLPs (hello_world_int8's kind: layers 1-64 wide, per-invoke costs dominate). Scales come
# from a float32 run of the same weights over random frames (each tensor's range), weights from a seeded RNG.


class _QuantNet:
    """An int8 graph under construction beside its float32 twin: each method appends one op (the GraphBuilder) and
    runs the float op on ``self.v[t]`` (frames x features: every frame one invoke, the state carried), so that each
    new tensor's scale / zero point is its float range's."""

    def __init__(self, seed: int, frames: int = 12):
        import numpy as np

        from edge_sdk.model.builder import GraphBuilder

        self.np = np
        self.g = GraphBuilder()
        self.rng = np.random.default_rng(seed)
        self.frames = frames
        self.v: dict[int, object] = {}  # tensor -> float values (frames, features)
        self.q: dict[int, tuple[float, int]] = {}  # tensor -> (scale, zero point)
        self.n = 0

    def _name(self, kind: str) -> str:
        self.n += 1
        return f"{kind}_{self.n}"

    def _act(self, kind: str, values, relu: bool = False, symmetric: bool = False) -> int:
        """An int8 activation tensor holding ``values``: its range (with 0) as scale / zero point."""
        np = self.np
        lo, hi = min(float(values.min()), 0.0), max(float(values.max()), 1e-3)
        if relu:
            lo = 0.0
        if symmetric:
            lo, hi = -max(-lo, hi), max(-lo, hi)
        scale = (hi - lo) / 255.0
        zp = int(np.clip(round(-128 - lo / scale), -128, 127))
        t = self.g.tensor(self._name(kind), (1, values.shape[1]), "INT8", scale=scale, zero_point=zp)
        self.v[t], self.q[t] = values, (scale, zp)
        return t

    def input(self, n: int, int16: bool = False) -> int:
        """The model input (1, n): int8, or int16 (zero point 0) followed by a QUANTIZE to int8."""
        np = self.np
        values = self.rng.standard_normal((self.frames, n)).astype(np.float32)
        if not int16:
            t = self._act("input", values)
            self.g.inputs.append(t)
            return t
        scale = float(np.abs(values).max()) / 32767.0
        x16 = self.g.input("input", (1, n), "INT16", scale=scale, zero_point=0)
        t = self._act("quantized", values)
        self.g.op("QUANTIZE", [x16], [t])
        return t

    def svdf(self, x: int, units: int, rank: int, memory: int, state16: bool = True) -> int:
        """SVDF (1, n) -> (1, units), ``units * rank`` filters of ``memory`` steps, RELU (TFLM's integer SVDF
        clamps to int8 only: the output range is the float run's before the RELU)."""
        np = self.np
        xs = self.v[x]
        n_in, n_filter = xs.shape[1], units * rank
        wf = (self.rng.standard_normal((n_filter, n_in)) / np.sqrt(n_in)).astype(np.float32)
        wt = (self.rng.standard_normal((n_filter, memory)) / np.sqrt(memory)).astype(np.float32)
        bias = self.rng.uniform(-0.1, 0.1, units).astype(np.float32)
        state = np.zeros((n_filter, memory), np.float32)
        projs, outs = [], []
        for frame in xs:
            state = np.roll(state, -1, axis=1)
            state[:, -1] = wf @ frame
            projs.append(state[:, -1].copy())
            outs.append((state * wt).sum(axis=1).reshape(units, rank).sum(axis=1) + bias)
        projs, outs = np.array(projs), np.array(outs)
        sx, _ = self.q[x]
        swf = float(np.abs(wf).max()) / 127.0
        st_type, st_max = ("INT16", 32767) if state16 else ("INT8", 127)
        swt = float(np.abs(wt).max()) / st_max
        sst = float(np.abs(projs).max()) * 1.25 / st_max
        zst = 0 if state16 else int(self.rng.integers(-20, 21))  # TFLM's int16 state: zero point 0
        sb = float(np.float32(sst) * np.float32(swt))
        wf_t = self.g.constant(self._name("svdf_wf"), np.clip(np.round(wf / swf), -127, 127).astype(np.int8),
                               scale=swf, zero_point=0)
        wt_t = self.g.constant(self._name("svdf_wt"), np.clip(np.round(wt / swt), -st_max, st_max).astype(
            np.int16 if state16 else np.int8), scale=swt, zero_point=0)
        b_t = self.g.constant(self._name("svdf_b"), np.round(bias / sb).astype(np.int32), scale=sb, zero_point=0)
        state_t = self.g.tensor(self._name("svdf_state"), (1, n_filter * memory), st_type, scale=sst,
                                zero_point=zst, is_variable=True)
        y = self._act("svdf", outs)
        self.g.op("SVDF", [x, wf_t, wt_t, b_t, state_t], [y], rank=rank, fused_activation_function="RELU")
        return y

    def fc(self, x: int, units: int, relu: bool = False) -> int:
        """FULLY_CONNECTED (1, n) -> (1, units), int8 weights per tensor (zero point 0), int32 bias."""
        np = self.np
        xs = self.v[x]
        n_in = xs.shape[1]
        w = (self.rng.standard_normal((units, n_in)) * np.sqrt(2.0 / n_in)).astype(np.float32)
        bias = self.rng.uniform(-0.1, 0.1, units).astype(np.float32)
        out = xs @ w.T + bias
        if relu:
            out = np.maximum(out, 0.0)
        sx, _ = self.q[x]
        sw = float(np.abs(w).max()) / 127.0
        sb = float(np.float32(sx) * np.float32(sw))
        w_t = self.g.constant(self._name("fc_w"), np.clip(np.round(w / sw), -127, 127).astype(np.int8), scale=sw,
                              zero_point=0)
        b_t = self.g.constant(self._name("fc_b"), np.round(bias / sb).astype(np.int32), scale=sb, zero_point=0)
        y = self._act("fc", out, relu=relu)
        self.g.op("FULLY_CONNECTED", [x, w_t, b_t], [y], fused_activation_function="RELU" if relu else "NONE")
        return y

    def softmax(self, x: int) -> int:
        """SOFTMAX to int8 at TFLM's output quantization (1/256, -128)."""
        np = self.np
        e = np.exp(self.v[x] - self.v[x].max(axis=1, keepdims=True))
        t = self.g.tensor(self._name("softmax"), (1, self.v[x].shape[1]), "INT8", scale=1.0 / 256, zero_point=-128)
        self.v[t], self.q[t] = e / e.sum(axis=1, keepdims=True), (1.0 / 256, -128)
        self.g.op("SOFTMAX", [x], [t], beta=1.0)
        return t

    def model(self, y: int) -> bytes:
        from edge_sdk.model import write_model

        self.g.output(y)
        return write_model(self.g.build())


# name: (seed, input width, int16 input, layers: ("svdf", units, rank, memory, int16 state) / ("fc", units, relu) /
# ("softmax",)) -- SVDF stacks 2-4 deep, rank 1 and 2, units 16-128, memory 8-32, inputs 16-64; MLPs 1-64 wide.
RECURRENT_DENSE = {
    "svdf_r1_m8": (31, 40, True, [("svdf", 64, 1, 8, True), ("fc", 16, False), ("svdf", 64, 1, 8, True),
                                  ("fc", 8, False), ("softmax",)]),
    "svdf_r2_m16": (32, 32, False, [("svdf", 64, 2, 16, True), ("svdf", 32, 2, 16, True), ("svdf", 16, 2, 16, True),
                                    ("fc", 12, False), ("softmax",)]),
    "svdf_r1_m32_deep": (33, 64, False, [("svdf", 128, 1, 32, True), ("fc", 32, False), ("svdf", 64, 1, 32, True),
                                         ("svdf", 32, 1, 16, True), ("svdf", 16, 1, 16, True), ("fc", 4, False)]),
    "svdf_s8_m24": (34, 16, True, [("svdf", 48, 1, 24, False), ("fc", 16, False), ("svdf", 32, 1, 12, False),
                                   ("fc", 4, False), ("softmax",)]),
    "mlp_8_32_32_4": (35, 8, False, [("fc", 32, True), ("fc", 32, True), ("fc", 4, False), ("softmax",)]),
    "mlp_q_24_64_16_10": (36, 24, True, [("fc", 64, True), ("fc", 16, True), ("fc", 10, False), ("softmax",)]),
    "mlp_1_16_16_1": (37, 1, False, [("fc", 16, True), ("fc", 16, True), ("fc", 1, False)]),
}


def recurrent_dense_model(name: str) -> bytes:
    """The stand-in ``name`` of RECURRENT_DENSE, as .tflite bytes."""
    seed, width, int16_input, layers = RECURRENT_DENSE[name]
    net = _QuantNet(seed)
    y = net.input(width, int16=int16_input)
    for layer in layers:
        if layer[0] == "svdf":
            y = net.svdf(y, *layer[1:])
        elif layer[0] == "fc":
            y = net.fc(y, *layer[1:])
        else:
            y = net.softmax(y)
    return net.model(y)


@family("recurrent: SVDF and small dense")
def recurrent_dense() -> list[Path]:
    # the cache key covers this function's source only: the name carries a digest of the model's row and of the
    # builder class, so that an edit of either builds a new file
    import hashlib
    import inspect

    code = inspect.getsource(_QuantNet) + inspect.getsource(recurrent_dense_model)
    return [cached(f"{name}_{hashlib.sha256((code + repr(spec)).encode()).hexdigest()[:6]}", recurrent_dense,
                   lambda name=name: recurrent_dense_model(name)) for name, spec in RECURRENT_DENSE.items()]


# ------------------------------------------------------------------------------------------ recurrent: LSTM


@family("recurrent: LSTM")
def lstm_family() -> list[Path]:
    """int8 UNIDIRECTIONAL_SEQUENCE_LSTM stand-ins in TFLM's quantized form (the form trained_lstm_int8 and
    micro_speech_lstm have): int8 input (scale 1/255, zero point -128) and hidden state / output (scale 1/128, a
    zero point per model), int8 per-tensor gate weights, int32 biases at input scale x weight scale, int16 cell
    state of scale 2^-11 (Q4.11), the hidden and cell state variable tensors, five intermediates (four FLOAT32 gate
    placeholders and the hidden scale); batch 1, input (steps, 1, inputs) time major, else (1, steps, inputs);
    weights from a seeded RNG, scaled so that the gate pre-activations are O(1) (the sigmoids and tanh neither flat
    nor saturated). With a head: RESHAPE (1, steps * units) -> FULLY_CONNECTED (classes) -> SOFTMAX, as
    trained_lstm's. The specs and the builder live in this function: its source is the models' cache key."""
    import numpy as np

    from edge_sdk.model.builder import GraphBuilder
    from edge_sdk.model.writer import write_model

    # name: (units, inputs, steps, time major, hidden zero point, cell clip, head classes (0: none)): from one step
    # of a wide streaming layer (dtln's) to long thin sequences (trained_lstm's, micro_speech's), widths on and off 4
    specs = {
        "lstm_u16_i8_t50": (16, 8, 50, False, 0, 0.0, 4),
        "lstm_u32_i24_t20_tm": (32, 24, 20, True, 5, 0.0, 0),
        "lstm_u50_i13_t16_clip": (50, 13, 16, False, -7, 3.0, 0),
        "lstm_u64_i40_t10": (64, 40, 10, False, 0, 0.0, 8),
        "lstm_u128_i64_t1": (128, 64, 1, False, 0, 0.0, 0),
    }

    def build(units: int, n_input: int, steps: int, time_major: bool, h_zp: int, cell_clip: float, classes: int,
              seed: int) -> bytes:
        rng = np.random.default_rng(seed)
        g = GraphBuilder()
        x_scale, h_scale = 1.0 / 255.0, 1.0 / 128.0
        lead = (steps, 1) if time_major else (1, steps)
        x = g.input("input", lead + (n_input,), "INT8", scale=x_scale, zero_point=-128)

        def weights(name: str, cols: int) -> tuple[int, float]:
            scale = float(rng.uniform(1.5, 3.0)) / (127.0 * np.sqrt(cols))
            return g.constant(name, rng.integers(-127, 128, (units, cols), dtype=np.int8), "INT8", scale=scale,
                              zero_point=0), scale

        gates = ("input", "forget", "cell", "output")
        w_in = [weights(f"{k}_w", n_input) for k in gates]
        w_rec = [weights(f"{k}_rec_w", units) for k in gates]
        biases = [g.constant(f"{k}_b", np.round(rng.normal(0.0, 0.5, units) / (x_scale * ws)).astype(np.int32),
                             "INT32", scale=x_scale * ws, zero_point=0) for k, (_, ws) in zip(gates, w_in)]
        h = g.tensor("hidden_state", (1, units), "INT8", scale=h_scale, zero_point=h_zp, is_variable=True)
        c = g.tensor("cell_state", (1, units), "INT16", scale=2.0**-11, zero_point=0, is_variable=True)
        y = g.tensor("lstm_out", lead + (units,), "INT8", scale=h_scale, zero_point=h_zp)
        # inputs 0 x, 1-4 input weights, 5-8 recurrent, 9-11 peephole (none), 12-15 biases, 16-17 projection
        # (none), 18-19 states, 20-23 layer norm (none)
        inputs = [x, *(t for t, _ in w_in), *(t for t, _ in w_rec), -1, -1, -1, *biases, -1, -1, h, c, -1, -1, -1, -1]
        g.op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [y], fused_activation_function="TANH", cell_clip=cell_clip,
             proj_clip=0.0, time_major=time_major, asymmetric_quantize_inputs=False)
        inter = [g.tensor(f"{k}_intermediate", (0,), "FLOAT32") for k in gates]
        inter.append(g.tensor("effective_hidden_scale_intermediate", (0,), "INT8", scale=h_scale, zero_point=h_zp))
        g.operators[-1].intermediates.extend(inter)
        out = y
        if classes:
            flat = g.tensor("flat", (1, steps * units), "INT8", scale=h_scale, zero_point=h_zp)
            g.op("RESHAPE", [y, g.constant("flat_shape", np.array([1, steps * units], np.int32))], [flat])
            fc_ws = 2.0 / (127.0 * np.sqrt(steps * units))
            fc_w = g.constant("fc_w", rng.integers(-127, 128, (classes, steps * units), dtype=np.int8), "INT8",
                              scale=fc_ws, zero_point=0)
            fc_b = g.constant("fc_b", rng.integers(-2000, 2000, classes).astype(np.int32), "INT32",
                              scale=h_scale * fc_ws, zero_point=0)
            logits = g.tensor("logits", (1, classes), "INT8", scale=0.05, zero_point=0)
            g.op("FULLY_CONNECTED", [flat, fc_w, fc_b], [logits], fused_activation_function="NONE")
            out = g.tensor("probabilities", (1, classes), "INT8", scale=1.0 / 256.0, zero_point=-128)
            g.op("SOFTMAX", [logits], [out], beta=1.0)
        g.output(out)
        return write_model(g.build(description="edge-sdk mcu stand-in: int8 LSTM"))

    return [cached(name, lstm_family, lambda spec=spec, k=k: build(*spec, seed=25 + k))
            for k, (name, spec) in enumerate(specs.items())]

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
    from edge_sdk.model.writer import option_defaults, options_for, write_model

    rng = np.random.default_rng(seed)
    buffers = [Buffer(b"")]
    codes: list[OperatorCode] = []

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

        def op(self, name, ins, outs, version=1, bare=False, **options):
            """``version``: the operator code's (its first use decides, as hey_jarvis's exporter wrote them);
            ``bare``: no options table (the exporter writes none for RESHAPE / READ / ASSIGN_VARIABLE)."""
            if name not in [c.name for c in codes]:
                codes.append(OperatorCode(BUILTIN_OPERATOR_CODES[name], None, version))
            index = [c.name for c in codes].index(name)
            table = None if bare else options_for(name)
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
            main.op("DEPTHWISE_CONV_2D", [x, wt, bt], [out], version=3, depth_multiplier=1, **common)
        else:
            main.op("CONV_2D", [x, wt, bt], [out], version=3, **common)
        cur.update(t=out, c=co, scale=s_out, zp=z_out, sample=y)
        return out, rows

    streams = []  # (name, state rows, channels, scale, zp): the ring buffers, for the init subgraph

    def ring(name, x, rows_new, rows_state):  # the state [1, R, 1, C] ++ x: the layer's input; the last R kept
        c, s, z = cur["c"], cur["scale"], cur["zp"]
        h = main.t(f"{name}/states", (), "RESOURCE")
        main.op("VAR_HANDLE", [], [h], container="", shared_name=f"{name}/states")
        st = main.t(f"{name}/read", (1, rows_state, 1, c), scale=s, zp=z)
        main.op("READ_VARIABLE", [h], [st], bare=True)
        cat = main.t(f"{name}/concat", (1, rows_state + rows_new, 1, c), scale=s, zp=z)
        main.op("CONCATENATION", [st, x], [cat], version=2, axis=1)
        b = main.t(f"{name}/begin", (4,), "INT32", data=np.array([0, -rows_state, 0, 0], np.int32))
        e = main.t(f"{name}/end", (4,), "INT32", data=np.array([0, 0, 0, 0], np.int32))
        one = main.t(f"{name}/strides", (4,), "INT32", data=np.ones(4, np.int32))
        kept = main.t(f"{name}/kept", (1, rows_state, 1, c), scale=s, zp=z)
        main.op("STRIDED_SLICE", [cat, b, e, one], [kept], version=2, begin_mask=0b1101, end_mask=0b1111)
        main.op("ASSIGN_VARIABLE", [h, kept], [], bare=True)
        streams.append((name, rows_state, c, s, z))
        return cat, rows_state + rows_new

    if streaming:
        main.op("CALL_ONCE", [], [], init_subgraph_index=1)
    s_in = 0.1
    x_in = main.t("features", (1, frames, features), scale=s_in, zp=-128)
    shape = main.t("features/shape", (4,), "INT32", data=np.array([1, frames, 1, features], np.int32))
    x4 = main.t("features/4d", (1, frames, 1, features), scale=s_in, zp=-128)
    main.op("RESHAPE", [x_in, shape], [x4], bare=True)
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
        main.op("STRIDED_SLICE", [x, b, e, one], [kept], version=2)
        x, rows = kept, head
    n_flat = rows * cur["c"]
    fshape = main.t("head/shape", (2,), "INT32", data=np.array([1, n_flat], np.int32))
    flat = main.t("head/flat", (1, n_flat), scale=cur["scale"], zp=cur["zp"])
    main.op("RESHAPE", [x, fshape], [flat], bare=True)
    wf = rng.normal(0, 1.0 / np.sqrt(n_flat), (1, n_flat)).astype(np.float32)
    ws = max(float(np.abs(wf).max()), 1e-6) / 127.0
    wq = np.clip(np.round(wf / ws), -127, 127).astype(np.int8)
    y = draw(cur["sample"], rows).reshape(-1, n_flat) @ (wq.astype(np.float32) * ws).T
    s_fc, z_fc = act_q(y)
    w_t = main.t("head/fc/weights", (1, n_flat), data=wq, scale=ws)
    b_t = main.t("head/fc/bias", (1,), "INT32", data=np.zeros(1, np.int32), scale=cur["scale"] * ws)
    logit = main.t("head/logit", (1, 1), scale=s_fc, zp=z_fc)
    main.op("FULLY_CONNECTED", [flat, w_t, b_t], [logit], version=4)
    prob = main.t("probability", (1, 1), scale=1.0 / 256.0, zp=-128)
    main.op("LOGISTIC", [logit], [prob], version=2)
    subgraphs = [SubGraph(main.tensors, [x_in], [prob], main.ops, "main")]
    if streaming:  # the init subgraph: every ring buffer starts as its zero-point rows
        for name, r, c, s, z in streams:
            h = init.t(f"{name}/states_init", (), "RESOURCE")
            init.op("VAR_HANDLE", [], [h], container="", shared_name=f"{name}/states")
            v = init.t(f"{name}/zeros", (1, r, 1, c), data=np.full((1, r, 1, c), z, np.int8), scale=s, zp=z)
            init.op("ASSIGN_VARIABLE", [h, v], [], bare=True)
        subgraphs.append(SubGraph(init.tensors, [], [], init.ops, "init"))
    sig = SignatureDef("serving_default", 0, {"features": x_in}, {"probability": prob})
    return write_model(Model(operator_codes=codes, subgraphs=subgraphs, buffers=buffers, signature_defs=[sig]))


TCN_STANDINS = ("tcn_stream_s", "tcn_stream_m", "tcn_stream_l", "tcn_window")


@family("streaming temporal conv")
def tcn_standins() -> list[Path]:
    """Streaming (resource-variable ring buffers) and windowed temporal conv nets, int8, several sizes."""
    return [cached(name, _tcn_build, lambda n=name: _tcn_build(n)) for name in TCN_STANDINS]

# ---------------------------------------------------------------------------------------------- attention
@family("attention (int8 transformer blocks, KWT-like keyword spotters)")
def attention() -> list[Path]:
    """int8 transformer encoder blocks and KWT-like keyword spotters (Keyword Transformer: a patch-embedding FC
    per spectrogram frame, pre-norm encoder blocks, a class head), written as float graphs by the zoo's _Net and
    converted by our converter (int8, int8 I/O, calibrated on uniform [-1, 1] samples).

    A block, on tokens x [T, D] with H heads of width dh = D / H:
      LayerNorm as the converter keeps it: MEAN(-1) / SUB / MUL (the square) / MEAN(-1) / ADD eps / RSQRT / MUL /
        MUL gamma / ADD beta -- TFLM runs int8 RSQRT (elementwise.cc) and MEAN; our converter turns the exporters'
        DIV(x, SQRT(v)) into MUL(x, RSQRT(v)) (converters/passes/arith.py);
      Q, K, V = FC(x) (Q scaled by 1/sqrt(dh): a MUL by a constant); H = 1: Q.K^T as one BATCH_MATMUL with
        adj_y on [T, D]; H > 1: RESHAPE [T, H, dh] + TRANSPOSE [H, T, dh] of each, BATCH_MATMUL(Q, K, adj_y)
        [H, T, T]; SOFTMAX over the last axis; BATCH_MATMUL(P, V) [H, T, dh] (rhs not transposed), TRANSPOSE +
        RESHAPE back to [T, D]; FC out; ADD residual;
      the MLP FC(2D) -> GELU -> FC(D), ADD residual. GELU as x * LOGISTIC(1.702 x) (the sigmoid form, QuickGELU):
        TFLM has no GELU kernel and our converter fuses the erf / tanh forms into one GELU op (passes/gelu.py,
        on every target profile: edge-sdk's runtimes have it), which TFLM then refuses; the sigmoid form is not
        GELU within the fusion's tolerance, so it stays LOGISTIC + MUL, which TFLM runs.
    Sizes: tokens 16-64, width 32-96, 1-4 heads; the KWT nets at 16 and 49 frames of 40 features."""
    import numpy as np

    import zoo
    from converters import convert

    def axes(net, values):
        return net.g.constant(net._name("axes"), np.array(values, np.int32))

    def mean_last(net, x):  # [T, D] -> [T, 1]
        y = net._t("mean", (net.shape[x][0], 1))
        net.g.op("MEAN", [x, axes(net, [-1])], [y], keep_dims=True)
        return y

    def layer_norm(net, x):
        d = net.binary("SUB", x, mean_last(net, x))
        var = mean_last(net, net.binary("MUL", d, d))
        y = net.binary("MUL", d, net.unary("RSQRT", net.scalar("ADD", var, 1e-5)))
        width = net.shape[x][1]
        y = net.binary("MUL", y, net._const("ln_gamma", net.rng.uniform(0.8, 1.2, (width,))))
        return net.binary("ADD", y, net._const("ln_beta", net._bias(width)))

    def transpose(net, x, perm):
        y = net._t("transpose", tuple(net.shape[x][p] for p in perm))
        net.g.op("TRANSPOSE", [x, axes(net, perm)], [y])
        return y

    def bmm(net, a, b, shape, adj_y):
        y = net._t("bmm", shape)
        net.g.op("BATCH_MATMUL", [a, b], [y], adj_x=False, adj_y=adj_y)
        return y

    def block(net, x, heads):
        tokens, width = net.shape[x]
        dh = width // heads
        h = layer_norm(net, x)
        q = net.scalar("MUL", net.fc(h, width), float(1.0 / np.sqrt(dh)))
        k, v = net.fc(h, width), net.fc(h, width)
        if heads == 1:  # [T, D] . [T, D]^T -> [T, T]
            p = net.unary("SOFTMAX", bmm(net, q, k, (tokens, tokens), True), beta=1.0)
            o = bmm(net, p, v, (tokens, width), False)
        else:  # [H, T, dh] . [H, T, dh]^T -> [H, T, T]; [H, T, T] . [H, T, dh] -> [H, T, dh]
            q, k, v = (transpose(net, net.reshape(t, (tokens, heads, dh)), (1, 0, 2)) for t in (q, k, v))
            p = net.unary("SOFTMAX", bmm(net, q, k, (heads, tokens, tokens), True), beta=1.0)
            o = bmm(net, p, v, (heads, tokens, dh), False)
            o = net.reshape(transpose(net, o, (1, 0, 2)), (tokens, width))
        x = net.binary("ADD", x, net.fc(o, width, 0.5))
        u = net.fc(layer_norm(net, x), 2 * width)
        g = net.binary("MUL", u, net.unary("LOGISTIC", net.scalar("MUL", u, 1.702)))
        return net.binary("ADD", x, net.fc(g, width, 0.5))

    def int8(float_bytes: bytes, shape) -> bytes:
        samples = np.random.default_rng(1).uniform(-1, 1, (8, *shape)).astype(np.float32)
        return convert(float_bytes, quantize="int8", calibration=samples, precision="int8", allow_lossy=True,
                       io="int8", task="raw").tflite

    def encoder_block(tokens: int, width: int, heads: int) -> bytes:
        net = zoo._Net(seed=tokens + width + heads)
        x = net.input((1, tokens, width))
        y = block(net, net.reshape(x, (tokens, width)), heads)
        return int8(net.build(net.reshape(y, (1, tokens, width)),
                              description=f"attention block T{tokens} D{width} H{heads}"), (1, tokens, width))

    def kwt(frames: int, features: int, width: int, heads: int, blocks: int = 2, classes: int = 12) -> bytes:
        net = zoo._Net(seed=frames + width)
        x = net.input((1, frames, features))
        t = net.fc(net.reshape(x, (frames, features)), width)  # patch embedding: one patch per frame
        for _ in range(blocks):
            t = block(net, t, heads)
        pooled = net._t("mean", (1, width))  # mean over the tokens (KWT's class token, as a mean)
        net.g.op("MEAN", [layer_norm(net, t), axes(net, [0])], [pooled], keep_dims=True)
        out = net.unary("SOFTMAX", net.fc(pooled, classes, 3.0), beta=1.0)
        return int8(net.build(out, description=f"KWT-like F{frames}x{features} D{width} H{heads} x{blocks}"),
                    (1, frames, features))

    specs = {f"attn_block_t{t}_d{d}_h{h}": (lambda t=t, d=d, h=h: encoder_block(t, d, h))
             for t, d, h in ((16, 32, 1), (32, 64, 2), (64, 96, 4), (24, 48, 3))}
    specs.update({f"kwt_f{f}_d{d}_h{h}": (lambda f=f, d=d, h=h: kwt(f, 40, d, h)) for f, d, h in ((16, 32, 2),
                                                                                                    (49, 64, 4))})
    return [cached(name, attention, build) for name, build in specs.items()]

# ---------------------------------------------------------------------------------- element-wise heavy (elem25)
# Nets whose cost is not in their convolutions: ADD skips, squeeze-excite MULs, PReLU + MAX_POOL, AVERAGE_POOL,
# PAD, RESHAPE and CONCATENATION, kept cheap in convolution (narrow 1x1 / depthwise) so the per-op figures of
# those ops decide the invoke. Two sizes of each (input side / width), so a kernel is not tuned to one shape.
ELEM_SIZES = ((16, 8), (32, 16))  # (input side, base channels)


def _elem_resnet(net, x: int, c: int) -> list[int]:
    """A small ResNet: 1x1 stem, three stages of two residual blocks (depthwise 3x3 -> 1x1, ADD skip, RELU ADD),
    a stride-2 stage entry through MAX_POOL + PAD of the channels (as BlazeFace's), MEAN -> FC head."""
    x = net.conv(x, c, 1, act="RELU")
    for stage, cout in enumerate((c, 2 * c, 3 * c)):
        if stage:
            x = net.pad_channels(net.pool("MAX_POOL_2D", x, 2, 2), cout - net.shape[x][-1])
        for _ in range(2):
            y = net.conv(net.dw(x, 3, act="RELU"), cout, 1, gain=0.7)
            x = net.binary("ADD", x, y, act="RELU")
    return [net.fc(net.mean(x, keep_dims=False), 10)]


def _elem_se(net, x: int, c: int) -> list[int]:
    """Squeeze-excite gated blocks: y = x * LOGISTIC(FC(RELU(FC(MEAN(x))))) broadcast over H, W, then a
    second MUL by a per-channel constant gate and an ADD skip."""
    x = net.conv(x, c, 1, act="RELU")
    for cout in (c, 2 * c, 2 * c):
        x = net.conv(net.dw(x, 3, act="RELU"), cout, 1, gain=0.7)
        squeeze = net.fc(net.unary("RELU", net.fc(net.mean(x, keep_dims=False), max(4, cout // 4))), cout)
        gate = net.reshape(net.unary("LOGISTIC", squeeze), (1, 1, 1, cout))
        gated = net.binary("MUL", x, gate)
        x = net.binary("ADD", x, net.binary("MUL", gated, net._const("gain_c", net.rng.uniform(0.5, 1.5, (cout,)))))
    return [net.fc(net.mean(x, keep_dims=False), 10)]


def _elem_prelu_pool(net, x: int, c: int) -> list[int]:
    """PReLU after every depthwise / 1x1 and ADD, MAX_POOL 2x2 s2 and 3x3 s1 SAME, PAD of channels."""
    x = net.prelu(net.conv(x, c, 1))
    for cout in (c, 2 * c, 3 * c):
        y = net.prelu(net.conv(net.prelu(net.dw(x, 3)), cout, 1, gain=0.7))
        x = net.prelu(net.binary("ADD", net.pad_channels(x, cout - net.shape[x][-1]) if cout > net.shape[x][-1]
                                 else x, y))
        x = net.pool("MAX_POOL_2D", x, 3, 1, "SAME")
        x = net.pool("MAX_POOL_2D", x, 2, 2)
    b, h, w, ch = net.shape[x]
    return [net.reshape(x, (1, h * w, ch))]


def _elem_kws_pool(net, x: int, c: int) -> list[int]:
    """A pooling-heavy KWS-like net on a [1, T, F, 1] spectrogram: conv, AVERAGE_POOL 2x2 s2 and 3x3 s1 SAME
    (a smoothing pool), a final AVERAGE_POOL over the whole map, RESHAPE, FC."""
    x = net.conv(x, c, 3, act="RELU")
    for cout in (c, 2 * c):
        x = net.pool("AVERAGE_POOL_2D", x, 3, 1, "SAME")
        x = net.conv(net.dw(x, 3, act="RELU"), cout, 1, act="RELU", gain=0.7)
        x = net.pool("AVERAGE_POOL_2D", x, 2, 2)
    b, h, w, ch = net.shape[x]
    x = net.pool("AVERAGE_POOL_2D", x, h, 1) if h == w else net.pool("AVERAGE_POOL_2D", x, min(h, w), 1)
    b, h, w, ch = net.shape[x]
    return [net.fc(net.reshape(x, (1, h * w * ch)), 12)]


def _elem_unet(net, x: int, c: int) -> list[int]:
    """A concat-heavy U-Net-ish decoder: MAX_POOL down, RESIZE_BILINEAR up, CONCATENATION of the skip and the
    up path (channels) at every level, two-way concatenations of branches, LOGISTIC."""
    skips = []
    for level in range(2):
        x = net.conv(x, c * (level + 1), 1, act="RELU")
        skips.append(x)
        x = net.pool("MAX_POOL_2D", x, 2, 2)
    x = net.concat([net.dw(x, 3, act="RELU"), x], 3)
    for level in (1, 0):
        x = net.concat([net.resize(x, 2), skips[level]], 3)
        x = net.conv(x, c, 1, act="RELU")
        x = net.concat([x, net.dw(x, 3, act="RELU")], 3)
    return [net.unary("LOGISTIC", net.conv(x, 1, 1, gain=0.5))]


ELEM_NETS = {"resnet": _elem_resnet, "se": _elem_se, "prelu_pool": _elem_prelu_pool, "kws_pool": _elem_kws_pool,
             "unet_cat": _elem_unet}


def elem_float_model(arch: str, side: int, c: int) -> tuple[bytes, tuple[int, ...]]:
    """The float32 model of ``arch`` at one size and its input shape ([1, side, side, 3], KWS: [1, 2 side, side / 2,
    1], a spectrogram's long time axis)."""
    import zoo

    net = zoo._Net(seed=side + c)
    shape = (1, 2 * side, side // 2, 1) if arch == "kws_pool" else (1, side, side, 3)
    outputs = ELEM_NETS[arch](net, net.input(shape), c)
    return net.build(*outputs, description=f"edge-sdk mcu stand-in elem {arch} {side} c{c}"), shape


def elem_int8_model(arch: str, side: int, c: int) -> bytes:
    """Our converter's full-integer model (int8 I/O) of elem_float_model, calibrated on seeded uniform [-1, 1]."""
    import numpy as np
    from converters import convert

    data, shape = elem_float_model(arch, side, c)
    calibration = np.random.default_rng(side).uniform(-1, 1, (8, *shape[1:])).astype(np.float32)
    return convert(data, quantize="int8", calibration=calibration, precision="int8", allow_lossy=True, io="int8",
                   task="raw").tflite


@family("element-wise heavy stand-ins")
def elem_standins() -> list[Path]:
    return [cached(f"elem_{arch}_{side}_c{c}_int8", elem_standins,
                   lambda arch=arch, side=side, c=c: elem_int8_model(arch, side, c))
            for arch in ELEM_NETS for side, c in ELEM_SIZES]


if __name__ == "__main__":
    raise SystemExit(main())
