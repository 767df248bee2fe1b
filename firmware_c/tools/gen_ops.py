#!/usr/bin/env python3
"""Write edge_ops_generated.c: the C runtime's op table.

    gen_ops.py OUT.c [--kernels DIR] [--model M.tflite ...]
    gen_ops.py --schema-ops firmware_c/include/edge_ops.def   # regenerate the op-code list from the schema
    gen_ops.py --python edge_sdk/runtime/op_table_c.py        # regenerate the op table's C side
    gen_ops.py --facts firmware_c/include/edge_op_facts.h     # the op table rows' facts the C planner reads

Every kernel file firmware_c/src/kernels/*.c registers its ops with lines the C preprocessor ignores:

    EDGE_KERNEL(FULLY_CONNECTED, fully_connected, 13, "FLOAT32 INT8 INT16", "INT8 weights")
        -> edge_prepare_fully_connected / edge_eval_...; the tensor types prepare takes; key constraints
    EDGE_CUSTOM_KERNEL("SignalWindow", signal_window, 1, "INT16", "")
    EDGE_KERNEL_RESET(signal_window)                         -> edge_reset_signal_window (optional)

(include/edge_kernel.h documents the fields: the types are TensorType names of edge_types.def, of the node's
first non-handle input unless "input N: " says which, or NONE; "INT16/INT8" is a data type with its weights'
type, input 1.)
A line that starts a registration but does not match that grammar exactly (an unquoted custom code, a
missing version, the old form without types and constraints, an unknown type name) is an error naming the
file and line: every reader of the registrations (this tool, the
op table's C side edge_sdk/runtime/op_table_c.py written by --python, `edge flash`'s kernel selection, the
README's ops table) goes through ``scan`` here, so they cannot disagree.

Without --model the table lists every registered kernel (the host library). With --model it lists only
the ops those models use, so a firmware links nothing else. The list of kernels is printed with
--list (one "OP max_version file" per line) for tools that need to know what the C runtime has.
--type-defs --model M ... prints the type build switches for those models: -DEDGE_WITH_FLOAT32=0 when no
tensor of theirs is FLOAT32, -DEDGE_WITH_INT16=0 likewise (include/edge_kernel.h; kernels then refuse such
nodes at load and their unused paths are not compiled in), as TFLM's per-type kernel registrations do.
--facts goes the other way: it writes the graph facts of edge_sdk/runtime/op_table.py's rows that the C runtime
reads (family, effects, in-place and patch rules, the subgraphs a control-flow op runs) as a C table, so
edge.c keeps no list of op names (it imports the op table: run it from a checkout).
Otherwise standalone: needs only the Python standard library (the --model parse reads operator codes with a
small bounds-checked flatbuffer walk; the C loader verifies the model properly at run time).
"""

from __future__ import annotations

import argparse
import re
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNELS = HERE.parent / "src" / "kernels"
OPS_DEF = HERE.parent / "include" / "edge_ops.def"

_STR = r'\s*,\s*"([^"\\]*)"'
_KERNEL = re.compile(r"EDGE_KERNEL\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\d+)" + _STR + _STR + r"\s*\)")
_CUSTOM = re.compile(r'EDGE_CUSTOM_KERNEL\(\s*"([^"\\]+)"\s*,\s*(\w+)\s*,\s*(\d+)' + _STR + _STR + r"\s*\)")
_RESET = re.compile(r"EDGE_KERNEL_RESET\(\s*(\w+)\s*\)")
_START = re.compile(r"^\s*(EDGE_KERNEL_RESET|EDGE_CUSTOM_KERNEL|EDGE_KERNEL)\s*\(")
_GRAMMAR = {"EDGE_KERNEL": (_KERNEL, 'EDGE_KERNEL(OP, c_name, max_version, "TYPES", "constraints")'),
            "EDGE_CUSTOM_KERNEL": (_CUSTOM, 'EDGE_CUSTOM_KERNEL("CustomCode", c_name, max_version, "TYPES", '
                                            '"constraints")'),
            "EDGE_KERNEL_RESET": (_RESET, "EDGE_KERNEL_RESET(c_name)")}
_OPDEF = re.compile(r"^EDGE_OP\((\w+), (\d+)\)", re.M)
TYPES_DEF = HERE.parent / "include" / "edge_types.def"
_TYPEDEF = re.compile(r"^EDGE_TYPE\((\w+),\s*(\d+),\s*(\d+)\)", re.M)
_INPUT = re.compile(r"^input (\d+):\s*")
NO_DTYPE = "NONE"  # a node without a data tensor (VAR_HANDLE, CALL_ONCE): targets.profiles.NO_DTYPE


def type_names() -> list[str]:
    """The TensorType names of include/edge_types.def (schema order)."""
    return [m.group(1) for m in _TYPEDEF.finditer(TYPES_DEF.read_text())]


