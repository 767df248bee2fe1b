"""Pieces of the C runtime that exist to keep the Cortex-M image small, checked on the host:
edge_f2d / edge_double_gt / edge_ratio_d / edge_far_ratio (src/edge_fixedpoint.h: float->double, double compare,
a * b / c in double and FULLY_CONNECTED's |a * b - c| / d > 0.02 check on the IEEE bits, so an M4 build links no
soft-double add / compare / multiply / divide object) against the compiler's own conversion, comparison and double
arithmetic."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import needs_c_runtime

FW = Path(__file__).resolve().parent.parent / "firmware_c"

PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include "edge_fixedpoint.h"

static uint32_t lcg(uint32_t *s) { *s = *s * 1664525u + 1013904223u; return *s; }

static int same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

int main(void) {
    uint32_t seed = 7, u, bad = 0, k;
    float f;
    double a, b;
    /* every subnormal and every exponent's edges, both signs; then random bit patterns */
    for (u = 0; u <= 0x800000u; u++) {
        uint32_t v[4] = {u, u | 0x80000000u, (u << 9) | 0x7f800000u, ((u & 0xff) << 23) | (u >> 8)};
        for (k = 0; k < 4; k++) {
            memcpy(&f, &v[k], 4);
            if (f == f && !same(edge_f2d(f), (double)f)) { if (bad++ < 5) printf("f2d %08x\n", v[k]); }
        }
    }
    for (k = 0; k < 4000000u; k++) {
        u = lcg(&seed);
        memcpy(&f, &u, 4);
        if (f == f && !same(edge_f2d(f), (double)f)) { if (bad++ < 5) printf("f2d %08x\n", u); }
        if (f != f) { double d = edge_f2d(f); if (d == d) { if (bad++ < 5) printf("nan %08x\n", u); } }
    }
    for (k = 0; k < 4000000u; k++) {
        uint64_t x = ((uint64_t)lcg(&seed) << 32) | lcg(&seed), y = k & 1 ? x ^ (lcg(&seed) & 0xff) : ((uint64_t)lcg(&seed) << 32) | lcg(&seed);
        memcpy(&a, &x, 8);
        memcpy(&b, &y, 8);
        if (a != a || b != b) continue;
        if (edge_double_gt(a, b) != (a > b)) { if (bad++ < 5) printf("gt %016llx %016llx\n", (unsigned long long)x, (unsigned long long)y); }
    }
    a = 0.0; b = -0.0;
    if (edge_double_gt(a, b) || edge_double_gt(b, a) || !edge_double_gt(2147483648.0, 2147483647.0)
        || edge_double_gt(2147483647.0, 2147483647.0) || !edge_double_gt(1.0 / 0.0, 2147483647.0)
        || edge_double_gt(-1.0 / 0.0, -1e308)) { bad++; printf("gt edge cases\n"); }
    {   /* edge_ratio_d against the double arithmetic: special values with each other, random bit patterns,
         * and scales as models have them (exponents near 2^-8, the quotient's ties and carries included) */
        static const uint32_t special[] = {0, 0x80000000u, 1, 0x80000001u, 0x7fffffu, 0x800000u, 0x3f800000u,
                                           0xbf800000u, 0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0xff800000u,
                                           0x7fc00000u, 0x33800000u, 0x3f7fffffu, 0x3f800001u};
        const uint32_t ns = sizeof special / sizeof special[0];
        uint32_t i, j, l, w[3];
        float g[3];
        for (k = 0; k < 3000000u + ns * ns * ns; k++) {
            if (k < ns * ns * ns) {
                w[0] = special[k % ns], w[1] = special[k / ns % ns], w[2] = special[k / ns / ns];
            } else {
                for (l = 0; l < 3; l++) {
                    w[l] = lcg(&seed);
                    if (k % 4 != 0) w[l] = (w[l] & 0x807fffffu) | ((uint32_t)(110 + lcg(&seed) % 30) << 23);
                    if (k % 8 == 1) w[l] &= 0xfffff000u; /* short significands: exact quotients and ties */
                }
            }
            for (l = 0; l < 3; l++) memcpy(&g[l], &w[l], 4);
            a = (double)g[0] * (double)g[1] / (double)g[2];
            b = edge_ratio_d(g[0], g[1], g[2]);
            if (a != a ? b == b : !same(a, b)) {
                if (bad++ < 5) printf("ratio %08x %08x %08x\n", w[0], w[1], w[2]);
            }
        }
        for (i = 1; i < 256; i++) /* small integers: exact and halfway quotients */
            for (j = 1; j < 256; j++) {
                g[0] = (float)i, g[1] = (float)(j | 1) * 0.5f, g[2] = (float)(i + j);
                if (!same((double)g[0] * (double)g[1] / (double)g[2], edge_ratio_d(g[0], g[1], g[2])))
                    if (bad++ < 5) printf("ratio %u %u\n", i, j);
            }
    }
    {   /* edge_far_ratio (FULLY_CONNECTED's bias-scale check) against |a * b - c| / d > 0.02 in double: every
         * four of the special values; random bit patterns; scales as models have them with c near a * b and d
         * placing the ratio near 0.02 (ties of the double expression's roundings may differ: the exact ratio, in
         * long double, is then within 1e-15 of 0.02) */
        static const uint32_t special[] = {0, 0x80000000u, 1, 0x80000001u, 0x800000u, 0x3f800000u, 0xbf800000u,
                                           0x7f7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x3c23d70au};
        const uint32_t ns = sizeof special / sizeof special[0];
        uint32_t l, w[4], near = 0;
        float g[4];
        for (k = 0; k < 2000000u + ns * ns * ns * ns; k++) {
            if (k < ns * ns * ns * ns) {
                for (l = 0, u = k; l < 4; l++, u /= ns) w[l] = special[u % ns];
                for (l = 0; l < 4; l++) memcpy(&g[l], &w[l], 4);
            } else if (k % 2) {
                for (l = 0; l < 4; l++) {
                    w[l] = lcg(&seed);
                    if (k % 4 == 1) w[l] = (w[l] & 0x807fffffu) | ((uint32_t)(100 + lcg(&seed) % 40) << 23);
                    memcpy(&g[l], &w[l], 4);
                }
            } else {
                float jitter = (float)((int32_t)(lcg(&seed) % 2001u) - 1000) * 1e-6f;
                g[0] = (float)(lcg(&seed) % 100000u + 1) * 1e-7f;
                g[1] = (float)(lcg(&seed) % 100000u + 1) * 1e-7f;
                g[2] = (k % 6 == 0 ? -1.0f : 1.0f) * (float)((double)g[0] * (double)g[1] * (1.0 + (double)jitter));
                g[3] = (float)(fabs((double)g[0] * (double)g[1] - (double)g[2]) / 0.02) * (k % 3 ? 1.0f : 1.0000001f);
            }
            a = (double)g[0] * (double)g[1] - (double)g[2];
            if ((((a < 0 ? -a : a) / (double)g[3]) > 0.02) != edge_far_ratio(g[0], g[1], g[2], g[3])) {
                long double x = (long double)g[0] * g[1] - g[2];
                x = (x < 0 ? -x : x) / g[3];
                if (x - 0.02L < 1e-15L && 0.02L - x < 1e-15L) near++;
                else if (bad++ < 5) printf("far %a %a %a %a\n", g[0], g[1], g[2], g[3]);
            }
        }
        printf("far near ties %u\n", near);
    }
    printf("bad %u\n", bad);
    return bad != 0;
}
"""


