"""Op x dtype x version matrix against LiteRT (issue 23 point 1): what LiteRT 2.3's builtin resolver runs and
what our two runtimes do with the same one-op model.

* Versions: for every builtin op of the op table, LiteRT's highest registered version, found by asking LiteRT's
  resolver (``Interpreter(...)`` refuses an unregistered (op, version) with "Didn't find op"), beside the op
  table's ``max_version`` (Python) and ``c_max_version`` (C). A gap: LiteRT takes a version one of ours refuses.
* Dtypes: for the op families one generic one-op model fits (``unary``, ``binary``, ``reduce``, ``last_axis``,
  ``reshape``, ``pad``, ``pool``) and the hand-built cases in ``EXTRA`` (ai-edge-torch forms: int64 indices,
  BROADCAST_TO, DYNAMIC_UPDATE_SLICE, CUMSUM, ...), every candidate dtype: a model LiteRT's reference kernels
  run is run by the Python interpreter and the C runtime and compared (floats within FLOAT_TOL, quantized
  integers within one quantum: LiteRT rounds once, TFLM twice, NOTES.md; other integers and bools exactly).
  A gap: LiteRT runs the case and one of ours refuses it or differs.

``python -m tests.litert_matrix`` prints the matrix and the gaps; tests/test_litert_matrix.py fails on a gap
that ``KNOWN_GAPS`` does not list with its reason.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from edge_sdk.model import schema
from edge_sdk.runtime.op_table import ROWS
from tests.oprunner import T, op_model

DTYPES = ("FLOAT32", "INT8", "INT16", "UINT8", "INT32", "INT64", "BOOL")
QUANT = {"INT8": (0.05, -3), "INT16": (0.001, 0), "UINT8": (0.05, 125)}  # (scale, zero point) of a quantized case
FLOAT_TOL = (1e-5, 1e-6)  # rtol, atol
MAX_VERSION_PROBED = 16

# Gaps the test accepts, each with its reason: (op, dtype or "v<N>", runtime) -> why. Each is still a gap to
# close (but those marked "by design" or "LiteRT's reference is wrong"); the report of issue 23 lists them.
BOTH = ("python", "c")
KNOWN_GAPS: dict[tuple[str, str, str], str] = {
    **{("SUM", dtype, rt): "LiteRT's reference SUM is wrong here (-1 / 0 / 255 for in-range sums); ours equals "
       "TFLM, LiteRT's optimized kernel and the exact sum" for rt in BOTH for dtype in ("INT8", "INT16")},
    **{("NOT_EQUAL", "INT16", rt): "LiteRT's int16 comparisons ignore the scales (NOTES.md); ours compares real "
       "values as TFLM does" for rt in BOTH},
    ("WHERE", "v2", "c"): "by design: WHERE's output size depends on the data (issue 23 lets the C runtime refuse it)",
    ("UNIQUE", "v1", "c"): "by design: UNIQUE's output size depends on the data (issue 23 lets the C runtime refuse it)",
}


@dataclass
class Case:
    op: str
    dtype: str
    model: bytes
    inputs: list


def _values(rng, dtype: str, shape, positive: bool = False, small: bool = False):
    if dtype == "BOOL":
        return rng.random(shape) > 0.5
    if dtype in ("FLOAT32", "FLOAT16"):
        v = rng.uniform(-2.0, 2.0, shape)
        return (np.abs(v) + 0.25 if positive else v).astype(np.float32 if dtype == "FLOAT32" else np.float16)
    info = np.iinfo(np.dtype(dtype.lower()))
    if dtype in QUANT:
        lo, hi = (QUANT[dtype][1] + 10, info.max) if positive else (info.min, info.max)
        lo, hi = max(lo, -100 if dtype == "INT16" else lo), min(hi, 100 if dtype == "INT16" else hi)
        return rng.integers(lo, hi, shape, endpoint=True).astype(dtype.lower())
    lo, hi = (1, 4) if small or positive else (-6, 6)
    if small:
        lo = 0
    return rng.integers(max(lo, info.min), hi, shape, endpoint=True).astype(dtype.lower())


def _t(dtype: str, shape, fixed: tuple | None = None, data=None):
    if dtype in QUANT:
        scale, zp = fixed or QUANT[dtype]
        return T(shape, dtype, scale=scale, zero_point=zp, data=data)
    return T(shape, dtype, data=data)


def _fixed(op: str, dtype: str):
    return next(((s, z) for t, s, z in ROWS[op].quant_fixed if t == dtype), None)


def family_case(op: str, dtype: str, rng) -> Case | None:
    """A generic one-op model of ``op`` on ``dtype`` from its row's family, or None (no generic form)."""
    r = ROWS[op]
    shape = (1, 3, 4, 5)
    positive = op in ("DIV", "FLOOR_DIV", "FLOOR_MOD")  # a divisor input: no zeros
    out_dtype = "BOOL" if r.quant == "compare" else dtype
    if r.family == "unary" and r.quant not in ("",) or r.family == "unary" and op in UNARY_PLAIN:
        x = _t(dtype, shape)
        y = _t(out_dtype, shape, _fixed(op, dtype) if r.quant == "fixed" else None)
        return Case(op, dtype, op_model(op, [x], [y], version=1), [_values(rng, dtype, shape)])
    if r.family == "binary" and op not in ("SELECT", "SELECT_V2", "PRELU"):
        # both inputs one shape: LiteRT's ATAN2 (and others) read a smaller second input past its end
        a, b = _t(dtype, shape), _t(dtype, shape)
        y = _t(out_dtype, shape, (0.1, 0) if dtype in QUANT and op in ("MUL", "SQUARED_DIFFERENCE") else None)
        return Case(op, dtype, op_model(op, [a, b], [y]),
                    [_values(rng, dtype, shape, small=op == "RIGHT_SHIFT"),
                     _values(rng, dtype, shape, positive=positive, small=op == "RIGHT_SHIFT")])
    if r.family == "reduce":
        axis = T((2,), "INT32", data=np.array([1, 2], np.int32))
        x, y = _t(dtype, shape), _t(dtype, (1, 1, 1, 5))
        return Case(op, dtype, op_model(op, [x, axis], [y], options={"keep_dims": True}),
                    [_values(rng, dtype, shape, small=op == "REDUCE_PROD")])
    if r.family == "last_axis" and op != "LOCAL_RESPONSE_NORMALIZATION":
        x = _t(dtype, shape)
        y = _t(dtype, shape, _fixed(op, dtype) if r.quant == "fixed" else None)
        opts = {"beta": 1.0} if op == "SOFTMAX" else None
        return Case(op, dtype, op_model(op, [x], [y], options=opts), [_values(rng, dtype, shape)])
    if r.family == "reshape":
        x, y = _t(dtype, shape), _t(dtype, (1, 3, 20) if op == "RESHAPE" else (1, 1, 3, 4, 5))
        if op == "RESHAPE":
            extra = [T((3,), "INT32", data=np.array([1, 3, 20], np.int32))]
        elif op == "EXPAND_DIMS":
            extra = [T((), "INT32", data=np.array(1, np.int32))]
        else:
            return None
        return Case(op, dtype, op_model(op, [x, *extra], [y]), [_values(rng, dtype, shape)])
    if r.family == "pad":
        pads = T((4, 2), "INT32", data=np.array([[0, 0], [1, 1], [2, 0], [0, 1]], np.int32))
        x, y = _t(dtype, shape), _t(dtype, (1, 5, 6, 6))
        extra = [_t(dtype, (), data=np.zeros((), _np(dtype)))] if op == "PADV2" else []
        opts = {"mode": "REFLECT"} if op == "MIRROR_PAD" else None
        return Case(op, dtype, op_model(op, [x, pads, *extra], [y], options=opts), [_values(rng, dtype, shape)])
    if r.family == "pool":
        x, y = _t(dtype, (1, 4, 4, 3)), _t(dtype, (1, 2, 2, 3))
        opts = {"padding": "VALID", "stride_w": 2, "stride_h": 2, "filter_width": 2, "filter_height": 2}
        return Case(op, dtype, op_model(op, [x], [y], options=opts), [_values(rng, dtype, (1, 4, 4, 3))])
    return None


