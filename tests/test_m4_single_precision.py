"""Issue 25: float GELU, DETECTION_POSTPROCESS's decoding and FLOOR_DIV without soft double on cores whose FPU has
no double precision (Cortex-M4F, M33; edge_fixedpoint_act.h EDGE_FLOAT_MATH_SINGLE).

FLOOR_DIV's single-precision form (ea_floor_div_f32) gives the bits of LiteRT's double expression
(float)floor((double)x / (double)y): checked in C on random pairs of every magnitude, on quotients next to integers
and on the special values. GELU and the detection decoding are within the float tolerance instead: a host build of
the C runtime with EDGE_FLOAT_MATH_SINGLE=1 (slow: the whole runtime is compiled) against LiteRT's reference kernels.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.test_profile import needs_qemu, state  # noqa: F401 (a fixture: the board state, boards stopped after)

ROOT = Path(__file__).resolve().parent.parent
FW = ROOT / "firmware_c"

FLOOR_DIV_HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "edge_fixedpoint_act.h"

static uint64_t s = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (uint32_t)(s >> 11); }
static float bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t ubits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
/* a float of exponent in [lo, hi] (unbiased), random mantissa and sign */
static float draw(int lo, int hi) {
    return bits((rnd() & 0x807fffffu) | (uint32_t)(127 + lo + (int)(rnd() % (uint32_t)(hi - lo + 1))) << 23);
}
static long bad = 0, n = 0;
static void one(float x, float y) {
    const float got = ea_floor_div_f32(x, y), want = (float)floor((double)x / (double)y);
    n++;
    if (ubits(got) != ubits(want) && !(got != got && want != want)) {
        if (bad < 5) printf("x=%a y=%a got %a want %a\n", x, y, got, want);
        bad++;
    }
}
int main(int argc, char **argv) {
    const long draws = atol(argv[1]);
    static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 3.0f, -7.0f, 0.1f, 1e-45f, -1e-45f, 1e-38f, 3.4e38f,
                                    -3.4e38f, 16777216.0f, 16777215.0f, 8388608.5f, 1.0f / 0.0f, -1.0f / 0.0f};
    long i, j;
    const int nsp = (int)(sizeof special / sizeof special[0]);
    for (i = 0; i < nsp; i++)
        for (j = 0; j < nsp; j++) one(special[i], special[j]);
    one(0.0f / 0.0f, 1.0f);
    for (i = 0; i < draws; i++) {
        const float y = draw(-20, 20), k = (float)((int32_t)(rnd() % 4000000u) - 2000000);
        one(draw(-30, 30), y);                    /* any quotient */
        one(draw(-3, 3), draw(-3, 3));            /* quotients near 1 */
        one(k * y, y);                            /* integer quotients (k * y rounded: next to k) */
        one(bits(ubits(k * y) + 1), y);           /* one ulp either side */
        one(bits(ubits(k * y) - 1), y);
        one(draw(-126, -100), draw(60, 120));     /* tiny quotients: 0 or -1 */
        one(draw(100, 127), draw(-126, -100));    /* overflowing ones */
        one(draw(20, 40), draw(-5, 5));           /* quotients from 2^24: the double expression */
    }
    printf("%ld of %ld differ\n", bad, n);
    return bad != 0;
}
"""


