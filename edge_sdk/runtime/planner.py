"""The memory planner: which arena plan a model gets, and why (TFLM style: the plan is data you can print; the
interpreter runs it, ``edge_sdk.runtime.arena`` places its buffers, this module decides which buffers there are).

    from edge_sdk.runtime import planner
    choice = planner.choose_plan(data, memory=None, budget=256 * 1024, runtime="c")
    choice.plan, choice.memory, choice.reason, choice.figures, choice.stage

The memory plans: one vocabulary for the Python API (Interpreter/CInterpreter(memory=...), check_model, flash,
export, convert) and the CLI (--memory on edge check / flash / profile / export / convert --target).
What you ask for (MEMORY_PLANS, memory=...):
  "layer"    layer by layer: every tensor its own bytes (TFLM's plan); the default.
  "inplace"  "layer" plus in-place nodes (``inplace_aliases``: an op whose op-table row has an ``inplace`` rule:
             RESHAPE, PAD, int8 depthwise, elementwise ops); +0 MACs. Both runtimes (the C runtime's
             EDGE_INIT_MEMORY_MIN flag).
  "min"      the least-RAM plan: "inplace" plus patch-based execution of a prefix stage of the graph when
             edge_sdk.runtime.patching.choose finds one that needs less (which layers and which patch grid are
             chosen automatically; costs extra MACs). The C runtime runs the stage edge_init_patch gets
             (``c_patch_stage``, planned here from the model file without an interpreter).
  None       (check, flash, profile, convert --target; no --memory) auto: "layer", else "inplace" when that needs
             less, else "min" when that needs less still, stopping at the first that fits the RAM budget; the
             output and the JSON say which plan and why (``choose_plan``, ``PlanChoice.notes``).
What was built (REALISED_PLANS: Interpreter.memory_plan, check's "memory_plan" and "plans" keys, edge inspect,
export's header and flash/profile reports): "layer", "inplace" (no stage, or memory="inplace") or "patch" (a patch
stage: its nodes, grid, exact RAM and extra MACs are reported beside it). "inplace" and "min" realise "layer" when
no node can run in place or that would not make the plan smaller, and "min" realises "inplace" when no stage beats
it.

The plan needs each tensor's shape, type and lifetime. ``tensor_infos`` reads shapes from the model file (what the
C runtime plans with: its kernels check shapes, they never change them); the interpreter's prepare may refine
them (its kernels compute output shapes) and passes its own infos. ``buffer_requests`` gives the lifetimes.
Importing this module is cheap (no numpy): the CLI takes MEMORY_PLANS from here.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the CLI imports this module for MEMORY_PLANS, and stays quick to start
    from edge_sdk.runtime import arena as _arena
    from edge_sdk.runtime import patching as _patching

MEMORY_PLANS = ("layer", "inplace", "min")
REALISED_PLANS = ("layer", "inplace", "patch")
PLAN_WORDS = {"layer": "layer-by-layer", "inplace": "in-place", "patch": "least-RAM patch-based"}  # in reports
# the memory= that builds a realised plan
BUILT_BY = {"layer": "layer", "inplace": "inplace", "patch": "min"}
RUNTIMES = ("python", "c")

# Refuse plans above this before allocating anything (a corrupt shape must not become a MemoryError).
MAX_ARENA_BYTES = 1 << 31


# ------------------------------------------------------------------------------------------------ the arena figure
# One figure with one meaning in every command (issue 27 point 3; issue 23 point 5): the runtime's arena on that
# target, the most bytes its arena holds at once = activations + scratch + persistent state (the C runtime's
# tensor/node structs, kernel data, variables), at the high water. Named apart, never called "arena" alone: the
# SIMD fast paths' packed weight copies ("packed weight copies"), the buffer a firmware reserves for the arena
# with flash's margin ("arena buffer"), the profile's RAM budget ("RAM budget"), the Python interpreter's tensor
# plan when another runtime is meant ("Python tensor plan").
ARENA_MEANING = "activations + scratch + persistent state"


def runtime_arena(high_water: int, arena_used: int, packed: int = 0) -> int:
    """The runtime's arena from the C runtime's own figures: the larger of edge_arena_used (the plan + persistent
    state once init is done) and edge_arena_high_water (the most in use at once, init's planner memory included),
    less the packed weight copies (``packed``: of the persistent part, a figure of their own). Every command's C
    figure comes from here (CInterpreter.arena_size, edge check, flash, profile's board report, export, bench)."""
    return max(int(high_water), int(arena_used)) - int(packed)


def arena_words(nbytes: int | None, where: str) -> str:
    """The words every command prints for that figure: ``arena 1736 B (activations + scratch + persistent state;
    WHERE)``; ``where`` names the runtime and target (and how the figure was found)."""
    figure = "not measured" if nbytes is None else f"{int(nbytes)} B"
    return f"arena {figure} ({ARENA_MEANING}; {where})"


def check_memory(memory, auto: bool = False) -> None:
    """ValueError unless ``memory`` is one of MEMORY_PLANS (or None, auto, where ``auto`` allows it)."""
    if memory in MEMORY_PLANS or (auto and memory is None):
        return
    raise ValueError(f"memory must be one of {', '.join(map(repr, MEMORY_PLANS))}"
                     f"{' or None (auto)' if auto else ''}, not {memory!r}")


# ------------------------------------------------------------------------------------ shapes and lifetimes
def tensor_infos(model, s: int, resized: dict | None = None) -> list:
    """Subgraph ``s``'s tensors as ``TensorInfo``: shapes from the model file (or ``resized[(s, t)]``), types,
    quantization; constants carry their value, variable tensors do not (they live in the arena). ModelError for a
    tensor the model describes wrongly (unknown type, buffer out of range, negative or huge shape)."""
    import numpy as np

    from edge_sdk.errors import ModelError
    from edge_sdk.model.types import TENSOR_TYPES
    from edge_sdk.runtime.kernels.node import TensorInfo

    resized = resized or {}
    sg = model.subgraphs[s]
    infos = []
    for t, tensor in enumerate(sg.tensors):
        where = f"{'subgraph %d ' % s if s else ''}tensor {t} '{tensor.name}'"
        if tensor.type not in TENSOR_TYPES:
            raise ModelError(f"{where}: unknown type {tensor.type!r}")
        if not 0 <= tensor.buffer < len(model.buffers):
            raise ModelError(f"{where}: buffer {tensor.buffer} out of range (model has {len(model.buffers)})")
        shape = resized.get((s, t), tuple(tensor.shape))
        try:
            shape = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise ModelError(f"{where}: shape {shape!r} is not a list of ints") from None
        if any(d < 0 for d in shape):
            raise ModelError(f"{where}: negative dimension in shape {shape}")
        data = None
        # a constant of a type with no numpy form (STRING, RESOURCE, VARIANT: a TF export's label list) is left
        # data-less as LiteRT loads it; an op that reads one refuses its type
        if not tensor.is_variable and model.buffers[tensor.buffer].data and TENSOR_TYPES[tensor.type][1] is not None:
            data = model.tensor_data(s, t)
        q = tensor.quantization
        scale = zero_point = None
        qdim = 0
        if q is not None and q.scale is not None and np.size(q.scale) > 0:
            scale = np.asarray(q.scale, np.float32).reshape(-1)
            zp = q.zero_point if q.zero_point is not None else np.zeros(0)
            zero_point = np.asarray(zp, np.int64).reshape(-1)
            if zero_point.size == 0:
                zero_point = np.zeros(scale.size, np.int64)
            qdim = int(q.quantized_dimension)
        infos.append(
            TensorInfo(
                index=t,
                name=tensor.name,
                type=tensor.type,
                dtype=tensor.dtype,
                shape=shape if data is None or tensor.sparsity is not None else tuple(data.shape),
                scale=scale,
                zero_point=zero_point,
                quantized_dimension=qdim,
                data=data,
                is_variable=tensor.is_variable,
                sparsity=tensor.sparsity,
            )
        )
        if data is None and tensor.dtype is not None:
            nbytes = math.prod(shape) * tensor.dtype.itemsize
            if nbytes > MAX_ARENA_BYTES:
                raise ModelError(f"{where}: shape {shape} needs {nbytes} bytes, above the {MAX_ARENA_BYTES} limit")
    return infos


def declared_infos(model) -> list[list]:
    """Every subgraph's tensor infos from the model file, after checking the indices ``buffer_requests`` follows
    (tensors, opcodes, called subgraphs): the shapes the C runtime plans with. ModelError for a malformed model."""
    from edge_sdk.runtime import op_table
    from edge_sdk.errors import ModelError

    if not model.subgraphs:
        raise ModelError("model has no subgraphs")
    infos = [tensor_infos(model, s) for s in range(len(model.subgraphs))]
    for s, sg in enumerate(model.subgraphs):
        n = len(infos[s])
        for i, op in enumerate(sg.operators):
            for t in [*op.inputs, *op.outputs, *op.intermediates, *sg.inputs, *sg.outputs]:
                if not -1 <= t < n:
                    raise ModelError(f"{'subgraph %d ' % s if s else ''}node {i}: tensor index {t} out of range")
            if not 0 <= op.opcode_index < len(model.operator_codes):
                raise ModelError(f"node {i}: opcode index {op.opcode_index} out of range")
            for callee in op_table.row(model.op_name(op)).subgraphs:
                c = (op.options or {}).get(callee)
                if not isinstance(c, numbers.Integral) or not 0 <= c < len(model.subgraphs):
                    raise ModelError(f"node {i}: {callee} {c!r} is not a subgraph of this model")
    return infos


def callees(model, op) -> list[int]:
    """The subgraphs an op runs (its op-table row's ``subgraphs`` option fields)."""
    from edge_sdk.runtime import op_table
    return [int(op.options[f]) for f in op_table.row(model.op_name(op)).subgraphs]


MAX_CALL_DEPTH = 8  # nested subgraph calls (CALL_ONCE / IF / WHILE): firmware_c/src/edge.c's EDGE_MAX_CALL_DEPTH


def _valid_callees(model, op) -> list[int]:
    """callees(), skipping what the loader's later checks refuse with their own message (a bad opcode or
    subgraph index)."""
    from edge_sdk.runtime import op_table

    if not 0 <= op.opcode_index < len(model.operator_codes):
        return []
    out = []
    for field in op_table.row(model.op_name(op)).subgraphs:
        c = (op.options or {}).get(field)
        if isinstance(c, numbers.Integral) and 0 <= c < len(model.subgraphs):
            out.append(int(c))
    return out


def call_order(model) -> list[int]:
    """Every subgraph index, each after the subgraphs its nodes call (a subgraph is prepared after its callees,
    so an IF / WHILE sees its branches' prepared shapes; firmware_c/src/edge.c prepares in the same order).
    The walk starts at subgraph 0, then the subgraphs nothing reached, in index order; callees in node order.
    ModelError when calls form a cycle (naming it: the runtimes would recurse forever) or nest deeper than
    MAX_CALL_DEPTH."""
    from edge_sdk.errors import ModelError

    order: list[int] = []
    done: set[int] = set()

    def visit(s: int, path: tuple[int, ...]):
        if len(path) > MAX_CALL_DEPTH:
            raise ModelError(f"subgraph calls nest deeper than {MAX_CALL_DEPTH} "
                             f"({' -> '.join(map(str, path + (s,)))})")
        for i, op in enumerate(model.subgraphs[s].operators):
            for c in _valid_callees(model, op):
                if c in path or c == s:
                    cycle = path[path.index(c):] + (s, c) if c in path else (s, c)
                    raise ModelError(
                        f"subgraph {c} calls itself through a cycle of subgraph calls {' -> '.join(map(str, cycle))} "
                        f"(subgraph {s} node {i}, {model.op_name(op)}, calls subgraph {c} again)")
                if c not in done:
                    visit(c, path + (s,))
        done.add(s)
        order.append(s)

    for s in range(len(model.subgraphs)):
        if s not in done:
            visit(s, ())
    return order


def internal_keys(model, part, held: bool) -> list[tuple[int, int]]:
    """(subgraph, tensor) keys a delegate partition keeps to itself (none unless the delegate holds them)."""
    if not held:
        return []
    sg = model.subgraphs[part.subgraph]
    boundary = set(part.inputs) | set(part.outputs)
    keys = []
    for i in part.nodes:
        op = sg.operators[i]
        for t in [*op.outputs, *op.intermediates]:
            if t >= 0 and t not in boundary:
                keys.append((part.subgraph, int(t)))
    return keys


class Requests(list):
    """buffer_requests' answer: the arena's BufferRequests, and ``pad_folds``, the PAD folds they are planned with
    (PadFold records: these PADs have no output buffer; what the interpreter prepares the convs with). A plain list
    of requests (patching.patched_requests': a stage's, planned without folds) has none."""

    pad_folds: tuple = ()


def request_folds(requests) -> tuple:
    """The PAD folds ``requests`` are planned with (Requests.pad_folds; none for a plain list)."""
    return getattr(requests, "pad_folds", ())


def buffer_requests(model, infos: list[list], delegated=(), spans: dict | None = None, fold: bool = True,
                    pads: bool = True) -> Requests:
    """The arena's buffers: every non-constant tensor with bytes, with its lifetime on the shared time axis.

    ``infos[s][t]`` gives each tensor's shape and dtype (``tensor_infos``, or the interpreter's prepared ones).
    Tensor and subgraph indices must already be valid (``declared_infos`` / allocate_tensors check them first).
    See edge_sdk.runtime.interpreter's docstring for the time axis. ``delegated``: ``(partition,
    holds_internal_tensors)`` for each delegate partition: it runs as one step spanning its nodes' steps, so its
    boundary tensors stay live across the whole span, and (when the delegate holds them) its internal tensors need
    no arena space. ``spans``: a dict to receive every node's (first step, last step) by (subgraph, node).
    ``pads``: the PADs folded into their conv (folded_pads; never with delegate partitions) have no output buffer,
    and their input lives until the conv's step; the answer's ``pad_folds`` holds those folds.
    """
    from edge_sdk.runtime import arena as _arena
    from edge_sdk.errors import ModelError, UnsupportedOpError

    first: dict[tuple[int, int], int] = {}
    last: dict[tuple[int, int], int] = {}
    span: dict[tuple[int, int], tuple[int, int]] = {} if spans is None else spans  # (subgraph, node) -> steps
    clock = 0
    marked: set[int] = set()
    folds = folded_pads(model, infos) if pads and not delegated else []
    conv_source = {(f.subgraph, f.conv): f.source for f in folds}  # the conv reads the PAD's input

    def use(key, step):
        first.setdefault(key, step)
        last[key] = step

    def mark(s: int, stack: tuple[int, ...]):
        nonlocal clock
        if s in stack:
            raise ModelError(f"subgraph {s} calls itself (through {' -> '.join(map(str, stack + (s,)))})")
        marked.add(s)
        sg = model.subgraphs[s]
        for t in sg.inputs:
            use((s, t), clock)
        for i, op in enumerate(sg.operators):
            clock += 1
            start = clock
            for t in op.outputs:
                first.setdefault((s, t), start)
            for callee in callees(model, op):
                clock += 1
                mark(callee, stack + (s,))
            for t in op.inputs:
                if t >= 0:
                    use((s, t), clock)
            if (s, i) in conv_source:
                use((s, conv_source[(s, i)]), clock)
            for t in op.outputs:
                use((s, t), clock)
            for t in op.intermediates:
                use((s, t), start)
                use((s, t), clock)
            lo, hi = span.get((s, i), (start, clock))
            span[(s, i)] = (min(lo, start), max(hi, clock))
        for t in sg.outputs:
            use((s, t), clock)

    mark(0, ())
    for s in range(len(model.subgraphs)):
        if s not in marked:
            clock += 1
            mark(s, ())
    end = clock
    for t in model.subgraphs[0].outputs:
        last[(0, t)] = end  # the primary outputs stay readable after invoke, whatever else runs
    skip: set[tuple[int, int]] = set()
    for part, held in delegated:
        s = part.subgraph
        if not part.nodes or (s, part.nodes[0]) not in span:
            continue
        lo = min(span[(s, i)][0] for i in part.nodes)
        hi = max(span[(s, i)][1] for i in part.nodes)
        for t in (*part.inputs, *part.outputs):
            key = (s, t)
            first[key] = min(first.get(key, lo), lo)
            last[key] = max(last.get(key, hi), hi)
        skip.update(internal_keys(model, part, held))
    # the hosts' plans fold DEQUANTIZEs of constants too (a host's C plan-only run as well); a microcontroller's only
    # DENSIFYs (see below)
    skip.update(key for key, _ in folded_constants(model, infos, host=fold))
    skip.update((f.subgraph, f.output) for f in folds)
    requests = Requests()
    requests.pad_folds = tuple(folds)
    for s, sg_infos in enumerate(infos):
        for info in sg_infos:
            key = (s, info.index)
            if info.is_const:
                continue
            if info.is_variable:
                first[key], last[key] = 0, end
            if key not in first or key in skip:
                continue  # nothing reads or writes it, or a delegate holds it
            if info.dtype is None:
                raise UnsupportedOpError(
                    f"{'subgraph %d ' % s if s else ''}tensor {info.index} '{info.name}' has type "
                    f"{info.type}, which this interpreter cannot hold"
                )
            size = math.prod(info.shape) * info.dtype.itemsize
            if size == 0:
                continue
            name = info.name if s == 0 else f"[{s}] {info.name}"
            requests.append(_arena.BufferRequest(key, size, first[key], last[key], name))
    return requests


def stage_requests(model, infos: list[list], requests) -> Requests:
    """The requests a patch stage is planned over: ``requests`` without PAD folds (a patch plan folds no PAD: its
    stage may run them on windows; edge.c's edge_pad_folds folds none under a stage either)."""
    return buffer_requests(model, infos, pads=False) if request_folds(requests) else requests


def folds_under(model, infos: list[list], stage) -> list[PadFold]:
    """The PADs a plan folds over ``infos``: folded_pads', none under a patch ``stage`` (stage_requests' rule)."""
    return [] if stage is not None else folded_pads(model, infos)


def static_plan(model, fold: bool = True) -> _arena.ArenaPlan:
    """The arena plan from the model's declared shapes alone (no kernels needed).

    Equals ``Interpreter.arena_plan()`` when every kernel's computed shapes agree with the declared ones;
    useful for models with ops we cannot run, and for comparing with TFLM's planner. ``fold=False``: the
    DEQUANTIZEs of constants keep their tensors, as a microcontroller's plan does (the C runtime's plan-only run
    on a host leaves them out as its prepare would: edge_folds_at_prepare, firmware_c/src/edge.c).
    """
    from edge_sdk.runtime import arena as _arena
    return _arena.plan(buffer_requests(model, declared_infos(model), fold=fold))


# ------------------------------------------------------------------------------------------------ in place
def inplace_aliases(model, infos: list[list], requests, spans, skip_nodes=(), elementwise: bool = True) -> dict:
    """The least-RAM plan's in-place nodes, as {output key: root key} for edge_sdk.runtime.arena.plan_aliased.
    In subgraph and node order, for a node whose op-table row has an ``inplace`` rule: its output 0 joins the group
    of its input 0 when both are planned buffers, neither is variable, the input is no input or output of its
    subgraph, and the input's last use is that node's last step; "depthwise": only int8 with channels in == out
    (the C kernel's channel-by-channel path); "unary" / "binary" (elementwise: output element i from input element
    i alone, read before it is written) only when the input has the output's element count and element size, a
    binary op's input 0, else input 1. The C runtime applies the same rule (firmware_c/src/edge.c, inplace_groups;
    EDGE_INIT_MEMORY_MIN), so the plans stay identical. ``skip_nodes``: subgraph 0 nodes never in place (a patch
    stage's, edge_sdk.runtime.patching); ``elementwise=False``: the elementwise nodes neither."""
    from edge_sdk.runtime import op_table
    by_key = {r.key: r for r in requests}
    root: dict = {}
    # a depthwise conv reading a PAD folded into it (``requests``' folds) runs over the PAD's input
    source = {(f.subgraph, f.conv): f.source for f in request_folds(requests)}
    for s, sg in enumerate(model.subgraphs):
        io = set(sg.inputs) | set(sg.outputs)
        for i, op in enumerate(sg.operators):
            rule = op_table.row(model.op_name(op)).inplace
            by_element = rule in ("unary", "binary")
            if not rule or (by_element and not elementwise) or not op.inputs or not op.outputs:
                continue
            if s == 0 and i in skip_nodes:
                continue
            b = op.outputs[0]
            for a in op.inputs[:2 if rule == "binary" else 1]:
                if rule == "depthwise" and (s, i) in source:
                    a = source[(s, i)]
                if _joins_input(infos, by_key, spans, root, io, s, i, rule, a, b):
                    root[(s, b)] = root.get((s, a), (s, a))
                    break
    return root


def _joins_input(infos, by_key, spans, root, io, s, i, rule, a, b) -> bool:
    """Whether node ``i``'s output ``b`` may take over its input ``a``'s bytes (inplace_aliases' rule)."""
    if a < 0 or b < 0 or a == b or a in io:
        return False
    ka, kb = (s, a), (s, b)
    if ka not in by_key or kb not in by_key or kb in root:
        return False
    x, y = infos[s][a], infos[s][b]
    if x.is_variable or y.is_variable:
        return False
    if rule in ("unary", "binary") and (math.prod(x.shape) != math.prod(y.shape)
                                        or x.dtype.itemsize != y.dtype.itemsize):
        return False
    if rule == "depthwise":  # the C kernel's channel-by-channel in-place path
        if (x.type != "INT8" or y.type != "INT8" or len(x.shape) != 4 or len(y.shape) != 4
                or x.shape[3] != y.shape[3] or by_key[kb].size > by_key[ka].size):
            return False
    return by_key[ka].last_use == spans[(s, i)][1]


def least_ram_plan(model, infos: list[list], requests, spans, skip_nodes=(), layer: _arena.ArenaPlan | None = None):
    """The least-RAM plan of these requests and its in-place aliases: of the layer plan (no aliases; ``layer`` when
    the caller planned it already), the in-place groups without the elementwise ops and all of them
    (inplace_aliases), the smallest tensor plan, ties to the fewer groups (a group's longer lifetime can make the
    greedy placement worse than its bytes save; the C runtime's in-place depthwise adds a plane buffer). The C
    runtime plans the same three (edge.c plan_arena)."""
    from edge_sdk.runtime import arena as _arena
    best_plan, best_aliases = (_arena.plan(requests) if layer is None else layer), {}
    tried: list[dict] = [{}]
    for elementwise in (False, True):
        aliases = inplace_aliases(model, infos, requests, spans, skip_nodes, elementwise)
        if aliases in tried:
            continue
        tried.append(aliases)
        plan = _arena.plan_aliased(requests, aliases)
        if plan.total < best_plan.total:
            best_plan, best_aliases = plan, aliases
    return best_plan, best_aliases


# ---------------------------------------------------------------------------------------- the tensor plan
@dataclass
class TensorPlan:
    """The arena plan one memory request builds over a set of tensor infos (what allocate_tensors places)."""

    memory_plan: str  # REALISED_PLANS: "layer", "inplace" or "patch"
    arena: _arena.ArenaPlan
    layer_total: int  # the layer-by-layer plan's bytes
    stage: _patching.PatchPlan | None = None  # memory_plan "patch": the stage and grid
    pad_folds: tuple = ()  # the PADs the plan folds into their convs (PadFold; none under a stage: stage_requests)

    @property
    def total(self) -> int:
        return self.arena.total


def plan_tensors(model, infos: list[list], memory: str = "layer", patch_ops=None, *, requests=None,
                 spans: dict | None = None, delegated: bool = False) -> TensorPlan:
    """The tensor plan ``memory`` (MEMORY_PLANS) builds over ``infos``: the layer plan is planned once (the
    in-place plan's baseline and patching.choose's bar), the in-place plan falls back to it when it saves nothing,
    the least-RAM plan adds the patch stage patching.choose finds over ``patch_ops`` (None: every op whose row has
    a ``patch`` rule) when it needs less. ``requests`` / ``spans``: buffer_requests' when the caller has them.
    ``delegated``: delegate partitions run (whole, over their boundary tensors): the layer plan whatever the
    request."""
    from edge_sdk.runtime import arena as _arena
    from edge_sdk.runtime import patching as _patching
    check_memory(memory)
    if requests is None:
        spans = {}
        requests = buffer_requests(model, infos, spans=spans)
    layer, folds = _arena.plan(requests), request_folds(requests)
    if memory == "layer" or delegated:
        return TensorPlan("layer", layer, layer.total, pad_folds=folds)
    plan, aliases = least_ram_plan(model, infos, requests, spans, layer=layer)
    out = TensorPlan("inplace" if aliases else "layer", plan, layer.total, pad_folds=folds)
    if builds_stage(memory):
        ops = _patching.PATCH_OPS if patch_ops is None else tuple(patch_ops)
        requests = stage_requests(model, infos, requests)
        stage, patched = _patching.choose_remembered(
            model, infos, requests, spans,
            lambda reqs, skip: least_ram_plan(model, infos, reqs, spans, skip),
            lambda reqs, skip: inplace_aliases(model, infos, reqs, spans, skip),
            plan, layer.total, ops=ops, rule=grid_rule(model, infos))
        if stage is not None:
            out = TensorPlan("patch", patched, layer.total, stage, request_folds(requests))
    return out


class _Facts:
    """One model's tensor plans over one set of infos, each planned once, on demand. ``load()`` gives
    ``(model, infos)`` the first time a plan is needed (a malformed model raises only then)."""

    def __init__(self, load: Callable[[], tuple], patch_ops=None):
        self._load, self.patch_ops = load, patch_ops
        self.model = self.infos = self._requests = None
        self._spans: dict = {}
        self._plans: dict[str, TensorPlan] = {}

    def plan(self, memory: str) -> TensorPlan:
        if memory not in self._plans:
            if self._requests is None:
                self.model, self.infos = self._load()
                self._requests = buffer_requests(self.model, self.infos, spans=self._spans)
            self._plans[memory] = plan_tensors(self.model, self.infos, memory, self.patch_ops,
                                               requests=self._requests, spans=self._spans)
        return self._plans[memory]

    def stage(self):
        return self.plan("min").stage

    def falls_back(self) -> bool:
        return self.plan("inplace").memory_plan == "layer"


_C_FACTS: dict = {}


def _c_facts(model_or_data, patch_ops=None) -> _Facts:
    """The C runtime's view of a model (bytes or Model): its declared shapes (the C runtime plans with them),
    remembered for the last few models by their bytes (check, flash and export ask several times)."""
    from edge_sdk.model import Model, write_model
    from edge_sdk.runtime import patching as _patching

    data = write_model(model_or_data) if isinstance(model_or_data, Model) else bytes(model_or_data)
    ops = None if patch_ops is None else tuple(patch_ops)
    key = (hashlib.sha256(data).digest(), ops)
    if key not in _C_FACTS:
        if len(_C_FACTS) >= 8:
            _C_FACTS.pop(next(iter(_C_FACTS)))

        def load():
            from edge_sdk.model import read_model

            model = read_model(data)  # the bytes' own model: what the C runtime loads
            return model, declared_infos(model)

        _C_FACTS[key] = _Facts(load, _patching.C_PATCH_OPS if ops is None else ops)
    return _C_FACTS[key]


def c_patch_stage(model_or_data, patch_ops=None):
    """The patch stage the C runtime runs for a model (bytes or Model) under memory="min" (edge_init_patch; edge
    flash, edge check, export, Interpreter(..., backend="c")): planned over the model file's shapes and the ops the
    C runtime's patch execution covers (patching.C_PATCH_OPS, or ``patch_ops``), without an interpreter; an
    edge_sdk.runtime.patching.PatchPlan, or None when no stage needs less than the in-place plan."""
    return _c_facts(model_or_data, patch_ops).stage()


# ------------------------------------------------------------------------------------------------ the choice
@dataclass
class PlanChoice:
    """Which arena plan a model gets and why: what check, flash, export, profile and convert --target report."""

    request: str | None  # the plan asked for (MEMORY_PLANS), None: auto
    plan: str  # the plan built (REALISED_PLANS)
    stage: _patching.PatchPlan | None = None  # plan "patch": its stage and grid (edge_init_patch's)
    figures: dict[str, int] = field(default_factory=dict)  # bytes of each plan looked at, by REALISED name
    notes: list[str] = field(default_factory=list)  # why, one line per step away from the plan asked for

    @property
    def memory(self) -> str:
        """The memory= (MEMORY_PLANS) that builds this plan."""
        return BUILT_BY[self.plan]

    @property
    def need(self) -> int | None:
        """The bytes of the plan built (None: not measured)."""
        return self.figures.get(self.plan)

    @property
    def reason(self) -> str:
        """Why this plan, in words."""
        if self.notes:
            return "; ".join(self.notes)
        if self.request is None:
            return f"the {PLAN_WORDS[self.plan]} plan fits the RAM budget" if self.need is not None else \
                f"the {PLAN_WORDS[self.plan]} plan (the default)"
        return f"--memory {self.request}"


def python_plan_words(nbytes: int, arena_command: str = "edge check --target") -> str:
    """The Python interpreter's layer-by-layer tensor plan named as what it is, not the arena a target's runtime
    needs (planner.arena_words, which every command prints for that): `edge inspect`, `edge convert` without a
    target."""
    return (f"Python tensor plan {int(nbytes)} B (the Python interpreter's activations; the arena on a target: "
            f"{arena_command})")


def base_words(plan: str) -> str:
    """The plan auto selection moves on from, in words: the in-place plan, or the layer plan when in place saved
    nothing."""
    return "the in-place plan" if plan == "inplace" else "the layer-by-layer plan (in place saves nothing here)"


def choose_plan(model, memory: str | None, budget: int | None = None, runtime: str = "c", *,
                need: Callable[[str], int | None] | None = None, infos=None, patch_ops=None) -> PlanChoice:
    """Which plan ``model`` (bytes or Model) gets under ``memory`` (MEMORY_PLANS, None: auto) on ``runtime``
    ("c": planned over the model file's shapes, as the C runtime plans; "python": over ``infos``, the
    interpreter's prepared tensor infos, needed then), and why.

    ``need(memory)``: the bytes the plan ``memory`` needs as the caller measures them (the C runtime's high water,
    flash's arena with its margins) or None when it cannot; default: this planner's tensor plans. Asked for a
    plan: "min" builds "patch" when a stage beats the in-place plan, else "inplace"; "inplace" builds "layer" when
    no node runs in place or that saves nothing. Auto: "layer"; when its need is over ``budget``, "inplace" if that
    needs less; when still over, "min" if it has a stage and needs less still. Each step away from the plan asked
    for is a note."""
    from edge_sdk.runtime import patching as _patching
    check_memory(memory, auto=True)
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {', '.join(map(repr, RUNTIMES))}, not {runtime!r}")
    if runtime == "c" and infos is None:
        facts = _c_facts(model, patch_ops)
    else:
        if infos is None:
            raise ValueError("choose_plan for the Python runtime needs the interpreter's prepared tensor infos")
        def load():
            from edge_sdk.model import Model, read_model

            return (model if isinstance(model, Model) else read_model(bytes(model))), infos

        facts = _Facts(load, patch_ops if patch_ops is not None else
                       (_patching.C_PATCH_OPS if runtime == "c" else _patching.PATCH_OPS))
    if need is None:
        def need(m: str) -> int:
            return facts.plan(m).total

    choice = PlanChoice(memory, "layer")
    if memory is not None:
        choice.plan = memory if memory != "min" else "inplace"
        if memory == "min":
            choice.stage = facts.stage()
            if choice.stage is not None:
                choice.plan = "patch"
            else:
                choice.notes.append("--memory min: no patch stage needs less than the in-place plan here; the "
                                    "least-RAM plan is the in-place plan (+0 MACs)")
        if choice.plan == "inplace" and _falls_back(facts):
            choice.plan = "layer"
            choice.notes.append(f"--memory {memory}: no node runs in place here (none can, or in-place execution "
                                "would need no less than the layer-by-layer plan); both runtimes keep the "
                                "layer-by-layer placement")
        figure = need(memory)
        if figure is not None:
            choice.figures[choice.plan] = figure
        return choice
    layer = need("layer")
    if layer is None:
        return choice
    choice.figures["layer"] = layer
    if budget is None or layer <= budget:
        return choice
    inplace = need("inplace")
    if inplace is not None:
        choice.figures["inplace"] = inplace
        if inplace < layer:
            choice.plan = "inplace"
            choice.notes.append(f"the layer-by-layer plan needs {layer} bytes, above the RAM budget: using the "
                                f"in-place plan (--memory inplace, {inplace} bytes; no extra MACs)")
    now = choice.figures[choice.plan]
    stage = facts.stage() if now > budget else None
    if stage is not None:  # still over: the least-RAM plan, patch-based execution of a stage
        patched = need("min")
        if patched is not None:
            choice.figures["patch"] = patched
            if patched < now:
                choice.notes.append(f"{base_words(choice.plan)} needs {now} bytes, above the RAM budget: using the "
                                    f"least-RAM plan (--memory min: patch-based execution of a stage, {patched} "
                                    "bytes)")
                choice.plan, choice.stage = "patch", stage
    return choice


def _falls_back(facts: _Facts) -> bool:
    """Whether the in-place plan is the layer plan here; False for a model the planner cannot plan (its problem
    is reported by whoever plans its arena)."""
    from edge_sdk.errors import ModelError, UnsupportedOpError

    try:
        return facts.falls_back()
    except (ModelError, UnsupportedOpError):
        return False


# ------------------------------------------------------------------------------------ the patch grid trade-off
# The least-RAM plan's price in instructions (issue 25 point 2): a finer grid needs less RAM and recomputes more halo.
# Measured on the QEMU Cortex-M4 board (`benchmarks/c_runtime.py --mcu`, edge flash + edge profile, 2026-12-04):
# what costs instructions is the recomputed halo, not patches as such. kws_dscnn (its stage is the whole network:
# 49x40 input, 25x20x32 tensors) in full-width strips, grid 13x1, no recompute: 6,412,440 instructions against the
# default plan's 6,417,840 (1.00x; the kept halo rows are moved, not recomputed); 13x2, +14.9% of the model's MACs
# recomputed: 1.18x; 13x4, +44.7%: 1.60x. So an estimate of 1 + PATCH_RECOMPUTE_COST x recomputed / model MACs
# (the recomputed MACs cost a little more than the model's mean: a window's edge columns run its kernels' slower
# border loops). What it does not see: kernel forms the least-RAM request keeps for RAM outside the halo
# (person_detect's node 0 on its 8-bit filter: +1.1 M instructions; the compact requantization, ~+2% outside the
# stage) and narrow windows' per-row work (person_detect, grid 12x6 over 48-wide tensors: 1.46x measured, 1.16x
# estimated). The former PATCH_MAC_COST (1.54 x every patch MAC) priced 13x1 at 1.54x: it made no-recompute grids
# look as dear as any.
PATCH_RECOMPUTE_COST = 1.3
# The least-RAM plan's in-place depthwise (inplace_aliases: a node's output over its input, through a plane buffer)
# costs more instructions than the kernel it replaces: the channel's plane is gathered first, and its border windows
# run tap by tap. On DSP cores its inside windows take a word of four taps per row (depthwise_conv_2d.c
# dw_plane_run). Measured on the QEMU M4 (2026-12-04, session 18), over the same layers run outside it:
#   mobilenet_v2 224 at its least-RAM grid 14x4, 12 layers 3x3 in place (12,023,424 MACs): +3.4 instructions per MAC
#     (2.9 at 28x28, 4.1 at 14x14, 6.8-9.8 at 7x7), ~1.9 over the model's mean (1.75); the model 1.18x its default plan.
#   mobilenet_v3s 96 (the zoo) at grid 6x1, its 5x5 layers in place on planes of 12x12 down to 3x3, nearly all border:
#     ~14 per MAC, ~5 over its mean (2.82); the model 1.54x (its 5x1 grid, none in place: 1.03x).
# The price sits between them: 4 keeps mobilenet_v2's grid within the aim (estimate 1.18x) and prices v3s's 6x1
# over it (~1.43x estimated; 5x1 kept). (The portable channel-by-channel loop before the DSP one: ~38 per MAC, priced
# 20: mobilenet_v2 at 14x4 1.80x.) A price per layer from its border share would fit both.
PATCH_INPLACE_DW_COST = 4.0


# The least-RAM plan's grid rule (issue 25: the least-RAM plan <= 1.5x the default plan's instructions): least RAM
# alone picked grids that recompute up to +88% of the MACs (kws_dscnn 13x7: 21,840 B tensor plan, 2.13x the
# default plan's instructions on the QEMU M4). So when the least-RAM grid's estimate (PATCH_RECOMPUTE_COST) is above
# PATCH_GRID_RULE[0] x the default plan's instructions, the least-RAM grid estimated within it is taken if it needs
# at most (1 + PATCH_GRID_RULE[1]) x the least RAM, else the lowest estimate within that RAM; the plan says which
# rule chose it (PatchPlan.why). Why 1.25 and not 1.5: the estimate leaves out the least-RAM request's other costs
# (above: person_detect measured 0.3x above it). Why a 35% slack: mobilenet_v2 224's least-RAM grid (14x4, tensor
# plan 301,056 B) runs its later depthwise layers in place (1.80x with the portable in-place loop); the nearest grid
# that runs none, 14x2, needs 392,448 B (+30%; the board's arena 495,464 B = 0.19x TFLM's, 1.05x the default plan's
# instructions). With the in-place loop's DSP form 14x4 is estimated within the aim and kept: 410,424 B on the
# board (0.16x TFLM's), 1.18x the default plan's instructions. A grid
# whose estimate is within the aim is kept however much less RAM another would take: person_detect's 12x6 (its arena
# aim, <= 0.5x TFLM's 85,264 B, leaves it no other: 12x4 took 43,912 B on the board).
PATCH_GRID_RULE = (1.25, 0.35)  # (aim: estimated instructions x the default plan's, RAM slack: fraction over the least)


def grid_rule(model, infos: list[list]) -> tuple:
    """PATCH_GRID_RULE as patching.choose takes it: (aim, slack, PATCH_RECOMPUTE_COST, the model's MACs,
    PATCH_INPLACE_DW_COST)."""
    from edge_sdk.runtime import patching as _patching

    return (*PATCH_GRID_RULE, PATCH_RECOMPUTE_COST, _patching.model_macs(model, infos[0]), PATCH_INPLACE_DW_COST)


def patch_tradeoff(model_or_data, total_macs: int, patch_ops=None) -> list[dict]:
    """Every grid of the stage the C runtime runs under memory="min" (c_patch_stage): ``grid``, ``ram`` (the tensor
    plan's bytes, as patching.choose compares them), ``extra_macs``, ``instructions`` (estimated, x the default
    plan's: 1 + (PATCH_RECOMPUTE_COST x extra MACs + PATCH_INPLACE_DW_COST x the MACs of depthwise nodes run in
    place) / the MACs of the model's convolutions and FCs, as the grid rule estimates them: patching.estimate) and
    ``chosen``; [] without a stage. ``total_macs``: the model's MACs."""
    from edge_sdk.runtime import patching as _patching

    facts = _c_facts(model_or_data, patch_ops)
    stage = facts.stage()
    if stage is None or total_macs <= 0:
        return []
    model, infos, spans = facts.model, facts.infos, facts._spans
    requests = stage_requests(model, infos, facts._requests)  # what plan_tensors chose the stage over
    a, b = stage.nodes[0], stage.nodes[-1]
    rule_macs = _patching.model_macs(model, infos[0])  # the grid rule's estimate (patching.choose): its MACs
    dw_macs = _patching.depthwise_macs(model, infos)
    rows = []
    n = facts.infos[0][stage.output].shape[0]
    for grid in _patching.grids() + (_patching.carry_grids() if n == 1 else []):
        plan = _patching.build(model, infos[0], 0, a, b, stage.input, stage.stage, grid)
        if plan is None:
            continue
        reqs = _patching.patched_requests(requests, plan, spans)
        arena, aliases = least_ram_plan(model, infos, reqs, spans, set(plan.nodes))
        est = _patching.estimate(plan, PATCH_RECOMPUTE_COST, rule_macs, sum(dw_macs.get(k, 0) for k in aliases),
                                 PATCH_INPLACE_DW_COST)
        rows.append({"grid": tuple(grid), "ram": arena.total, "extra_macs": plan.extra_macs, "instructions": est,
                     "chosen": tuple(grid) == tuple(stage.grid)})
    return rows


def tradeoff_lines(rows: list[dict], total_macs: int) -> list[str]:
    """The trade-off as `edge check --memory min` prints it: one line per grid, least RAM first."""
    out = []
    for r in sorted(rows, key=lambda r: (r["ram"], r["instructions"])):
        pct = 100.0 * r["extra_macs"] / total_macs if total_macs else 0.0
        out.append(f"grid {r['grid'][0]}x{r['grid'][1]}: tensor plan {r['ram']} B, +{pct:.1f}% MACs, "
                   f"~{r['instructions']:.2f}x the default plan's instructions (estimate)"
                   f"{'  <- chosen (PATCH_GRID_RULE)' if r['chosen'] else ''}")
    return out


# ------------------------------------------------------------------------------------ constants folded at prepare
# A DEQUANTIZE of a constant (every MediaPipe float model stores its weights as float16 constants behind one: LiteRT's
# converter writes FLOAT16 constant -> DEQUANTIZE -> CONV_2D) computes the same float32 values at every invoke. Both
# runtimes compute it once, at prepare, into bytes of their own outside the tensor plan: the C runtime in persistent
# memory counted with the packed weight copies (dequantize.c, edge_fold_outputs; its consumers then pack the float
# weights once as they pack any constant filter, instead of reading new weights every invoke), the Python
# interpreter in the arrays of its constant folding (folded_bytes). Its output is then no arena tensor in any plan.
# A DENSIFY of a sparse constant (MediaPipe's *_sparse detectors: pruned weights stored CSR, DENSIFY -> CONV_2D)
# folds the same way on every build, microcontrollers included: its kernel holds the dense bytes persistently anyway,
# so the output reads them in place (no arena tensor, no copy per invoke) and its consumers see a constant filter
# (the hosts pack it once; unfolded, the C runtime ran such a detector's convs unpacked: 4.5-6.9x XNNPACK). A
# DEQUANTIZE of a folded DENSIFY's output (sparse float16 weights) folds on the hosts as of any constant.
# Not folded: an output a subgraph returns (the caller reads it where the plan puts it). The plans here are the hosts' (the Python interpreter, the C runtime's 64-bit Linux builds, EDGE_SIMD);
# a microcontroller build of the C runtime keeps these DEQUANTIZEs per invoke in its arena, whose bytes later layers
# reuse, rather than every float32 weight at once (palm_detection_lite would outgrow the QEMU board's RAM): its plan,
# and the arena edge check reports for it, keep the tensors.

def folded_constants(model, infos: list[list], host: bool = True) -> list[tuple[tuple[int, int], int]]:
    """``((subgraph, tensor), bytes)`` of every output computed once at prepare (see above) over ``infos``
    (``tensor_infos`` or the interpreter's prepared ones): out of the tensor plan. Every build folds a DENSIFY of a
    sparse constant; ``host`` plans also a DEQUANTIZE of a dense constant or of a folded DENSIFY's output."""
    out = []
    for s, sg in enumerate(model.subgraphs):
        returned = set(sg.outputs)
        folded: set[int] = set()
        for op in sg.operators:
            name = model.op_name(op)
            if name not in ("DENSIFY", "DEQUANTIZE") or len(op.inputs) != 1 or len(op.outputs) != 1:
                continue
            t, o = op.inputs[0], op.outputs[0]
            if not (0 <= t < len(infos[s])) or not (0 <= o < len(infos[s])) or o in returned:
                continue
            x, y = infos[s][t], infos[s][o]
            if y.dtype is None:
                continue
            if name == "DENSIFY":
                if not (x.is_const and x.sparsity is not None):
                    continue
            elif not (host and (x.is_const or t in folded) and x.sparsity is None):
                continue
            folded.add(o)
            out.append(((s, o), math.prod(y.shape) * y.dtype.itemsize))
    return out


# ------------------------------------------------------------------------------------ PADs folded into their conv
# ONNX-exported and Keras models write an explicit PAD (zeros, or the int8 zero point) before many CONV_2D /
# DEPTHWISE_CONV_2D (a stride-2 conv with asymmetric padding; the ONNX importer writes PAD + VALID conv):
# mobilenet_v2_quantized_1x3x224x224 has 18. A conv's own padding taps contribute nothing (float: 0.0; int8: the
# input zero point, whose offset input makes 0), so when the PAD fills H and W with exactly that value the conv can
# read the PAD's input with explicit per-side padding (top / left = the PAD's + the conv's own; bottom / right follow
# from the output size) and the PAD is skipped: no copy, no PAD output in the arena, the PAD's input live until the
# conv. Both runtimes: the Python interpreter prepares the conv on the PAD's input with that window
# (kernels.conv.patch_window), the C runtime's PAD prepare folds it (edge_pad_folds, firmware_c/src/edge.c, this
# rule) and the conv reads the PAD's input (edge_conv_source, firmware_c/src/edge_conv.h). Every build and plan
# folds them but the least-RAM patch plan (plan_tensors: its stage is chosen over the unfolded requests, a stage's
# PAD runs on windows; edge_init_patch folds none). The rule:
#  * a PAD (its op-table row's pad_fold "pad": PAD / PADV2) of a 4-D tensor, computed at run time, of FLOAT32 / INT8 / INT16; constant paddings padding H and W
#    only (N and C 0); PADV2's value a constant equal to the PAD's own default (below);
#  * the fill is the conv's padding value: float +0.0; int8 the output zero point (PAD's default); int16 0 with a
#    zero point 0 (the int16 conv has no input offset);
#  * its output: no subgraph output, not variable, read by exactly one node, once, as input 0 of a CONV_2D or
#    DEPTHWISE_CONV_2D (pad_fold "conv") whose window fits the padded input;
#  * each side's padding in total (the PAD's + the conv's SAME padding, bottom / right from the output size) at
#    most the conv's effective filter size - 1, the range a SAME conv's own padding spans (the kernels' fast paths
#    take any such geometry).


def pad_fold_role(model, op) -> str:
    """The op-table row's pad_fold of ``op`` ("pad", "conv" or ""; "" for an opcode index out of range)."""
    from edge_sdk.runtime import op_table

    if not 0 <= op.opcode_index < len(model.operator_codes):
        return ""
    return op_table.row(model.op_name(op)).pad_fold


@dataclass(frozen=True)
class PadFold:
    """A PAD skipped for the conv that reads it (folded_pads): nodes and tensors of ``subgraph``; the conv runs on
    ``source`` (the PAD's input, h x w) with ``top`` / ``left`` padding before and an ``oh`` x ``ow`` output;
    ``bytes``: the PAD output's bytes, out of the tensor plan."""

    subgraph: int
    pad: int
    conv: int
    source: int
    output: int
    top: int
    left: int
    bottom: int
    right: int
    oh: int
    ow: int
    bytes: int


def _window_pad(padding: str, stride: int, dil: int, size: int, k: int) -> tuple[int, int] | None:
    """(output size, padding before) of a SAME / VALID window as TFLite computes them, None when nothing fits."""
    eff = (k - 1) * dil + 1
    if stride <= 0 or dil <= 0 or k <= 0 or size <= 0 or padding not in ("SAME", "VALID"):
        return None
    out = (size + stride - 1) // stride if padding == "SAME" else (size - eff) // stride + 1
    if out <= 0 or (padding == "VALID" and eff > size):
        return None
    return out, max((out - 1) * stride + eff - size, 0) // 2


def folded_pads(model, infos: list[list]) -> list[PadFold]:
    """Every PAD -> conv pair both runtimes fold (the rule above) over ``infos`` (``tensor_infos`` or the
    interpreter's prepared ones), in subgraph and node order."""
    import numpy as np

    out = []
    for s, sg in enumerate(model.subgraphs):
        reads: dict[int, list[tuple[int, int]]] = {}
        for i, op in enumerate(sg.operators):
            for k, t in enumerate([*op.inputs, *op.intermediates]):
                if t >= 0:
                    reads.setdefault(t, []).append((i, k))
        returned = set(sg.outputs)
        n = len(infos[s])
        for i, op in enumerate(sg.operators):
            if pad_fold_role(model, op) != "pad":
                continue
            if len(op.inputs) not in (2, 3) or len(op.outputs) != 1 or min(op.inputs) < 0 or op.outputs[0] < 0:
                continue
            if max(*op.inputs, op.outputs[0]) >= n:
                continue
            x, p, y = infos[s][op.inputs[0]], infos[s][op.inputs[1]], infos[s][op.outputs[0]]
            if x.is_const or x.is_variable or y.is_variable or op.outputs[0] in returned:
                continue
            if x.type != y.type or x.type not in ("FLOAT32", "INT8", "INT16") or len(x.shape) != 4:
                continue
            if not p.is_const or np.size(p.data) != 8:
                continue
            pads = np.asarray(p.data).reshape(4, 2).astype(np.int64)
            if pads[0].any() or pads[3].any() or (pads < 0).any():
                continue
            zp = 0 if y.zero_point is None or np.size(y.zero_point) == 0 else int(y.zero_point[0])
            fill = zp if x.type == "INT8" else 0  # PAD's own fill (kernels.shape: the output zero point for int8)
            if x.type == "INT16" and zp != 0:
                continue
            if len(op.inputs) == 3:
                v = infos[s][op.inputs[2]]
                if not v.is_const or np.size(v.data) != 1:
                    continue
                value = np.asarray(v.data).reshape(-1)
                if x.type == "FLOAT32":
                    if value.dtype != np.float32 or value.view(np.uint32)[0] != 0:  # +0.0 only: -0.0 changes bits
                        continue
                elif int(value[0]) != fill:
                    continue
            readers = reads.get(op.outputs[0], [])
            if len(readers) != 1 or readers[0][1] != 0:
                continue
            c = readers[0][0]
            conv = sg.operators[c]
            if pad_fold_role(model, conv) != "conv":
                continue
            if len(conv.inputs) < 2 or conv.inputs[1] < 0 or conv.inputs[1] >= n:
                continue
            w = infos[s][conv.inputs[1]]
            if len(w.shape) != 4:
                continue
            opts = conv.options or {}
            padding = opts.get("padding", "SAME")
            sh, sw = int(opts.get("stride_h", 1)), int(opts.get("stride_w", 1))
            dh, dw = int(opts.get("dilation_h_factor", 1)), int(opts.get("dilation_w_factor", 1))
            kh, kw = int(w.shape[1]), int(w.shape[2])
            hp, wp = int(y.shape[1]), int(y.shape[2])
            if hp != x.shape[1] + pads[1].sum() or wp != x.shape[2] + pads[2].sum():
                continue
            gh, gw = _window_pad(padding, sh, dh, hp, kh), _window_pad(padding, sw, dw, wp, kw)
            if gh is None or gw is None:
                continue
            (oh, pt), (ow, pl) = gh, gw
            top, left = pt + int(pads[1][0]), pl + int(pads[2][0])
            bottom = (oh - 1) * sh + (kh - 1) * dh + 1 - int(x.shape[1]) - top
            right = (ow - 1) * sw + (kw - 1) * dw + 1 - int(x.shape[2]) - left
            if max(top, bottom) > (kh - 1) * dh or max(left, right) > (kw - 1) * dw:
                continue
            out.append(PadFold(s, i, c, op.inputs[0], op.outputs[0], top, left, bottom, right, oh, ow,
                               math.prod(y.shape) * y.dtype.itemsize))
    return out


# ------------------------------------------------------------------------------------ the DSP depthwise filter
# An int8 DEPTHWISE_CONV_2D with a depth multiplier m % 4 == 0 (one or few input channels: micro_speech's and
# person_detect's first layers) runs on a DSP core (Cortex-M4/M7/M33...) from its filter pre-paired for SMLAD: an
# int16 copy of c * m * kh * ceil4(kw) * 2 bytes in the arena beside the model's 8-bit filter (micro_speech: the
# arena 6,736 -> 8,144 B, above TFLM's 6,836), for fewer instructions. Which form a plan gets is decided here: the
# layer-by-layer plan keeps the pre-paired copy; the least-RAM requests (--memory inplace / min, and auto's move to
# them when the layer plan is over the target's RAM budget) keep the 8-bit filter as stored (the plain loop). The C
# runtime follows the init flag those plans set (EDGE_INIT_MEMORY_MIN: edge_least_ram in depthwise_conv_2d.c).
COMPACT_PLANS = ("inplace", "min")  # the memory= requests whose firmware keeps compact kernel tables
# What the 8-bit form costs, per MAC of such a layer, over the pre-paired one on a Cortex-M4 (QEMU mps2-an386, edge
# flash + edge profile, session 18): micro_speech_quantized, whose node 1 (10x8, multiplier 8: 320,000 MACs) is
# nearly all of it, 667,120 instructions pre-paired, 1,046,720 on the 8-bit filter (its asm loop: 36 instructions
# per 16 MACs against the SMLAD loop's 17; both widen each staged input once per four outputs): +379,600, 1.19 a MAC.
# That is why micro_speech's least-RAM plan costs 1.57x the default plan's instructions with no patch stage: it
# trades them for the 1,280 B copy (its arena 8,144 -> 6,800 B, below TFLM's 6,836).
DSP_8BIT_FILTER_COST = 1.2


def dsp_paired_filters(model) -> list[tuple[int, int, int]]:
    """``(subgraph, node, bytes)`` of every int8 DEPTHWISE_CONV_2D whose filter a DSP core pre-pairs (constant int8
    filter [1, kh, kw, c * m] with m % 4 == 0): bytes is the pre-paired int16 copy."""
    out = []
    for s, sg in enumerate(model.subgraphs):
        for i, op in enumerate(sg.operators):
            if model.op_name(op) != "DEPTHWISE_CONV_2D" or len(op.inputs) < 2 or min(op.inputs[:2]) < 0:
                continue
            x, w = sg.tensors[op.inputs[0]], sg.tensors[op.inputs[1]]
            if x.type != "INT8" or w.type != "INT8" or len(w.shape) != 4 or len(x.shape) != 4:
                continue
            if not (0 <= w.buffer < len(model.buffers)) or not model.buffers[w.buffer].data:
                continue  # a filter computed at run time: never pre-paired
            c, oc = int(x.shape[3]), int(w.shape[3])
            if c <= 0 or oc % c or (oc // c) % 4:
                continue
            kwp = (int(w.shape[2]) + 3) & ~3
            out.append((s, i, c * (oc // c) * int(w.shape[1]) * kwp * 2))
    return out


def dsp_filter_form(memory: str | None) -> str:
    """The depthwise filter form a firmware initialised with ``memory`` (MEMORY_PLANS; None: "layer") runs on a
    DSP core: "8-bit" (the model's filter, the least-RAM requests) or "pre-paired" (an int16 copy for SMLAD)."""
    return "8-bit" if memory in COMPACT_PLANS else "pre-paired"


def _paired_macs(model, paired) -> int:
    """The MACs of the depthwise nodes ``paired`` (dsp_paired_filters' rows): output elements x kh x kw."""
    total = 0
    for s, i, _ in paired:
        sg = model.subgraphs[s]
        op = sg.operators[i]
        w, y = sg.tensors[op.inputs[1]], sg.tensors[op.outputs[0]]
        total += math.prod(int(v) for v in y.shape) * int(w.shape[1]) * int(w.shape[2])
    return total


def dsp_filter_words(model, memory: str | None) -> str | None:
    """One line saying which depthwise filter form was chosen and what the other would cost (bytes, and
    instructions on a DSP core: DSP_8BIT_FILTER_COST per MAC of those layers), or None when the model has no
    depthwise layer a DSP core pre-pairs."""
    paired = dsp_paired_filters(model)
    if not paired:
        return None
    nbytes = sum(b for _, _, b in paired)
    nodes = ", ".join(f"{'subgraph %d ' % s if s else ''}node {i}" for s, i, _ in paired)
    macs = _paired_macs(model, paired)
    price = (f"~{DSP_8BIT_FILTER_COST * macs:,.0f} instructions an invoke on a Cortex-M4 (~{DSP_8BIT_FILTER_COST} a "
             f"MAC of their {macs:,})")
    if dsp_filter_form(memory) == "8-bit":
        return (f"depthwise filters: 8-bit as stored ({nodes}; the least-RAM request --memory {memory}): "
                f"{nbytes} B less arena than the pre-paired int16 copies the layer-by-layer plan takes, for {price} "
                "more, with or without a patch stage")
    return (f"depthwise filters: pre-paired int16 for SMLAD ({nodes}): {nbytes} B of arena for {price} fewer; "
            "--memory inplace or min keeps the 8-bit filter")


# ------------------------------------------------------------------------------- what the C runtime is given
# The request's C init, decided here once: edge_init's flags, the stage edge_init_patch gets and the check runner's
# flags (CInterpreter, edge check's c_check.target_plan, flash's app_config.h and measure_arena, export).
def c_memory_min(memory: str | None) -> bool:
    """Whether the C runtime initialises with EDGE_INIT_MEMORY_MIN for ``memory`` (MEMORY_PLANS; None: "layer"):
    both least-RAM requests ("inplace", "min"): its in-place groups and compact kernel tables (COMPACT_PLANS)."""
    return memory in COMPACT_PLANS


def builds_stage(memory: str | None) -> bool:
    """Whether ``memory`` (MEMORY_PLANS) may run a patch stage: "min", the least-RAM plan."""
    return memory == "min"


def c_stage_for(data, memory: str | None, patch_ops=None):
    """The patch stage edge_init_patch gets under ``memory``: c_patch_stage's under "min" (None when no stage
    needs less), None under any other request."""
    return c_patch_stage(data, patch_ops) if builds_stage(memory) else None


def c_runner_flags(memory: str | None, stage=None) -> list[str]:
    """The C check runner's flags (firmware_c/host) for ``memory`` and its stage (a patching.PatchPlan from
    c_stage_for; ignored unless "min"): ``--memory-min`` and ``--patch first,last,rows,cols``."""
    flags = ["--memory-min"] if c_memory_min(memory) else []
    if builds_stage(memory) and stage is not None:
        flags += ["--patch", ",".join(str(int(v)) for v in (stage.nodes[0], stage.nodes[-1], *stage.grid))]
    return flags


def c_memory_plan(data, memory: str):
    """What the C runtime builds for ``memory`` (MEMORY_PLANS) on this model: ``(plan, stage)``, the realised plan
    (REALISED_PLANS) and the patch stage edge_init_patch gets (None unless "patch"); choose_plan's rule."""
    check_memory(memory)
    if memory == "layer":
        return "layer", None
    choice = choose_plan(data, memory, runtime="c", need=lambda m: None)
    return choice.plan, choice.stage