# unary rows without a quantization rule that are still plain x -> y of one dtype
UNARY_PLAIN = ("EXP", "LOG", "SQRT", "ABS", "NEG", "SQUARE", "FLOOR", "CEIL", "ROUND", "SIN", "COS", "SIGN",
               "ZEROS_LIKE", "ONES_LIKE")


def _np(dtype: str):
    return {"FLOAT32": np.float32, "BOOL": np.bool_}.get(dtype) or np.dtype(dtype.lower()).type


def extra_cases(rng) -> list[Case]:
    """Hand-built forms ai-edge-torch and ai-edge-quantizer write (int64 indices, BROADCAST_TO, ...)."""
    cases = []
    for dtype in ("FLOAT32", "INT8", "INT16", "INT32", "INT64", "BOOL"):
        x, y = _t(dtype, (1, 4)), _t(dtype, (3, 4))
        shape = T((2,), "INT32", data=np.array([3, 4], np.int32))
        cases.append(Case("BROADCAST_TO", dtype, op_model("BROADCAST_TO", [x, shape], [y], version=2),
                          [_values(rng, dtype, (1, 4))]))
        cond = T((3, 4), "BOOL")
        a, b, out = _t(dtype, (3, 4)), _t(dtype, (1, 4)), _t(dtype, (3, 4))
        cases.append(Case("SELECT_V2", dtype, op_model("SELECT_V2", [cond, a, b], [out]),
                          [_values(rng, "BOOL", (3, 4)), _values(rng, dtype, (3, 4)), _values(rng, dtype, (1, 4))]))
        for index in ("INT32", "INT64"):
            params, idx, out = _t(dtype, (5, 3)), T((4,), index), _t(dtype, (4, 3))
            cases.append(Case("GATHER", f"{dtype}/{index}", op_model("GATHER", [params, idx], [out]),
                              [_values(rng, dtype, (5, 3)), np.array([4, 0, 2, 2], index.lower())]))
        for index in ("INT32", "INT64"):
            x, out = _t(dtype, (2, 5)), T((2,), index)
            axis = T((1,), "INT32", data=np.array([1], np.int32))
            if dtype != "BOOL":
                cases.append(Case("ARG_MAX", f"{dtype}->{index}", op_model(
                    "ARG_MAX", [x, axis], [out], options={"output_type": index}), [_values(rng, dtype, (2, 5))]))
        for index in ("INT32", "INT64"):
            cache, update, out = _t(dtype, (1, 6, 4)), _t(dtype, (1, 2, 4)), _t(dtype, (1, 6, 4))
            start = T((3,), index)
            cases.append(Case("DYNAMIC_UPDATE_SLICE", f"{dtype}/{index}", op_model(
                "DYNAMIC_UPDATE_SLICE", [cache, update, start], [out]),
                [_values(rng, dtype, (1, 6, 4)), _values(rng, dtype, (1, 2, 4)), np.array([0, 3, 0], index.lower())]))
        perm = T((3,), "INT32", data=np.array([0, 2, 1], np.int32))
        cases.append(Case("TRANSPOSE", dtype, op_model("TRANSPOSE", [_t(dtype, (2, 3, 4)), perm],
                                                       [_t(dtype, (2, 4, 3))]), [_values(rng, dtype, (2, 3, 4))]))
        cases.append(Case("CONCATENATION", dtype, op_model("CONCATENATION", [_t(dtype, (2, 3)), _t(dtype, (2, 2))],
                                                           [_t(dtype, (2, 5))], options={"axis": 1}),
                          [_values(rng, dtype, (2, 3)), _values(rng, dtype, (2, 2))]))
        for index in ("INT32", "INT64"):
            begin = T((2,), index, data=np.array([1, 0], index.lower()))
            size = T((2,), index, data=np.array([2, 3], index.lower()))
            cases.append(Case("SLICE", f"{dtype}/{index}", op_model("SLICE", [_t(dtype, (4, 4)), begin, size],
                                                                    [_t(dtype, (2, 3))]),
                              [_values(rng, dtype, (4, 4))]))
        tile = T((2,), "INT32", data=np.array([2, 1], np.int32))
        cases.append(Case("TILE", dtype, op_model("TILE", [_t(dtype, (2, 3)), tile], [_t(dtype, (4, 3))]),
                          [_values(rng, dtype, (2, 3))]))
    for dtype in ("FLOAT32", "INT32", "INT64"):
        for axis_type in ("INT32", "INT64"):
            axis = T((), axis_type, data=np.array(1, axis_type.lower()))
            cases.append(Case("CUMSUM", f"{dtype}/{axis_type}", op_model("CUMSUM", [_t(dtype, (2, 5)), axis],
                                                                         [_t(dtype, (2, 5))]),
                              [_values(rng, dtype, (2, 5))]))
    for adj_x, adj_y in ((False, False), (True, False), (False, True), (True, True)):
        a_shape = (2, 4, 3) if adj_x else (2, 3, 4)
        b_shape = (2, 5, 4) if adj_y else (2, 4, 5)
        cases.append(Case("BATCH_MATMUL", f"FLOAT32 adj {int(adj_x)}{int(adj_y)}", op_model(
            "BATCH_MATMUL", [T(a_shape, "FLOAT32"), T(b_shape, "FLOAT32")], [T((2, 3, 5), "FLOAT32")],
            options={"adj_x": adj_x, "adj_y": adj_y}), [_values(rng, "FLOAT32", a_shape), _values(rng, "FLOAT32", b_shape)]))
    for approximate in (False, True):
        cases.append(Case("GELU", f"FLOAT32 approximate={approximate}", op_model(
            "GELU", [T((2, 8), "FLOAT32")], [T((2, 8), "FLOAT32")], options={"approximate": approximate}),
            [_values(rng, "FLOAT32", (2, 8))]))
    for src, dst in (("FLOAT32", "INT32"), ("INT32", "FLOAT32"), ("INT64", "INT32"), ("INT32", "INT64"),
                     ("BOOL", "FLOAT32"), ("FLOAT32", "BOOL"), ("INT8", "FLOAT32"), ("UINT8", "INT8"),
                     ("INT16", "INT32"), ("FLOAT32", "INT64"), ("INT64", "FLOAT32"), ("FLOAT32", "FLOAT16"),
                     ("FLOAT16", "FLOAT32")):
        x = T((2, 5), src)
        cases.append(Case("CAST", f"{src}->{dst}", op_model("CAST", [x], [T((2, 5), dst)]),
                          [_values(rng, src, (2, 5))]))
    return cases