@needs_c_runtime
def test_floor_div_single_precision_gives_the_double_expressions_bits(tmp_path):
    src = tmp_path / "floor_div.c"
    src.write_text(FLOOR_DIV_HARNESS)
    exe = tmp_path / "floor_div"
    proc = subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Werror", "-ffp-contract=off",
                           "-DEDGE_FLOAT_MATH_SINGLE=1", f"-I{FW / 'include'}", f"-I{FW / 'src'}", str(src), "-o",
                           str(exe), "-lm"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = subprocess.run([str(exe), "250000"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout
    assert "0 of 20" in run.stdout  # 2,000,290 pairs


@pytest.fixture(scope="module")
def single_runner(tmp_path_factory):
    """edge-run-c built with EDGE_FLOAT_MATH_SINGLE=1 (the M4's float math on the host; gcc -O1, as the DSP runner)."""
    from concurrent.futures import ThreadPoolExecutor

    out = tmp_path_factory.mktemp("single-runner")
    table = out / "edge_ops_generated.c"
    subprocess.run([sys.executable, str(FW / "tools" / "gen_ops.py"), str(table)], check=True, capture_output=True)
    sources = [FW / "src" / "edge.c", *sorted((FW / "src" / "kernels").glob("*.c")), FW / "host" / "edge_host.c",
               FW / "host" / "edge_run.c", table]
    flags = ["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off", "-DEDGE_FLOAT_MATH_SINGLE=1",
             f"-I{FW / 'include'}", f"-I{FW / 'src'}", f"-I{FW / 'host'}"]

    def compile_one(k_src):
        k, src = k_src
        obj = out / f"{k:03d}-{src.stem}.o"
        return obj, subprocess.run(["gcc", *flags, "-c", str(src), "-o", str(obj)], capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=2) as pool:
        built = list(pool.map(compile_one, enumerate(sources)))
    for src, (_obj, proc) in zip(sources, built):
        assert proc.returncode == 0, f"{src.name}:\n{proc.stderr[-3000:]}"
    exe = out / "edge-run-c"
    proc = subprocess.run(["gcc", "-o", str(exe), *(str(o) for o, _ in built), "-lm"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return exe


def _run_single(exe, model: bytes, feeds, likes, tmp_path) -> list[np.ndarray]:
    (tmp_path / "m.tflite").write_bytes(model)
    (tmp_path / "in.bin").write_bytes(b"".join(np.ascontiguousarray(x).tobytes() for x in feeds))
    proc = subprocess.run([str(exe), str(tmp_path / "m.tflite"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    raw, out, at = (tmp_path / "out.bin").read_bytes(), [], 0
    for like in likes:
        out.append(np.frombuffer(raw[at:at + like.nbytes], like.dtype).reshape(like.shape))
        at += like.nbytes
    return out


@pytest.mark.slow
@needs_c_runtime
@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_float_single_precision_within_tolerance(single_runner, tmp_path, approximate):
    from tests.oprunner import T, op_model
    from tests.peers import run_litert

    x = np.concatenate([np.linspace(-12, 12, 2040), [0.0, -0.0, 1e-30, -1e-7, 40.0, -40.0, 5.5, -5.5]])
    x = x.astype(np.float32).reshape(1, -1)
    model = op_model("GELU", [T(x.shape, "FLOAT32")], [T(x.shape, "FLOAT32")], {"approximate": approximate})
    want = run_litert(model, [x])[0]
    (got,) = _run_single(single_runner, model, [x], [want], tmp_path)
    err = np.max(np.abs(got.astype(np.float64) - want)) / (np.max(want) - np.min(want))
    assert err <= 1e-6, err  # the project holds floats to 1e-4 of range
    assert np.any(got != want) or approximate, "the single-precision path did not run (same bits as double)"


@pytest.mark.slow
@needs_c_runtime
@pytest.mark.parametrize("regular", [False, True])
def test_detection_decoding_single_precision_within_tolerance(single_runner, tmp_path, regular):
    from tests.peers import run_litert
    from tests.test_ops_detection_audio import detection_inputs, detection_model

    model = detection_model(3, 1, max_det=6, per_anchor=1, regular=regular)
    feeds = detection_inputs(3, 1)
    want = run_litert(model, feeds)
    got = _run_single(single_runner, model, feeds, want, tmp_path)
    k = int(want[3][0])
    assert got[3][0] == k and k > 0
    np.testing.assert_array_equal(got[1][:, :k], want[1][:, :k])  # the same detections, classes
    np.testing.assert_array_equal(got[2][:, :k], want[2][:, :k])  # and scores (exact: one rounding either way)
    np.testing.assert_allclose(got[0][:, :k], want[0][:, :k], rtol=0, atol=1e-5)  # boxes: within an ulp or so


def _floor_div_inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs whose quotients sit on, and one ulp beside, integers (where a float quotient rounds onto the integer
    above the exact one), tiny and huge quotients, signs mixed."""
    rng = np.random.default_rng(25)
    y = (rng.uniform(0.1, 100, n) * rng.choice([-1, 1], n)).astype(np.float32)
    k = rng.integers(-100000, 100000, n).astype(np.float32)
    x = (k * y).astype(np.float32)
    step = rng.choice([-1, 0, 1], n).astype(np.int32)
    x = (x.view(np.int32) + step * (x != 0)).view(np.float32)
    x[:8] = np.array([1e-30, -1e-30, 3e38, -3e38, 0.0, -0.0, 7.0, -7.0], np.float32)
    return x.reshape(1, n), y.reshape(1, n)


@pytest.mark.slow
@needs_qemu
@pytest.mark.parametrize("case", ["gelu", "gelu-tanh", "floor_div", "detection"])
def test_single_precision_ops_on_the_m4_board(state, tmp_path, case):  # noqa: F811
    """On the QEMU M4 itself (its FPU: single precision, VFMS for FLOOR_DIV's remainder): GELU and the detection op
    within `edge profile`'s float tolerance of the host (double), FLOOR_DIV bit for bit. ~20 s a case."""
    from edge_sdk.tools.profile import profile_model
    from tests.oprunner import T, op_model
    from tests.test_ops_detection_audio import detection_inputs, detection_model

    if case.startswith("gelu"):
        x = np.linspace(-12, 12, 512).astype(np.float32).reshape(1, 512)
        model = op_model("GELU", [T(x.shape, "FLOAT32")], [T(x.shape, "FLOAT32")], {"approximate": case != "gelu"})
        np.save(tmp_path / "in.npy", x)
        inputs = tmp_path / "in.npy"
    elif case == "floor_div":
        x, y = _floor_div_inputs(512)
        model = op_model("FLOOR_DIV", [T(x.shape, "FLOAT32"), T(y.shape, "FLOAT32")], [T(x.shape, "FLOAT32")])
        np.savez(tmp_path / "in.npz", x, y)
        inputs = tmp_path / "in.npz"
    else:
        model = detection_model(3, 1, max_det=6, per_anchor=1, regular=True)
        np.savez(tmp_path / "in.npz", *detection_inputs(3, 1))
        inputs = tmp_path / "in.npz"
    path = tmp_path / f"{case}.tflite"
    path.write_bytes(model)
    r = profile_model(path, "qemu-mps2-an386", runs=1, inputs=str(inputs), build_dir=tmp_path / "fw")
    assert r["validated"] is True and r["mismatches"] == [], r
    for f in r["float_outputs"]:
        assert f["within"] is True, f
        if case == "floor_div":
            assert f["bit_exact"] is True, f
