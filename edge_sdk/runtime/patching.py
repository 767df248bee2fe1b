"""Patch-based execution (MCUNetV2, Lin et al. 2021): the least-RAM plan's way past the layer-by-layer floor.

A *stage* is a run of consecutive nodes ``a..b`` of subgraph 0 that reads one whole tensor (the stage input,
usually the model input) and writes one whole tensor (the cut, node b's output), every other tensor it makes
being read only inside the stage. The cut's H x W is split into a grid of R x C patches (near-equal row and
column ranges). For each patch, going backwards node by node, every stage tensor gets the window (rows x
columns, clipped to the tensor) its readers need: a CONV_2D / DEPTHWISE_CONV_2D / pool output window
``[y0, y1)`` needs input rows ``y0 * s - pad .. (y1 - 1) * s + (k - 1) * d + 1 - pad``, a PAD shifts by its
leading padding, an elementwise op needs the same window of each input. Each patch then runs the same kernels
on those windows (``Node.window`` gives a window kernel its local padding and output size), writing its part
of the cut. Inside the stage only per-patch buffers exist (the largest window of each tensor over the
patches). Patches run column by column, top to bottom; with batch 1 (``carry``) a tensor's rows shared with
the patch row above are kept in its buffer (moved to its top) and its node computes only the rows below them,
so a window along H is what its readers' new rows need, and only the halos along W are recomputed
(``extra_macs``); the buffers that keep rows (``kept``) live through the whole stage.

The plan is data (``PatchPlan``): the stage's nodes, the grid, per tensor the row and column windows of every
patch row / column and the per-patch buffer bytes. ``choose`` enumerates stages (every run of patchable nodes
containing the in-place plan's busiest step) and grids (R, C in 1..8, |R - C| <= 1, not 1 x 1; with carry also
R up to 16 and any C: taller patches recompute nothing more) and keeps the plan with the smallest arena (ties:
fewest extra MACs, then the earlier candidate), only when it beats the plan without patches. Candidates are visited
by their lower bound, so only a few are planned in full. The planner's grid rule (planner.PATCH_GRID_RULE) may then
trade a little RAM for much less recompute (its instruction estimate: ``estimate``); the plan's ``why`` says which
grid and why.
"""

from __future__ import annotations

import copy
import hashlib
import math
import threading
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from edge_sdk.runtime import arena as _arena
from edge_sdk.errors import UnsupportedOpError
from edge_sdk.runtime import op_table

# The ops a stage may hold: every op whose op-table row has a ``patch`` rule ("window": a spatial window, Node.window
# in the kernels, edge_window_t in C; "pad": a shift of the window; "elementwise": as it is, every non-constant
# input of the output's shape, every constant broadcast along no spatial axis). Read from the rows, never listed.
PATCH_OPS = tuple(name for name, r in op_table.ROWS.items() if r.patch)
# what the C runtime's patch execution covers (firmware_c/src/edge.c, patch_setup): all of them, so both runtimes
# choose the same stages (its own name: the ops edge_sdk.runtime.c_interpreter checks a caller's patch_ops against)
C_PATCH_OPS = PATCH_OPS
MAX_GRID = 8
MAX_CARRY_ROWS = 16  # carry_grids: patch rows of a stage whose rows are kept (batch 1)
# the arena request key (subgraph, CUT_KEY) of the cut's window buffer: the last stage node writes its patch there,
# then it is copied into the cut (the C plan's entry with tensor == CUT_KEY)
CUT_KEY = -2


def grids(max_grid: int = MAX_GRID):
    """The grids ``choose`` tries, in order: R x C with R, C in 1..max_grid, |R - C| <= 1, not 1 x 1."""
    out = []
    for r in range(1, max_grid + 1):
        for c in range(max(1, r - 1), min(max_grid, r + 1) + 1):
            if (r, c) != (1, 1):
                out.append((r, c))
    return out


def carry_grids(max_rows: int = MAX_CARRY_ROWS, max_grid: int = MAX_GRID):
    """The grids ``choose`` tries besides ``grids()`` when patch rows keep their halo rows (batch 1: a taller grid
    recomputes nothing more along H, its windows are shorter): R in 1..max_rows, C in 1..max_grid, in order."""
    square = set(grids(max_grid))
    return [(r, c) for r in range(1, max_rows + 1) for c in range(1, max_grid + 1)
            if (r, c) != (1, 1) and (r, c) not in square]