def parse_types(text: str, where: str) -> tuple[int, tuple[str, ...]]:
    """A registration's types field -> (data input index, -1 = the first non-handle input; type names)."""
    m = _INPUT.match(text)
    data_input = int(m.group(1)) if m else -1
    names = tuple(text[m.end():].split() if m else text.split())
    known = set(type_names()) | {NO_DTYPE}
    bad = [part for n in names for part in n.split("/", 1) if part not in known]
    if not names or bad:
        raise RegistrationError(f"{where}: types {text!r}: " + (f"unknown type {bad[0]!r} (edge_types.def names)"
                                                               if bad else "no type listed"))
    if len(set(names)) != len(names):
        raise RegistrationError(f"{where}: types {text!r} lists a type twice")
    return data_input, names


def op_codes() -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in _OPDEF.finditer(OPS_DEF.read_text())}


class RegistrationError(ValueError):
    """A malformed registration line (the message names the file and line)."""


def registrations(text: str, where: str = "<text>") -> list[tuple[str, tuple[str, ...]]]:
    """Every registration line of one kernel file's text: (macro, groups) in order. A line starting (after
    spaces) with EDGE_KERNEL( / EDGE_CUSTOM_KERNEL( / EDGE_KERNEL_RESET( must match its grammar in full;
    otherwise RegistrationError "FILE:LINE: ..." (never a silently dropped kernel)."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _START.match(line)
        if not m:
            continue
        macro = m.group(1)
        regex, grammar = _GRAMMAR[macro]
        full = regex.match(line.strip())
        rest = line.strip()[full.end():].strip() if full else ""
        if not full or (rest and not rest.startswith(("//", "/*", ";"))):
            raise RegistrationError(f"{where}:{lineno}: malformed kernel registration {line.strip()!r} "
                                    f"(expected {grammar}: see include/edge_kernel.h)")
        groups = full.groups()
        if macro != "EDGE_KERNEL_RESET":
            parse_types(groups[3], f"{where}:{lineno}")
        out.append((macro, groups))
    return out


def scan(kernels: Path = KERNELS) -> list[dict]:
    """Registered kernels: dicts with op (name), code, custom (str or None), name, max_version, reset, file,
    types (type names), data_input (-1: the first non-handle input), constraints."""
    codes = op_codes()
    rows = []
    for path in sorted(Path(kernels).glob("*.c")):
        regs = registrations(path.read_text(encoding="utf-8", errors="replace"), str(path))
        resets = {g[0] for macro, g in regs if macro == "EDGE_KERNEL_RESET"}
        for macro, g in regs:
            if macro == "EDGE_KERNEL":
                op, name, ver, types, constraints = g
                if op not in codes:
                    raise RegistrationError(f"{path}: EDGE_KERNEL names unknown op {op}")
                data_input, names = parse_types(types, str(path))
                rows.append(dict(op=op, code=codes[op], custom=None, name=name, max_version=int(ver),
                                 reset=name in resets, file=path.name, types=names, data_input=data_input,
                                 constraints=constraints))
        for macro, g in regs:
            if macro == "EDGE_CUSTOM_KERNEL":
                custom, name, ver, types, constraints = g
                data_input, names = parse_types(types, str(path))
                rows.append(dict(op="CUSTOM", code=codes["CUSTOM"], custom=custom, name=name, max_version=int(ver),
                                 reset=name in resets, file=path.name, types=names, data_input=data_input,
                                 constraints=constraints))
    return rows


def kernel_versions(rows: list[dict]) -> dict[str, int]:
    """{op name (custom code for custom ops): highest registered version}."""
    out: dict[str, int] = {}
    for r in rows:
        key = r["custom"] or r["op"]
        out[key] = max(out.get(key, 0), r["max_version"])
    return out


def render_python(rows: list[dict]) -> str:
    """edge_sdk/runtime/op_table_c.py: the op table's C side, as data."""
    lines = ['"""GENERATED by firmware_c/tools/gen_ops.py --python from the EDGE_KERNEL registrations of',
             'firmware_c/src/kernels/*.c: the C runtime\'s kernels (do not edit; tests/test_op_table_c.py fails when',
             'this file and the C sources disagree)."""', "",
             "# op name (custom code for custom ops) -> (highest version, kernel file)",
             "C_KERNELS: dict[str, tuple[int, str]] = {"]
    seen: dict[str, tuple[int, str]] = {}
    for r in rows:
        key = r["custom"] or r["op"]
        if key not in seen or r["max_version"] > seen[key][0]:
            seen[key] = (r["max_version"], r["file"])
    for key in sorted(seen):
        lines.append(f"    {key!r}: ({seen[key][0]}, {seen[key][1]!r}),")
    lines.append("}")
    lines.append("")
    lines.append("# op name -> (the tensor types its prepare takes, the input they are of (-1: the first non-handle")
    lines.append("# input, as targets.profiles.node_dtype), key constraints): the EDGE_KERNEL line's last fields")
    lines.append("C_TYPES: dict[str, tuple[tuple[str, ...], int, str]] = {")
    best = {}
    for r in rows:
        key = r["custom"] or r["op"]
        if key not in best or r["max_version"] > best[key]["max_version"]:
            best[key] = r
    for key in sorted(best):
        r = best[key]
        lines.append(f"    {key!r}: ({tuple(r['types'])!r}, {r['data_input']}, {r['constraints']!r}),")
    lines.append("}")
    lines.append("")
    lines.append("# the C build's type switches (include/edge_kernel.h): tensor type -> macro")
    lines.append("TYPE_SWITCHES: dict[str, str] = {")
    for t, (_, macro) in TYPE_SWITCHES.items():
        lines.append(f"    {t!r}: {macro!r},")
    lines.append("}")
    return "\n".join(lines) + "\n"


