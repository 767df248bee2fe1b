"""Pieces of the C runtime that exist to keep the Cortex-M image small, checked on the host:
edge_f2d / edge_double_gt (src/edge_fixedpoint.h: float->double and double compare on the IEEE bits, so an
M4 build links no soft-double add/compare object) against the compiler's own conversion and comparison."""

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