@needs_c_runtime
def test_bitwise_float_helpers_match_the_compiler(tmp_path):
    src = tmp_path / "f2d.c"
    src.write_text(PROGRAM)
    exe = tmp_path / "f2d"
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{FW / 'include'}", f"-I{FW / 'src'}",
                    str(src), "-o", str(exe), "-lm"], check=True, capture_output=True, text=True)
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "bad 0" in proc.stdout, proc.stdout + proc.stderr


# ------------------------------------------------------------------ EDGE_STATUS_SITES: reasons as source lines

def _runner(tmp_path: Path, name: str, defs: list[str], table: Path) -> Path:
    """edge-run-c with only CONV_2D's kernel (the op table of the test's model), built with defs; -O0: seconds."""
    exe = tmp_path / name
    srcs = [FW / "src" / "edge.c", FW / "src" / "kernels" / "conv_2d.c", FW / "src" / "kernels" / "hybrid.c",
            FW / "host" / "edge_host.c", FW / "host" / "edge_run.c", table]
    subprocess.run(["gcc", "-std=c99", "-O0", "-Wall", "-Wextra", "-Werror", *defs, f"-I{FW / 'include'}",
                    f"-I{FW / 'src'}", f"-I{FW / 'host'}", *map(str, srcs), "-o", str(exe), "-lm", "-pthread"],
                   check=True, capture_output=True, text=True)
    return exe


def _message(exe: Path, model: Path) -> str:
    proc = subprocess.run([str(exe), str(model), "--plan"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    return proc.stderr.strip().split(": ", 2)[2]  # after "edge-run-c: status N: "


@needs_c_runtime
def test_status_sites_decode_to_the_texts_of_a_text_build(tmp_path):
    """The Cortex-M default (-DEDGE_STATUS_SITES) keeps a refusal's reason as its source line; the host's decoder
    (tools/status_sites.py) turns the message back into the one a text build prints, for a kernel's refusal (CONV_2D
    whose window does not fit: the op's name is the host's too) and for the loader's (a truncated model)."""
    import sys

    import numpy as np

    from tests.oprunner import T, op_model
    sys.path.insert(0, str(FW / "tools"))
    import status_sites

    refused = tmp_path / "refused.tflite"
    refused.write_bytes(op_model("CONV_2D", [T((1, 4, 4, 2), "INT8", 0.5, 0),
                                             T((3, 1, 1, 2), "INT8", [0.1, 0.2], [0, 0],
                                               data=np.ones((3, 1, 1, 2), np.int8)),
                                             T((3,), "INT32", [0.05, 0.1, 0.1], [0, 0, 0],
                                               data=np.zeros(3, np.int32))],
                                  [T((1, 4, 4, 3), "INT8", 0.5, 0)], options={"padding": "VALID"}))
    truncated = tmp_path / "truncated.tflite"
    truncated.write_bytes(refused.read_bytes()[:300])
    table = tmp_path / "ops.c"
    subprocess.run(["python3", str(FW / "tools" / "gen_ops.py"), str(table), "--model", str(refused)], check=True,
                   capture_output=True)
    text = _runner(tmp_path, "text", [], table)
    sites = _runner(tmp_path, "sites", ["-DEDGE_STATUS_SITES"], table)
    for model in (refused, truncated):
        want, got = _message(text, model), _message(sites, model)
        assert "@" in got and got != want, got  # the site build really printed a line, not the text
        assert status_sites.decode(got) == want