class _Flat:
    """A small bounds-checked reader of a .tflite's flatbuffer tables (enough for op codes and tensor types)."""

    def __init__(self, path: str):
        self.path = path
        self.b = Path(path).read_bytes()
        if self.b[4:8] != b"TFL3":
            raise SystemExit(f"{path}: not a TFLite file")

    def _check(self, p: int, size: int) -> None:
        if p < 0 or p + size > len(self.b):
            raise SystemExit(f"{self.path}: not a valid TFLite file (offset {p})")

    def u32(self, p: int) -> int:
        self._check(p, 4)
        return struct.unpack_from("<I", self.b, p)[0]

    def table(self, p: int):
        self._check(p, 4)
        vt = p - struct.unpack_from("<i", self.b, p)[0]
        self._check(vt, 4)
        vsize = struct.unpack_from("<H", self.b, vt)[0]
        return p, vt, (vsize - 4) // 2

    def field(self, t, slot: int) -> int:
        """The field's offset within table t (0: absent)."""
        p, vt, nslots = t
        if slot >= nslots:
            return 0
        self._check(vt + 4 + 2 * slot, 2)
        return struct.unpack_from("<H", self.b, vt + 4 + 2 * slot)[0]

    def scalar(self, t, slot: int, fmt: str, default: int = 0) -> int:
        off = self.field(t, slot)
        if not off:
            return default
        self._check(t[0] + off, struct.calcsize(fmt))
        return struct.unpack_from(fmt, self.b, t[0] + off)[0]

    def tables(self, t, slot: int) -> list:
        """The tables of a vector-of-tables field ([] when absent)."""
        off = self.field(t, slot)
        if not off:
            return []
        vec = t[0] + off + self.u32(t[0] + off)
        out = []
        for i in range(self.u32(vec)):
            e = vec + 4 + 4 * i
            out.append(self.table(e + self.u32(e)))
        return out

    def string(self, t, slot: int) -> str | None:
        off = self.field(t, slot)
        if not off:
            return None
        sp = t[0] + off
        sp += self.u32(sp)
        n = self.u32(sp)
        self._check(sp + 4, n)
        return self.b[sp + 4: sp + 4 + n].decode("utf-8", "replace")

    def model(self):
        return self.table(self.u32(0))


def model_ops(path: str) -> set[tuple[int, str | None]]:
    """(builtin code, custom code) pairs of a .tflite's operator codes."""
    f = _Flat(path)
    out = set()
    for t in f.tables(f.model(), 1):  # Model.operator_codes
        dep = f.scalar(t, 0, "<b")  # deprecated_builtin_code
        builtin = f.scalar(t, 3, "<i")  # builtin_code
        code = max(dep, builtin)
        out.add((code, f.string(t, 1) if code == 32 else None))
    return out


# TensorType codes (schema.fbs) the build switches of include/edge_kernel.h are about
TYPE_SWITCHES = {"FLOAT32": (0, "EDGE_WITH_FLOAT32"), "INT16": (7, "EDGE_WITH_INT16")}


def model_types(path: str) -> set[int]:
    """The TensorType codes of every tensor of every subgraph (Tensor.type; absent = 0, FLOAT32)."""
    f = _Flat(path)
    return {f.scalar(t, 1, "<b") for sg in f.tables(f.model(), 2) for t in f.tables(sg, 0)}


def type_defines(paths: list[str]) -> list[str]:
    """-DEDGE_WITH_<T>=0 for each switchable type no tensor of these models has (a build for exactly them);
    [] without models (a build for any model keeps every type)."""
    if not paths:
        return []
    used = set()
    for p in paths:
        used |= model_types(p)
    return [f"-D{macro}=0" for code, macro in TYPE_SWITCHES.values() if code not in used]


def _ints(f: _Flat, t, slot: int) -> list[int]:
    """A vector-of-int32 field ([] when absent)."""
    off = f.field(t, slot)
    if not off:
        return []
    vec = t[0] + off + f.u32(t[0] + off)
    n = f.u32(vec)
    f._check(vec + 4, 4 * n)
    return list(struct.unpack_from(f"<{n}i", f.b, vec + 4))