def all_cases(seed: int = 0) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    for op in ROWS:
        if op not in schema.BUILTIN_OPERATOR_CODES:
            continue
        for dtype in DTYPES:
            case = family_case(op, dtype, rng)
            if case is not None:
                cases.append(case)
    return cases + extra_cases(rng)


# --------------------------------------------------------------------------------------------- the runners
def _run(kind: str, case: Case):
    """(outputs, None) or (None, one-line error) of one runtime on a case."""
    try:
        if kind == "litert":
            from tests.peers import run_litert

            return run_litert(case.model, case.inputs), None
        from tests.oprunner import run_on

        return run_on(kind, case.model, case.inputs), None
    except Exception as exc:  # noqa: BLE001 - the matrix records every refusal as its line
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"


def _differs(ours, theirs, dtype: str) -> str | None:
    for i, (a, b) in enumerate(zip(ours, theirs)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"output {i}: {a.dtype}{list(a.shape)} vs LiteRT {b.dtype}{list(b.shape)}"
        if a.dtype.kind == "f":
            if not np.allclose(a, b, rtol=FLOAT_TOL[0], atol=FLOAT_TOL[1], equal_nan=True):
                return f"output {i}: max |diff| {np.nanmax(np.abs(a.astype(np.float64) - b)):.3g}"
        elif a.dtype.kind in "iu":
            diff = int(np.max(np.abs(a.astype(np.int64) - b))) if a.size else 0
            if diff > (1 if dtype.split("/")[0].split("->")[0] in QUANT else 0):
                return f"output {i}: max |diff| {diff}"
        elif not np.array_equal(a, b):
            return f"output {i}: {int(np.sum(a != b))} elements differ"
    return None


def litert_max_version(op: str) -> int:
    """LiteRT's (default resolver) highest registered version of builtin ``op``, 0 for none."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    best = 0
    for version in range(1, MAX_VERSION_PROBED + 1):
        model = op_model(op, [T((1,), "FLOAT32")], [T((1,), "FLOAT32")], version=version)
        try:
            Interpreter(model_content=model,
                        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        except ValueError as exc:
            if "Didn't find op" in str(exc):
                if best:  # versions register as one range (min..max): the first miss after a hit ends it
                    break
                continue
        best = version
    return best


def version_rows(runtimes=("python", "c")) -> tuple[list[str], list[tuple[str, str, str, str]]]:
    """(printed lines, gaps (op, "v<N>", runtime, reason)) of the version comparison."""
    lines, gaps = [], []
    for op, r in ROWS.items():
        if r.custom or op not in schema.BUILTIN_OPERATOR_CODES:
            continue
        theirs = litert_max_version(op)
        ours = {"python": r.max_version if r.runs else 0, "c": r.c_max_version or 0}
        lines.append(f"{op:32s} LiteRT v{theirs:<3d} python v{ours['python']:<3d} c v{ours['c']}")
        for runtime in runtimes:
            if theirs > ours[runtime]:
                gaps.append((op, f"v{theirs}", runtime, f"LiteRT registers v{theirs}, {runtime} runs v{ours[runtime]}"))
    return lines, gaps


def dtype_rows(cases=None, runtimes=("python", "c")) -> tuple[list[str], list[tuple[str, str, str, str]]]:
    """(printed lines, gaps (op, dtype, runtime, reason)) of the dtype comparison."""
    lines, gaps = [], []
    for case in cases if cases is not None else all_cases():
        theirs, refused = _run("litert", case)
        if theirs is None:
            lines.append(f"{case.op:24s} {case.dtype:26s} LiteRT refuses ({refused[:70]})")
            continue
        cells = []
        for runtime in runtimes:
            ours, error = _run(runtime, case)
            problem = error if ours is None else _differs(ours, theirs, case.dtype)
            cells.append(f"{runtime} {'ok' if problem is None else 'GAP'}")
            if problem is not None:
                gaps.append((case.op, case.dtype, runtime, problem))
        lines.append(f"{case.op:24s} {case.dtype:26s} LiteRT ok   " + "   ".join(cells))
    return lines, gaps


def unexplained(gaps) -> list[str]:
    return [f"{op} {what} on {runtime}: {reason}" for op, what, runtime, reason in gaps
            if (op, what, runtime) not in KNOWN_GAPS]


def main() -> int:
    version_lines, version_gaps = version_rows()
    print("== versions (LiteRT 2.3 default resolver vs the op table)")
    print("\n".join(version_lines))
    dtype_lines, dtype_gaps = dtype_rows()
    print("\n== dtypes (one-op models LiteRT's reference kernels run)")
    print("\n".join(dtype_lines))
    gaps = version_gaps + dtype_gaps
    print(f"\n== gaps: {len(gaps)} ({len(unexplained(gaps))} not in KNOWN_GAPS)")
    for op, what, runtime, reason in gaps:
        known = KNOWN_GAPS.get((op, what, runtime))
        print(f"{op} {what} on {runtime}: {reason}" + (f"   [known: {known}]" if known else ""))
    return 1 if unexplained(gaps) else 0


if __name__ == "__main__":
    sys.exit(main())
