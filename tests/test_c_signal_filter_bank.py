"""SignalFilterBank and SignalFilterBankSpectralSubtraction on the runtime grid (the Python interpreter and the C
runtime), bit-exact with TFLM and, on the C runtime, with our Python kernels.

One-op models (custom options from flatbuffers' own FlexBuffers encoder) on seeded inputs including the uint32
extremes and negative int16 weights (sign-extended into the uint64 sums, which wrap); the spectral subtraction
keeps a noise estimate between invokes, so it runs a sequence of different frames, then again after
reset_all_variables (each runtime and TFLM reset), every output compared exactly. Malformed constant tables
(a band past the input or past the weights, too few entries) are refused at load; non-constant tables by the C
runtime (the Python kernel reads them at invoke). The ASan/UBSan run is C-only by nature.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import needs_c_runtime, require_c_runtime
from tests.oprunner import T, assert_same, op_model
from tests.peers import TFLM_ARENA
from tests.test_c_signal import opts, refusal


class Runners:
    """The same model on ``runtime`` and TFLM, invoked side by side (state kept between invokes); on the C runtime
    also in our Python interpreter, which it equals."""

    def __init__(self, runtime: str, model: bytes, tflm: bool = True):
        from edge_sdk import Interpreter
        from tflite_micro.python.tflite_micro import runtime as tflm_runtime

        if runtime == "c":
            require_c_runtime()
        self.runtime = runtime
        self.ours = [Interpreter(model_content=model, backend=runtime)]
        if runtime == "c":
            self.ours.append(Interpreter(model_content=model))
        for it in self.ours:
            it.allocate_tensors()
        self.tflm = tflm_runtime.Interpreter.from_bytes(bytes(model), arena_size=TFLM_ARENA) if tflm else None

    def run(self, inputs) -> list[np.ndarray]:
        results = []
        for it in self.ours:
            for d, x in zip(it.get_input_details(), inputs):
                it.set_tensor(d["index"], np.asarray(x))
            it.invoke()
            results.append([np.array(it.get_tensor(d["index"])) for d in it.get_output_details()])
        if len(results) > 1:
            assert_same(results[0], results[1], what="C vs Python")
        if self.tflm is not None:
            for i, x in enumerate(inputs):
                self.tflm.set_input(np.asarray(x, order="C"), i)
            self.tflm.invoke()
            tflm = [np.array(self.tflm.get_output(i)) for i in range(len(results[0]))]
            assert_same(results[0], tflm, what=f"{self.runtime} vs TFLM")
        return results[0]

    def reset(self):
        for it in self.ours:
            it.reset_all_variables()
        if self.tflm is not None:
            self.tflm.reset()


def log_uniform_u32(rng, n, max_bits=32):
    bits = rng.integers(0, max_bits + 1, n)
    return np.array([int(rng.integers(0, 1 << b)) if b else 0 for b in bits], np.uint32)


# --------------------------------------------------------------------------------------------- filter bank
def bank_tables(rng, channels, n_in, n_w, overlap=True):
    """Random bands inside n_in bins / n_w weights, some empty; weights over the whole int16 range."""
    rows = channels + 1
    widths = rng.integers(0, 9, rows)
    widths[rng.integers(rows)] = 0
    widths[rng.integers(rows)] = -3  # a negative width is an empty band too
    fs = np.array([rng.integers(0, n_in - max(w, 0) + 1) for w in widths])
    ws = np.array([rng.integers(0, n_w - max(w, 0) + 1) for w in widths])
    w = rng.integers(-32768, 32768, n_w)
    uw = rng.integers(-32768, 32768, n_w)
    w[:2], uw[:2] = [-32768, 32767], [32767, -32768]
    return [a.astype(np.int16) for a in (w, uw, fs, ws, widths)]


def bank_model(channels, n_in, tables, num_channels=None):
    ins = [T((n_in,), "UINT32")] + [T((t.size,), "INT16", data=t) for t in tables]
    return op_model("SignalFilterBank", ins, [T((channels,), "UINT64")],
                    custom_options=opts(num_channels=channels if num_channels is None else num_channels))


def test_filter_bank_random_tables(rng, runtime):
    for channels, n_in, n_w in ((1, 8, 8), (7, 33, 40), (16, 65, 90)):
        tables = bank_tables(rng, channels, n_in, n_w)
        r = Runners(runtime, bank_model(channels, n_in, tables))
        xs = [log_uniform_u32(rng, n_in), np.full(n_in, 0xFFFFFFFF, np.uint32), np.zeros(n_in, np.uint32),
              rng.integers(0, 1 << 32, n_in, dtype=np.uint64).astype(np.uint32)]
        for x in xs:
            y = r.run([x])[0]
            assert y.dtype == np.uint64 and y.shape == (channels,)
        # the all-ones input with negative weights wraps the uint64 sums: the top bit shows it
        if channels > 1:
            assert (r.run([xs[1]])[0] >= np.uint64(1 << 63)).any()


def test_filter_bank_hand_checked(runtime):
    # channel 0 = band 1 weights + band 0 unweights; channel 1 = band 2 weights + band 1 unweights
    w = np.array([1, 2, 3, -1, 0, 0], np.int16)
    uw = np.array([10, 20, 30, 40, 50, 60], np.int16)
    fs = np.array([0, 2, 3], np.int16)
    ws = np.array([0, 2, 4], np.int16)
    widths = np.array([2, 2, 1], np.int16)
    x = np.array([1, 2, 3, 4, 5], np.uint32)
    y = Runners(runtime, bank_model(2, 5, [w, uw, fs, ws, widths])).run([x])[0]
    ch0 = (3 * 3 + (-1) * 4) + (10 * 1 + 20 * 2)
    ch1 = 0 * 4 + (30 * 3 + 40 * 4)
    assert list(y) == [ch0, ch1]


def test_audio_preprocessor_tables(rng, runtime):
    from edge_sdk.model.reader import read_model
    from tests.conftest import shared_model

    m = read_model(shared_model("tflite-micro/audio_preprocessor_int8.tflite").read_bytes())
    sg = m.subgraphs[0]
    op = next(o for o in sg.operators if m.operator_codes[o.opcode_index].custom_code == "SignalFilterBank")
    tables = [np.frombuffer(m.buffers[sg.tensors[i].buffer].data, np.int16).copy() for i in op.inputs[1:]]
    n_in = sg.tensors[op.inputs[0]].shape[0]
    r = Runners(runtime, bank_model(40, n_in, tables))
    for x in (log_uniform_u32(rng, n_in), np.full(n_in, 0xFFFFFFFF, np.uint32)):
        r.run([x])


def test_filter_bank_malformed_tables_refused(rng, runtime):
    tables = bank_tables(rng, 4, 16, 20)
    w, uw, fs, ws, widths = tables
    Runners(runtime, bank_model(4, 16, tables))  # the good one loads

    def bad(**change):
        t = dict(w=w, uw=uw, fs=fs, ws=ws, widths=widths)
        for k, v in change.items():
            t[k] = v.copy()
        return bank_model(4, 16, [t[k] for k in ("w", "uw", "fs", "ws", "widths")])

    wide = widths.copy()
    wide[2] = 3
    beyond = fs.copy()
    beyond[2] = 14  # 14 + 3 bins > 16
    assert "reads past" in refusal(runtime, bad(fs=beyond, widths=wide))
    neg = fs.copy()
    neg[2] = -1
    assert "reads past" in refusal(runtime, bad(fs=neg, widths=wide))
    wbeyond = ws.copy()
    wbeyond[2] = 18  # 18 + 3 weights > 20
    assert "reads past" in refusal(runtime, bad(ws=wbeyond, widths=wide))
    assert "reads past" in refusal(runtime, bad(uw=uw[:10], ws=np.where(wide > 0, 9, 0).astype(np.int16), widths=wide))
    # an empty band's starts are never read: anything goes there
    empty = widths.copy()
    empty[1] = 0
    far = fs.copy()
    far[1] = 30000
    Runners(runtime, bank_model(4, 16, [w, uw, far, ws, empty])).run([log_uniform_u32(rng, 16)])
    assert "num_channels + 1" in refusal(runtime, bank_model(4, 16, [w, uw, fs[:4], ws, widths]))
    assert "num_channels" in refusal(runtime, bank_model(4, 16, tables, num_channels=0))
    assert "'num_channels'" in refusal(runtime, op_model("SignalFilterBank", [T((16,), "UINT32")] +
                                                         [T((t.size,), "INT16", data=t) for t in tables],
                                                         [T((4,), "UINT64")], custom_options=opts(channels=4)))
    non_const = op_model("SignalFilterBank", [T((16,), "UINT32"), T((20,), "INT16")] +
                         [T((t.size,), "INT16", data=t) for t in tables[1:]], [T((4,), "UINT64")],
                         custom_options=opts(num_channels=4))
    if runtime == "c":  # the C kernel reads its tables at prepare; the Python kernel reads them at invoke
        assert "constant" in refusal(runtime, non_const)
    else:
        Runners(runtime, non_const, tflm=False).run([log_uniform_u32(rng, 16), w])


# --------------------------------------------------------------------------------------------- spectral subtraction
SS_DEFAULT = dict(alternate_one_minus_smoothing=15401, alternate_smoothing=983, clamping=False,
                  min_signal_remaining=819, num_channels=40, one_minus_smoothing=15975, smoothing=409,
                  smoothing_bits=10, spectral_subtraction_bits=14)  # audio_preprocessor_int8's options


def ss_model(n_in=40, **change):
    o = dict(SS_DEFAULT, **change)
    ch = o["num_channels"]
    return op_model("SignalFilterBankSpectralSubtraction", [T((n_in,), "UINT32")],
                    [T((ch,), "UINT32"), T((ch,), "UINT32")], custom_options=opts(**o))


@pytest.mark.parametrize("case", ["preprocessor", "clamping", "extreme", "narrow"])
def test_spectral_subtraction_state(rng, case, runtime):
    change, n_in = {
        "preprocessor": ({}, 40),
        "clamping": ({"clamping": True}, 40),
        # coefficients near 2^32 (as negative int32 options) and no down-shift: the uint64 sums wrap
        "extreme": ({"smoothing": -1, "one_minus_smoothing": -7, "alternate_smoothing": 1 << 30,
                     "alternate_one_minus_smoothing": -(1 << 31), "min_signal_remaining": -1,
                     "smoothing_bits": 31, "spectral_subtraction_bits": 0, "num_channels": 9}, 9),
        "narrow": ({"num_channels": 5, "spectral_subtraction_bits": 63, "smoothing_bits": 0}, 12),
    }[case]
    ch = dict(SS_DEFAULT, **change)["num_channels"]
    r = Runners(runtime, ss_model(n_in, **change))
    frames = [log_uniform_u32(rng, n_in, 24) for _ in range(5)]
    frames[2][:] = 0xFFFFFFFF
    frames[3][:] = 0
    seq = []
    for x in frames:
        y, noise = r.run([x])
        assert y.shape == noise.shape == (ch,)
        seq.append((y, noise))
    if case == "preprocessor":
        assert seq[-1][1].any() and not np.array_equal(seq[0][1], seq[1][1])  # the estimate evolves
    r.reset()
    again = [r.run([x]) for x in frames[:2]]
    for (y0, n0), (y1, n1) in zip(seq, again):  # after the reset: the same as from a fresh load
        np.testing.assert_array_equal(y0, y1)
        np.testing.assert_array_equal(n0, n1)


def test_spectral_subtraction_refusals(runtime):
    assert "num_channels" in refusal(runtime, ss_model(40, num_channels=41))
    assert "num_channels" in refusal(runtime, ss_model(40, num_channels=0))
    assert "smoothing_bits" in refusal(runtime, ss_model(40, smoothing_bits=32))
    assert "spectral_subtraction_bits" in refusal(runtime, ss_model(40, spectral_subtraction_bits=64))
    o = dict(SS_DEFAULT)
    del o["alternate_smoothing"]
    assert "'alternate_smoothing'" in refusal(runtime, op_model(
        "SignalFilterBankSpectralSubtraction", [T((40,), "UINT32")], [T((40,), "UINT32"), T((40,), "UINT32")],
        custom_options=opts(**o)))


@needs_c_runtime
def test_under_asan(tmp_path, rng, asan_runner):
    """Good and malformed models of both ops through the ASan/UBSan runner: loaded and run, or refused."""
    import struct
    import subprocess

    runner = asan_runner
    tables = bank_tables(rng, 6, 24, 30)
    good_fb, good_ss = opts(num_channels=6), opts(**SS_DEFAULT)
    fb_ins = [T((24,), "UINT32")] + [T((t.size,), "INT16", data=t) for t in tables]
    models = [bank_model(6, 24, tables), ss_model(40)]
    models += [op_model("SignalFilterBank", fb_ins, [T((6,), "UINT64")], custom_options=good_fb[:n])
               for n in range(len(good_fb))]
    models += [op_model("SignalFilterBankSpectralSubtraction", [T((40,), "UINT32")],
                        [T((40,), "UINT32"), T((40,), "UINT32")], custom_options=co)
               for co in (good_ss[:n] for n in range(0, len(good_ss), 7))]
    for k in range(20):  # corrupted tables: some bands pushed out of range
        t = [a.copy() for a in tables]
        t[2 + k % 3][int(rng.integers(7))] = int(rng.integers(-40, 60))
        models.append(bank_model(6, 24, t))
    blob = b"".join(struct.pack("<I", len(b)) + b for b in models)
    (tmp_path / "cases.bin").write_bytes(blob)
    proc = subprocess.run([str(runner), "--fuzz", str(tmp_path / "cases.bin")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    statuses = [int(line.split()[3]) for line in lines if " status " in line]
    assert lines[-1] == f"done {len(models)}" and len(statuses) == len(models)
    assert statuses[:2] == [0, 0]  # the good models load and run
    assert all(s != 0 for s in statuses[2 : 2 + len(good_fb)])  # truncated options: refused
    assert 0 < sum(s != 0 for s in statuses[-20:]) < 20  # some corrupted tables refused, some still valid