def _layers(path: str):
    """(builtin code, [input tensor shapes], [output tensor shapes]) of every operator of every subgraph (a missing
    tensor: [])."""
    f = _Flat(path)
    m = f.model()
    codes = [max(f.scalar(t, 0, "<b"), f.scalar(t, 3, "<i")) for t in f.tables(m, 1)]  # Model.operator_codes
    for sg in f.tables(m, 2):  # Model.subgraphs
        tensors = f.tables(sg, 0)
        for op in f.tables(sg, 3):  # SubGraph.operators: opcode_index 0, inputs 1
            idx = f.scalar(op, 0, "<I")
            shapes = [[_ints(f, tensors[i], 0) if 0 <= i < len(tensors) else [] for i in _ints(f, op, slot)]
                      for slot in (1, 2)]  # Operator.inputs, Operator.outputs
            yield (codes[idx] if idx < len(codes) else -1, shapes[0], shapes[1])


def _narrow_conv(shapes, _outs) -> bool:
    """A CONV_2D whose filter depth (input channels per group) is not a multiple of four, or a filter this scan cannot
    read: the layers conv_2d.c's staged im2col is for."""
    w = shapes[1] if len(shapes) > 1 else []
    return len(w) != 4 or w[3] % 4 != 0


def _dw_3x3_m1(shapes, _outs) -> bool:
    """A DEPTHWISE_CONV_2D with a 3x3 filter and as many output channels as input channels (or shapes this scan
    cannot read): the layers whose inside windows depthwise_conv_2d.c's dw_run3x3_pairs may run."""
    x, w = (shapes[0], shapes[1]) if len(shapes) > 1 else ([], [])
    return len(x) != 4 or len(w) != 4 or (w[1] == 3 and w[2] == 3 and w[3] == x[3])


def _dw_5x5_m1(shapes, _outs) -> bool:
    """A DEPTHWISE_CONV_2D with a 5x5 filter and as many output channels as input channels (or shapes this scan
    cannot read): the layers depthwise_conv_2d.c's 5x5 copy (DW_5X5) runs."""
    x, w = (shapes[0], shapes[1]) if len(shapes) > 1 else ([], [])
    return len(x) != 4 or len(w) != 4 or (w[1] == 5 and w[2] == 5 and w[3] == x[3])


def _dw_column_m1(shapes, _outs) -> bool:
    """A DEPTHWISE_CONV_2D with a kh x 1 filter and as many output channels as input channels (or shapes this scan
    cannot read): the layers depthwise_conv_2d.c's column copy runs (hey_jarvis's 5x1 .. 21x1)."""
    x, w = (shapes[0], shapes[1]) if len(shapes) > 1 else ([], [])
    return len(x) != 4 or len(w) != 4 or (w[2] == 1 and w[3] == x[3])


def _rank4_reduce(shapes, _outs) -> bool:
    """A MEAN / SUM of a rank-4 input (or one this scan cannot read): the layers that may be int8 pools over H, W
    (mean.c's mean_hw_q8; the axes and types are not read here)."""
    return not shapes or len(shapes[0]) in (0, 4)


# The smallest lone pixels (filter values: output channels x window) and int8 SOFTMAX row that keep their M4 paths in
# a per-model firmware (QEMU M4 instructions, -icount shift=0, measured 2026-12-05 on person_detect and hey_jarvis).
CONV_LONE_MIN_MACS = 1024  # a layer of one output pixel: the pair with itself doubles the whole layer
CONV_LONE_ODD_MIN_MACS = 1 << 17  # the last pixel of an odd map: ~0.8 instructions a value (~100 K at this size)
CONV_LONE_MIN_SHARE = 0.02  # or odd maps' last pixels holding this share of the model's MACs (~0.75% of an invoke)
SOFTMAX_DSP_MIN_ROW = 4
POOL_DSP_MIN_VALUES = 4096  # an int8 pool's input values: below, ~15 instructions a value saved are < 60 K
POOL_DSP_MIN_SHARE = 0.01  # or pools reading this many values per MAC of the model (a pool-heavy small net)


def _lone_conv_pixel(shapes, outs) -> bool:
    """A CONV_2D whose output has a lone last pixel big enough for conv_2d.c's lone-pixel GEMV (conv_lone_pixel, ~800 B
    on the M4; else the pixel runs as a pair with itself, its MACs done twice), or shapes this scan cannot read: one
    output pixel (a streaming net's [1, T, 1, C] -> [1, 1, 1, O] step: hey_jarvis's 1800..6000 values, 10-20% of its
    invoke) with at least CONV_LONE_MIN_MACS filter values, or an odd map with at least CONV_LONE_ODD_MIN_MACS
    (mobilenet_v2's 7x7 maps: up to 409,600), or a model whose odd maps' last pixels are a large enough share of its
    MACs (_lone_pixels_share). Not person_detect's: its 2 x 256 head and the last pixel of its two
    3x3 maps (32,768 and 65,536 values) are 80,880 of its 15.3 M instructions (+0.53% without the GEMV), and with the
    GEMV its M4 runtime was 33,177 B, over the 32 KB goal."""
    w = shapes[1] if len(shapes) > 1 else []
    y = outs[0] if outs else []
    if len(w) != 4 or len(y) != 4:
        return True
    pixels, values = y[1] * y[2], w[0] * w[1] * w[2] * w[3]
    return (pixels == 1 and values >= CONV_LONE_MIN_MACS) or (pixels % 2 == 1 and values >= CONV_LONE_ODD_MIN_MACS)