def split(n: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` near-equal ranges covering [0, n): the first ``n % parts`` are one longer."""
    base, extra = divmod(n, parts)
    out, start = [], 0
    for k in range(parts):
        size = base + (1 if k < extra else 0)
        out.append((start, start + size))
        start += size
    return out


@dataclass(frozen=True)
class AxisRule:
    """How a node maps an output range to the input range it reads, along one spatial axis."""

    kind: str  # "window", "pad", "same"
    stride: int = 1
    effective: int = 1  # (k - 1) * d + 1
    pad: int = 0  # padding before (window) or leading pad (PAD)
    size: int = 0  # the input's extent along the axis

    def needs(self, lo: int, hi: int) -> tuple[int, int]:
        """Input range read for output range [lo, hi), clipped to the input."""
        if self.kind == "window":
            a, b = lo * self.stride - self.pad, (hi - 1) * self.stride + self.effective - self.pad
        elif self.kind == "pad":
            a, b = lo - self.pad, hi - self.pad
        else:
            a, b = lo, hi
        return max(a, 0), min(b, self.size)

    def local_pad(self, lo: int) -> int:
        """The window kernel's padding before for an output range starting at ``lo`` (>= 0), or a PAD's
        leading padding."""
        if self.kind == "window":
            return max(0, self.pad - lo * self.stride)
        if self.kind == "pad":
            return max(0, self.pad - lo)
        return 0


@dataclass
class StageNode:
    index: int
    op: str
    inputs: tuple[int, ...]  # non-constant spatial inputs (tensor indices), in input order
    output: int
    rules: tuple[AxisRule, AxisRule]  # H, W
    macs_per_pixel: int  # MACs per output (row, column) position


@dataclass
class PatchPlan:
    """A patch stage and its grid (see the module docstring). Windows are [lo, hi) in each tensor's own
    coordinates; ``rows[t][r]`` is tensor t's window along H in patch row r, ``cols[t][c]`` along W."""

    subgraph: int
    nodes: tuple[int, ...]
    input: int  # the stage input tensor (whole)
    output: int  # the cut tensor (whole)
    grid: tuple[int, int]
    stage: list[StageNode]
    rows: dict[int, list[tuple[int, int]]]
    cols: dict[int, list[tuple[int, int]]]
    buffer_bytes: dict[int, int]  # per stage tensor but the input: its per-patch buffer (largest window); the
    # cut's is the window buffer its patches go through (CUT_KEY), the others are the tensors' own slots
    layer_macs: int  # the stage's MACs layer by layer
    patch_macs: int  # ... patch by patch
    ram: int = 0  # the arena the plan needs (set by choose)
    base_ram: int = 0  # the in-place plan (memory="inplace": no patches)
    layer_ram: int = 0  # the layer-by-layer plan
    carry: bool = False  # batch 1: patch rows keep the halo rows they share with the row above (computed_rows)
    names: dict[int, str] = field(default_factory=dict)
    why: str = ""  # why this grid (choose: the planner's grid rule, planner.PATCH_GRID_RULE)

    @property
    def extra_macs(self) -> int:
        return self.patch_macs - self.layer_macs

    def kept(self) -> set[int]:
        """The stage tensors whose buffers keep rows from one patch row to the next (carry: in some patch row a
        reader computes new rows while the tensor's window overlaps the one above it); their buffers live through
        the whole stage. (A window repeated where no reader computes anything is read by nobody there.)"""
        if not self.carry:
            return set()
        new = {sn.output: [lo < hi for lo, hi in computed_rows(self.rows[sn.output], True)] for sn in self.stage}
        out = set()
        for sn in self.stage[:-1]:
            t, w = sn.output, self.rows[sn.output]
            readers = [rd.output for rd in self.stage if t in rd.inputs]
            if any(w[r][0] < w[r - 1][1] and any(new[o][r] for o in readers) for r in range(1, len(w))):
                out.add(t)
        return out

    def describe(self, total_macs: int | None = None, ram: int | None = None, layer_ram: int | None = None) -> str:
        """``patch plan: stage nodes a..b, grid RxC, RAM N B (layer plan M B), +X% MACs``; X relative to the
        whole model's MACs when given, else to the stage's; N and M the tensor plans' bytes unless given (a
        runtime's whole arenas, e.g. edge check's C figures)."""
        base = total_macs if total_macs else self.layer_macs
        pct = 100.0 * self.extra_macs / base if base else 0.0
        ram = self.ram if ram is None else ram
        layer_ram = self.layer_ram if layer_ram is None else layer_ram
        return (f"patch plan: stage nodes {self.nodes[0]}..{self.nodes[-1]}, grid {self.grid[0]}x{self.grid[1]}, "
                f"RAM {ram} B (layer plan {layer_ram} B), +{pct:.1f}% MACs" + (f"; {self.why}" if self.why else ""))

    def to_dict(self) -> dict:
        return {
            "nodes": [self.nodes[0], self.nodes[-1]],
            "grid": list(self.grid),
            "input": self.input,
            "output": self.output,
            "ram": self.ram,
            "layer_ram": self.layer_ram,
            "base_ram": self.base_ram,
            "layer_macs": self.layer_macs,
            "patch_macs": self.patch_macs,
            "extra_macs": self.extra_macs,
            "buffers": {self.names.get(t, str(t)): b for t, b in sorted(self.buffer_bytes.items())},
            "why": self.why,
        }

    def render(self) -> str:
        lines = [self.describe()]
        for t in sorted(set(self.rows)):
            rows = " ".join(f"{a}:{b}" for a, b in self.rows[t])
            cols = " ".join(f"{a}:{b}" for a, b in self.cols[t])
            kind = ("input" if t == self.input else "output" if t == self.output
                    else f"buffer {self.buffer_bytes.get(t, 0)} B")
            lines.append(f"  tensor {t} '{self.names.get(t, '')}' ({kind}): rows {rows} | cols {cols}")
        return "\n".join(lines)


def _stage_node(model, s: int, i: int, infos, ops=PATCH_OPS) -> StageNode | None:
    """The node as a patch-stage member, or None when it cannot be one."""
    from edge_sdk.runtime.kernels.conv import window_geometry

    op = model.subgraphs[s].operators[i]
    name = model.op_name(op)
    row = op_table.row(name)
    if not row.patch or name not in ops or len(op.outputs) != 1 or op.intermediates:
        return None
    out = infos[op.outputs[0]]
    if out.dtype is None or len(out.shape) != 4 or out.is_variable:
        return None
    n, oh, ow, oc = out.shape
    ins = [t for t in op.inputs if t >= 0 and not infos[t].is_const]
    if not ins or any(infos[t].is_variable or infos[t].dtype is None for t in ins):
        return None
    x = infos[ins[0]]
    if len(x.shape) != 4 or x.shape[0] != n:
        return None
    h, w = x.shape[1], x.shape[2]
    opts = op.options or {}
    if row.patch == "window":
        if len(ins) != 1 or op.inputs[0] != ins[0]:
            return None  # weights computed at run time: keep it simple
        if row.family == "conv":  # a filter input (CONV_2D, DEPTHWISE_CONV_2D); else a pool's options
            flt = infos[op.inputs[1]]
            if len(flt.shape) != 4:
                return None
            if x.dtype == np.float32 and flt.dtype in (np.int8, np.uint8):
                return None  # LiteRT's hybrid kernel: one quantization scale per whole image, not per patch
            kh, kw = flt.shape[1], flt.shape[2]
            dh, dw = int(opts.get("dilation_h_factor", 1)), int(opts.get("dilation_w_factor", 1))
            per = kh * kw * (flt.shape[0] * flt.shape[3] if name == "CONV_2D" else flt.shape[3]) * n
        else:
            kh, kw = int(opts.get("filter_height", 1)), int(opts.get("filter_width", 1))
            dh = dw = 1
            per = 0
        sh, sw = int(opts.get("stride_h", 1)), int(opts.get("stride_w", 1))
        try:
            gh, pt = window_geometry(_NoNode, opts.get("padding", "SAME"), sh, dh, h, kh)
            gw, pl = window_geometry(_NoNode, opts.get("padding", "SAME"), sw, dw, w, kw)
        except ValueError:
            return None
        if (gh, gw) != (oh, ow):
            return None
        rules = (AxisRule("window", sh, (kh - 1) * dh + 1, pt, h), AxisRule("window", sw, (kw - 1) * dw + 1, pl, w))
        return StageNode(i, name, tuple(ins), op.outputs[0], rules, per)
    if row.patch == "pad":
        if len(ins) != 1 or op.inputs[0] != ins[0] or len(op.inputs) < 2 or op.inputs[1] < 0:
            return None
        pads = infos[op.inputs[1]]
        if pads.data is None or pads.data.size != 8:
            return None
        p = pads.data.reshape(4, 2).astype(int)
        if (p < 0).any() or p[0].any() or p[3].any():  # H and W only
            return None
        if (oh, ow) != (h + p[1].sum(), w + p[2].sum()):
            return None
        return StageNode(i, name, tuple(ins), op.outputs[0],
                         (AxisRule("pad", pad=int(p[1, 0]), size=h), AxisRule("pad", pad=int(p[2, 0]), size=w)), 0)
    # elementwise: every non-constant input has the output's shape; constants broadcast along no spatial axis (their
    # H and W, aligned right, are 1: a per-channel scale or bias, a scalar); a binary op has two inputs, one or both
    # computed (edge.c's patch_setup, the same rule)
    if row.family == "binary" and (len(op.inputs) != 2 or any(t < 0 for t in op.inputs)):
        return None
    for t in ins:
        if tuple(infos[t].shape) != tuple(out.shape):
            return None
    for t in op.inputs:
        if t >= 0 and infos[t].is_const:
            shape = tuple(infos[t].shape)
            if len(shape) > 4 or (len(shape) >= 2 and shape[-2] != 1) or (len(shape) >= 3 and shape[-3] != 1):
                return None
    return StageNode(i, name, tuple(ins), op.outputs[0], (AxisRule("same", size=h), AxisRule("same", size=w)), 0)


class _NoNodeType:
    """window_geometry's node for errors while planning (a ValueError instead of a node's ModelError)."""

    def error(self, message):
        return ValueError(message)


_NoNode = _NoNodeType()


def _axis_windows(stage: list[StageNode], cut: int, extent: int, parts: int, axis: int, carry: bool = False):
    """Per stage tensor, its window along ``axis`` for each of ``parts`` ranges of the cut, or None when some
    range would be empty. With ``carry`` (along H, batch 1) a node reads only what the rows it computes need
    (computed_rows: the rows below the window above stay in its buffer), so a window is the rows its readers'
    new rows need; a patch row where no reader computes anything keeps the window above (nothing new)."""
    if parts > extent:
        return None
    ranges = split(extent, parts)
    win: dict[int, list] = {cut: ranges}
    for sn in reversed(stage):
        outw = win.get(sn.output)
        if outw is None or outw[0] is None:
            return None  # a stage tensor nobody in the stage reads
        for r in range(1, len(outw)):  # no reader computes anything in patch row r: the window above, kept
            if outw[r] is None:
                outw[r] = outw[r - 1]
        rule = sn.rules[axis]
        for t in sn.inputs:
            needs = [rule.needs(lo, hi) if lo < hi else None for lo, hi in computed_rows(outw, carry)]
            have = win.get(t)
            win[t] = needs if have is None else [
                b if a is None else a if b is None else (min(a[0], b[0]), max(a[1], b[1])) for a, b in zip(have, needs)]
    for ws in win.values():  # the stage input too
        for r in range(1, len(ws)):
            if ws[r] is None:
                ws[r] = ws[r - 1]
    if any(w is None or w[0] >= w[1] for ws in win.values() for w in ws):
        return None
    return win


def stages(model, infos, s: int = 0, ops=PATCH_OPS):
    """Every candidate stage: (first, last, stage input, stage nodes) for runs of patchable nodes where the
    only tensor coming in is one whole tensor and the only one going out is the last node's output."""
    sg = model.subgraphs[s]
    readers: dict[int, set[int]] = {}
    for i, op in enumerate(sg.operators):
        for t in op.inputs:
            if t >= 0:
                readers.setdefault(t, set()).add(i)
    outputs = set(sg.outputs)
    members = [_stage_node(model, s, i, infos, ops) for i in range(len(sg.operators))]
    out = []
    for a in range(len(sg.operators)):
        if members[a] is None:
            continue
        produced: set[int] = set()
        external: set[int] = set()
        stage: list[StageNode] = []
        for b in range(a, len(sg.operators)):
            sn = members[b]
            if sn is None:
                break
            for t in sn.inputs:
                if t not in produced:
                    external.add(t)
            if len(external) != 1:
                break
            stage.append(sn)
            produced.add(sn.output)
            # closed: every tensor made before the cut is read only inside the stage and is no output
            inner = produced - {sn.output}
            if any(t in outputs or any(r > b for r in readers.get(t, ())) for t in inner):
                continue
            x = next(iter(external))
            if len(infos[x].shape) != 4:
                break
            out.append((a, b, x, list(stage)))
    return out


def build(model, infos, s: int, a: int, b: int, x: int, stage: list[StageNode], grid) -> PatchPlan | None:
    cut = stage[-1].output
    n, h, w, _ = infos[cut].shape
    rows = _axis_windows(stage, cut, h, grid[0], 0, carry=n == 1)
    cols = _axis_windows(stage, cut, w, grid[1], 1)
    if rows is None or cols is None:
        return None
    return _assemble(model, infos, s, a, b, x, stage, grid, rows, cols)


def _assemble(model, infos, s, a, b, x, stage, grid, rows, cols) -> PatchPlan:
    cut = stage[-1].output
    buffers = {}
    for sn in stage:
        t = sn.output
        info = infos[t]
        mr = max(hi - lo for lo, hi in rows[t])
        mc = max(hi - lo for lo, hi in cols[t])
        buffers[t] = info.shape[0] * mr * mc * info.shape[3] * info.dtype.itemsize
    carry = infos[cut].shape[0] == 1
    layer = patch = 0
    for sn in stage:
        _, oh, ow, _ = infos[sn.output].shape
        layer += sn.macs_per_pixel * oh * ow
        patch += (sn.macs_per_pixel * sum(hi - lo for lo, hi in computed_rows(rows[sn.output], carry))
                  * sum(hi - lo for lo, hi in cols[sn.output]))
    names = {t: infos[t].name for t in rows}
    return PatchPlan(s, tuple(range(a, b + 1)), x, cut, tuple(grid), stage, rows, cols, buffers, layer, patch,
                     carry=carry, names=names)


def computed_rows(windows: list[tuple[int, int]], carry: bool) -> list[tuple[int, int]]:
    """The rows a stage tensor's node computes in each patch row, given its windows ``[lo, hi)`` per patch row:
    the whole window, or with ``carry`` the rows below the previous patch row's window (the rows both share are
    kept in its buffer: moved to its top; the windows only move down)."""
    if not carry:
        return list(windows)
    out, prev_hi = [], 0
    for lo, hi in windows:
        start = min(max(lo, prev_hi), hi)
        out.append((start, hi))
        prev_hi = max(prev_hi, hi)
    return out


def patched_requests(requests, plan: PatchPlan, spans) -> list:
    """The arena requests under ``plan``: the stage input lives until the stage's last step, the cut from its
    first, every intermediate is its per-patch buffer."""
    s = plan.subgraph
    first = spans[(s, plan.nodes[0])][0]
    last = spans[(s, plan.nodes[-1])][1]
    out = []
    b_first, b_last = spans[(s, plan.nodes[-1])]
    kept = plan.kept()
    for r in requests:
        if r.key == (s, plan.input):
            r = _arena.BufferRequest(r.key, r.size, r.first_use, max(r.last_use, last), r.name)
        elif r.key == (s, plan.output):
            r = _arena.BufferRequest(r.key, r.size, min(r.first_use, first), r.last_use, r.name)
        elif r.key[0] == s and r.key[1] in kept:  # its rows kept from patch row to patch row: the whole stage
            r = _arena.BufferRequest(r.key, plan.buffer_bytes[r.key[1]], min(r.first_use, first),
                                     max(r.last_use, last), r.name)
        elif r.key[0] == s and r.key[1] in plan.buffer_bytes:
            r = _arena.BufferRequest(r.key, plan.buffer_bytes[r.key[1]], r.first_use, r.last_use, r.name)
        out.append(r)
    out.append(_arena.BufferRequest((s, CUT_KEY), plan.buffer_bytes[plan.output], b_first, b_last,
                                    f"patch window of '{plan.names.get(plan.output, plan.output)}'"))
    return out


def _merged_bound(requests, aliases) -> int:
    size: dict = {}
    first: dict = {}
    last: dict = {}
    for r in requests:
        root = aliases.get(r.key, r.key)
        size[root] = max(size.get(root, 0), _arena.align_up(r.size))
        first[root] = min(first.get(root, r.first_use), r.first_use)
        last[root] = max(last.get(root, r.last_use), r.last_use)
    return _arena.lower_bound([_arena.BufferRequest(k, size[k], first[k], last[k]) for k in size])


def choose(model, infos, requests, spans, plan_for, aliases_for, base: _arena.ArenaPlan, layer_total: int,
           max_full_plans: int = 48, ops=PATCH_OPS, rule: tuple[float, float] | None = None):
    """The best patch plan and its arena plan, or (None, None) when none beats both ``base`` (the in-place plan)
    and ``layer_total`` (the layer-by-layer plan's bytes). ``plan_for(requests, skip_nodes)`` plans a request list
    the least-RAM way (edge_sdk.runtime.planner.least_ram_plan: (plan, aliases); stage nodes never run in place),
    ``aliases_for(requests, skip_nodes)`` gives its most in-place aliases (for the lower bound). ``ops``: the ops a
    stage may hold (C_PATCH_OPS for the C runtime). ``rule``: (aim, RAM slack, recompute cost, model MACs), the
    planner's grid rule (planner.PATCH_GRID_RULE, see there): a grid's instructions are estimated as
    1 + cost x its extra MACs / the model's MACs (x the plan without patches: ``estimate``); when the least-RAM
    plan's estimate is above the aim, the least-RAM plan within the aim is chosen instead if it needs at most
    (1 + slack) x the least RAM, else the one with the lowest estimate within that RAM; None: least RAM alone. The
    plan's ``why`` says which and why."""
    s = 0
    if not model.subgraphs or not requests:
        return None, None
    # the busiest step of the plan without patches: a useful stage contains it
    busiest = _busiest_step(base)
    node_at = {}
    for (sg, i), (lo, hi) in spans.items():
        if sg == s:
            for t in range(lo, hi + 1):
                node_at.setdefault(t, i)
    hot = node_at.get(busiest)
    bar = min(base.total, layer_total)  # a patch plan must beat both plans without patches
    candidates = []
    for a, b, x, stage in stages(model, infos[s], s, ops):
        if hot is not None and not a <= hot <= b:
            continue
        cut = stage[-1].output
        n, h, w, _ = infos[s][cut].shape
        tried = grids() + (carry_grids() if n == 1 else [])
        row_w = {r: _axis_windows(stage, cut, h, r, 0, carry=n == 1) for r in sorted({g[0] for g in tried})}
        col_w = {c: _axis_windows(stage, cut, w, c, 1) for c in sorted({g[1] for g in tried})}
        for g in tried:
            rows, cols = row_w[g[0]], col_w[g[1]]
            if rows is None or cols is None:
                continue
            plan = _assemble(model, infos[s], s, a, b, x, stage, g, rows, cols)
            reqs = patched_requests(requests, plan, spans)
            bound = _merged_bound(reqs, aliases_for(reqs, set(plan.nodes)))  # the most aliases: the lowest bound
            if bound >= bar:
                continue
            candidates.append((bound, plan.extra_macs, len(candidates), plan, reqs))
    candidates.sort(key=lambda c: c[:3])
    best = _least_ram(candidates, plan_for, bar, max_full_plans)
    if best is None:
        return None, None
    plan, ap = best[2], best[3]
    if rule is not None:
        plan, ap = _apply_grid_rule(candidates, plan_for, best, rule, bar, max_full_plans, depthwise_macs(model, infos))
    plan.ram, plan.base_ram, plan.layer_ram = ap.total, base.total, layer_total
    return plan, ap


def _least_ram(candidates, plan_for, limit: int, max_full_plans: int):
    """(arena bytes, extra MACs, plan, arena plan, in-place aliases) of the candidate (sorted by lower bound) whose
    full plan needs the least RAM below ``limit`` (ties: fewest extra MACs), or None; at most ``max_full_plans``
    planned in full."""
    best = None
    for k, (bound, extra, _, plan, reqs) in enumerate(candidates):
        if best is not None and (bound > best[0] or (bound == best[0] and extra >= best[1]) or k >= max_full_plans):
            break
        ap, aliases = plan_for(reqs, set(plan.nodes))
        if ap.total < limit and (best is None or (ap.total, extra) < (best[0], best[1])):
            best = (ap.total, extra, plan, ap, aliases)
    return best


def _rule_search(within, plan_for, limit: int, max_full_plans: int, est, recompute, aim: float):
    """The grid rule's pick among ``within`` (candidates below the RAM limit): (estimate, bytes, k, plan, arena
    plan) of the least RAM whose estimate is within ``aim``, else of the lowest estimate; None when no full plan
    fits. ``recompute(plan)``, the estimate without in-place nodes, bounds ``est`` from below: candidates are
    planned in full in the order that bound allows stopping early, ``max_full_plans`` of each search at most."""
    best = None
    for n, (bound, _extra, k, plan, reqs) in enumerate(sorted((c for c in within if recompute(c[3]) <= aim),
                                                               key=lambda c: c[:3])):
        if n >= max_full_plans or (best is not None and bound > best[1]):
            break
        ap, aliases = plan_for(reqs, set(plan.nodes))
        e = est(plan, aliases)
        if ap.total < limit and e <= aim and (best is None or (ap.total, e) < (best[1], best[0])):
            best = (e, ap.total, k, plan, ap)
    if best is not None:
        return best
    for n, (bound, _extra, k, plan, reqs) in enumerate(sorted(within, key=lambda c: (recompute(c[3]), c[0], c[2]))):
        if n >= max_full_plans or (best is not None and recompute(plan) >= best[0]):
            break
        ap, aliases = plan_for(reqs, set(plan.nodes))
        e = est(plan, aliases)
        if ap.total < limit and (best is None or (e, ap.total) < (best[0], best[1])):
            best = (e, ap.total, k, plan, ap)
    return best


def depthwise_macs(model, infos, s: int = 0) -> dict:
    """{(s, output tensor): MACs} of subgraph ``s``'s DEPTHWISE_CONV_2D nodes (the in-place ones' price)."""
    out = {}
    for op in model.subgraphs[s].operators:
        if model.op_name(op) == "DEPTHWISE_CONV_2D" and len(op.inputs) > 1 and op.inputs[1] >= 0 and op.outputs:
            y, w = infos[s][op.outputs[0]], infos[s][op.inputs[1]]
            if y.shape is not None and w.shape is not None and len(w.shape) == 4:
                out[(s, op.outputs[0])] = int(np.prod(y.shape)) * int(w.shape[1]) * int(w.shape[2])
    return out


def _stage_pct(plan: PatchPlan) -> float:
    return 100.0 * plan.extra_macs / plan.layer_macs if plan.layer_macs else 0.0


def estimate(plan: PatchPlan, cost: float, model_macs: int, inplace_macs: int = 0, inplace_cost: float = 0.0) -> float:
    """The plan's instructions x the plan without patches, estimated (planner.PATCH_GRID_RULE): ``cost``
    instructions per recomputed MAC and ``inplace_cost`` per MAC of a depthwise node its arena plan runs in place
    (``inplace_macs``), both over the model's mean per MAC."""
    if model_macs <= 0:
        return 1.0
    return 1.0 + (cost * plan.extra_macs + inplace_cost * inplace_macs) / model_macs


def _apply_grid_rule(candidates, plan_for, least, rule, bar: int, max_full_plans: int, dw_macs: dict):
    """The planner's grid rule (planner.PATCH_GRID_RULE) applied to the least-RAM plan ``least`` (_least_ram's
    tuple): (plan, arena plan), the plan's ``why`` set; ``bar``: what every patch plan must need less than;
    ``dw_macs``: depthwise_macs."""
    aim, slack, cost, macs, inplace_cost = rule

    def est(plan: PatchPlan, aliases: dict) -> float:
        return estimate(plan, cost, macs, sum(dw_macs.get(k, 0) for k in aliases), inplace_cost)

    plan0, ap0, e0 = least[2], least[3], est(least[2], least[4])
    if e0 <= aim:
        plan0.why = (f"least RAM (+{_stage_pct(plan0):.1f}% of the stage's MACs recomputed: ~{e0:.2f}x the default "
                     f"plan's instructions, within the aim {aim:g}x)")
        return plan0, ap0
    limit = min(bar, int(ap0.total * (1 + slack)) + 1)
    within = [c for c in candidates if c[0] < limit]
    best = _rule_search(within, plan_for, limit, max_full_plans, est, lambda p: estimate(p, cost, macs), aim)
    meets = best is not None and best[0] <= aim
    if best is None or best[0] >= e0:
        plan0.why = (f"least RAM (+{_stage_pct(plan0):.1f}% of the stage's MACs recomputed, ~{e0:.2f}x; no grid "
                     f"within {100 * slack:.0f}% more RAM is estimated at fewer instructions)")
        return plan0, ap0
    e, total, _k, plan, ap = best
    words = f"the aim {aim:g}x" if meets else f"the lowest estimate; none within {aim:g}x needs at most " \
                                                f"{100 * slack:.0f}% more RAM"
    plan.why = (f"grid rule: over the least-RAM grid {plan0.grid[0]}x{plan0.grid[1]} ({ap0.total} B, "
                f"+{_stage_pct(plan0):.1f}% of the stage's MACs recomputed, ~{e0:.2f}x) for "
                f"+{_stage_pct(plan):.1f}% (~{e:.2f}x the default plan's instructions, {words}) at "
                f"+{100.0 * (total / ap0.total - 1):.1f}% RAM (slack {100 * slack:.0f}%)")
    return plan, ap


# choose's answers in this process, by everything they depend on (choice_key): check asks for the same model's
# stage once from choose_plan and once from patch_tradeoff, and again for every profile (mobilenet_v2 224: ~40 s a
# choice on this machine). Process-local; the lock guards the dict, a choice is computed outside it (two threads
# asking at once may both compute it: the same answer).
_CHOSEN: dict[bytes, tuple] = {}
_CHOSEN_LOCK = threading.Lock()
CHOSEN_ENTRIES = 16  # the oldest entry goes first


def choice_key(model, infos, requests, spans, base: _arena.ArenaPlan, layer_total: int, max_full_plans: int,
               ops) -> bytes:
    """A digest of all ``choose`` reads: the model file's bytes, every tensor info choose or the planner reads
    (type, shape, constness, state, a constant's bytes), the buffer requests, the spans, both bars and the ops."""
    from edge_sdk.model import write_model

    h = hashlib.sha256(write_model(model))
    for s, sub in enumerate(infos):
        for t, info in enumerate(sub):
            h.update(repr((s, t, str(info.dtype), tuple(info.shape), bool(info.is_const),
                           bool(info.is_variable))).encode())
            if info.data is not None:
                h.update(np.ascontiguousarray(info.data).tobytes())
    h.update(repr([(r.key, r.size, r.first_use, r.last_use) for r in requests]).encode())
    h.update(repr(sorted(spans.items())).encode())
    h.update(repr((base.total, layer_total, max_full_plans, tuple(ops))).encode())
    return h.digest()


def choose_remembered(model, infos, requests, spans, plan_for, aliases_for, base: _arena.ArenaPlan,
                      layer_total: int, max_full_plans: int = 48, ops=PATCH_OPS, rule=None):
    """``choose``, answered from _CHOSEN when the same question (choice_key) was asked before in this process; a
    copy each time (a caller may annotate its plan)."""
    # the grids tried are part of the question (choose asks grids() / carry_grids() each time: a caller or a test
    # may narrow them)
    key = (choice_key(model, infos, requests, spans, base, layer_total, max_full_plans, ops),
           tuple(grids()), tuple(carry_grids()), rule)
    with _CHOSEN_LOCK:
        got = _CHOSEN.get(key)
    if got is None:
        got = choose(model, infos, requests, spans, plan_for, aliases_for, base, layer_total, max_full_plans, ops,
                     rule)
        with _CHOSEN_LOCK:
            while len(_CHOSEN) >= CHOSEN_ENTRIES:
                _CHOSEN.pop(next(iter(_CHOSEN)))
            _CHOSEN[key] = got
    return copy.deepcopy(got)


def _busiest_step(p: _arena.ArenaPlan) -> int | None:
    live: dict[int, int] = {}
    for b in p.buffers:
        for t in range(b.first_use, b.last_use + 1):
            live[t] = live.get(t, 0) + _arena.align_up(b.size)
    if not live:
        return None
    top = max(live.values())
    return min(t for t, v in live.items() if v == top)


def model_macs(model, infos, s: int = 0) -> int:
    """The MACs of subgraph ``s``'s nodes whose op-table row has a MACs function (convolutions, FULLY_CONNECTED,
    matrix and recurrent ops), from their shapes in ``infos``: what the grid rule's estimate divides by (the ops
    that cost an MCU most of its instructions)."""
    total = 0
    for op in model.subgraphs[s].operators:
        row = op_table.OPS.get(model.op_name(op))
        if row is None or not row.macs or min(op.inputs[:2], default=-1) < 0:
            continue
        ends = [infos[t] if t >= 0 else None for t in op.inputs], [infos[t] for t in op.outputs]
        if any(i is not None and i.shape is None for i in ends[0] + ends[1]):
            continue
        try:
            total += int(row.macs_function()(SimpleNamespace(inputs=ends[0], outputs=ends[1])))
        except (UnsupportedOpError, AttributeError, IndexError, TypeError, ValueError):
            continue  # a MACs function that needs more than shapes (options, a prepared node): not counted
    return total


def total_macs(interp) -> int:
    return sum(m or 0 for m in interp.op_macs(0))


def local_shape(info, rows: tuple[int, int], cols: tuple[int, int]) -> tuple[int, ...]:
    return (info.shape[0], rows[1] - rows[0], cols[1] - cols[0], info.shape[3])


def nbytes(shape, dtype) -> int:
    return math.prod(shape) * dtype.itemsize
