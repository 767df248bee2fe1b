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