def _macs(code: int, shapes, outs) -> int:
    """A CONV_2D's, DEPTHWISE_CONV_2D's or FULLY_CONNECTED's multiply-accumulates (0 for other layers and shapes this
    scan cannot read)."""
    w = shapes[1] if len(shapes) > 1 else []
    y = outs[0] if outs else []
    if not w or not y or code not in (3, 4, 9):
        return 0
    n = 1
    for d in y:
        n *= d
    return n * (w[1] * w[2] * (w[3] if code == 3 else 1) if code in (3, 4) and len(w) == 4 else w[-1])


def _lone_pixels_share(layers) -> bool:
    """One model's layers (_layers): its CONV_2D odd maps' last pixels (filter values each; a one-pixel layer is
    _lone_conv_pixel's) hold CONV_LONE_MIN_SHARE of its MACs or more. Run as pairs with themselves they cost ~0.8
    instructions a value again where the model costs ~1.6-2.2 a MAC (QEMU M4): tcn_window's five 23- and 47-pixel
    maps, 2.8%: +17,680 of 1,391,000 instructions (+1.3%) without the GEMV; person_detect's two 3x3 maps, 1.4% (with
    its head: +80,720 of 15,308,000, +0.5%)."""
    lone = total = 0
    for code, shapes, outs in layers:
        total += _macs(code, shapes, outs)
        w = shapes[1] if len(shapes) > 1 else []
        y = outs[0] if outs else []
        if code == 3 and len(w) == 4 and len(y) == 4 and y[1] * y[2] > 1 and (y[1] * y[2]) % 2 == 1:
            lone += w[0] * w[1] * w[2] * w[3]
    return total > 0 and lone >= CONV_LONE_MIN_SHARE * total


def _long_softmax_row(shapes, _outs) -> bool:
    """A SOFTMAX whose rows (the last axis) hold at least SOFTMAX_DSP_MIN_ROW values, or a shape this scan cannot read:
    the layers softmax.c's DSP rows (softmax_int8_eval_dsp: a per-invoke table of the input's range or each exp
    once, ~710 B on the M4) are kept for. Shorter rows run softmax_int8_row (the same SMMLAR exp and reciprocal, a
    short row's exps kept): no slower there (QEMU M4 SOFTMAX: person_detect [1, 2] 720 -> 680 instructions,
    keyword_scrambled_8bit [1, 2] 520 == 520, micro_speech_lstm [1, 3] 800 == 800)."""
    x = shapes[0] if shapes else []
    return not x or x[-1] >= SOFTMAX_DSP_MIN_ROW


def _large_pool(shapes, _outs) -> bool:
    """An AVERAGE_POOL_2D / MAX_POOL_2D with at least POOL_DSP_MIN_VALUES input values, or a shape this scan cannot
    read: the layers pooling.c's DSP pools (pool_int8_dsp: four int8 channels a word, ~560 B on the M4) are kept
    for. A smaller pool runs pool_int (~20 instructions a value against ~5: person_detect's 3 x 3 x 256 average,
    2,304 values, ~35 K of its 15.4 M instructions, is not worth the bytes under its 32 KB aim)."""
    x = shapes[0] if shapes else []
    n = 1
    for v in x:
        n *= max(int(v), 1)
    return not x or n >= POOL_DSP_MIN_VALUES


def _pool_share(layers) -> bool:
    """One model's layers (_layers): its pools' input values add up to POOL_DSP_MIN_SHARE of its MACs or more (or it
    has pools and no MACs). Each value costs ~15 instructions more in pool_int than in the DSP pools where the model
    costs ~1.5-2.5 a MAC: a small pool-heavy net (elem_kws_pool_16: AVERAGE_POOL_2D 263 K -> 608 K instructions,
    0.56x -> 1.22x TFLM + CMSIS-NN without them) keeps them; person_detect (2,304 values, 0.03% of its MACs) not."""
    pools = total = 0
    for code, shapes, outs in layers:
        total += _macs(code, shapes, outs)
        if code in (1, 17):
            n = 1
            for v in (shapes[0] if shapes else []):
                n *= max(int(v), 1)
            pools += n
    return pools > 0 and pools >= POOL_DSP_MIN_SHARE * total


# kernel fast paths a per-model build may leave out: macro -> (builtin codes, the layer test that needs it)
PATH_SWITCHES = {"EDGE_WITH_CONV_STAGED": ((3,), _narrow_conv), "EDGE_WITH_DW_PAIRS": ((4,), _dw_3x3_m1),
                 "EDGE_WITH_DW_5X5": ((4,), _dw_5x5_m1), "EDGE_WITH_DW_COLUMN": ((4,), _dw_column_m1),
                 "EDGE_WITH_MEAN_HW": ((40, 74), _rank4_reduce), "EDGE_WITH_CONV_LONE": ((3,), _lone_conv_pixel),
                 "EDGE_WITH_SOFTMAX_DSP": ((25,), _long_softmax_row), "EDGE_WITH_POOL_DSP": ((1, 17), _large_pool)}
