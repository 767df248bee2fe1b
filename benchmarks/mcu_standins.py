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

if __name__ == "__main__":
    raise SystemExit(main())