# and a model-level test (one model's layers) that keeps a path too
MODEL_SWITCHES = {"EDGE_WITH_CONV_LONE": _lone_pixels_share, "EDGE_WITH_POOL_DSP": _pool_share}


def path_defines(paths: list[str]) -> list[str]:
    """Kernel fast-path switches for a build for exactly these models: -D<macro>=0 compiles out a fast path no layer
    of theirs takes (the general path it stands beside stays: a build without it runs every layer, slower).
    PATH_SWITCHES: conv_2d.c's staged im2col of narrow windows and its lone-pixel GEMV, depthwise_conv_2d.c's two-pixel
    3x3 runs and its 5x5 and column copies, mean.c's int8 pools over H, W (MEAN / SUM), softmax.c's DSP rows,
    pooling.c's DSP pools. [] without models."""
    if not paths:
        return []
    models = [list(_layers(p)) for p in paths]
    layers = [layer for m in models for layer in m]
    return [f"-D{macro}=0" for macro, (codes, needs) in PATH_SWITCHES.items()
            if not any(c in codes and needs(ins, outs) for c, ins, outs in layers)
            and not any(MODEL_SWITCHES.get(macro, lambda _m: False)(m) for m in models)]


def build_defines(paths: list[str]) -> list[str]:
    """A per-model firmware's switches (edge flash, make size): type_defines, then path_defines."""
    return type_defines(paths) + path_defines(paths)


def plan_defines(memory_min: bool, patch: bool) -> list[str]:
    """A firmware's init switches for the arena plan it initialises with (edge flash; make size: the layer plan, edge
    flash's default): no loader-and-planner-only run on a board (EDGE_WITH_PLAN_ONLY=0: edge check's, on the host),
    the least-RAM request's planner tiers and kernel forms only for a firmware that asks for it (EDGE_INIT_MEMORY_MIN:
    --memory inplace / min), the patch stage's code only with a stage (include/edge_kernel.h)."""
    return (["-DEDGE_WITH_PLAN_ONLY=0"] + ([] if memory_min else ["-DEDGE_WITH_MEMORY_MIN=0"])
            + ([] if patch else ["-DEDGE_WITH_PATCH=0"]))


def render(rows: list[dict], check: bool = False) -> str:
    """The op table's C source. ``check``: the table of `edge check`'s runner (host/edge_run.c --plan
    --all-refusals): every prepare goes through edge_check_prepared (a refusal is recorded and the next node
    prepared, so one run names every refused node), and every builtin op without a kernel gets a row whose
    prepare records that refusal (the loader refuses a custom op without a kernel as before)."""
    lines = [
        "/* GENERATED by firmware_c/tools/gen_ops.py: the op table (do not edit). */",
        '#include "edge_kernel.h"',
        "",
    ]
    if check:
        lines.append("edge_status_t edge_check_prepared(edge_node_t *node, edge_ctx_t *ctx, edge_status_t s);")
        lines.append("edge_status_t edge_check_no_kernel(edge_node_t *node, edge_ctx_t *ctx);")
        lines.append("void edge_check_no_eval(const edge_node_t *node, edge_ctx_t *ctx);")
    for r in rows:
        lines.append(f"edge_status_t edge_prepare_{r['name']}(edge_node_t *node, edge_ctx_t *ctx);")
        lines.append(f"void edge_eval_{r['name']}(const edge_node_t *node, edge_ctx_t *ctx);")
        if r["reset"]:
            lines.append(f"void edge_reset_{r['name']}(const edge_node_t *node, edge_ctx_t *ctx);")
        if check:
            lines.append(f"static edge_status_t check_prepare_{r['name']}(edge_node_t *node, edge_ctx_t *ctx) "
                         f"{{ return edge_check_prepared(node, ctx, edge_prepare_{r['name']}(node, ctx)); }}")
    lines.append("")
    lines.append("const edge_kernel_t edge_kernels[] = {")
    for r in rows:
        custom = f'"{r["custom"]}"' if r["custom"] else "0"
        reset = f"edge_reset_{r['name']}" if r["reset"] else "0"
        prepare = f"check_prepare_{r['name']}" if check else f"edge_prepare_{r['name']}"
        lines.append(f"    {{{r['code']}, {r['max_version']}, {custom}, {prepare}, "
                     f"edge_eval_{r['name']}, {reset}}}, /* {r['op']} */")
    n_rows = len(rows)
    if check:  # after the real rows: find_kernel takes the first row that matches
        for name, code in sorted(op_codes().items(), key=lambda kv: kv[1]):
            if name != "CUSTOM":
                lines.append(f"    {{{code}, 0xffff, 0, edge_check_no_kernel, edge_check_no_eval, 0}}, /* {name} */")
                n_rows += 1
    if not n_rows:
        lines.append("    {0, 0, 0, 0, 0, 0}")
    lines.append("};")
    lines.append(f"const int32_t edge_kernel_count = {n_rows};")
    return "\n".join(lines) + "\n"


FACTS_H = HERE.parent / "include" / "edge_op_facts.h"
KERNEL_H = HERE.parent / "include" / "edge_kernel.h"


def _c_name(value: str) -> str:
    return (value or "none").upper()


def _window_options(name: str, kernel_h: str) -> tuple[str, int, int]:
    """A conv-family row's options as edge_conv_opts reads them (firmware_c/src/edge_conv.h): (EDGE_OPTS_<table>,
    the field id of fused_activation_function, of dilation_w_factor or -1 without dilations), from the schema.
    RegistrationError when padding / stride_w / stride_h are not its fields 0..2 or dilation_h_factor does not
    follow dilation_w_factor (edge_conv_opts reads them there)."""
    from edge_sdk.model import schema
    from edge_sdk.model.writer import options_for

    table = options_for(name)
    ids = {f[0]: f[3] for f in schema.TABLES.get(table or "", ())}
    act, dil = ids.get("fused_activation_function"), ids.get("dilation_w_factor", -1)
    if ([ids.get(f) for f in ("padding", "stride_w", "stride_h")] != [0, 1, 2] or act is None
            or (dil >= 0 and ids.get("dilation_h_factor") != dil + 1)):
        raise RegistrationError(f"op_table row {name}: {table} is not laid out as edge_conv_opts reads it")
    if not re.search(rf"\bEDGE_OPTS_{table}\s*=", kernel_h):
        raise RegistrationError(f"op_table row {name}: EDGE_OPTS_{table} is not in include/edge_kernel.h")
    return f"EDGE_OPTS_{table}", act, dil


def render_facts() -> str:
    """include/edge_op_facts.h: the op table rows' facts the C planner reads, one line per builtin op having an
    in-place rule, a patch rule, effects or a pad_fold role (any other op: all zero). Raises RegistrationError when
    a custom op's row has such a fact (the table is by builtin code), when a control-flow op's subgraph fields are
    not fields of its options table or more than two (edge.c's callees reads them at the field ids written here) or
    its options code is not in edge_kernel.h."""
    if str(HERE.parent.parent) not in sys.path:
        sys.path.insert(0, str(HERE.parent.parent))
    from edge_sdk.model import schema
    from edge_sdk.model.writer import options_for
    from edge_sdk.runtime import op_table

    codes = op_codes()
    kernel_h = KERNEL_H.read_text()
    enums = [("OpRow.family", "FAMILY", op_table.FAMILIES), ("OpRow.effects", "EFFECTS", op_table.EFFECTS),
             ("OpRow.inplace", "INPLACE", op_table.INPLACE_RULES), ("OpRow.patch", "PATCH", op_table.PATCH_RULES),
             ("OpRow.pad_fold", "PAD_FOLD", op_table.PAD_FOLD_RULES)]
    lines = ["/* GENERATED by firmware_c/tools/gen_ops.py --facts from edge_sdk/runtime/op_table.py: do not edit",
             " * (tests/test_op_facts.py fails when this file and the op table's rows disagree).",
             " *",
             " * The graph facts of the op table's rows that the C runtime reads (edge.c: the least-RAM plan's",
             " * in-place rule, the ops a patch stage runs, the subgraphs a control-flow op runs, which PAD folds into",
             " * which window op, a conv's options), one row per builtin op with an in-place rule, a patch rule,",
             " * effects or a pad_fold role; every other op has none (edge_op_facts() answers all zero).",
             " * The OpRow comments in op_table.py say what each value means. */",
             "#ifndef EDGE_OP_FACTS_H", "#define EDGE_OP_FACTS_H", "", '#include "edge_kernel.h"', ""]
    for field, prefix, values in enums:
        lines.append(f"/* {field}: {', '.join(repr(v) for v in values)} */")
        lines.append("enum {")
        row = "   "
        for v in values:
            name = f" EDGE_{prefix}_{_c_name(v)},"
            if len(row) + len(name) > 112:
                lines.append(row)
                row = "   "
            row += name
        lines += [row, "};"]
    lines += ["",
              "typedef struct {",
              "    uint16_t op;             /* builtin code (EDGE_OP_...) */",
              "    uint8_t family, effects; /* EDGE_FAMILY_..., EDGE_EFFECTS_... */",
              "    uint8_t inplace, patch;  /* EDGE_INPLACE_..., EDGE_PATCH_... */",
              "    uint8_t pad_fold;        /* EDGE_PAD_FOLD_...: a PAD that folds, a window op it folds into */",
              "    uint8_t callees;         /* a control-flow op: how many subgraph indices its options hold */",
              "    uint8_t callee_options;  /* ... in this options table (EDGE_OPTS_..., or EDGE_OPTS2_... of",
              "                              * builtin_options_2 when callee_options2; EDGE_OPTS_NONE: none) */",
              "    uint8_t callee_options2; /* 1: the table is a BuiltinOptions2 member (StableHLO ops) */",
              "    uint8_t callee_slot[2];  /* ... at these field ids of the table (the row's subgraphs fields) */",
              "    uint8_t conv_options;    /* family conv: its options table (EDGE_OPTS_...) as edge_conv_opts reads",
              "                              * it: padding, strides at fields 0..2, ... */",
              "    int8_t conv_slot[2];     /* ... the activation, dilation_w at these field ids (-1: no dilations) */",
              "} edge_op_facts_t;",
              "",
              "static const edge_op_facts_t edge_op_facts_rows[] = {"]
    for name, r in sorted(op_table.ROWS.items(), key=lambda kv: codes.get(kv[0], -1)):
        if not (r.inplace or r.patch or r.effects or r.pad_fold):
            continue
        if r.custom or name not in codes:
            raise RegistrationError(f"op_table row {name}: a custom op with a fact the C runtime reads by op code")
        opts, options2, slots = "EDGE_OPTS_NONE", 0, []
        if r.subgraphs:
            table = options_for(name)
            slots = [next((f[3] for f in schema.TABLES.get(table, ()) if f[0] == field), None)
                     for field in r.subgraphs]
            if None in slots or len(slots) > 2:
                raise RegistrationError(f"op_table row {name}: subgraphs {r.subgraphs} are not fields of {table}, "
                                        "or more than 2 (edge.c's callees)")
            options2 = int(table in schema.UNIONS["BuiltinOptions2"].values())
            opts = f"EDGE_OPTS{'2' if options2 else ''}_{table}"
            if not re.search(rf"\b{opts}\s*=", kernel_h):
                raise RegistrationError(f"op_table row {name}: {opts} is not in include/edge_kernel.h")
        slots += [0] * (2 - len(slots))
        window = _window_options(name, kernel_h) if r.family == "conv" else ("EDGE_OPTS_NONE", 0, 0)
        lines.append(f"    {{EDGE_OP_{name}, EDGE_FAMILY_{_c_name(r.family)}, EDGE_EFFECTS_{_c_name(r.effects)}, "
                     f"EDGE_INPLACE_{_c_name(r.inplace)}, EDGE_PATCH_{_c_name(r.patch)}, "
                     f"EDGE_PAD_FOLD_{_c_name(r.pad_fold)}, {len(r.subgraphs)}, "
                     f"{opts}, {options2}, {{{slots[0]}, {slots[1]}}}, {window[0]}, {{{window[1]}, {window[2]}}}}},")
    lines += ["};", "", "#endif"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--kernels", default=str(KERNELS))
    ap.add_argument("--model", action="append", default=[])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--check", action="store_true",
                    help="the table of edge check's runner: every refused prepare recorded (host/edge_run.c)")
    ap.add_argument("--type-defs", action="store_true",
                    help="print the -DEDGE_WITH_<TYPE>=0 switches for the --model files (nothing without models)")
    ap.add_argument("--schema-ops", metavar="EDGE_OPS_DEF")
    ap.add_argument("--python", metavar="OP_TABLE_C_PY",
                    help="write the op table's C side (edge_sdk/runtime/op_table_c.py) from the registrations")
    ap.add_argument("--facts", metavar="EDGE_OP_FACTS_H",
                    help="write the op table rows' facts the C runtime reads (include/edge_op_facts.h)")
    a = ap.parse_args(argv)
    if a.facts:
        try:
            text = render_facts()
        except RegistrationError as exc:
            sys.stderr.write(f"gen_ops.py: {exc}\n")
            return 1
        out = Path(a.facts)
        if not out.exists() or out.read_text() != text:
            out.write_text(text)
        return 0
    if a.schema_ops:
        sys.path.insert(0, str(HERE.parent.parent))
        from edge_sdk.model import schema

        rows = sorted(schema.BUILTIN_OPERATOR_CODES.items(), key=lambda kv: kv[1])
        text = ("/* GENERATED by firmware_c/tools/gen_ops.py from edge_sdk/model/schema.py: do not edit.\n"
                " * Every TFLite builtin operator code: EDGE_OP(NAME, code). */\n")
        text += "".join(f"EDGE_OP({name}, {code})\n" for name, code in rows)
        Path(a.schema_ops).write_text(text)
        return 0
    if a.type_defs:
        print(" ".join(type_defines(a.model)))
        return 0
    try:
        rows = scan(Path(a.kernels))
    except RegistrationError as exc:
        sys.stderr.write(f"gen_ops.py: {exc}\n")
        return 1
    if a.python:
        text = render_python(rows)
        out = Path(a.python)
        if not out.exists() or out.read_text() != text:
            out.write_text(text)
        return 0
    if a.list:
        for r in rows:
            print(r["custom"] or r["op"], r["max_version"], r["file"])
        return 0
    if a.model:
        used = set()
        for m in a.model:
            used |= model_ops(m)
        rows = [r for r in rows if (r["code"], r["custom"]) in used]
    if not a.out:
        ap.error("OUT.c is required")
    text = render(rows, check=a.check)
    out = Path(a.out)
    if not out.exists() or out.read_text() != text:  # keep the timestamp when nothing changed
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
