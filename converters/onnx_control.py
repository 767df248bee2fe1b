"""ONNX control flow resolved at import time: ``If`` with a condition known at convert time is replaced by the
taken branch's nodes, ``Loop`` and ``Scan`` are unrolled when their iteration count is known at convert time
(a constant trip count M, and a condition the body passes through unchanged or computes from the iteration
number, constants and counters it carries: the condition is then evaluated here, iteration by iteration, with
onnx's reference evaluator; at most ``MAX_UNROLL`` iterations). Used by
``converters.import_onnx`` during constant folding (a folded condition or trip count may only become known
after other nodes fold, so the importer calls these in every folding pass).

Inlining copies a subgraph's nodes into the outer graph with every value the subgraph defines renamed to a
fresh name (``<node>/<branch>/<name>``); names the subgraph reads from the outer scope keep their names, and
nested subgraphs (an ``If`` inside a ``Loop`` body) have their references renamed too. A subgraph's outputs
take the control node's output names (an inlined If branch keeps its node names, so problems name them as the
ONNX file does); an output the subgraph does not compute itself is bound with an ``Identity`` node.

Each ``resolve_*`` returns ``(nodes, constants, note)`` when it resolved the node (the nodes replace it, the
constants are new initializers) or ``None`` when it cannot (yet); ``*_blocker`` says why a node that is still
there at the end cannot be converted.

What cannot be resolved here runs at run time: ``converters.import_onnx`` emits a TFLite IF (the branches as
subgraphs) for an If whose condition stays unknown, and a TFLite WHILE (cond and body subgraphs) for a Loop whose
trip count or condition is only known at run time (a Loop with scan outputs only when its trip count is known at
convert time: each scan output is a buffer of that many rows the body writes); ``outer_refs`` gives the outer values
those subgraphs take as inputs.
"""

from __future__ import annotations

import numpy as np

# an unrolled Loop / Scan longer than this is refused (the model would grow by this many body copies)
MAX_UNROLL = 1024
# a run-time Loop's scan outputs become WHILE buffers of trip-count rows (converters.import_onnx): at most this many
MAX_SCAN_ROWS = 65536
# why a Loop is neither unrolled nor a run-time WHILE: no trip count and a condition that never changes
ENDLESS = "no trip count M and a condition that stays true (an endless while loop)"


class Namer:
    """Fresh value names: never one already used anywhere in the model (nested subgraphs included)."""

    def __init__(self, graph):
        self.taken: set[str] = set()
        _collect_names(graph, self.taken)

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.taken or not name:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        return name


def _collect_names(graph, out: set[str]):
    out.update(v.name for v in graph.input)
    out.update(v.name for v in graph.output)
    out.update(i.name for i in graph.initializer)
    for node in graph.node:
        out.update(node.input)
        out.update(node.output)
        if node.name:
            out.add(node.name)
        for sub in _subgraphs(node):
            _collect_names(sub, out)


def _subgraphs(node):
    from onnx import AttributeProto

    for a in node.attribute:
        if a.type == AttributeProto.GRAPH:
            yield a.g
        elif a.type == AttributeProto.GRAPHS:
            yield from a.graphs


def _defined(graph) -> set[str]:
    """Names a (sub)graph defines itself: its inputs, initializers and node outputs (these shadow outer ones)."""
    names = {v.name for v in graph.input} | {i.name for i in graph.initializer}
    for node in graph.node:
        names.update(o for o in node.output if o)
    return names


def _rename_refs(graph, rename: dict[str, str]):
    """Rename, in place, a nested subgraph's references to outer-scope values (names it defines shadow)."""
    local = _defined(graph)
    live = {k: v for k, v in rename.items() if k not in local}
    if not live:
        return
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name in live:
                node.input[k] = live[name]
        for sub in _subgraphs(node):
            _rename_refs(sub, live)
    for out in graph.output:
        if out.name in live:  # an output that is an outer-scope value (outputs are positional: rename it)
            out.name = live[out.name]


def inline(body, prefix: str, bind: dict[str, str], namer: Namer, targets=None, keep_node_names=False):
    """The nodes of subgraph ``body`` for the outer graph: its inputs read the outer values ``bind`` names
    (body input name -> outer name), everything it defines is renamed. Returns (nodes, constants, outputs):
    the new nodes, ``{name: array}`` for the body's initializers, and the outer names of the body's outputs.
    ``targets``: outer names for the body's outputs (None / "" for none); an output a body node computes
    takes its target's name directly (so the control node's outputs keep their names). ``keep_node_names``:
    nodes keep their names (an If's branch is inlined once: messages name the nodes as the ONNX file does)."""
    from onnx import numpy_helper

    rename = dict(bind)
    produced = {o for n in body.node for o in n.output if o}
    direct = {}
    for out, target in zip(body.output, targets or []):
        if target and out.name in produced and out.name not in direct and target not in direct.values():
            direct[out.name] = target
    consts = {}
    for init in body.initializer:
        new = namer.fresh(prefix + init.name)
        rename[init.name] = new
        consts[new] = numpy_helper.to_array(init)
    nodes = []
    for index, node in enumerate(body.node):
        copy = type(node)()
        copy.CopyFrom(node)
        for k, name in enumerate(copy.input):
            if name:
                copy.input[k] = rename.get(name, name)
        for sub in _subgraphs(copy):
            _rename_refs(sub, rename)
        for k, name in enumerate(copy.output):
            if name:
                new = direct[name] if name in direct else namer.fresh(prefix + name)
                rename[name] = new
                copy.output[k] = new
        if not (keep_node_names and node.name):
            copy.name = namer.fresh(prefix + (node.name or f"{node.op_type}_{index}"))
        nodes.append(copy)
    outputs = [rename.get(o.name, o.name) for o in body.output]
    return nodes, consts, outputs


def _bind_outputs(sources: list[str], targets, prefix: str, namer: Namer):
    from onnx import helper

    return [helper.make_node("Identity", [s], [t], name=namer.fresh(f"{prefix}output{k}"))
            for k, (s, t) in enumerate(zip(sources, targets)) if t and s != t]


def _attr(node, name):
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return None


# ---------------------------------------------------------------------------------------------- If
def resolve_if(node, name: str, consts: dict, namer: Namer):
    """``If`` whose condition is a known constant: the taken branch, inlined."""
    cond = consts.get(node.input[0])
    if cond is None:
        return None
    cond = np.asarray(cond)
    if cond.size != 1:
        return None  # ONNX wants a single element; the handler reports it
    taken = "then_branch" if bool(cond.reshape(-1)[0]) else "else_branch"
    body = _attr(node, taken)
    prefix = f"{name}/{taken.split('_')[0]}/"
    nodes, new_consts, outs = inline(body, prefix, {}, namer, list(node.output), keep_node_names=True)
    if len(outs) != len(node.output):
        return None
    nodes += _bind_outputs(outs, node.output, prefix, namer)
    note = f"If '{name}': condition '{node.input[0]}' is {bool(cond.reshape(-1)[0])} at convert time; " \
           f"{taken} inlined ({len(body.node)} nodes)"
    return nodes, new_consts, note


def if_blocker(node, cond_inputs: list[str], consts: dict) -> str:
    cond = consts.get(node.input[0])
    if cond is not None and np.asarray(cond).size != 1:
        return f"condition '{node.input[0]}' has {np.asarray(cond).size} elements (one expected)"
    if cond is not None:
        return (f"condition '{node.input[0]}' is known, but the taken branch could not be inlined (its outputs "
                "do not match the node's)")
    if cond_inputs:
        names = ", ".join(f"'{i}'" for i in cond_inputs)
        flags = " ".join(f"--input-value {i}=VALUE" for i in cond_inputs)
        pinned = ", ".join(f"'{i}': ..." for i in cond_inputs)
        return (f"condition '{node.input[0]}' is known only at run time (it depends on input {names}); pin it with "
                f"{flags} (input_values={{{pinned}}}) to keep one branch")
    return f"condition '{node.input[0]}' is computed at run time and could not be folded"


# ---------------------------------------------------------------------------------------------- Loop
def passes_cond_through(body) -> bool:
    """The body's condition output is its condition input (directly or through Identity) or a constant true."""
    from onnx import numpy_helper

    want = body.output[0].name
    cond_in = body.input[1].name if len(body.input) > 1 else None
    producers = {o: n for n in body.node for o in n.output}
    inits = {i.name: i for i in body.initializer}
    for _ in range(len(body.node) + 1):
        if want == cond_in:
            return True
        if want in inits:
            return bool(np.all(numpy_helper.to_array(inits[want])))
        node = producers.get(want)
        if node is None:
            return False
        if node.op_type == "Identity":
            want = node.input[0]
            continue
        if node.op_type == "Constant":
            value = _attr(node, "value")
            return value is not None and bool(np.all(numpy_helper.to_array(value)))
        return False
    return False


def outer_refs(graph) -> set[str]:
    """Names a subgraph (with its nested ones) reads from its enclosing scopes."""
    local = _defined(graph)
    refs = set()
    for node in graph.node:
        refs.update(node_refs(node))
    refs |= {o.name for o in graph.output}
    return {r for r in refs if r and r not in local}


def node_refs(node) -> set[str]:
    """A node's inputs and what its subgraphs read from outside them."""
    refs = {i for i in node.input if i}
    for sub in _subgraphs(node):
        refs |= outer_refs(sub)
    return refs


def _condition_slice(body):
    """The body nodes that compute its condition output, and the loop-carried values (indices) it depends
    on, transitively through their own updates."""
    producers = {o: n for n in body.node for o in n.output if o}
    carried_in = [v.name for v in body.input[2:]]
    outs = [v.name for v in body.output]
    picked, carried, todo, seen = set(), set(), [outs[0]], set()
    while todo:
        v = todo.pop()
        if v in seen or not v:
            continue
        seen.add(v)
        if v in carried_in:
            k = carried_in.index(v)
            carried.add(k)
            todo.append(outs[1 + k])
        elif v in producers:
            n = producers[v]
            picked.add(id(n))
            todo.extend(node_refs(n))
    return [n for n in body.node if id(n) in picked], sorted(carried)


def _simulated_trips(node, consts: dict, trip_max, opset: int):
    """Iterations of a Loop whose condition the body computes from the iteration number, constants and
    loop-carried values that are themselves computed so (a counter): (count, None), or (None, reason)."""
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    body = _attr(node, "body")
    nodes, carried = _condition_slice(body)
    local = {v.name for v in body.input} | {i.name for i in body.initializer}
    local |= {o for n in nodes for o in n.output}
    outer = sorted({i for n in nodes for i in node_refs(n) if i not in local})
    initial = [node.input[2 + k] for k in carried]
    runtime = [v for v in outer + initial if v not in consts]
    if runtime:
        return None, (f"the body computes its termination condition from run-time values ({', '.join(runtime[:3])}): "
                      "data-dependent termination")
    inits = list(body.initializer) + [numpy_helper.from_array(np.asarray(consts[v]), v) for v in outer]
    ins = [body.input[0], body.input[1]] + [body.input[2 + k] for k in carried]
    outs = [body.output[0]] + [body.output[1 + k] for k in carried]
    graph = helper.make_graph(nodes, "condition", list(ins), [helper.make_empty_tensor_value_info(o.name)
                                                               for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    evaluator = ReferenceEvaluator(model)
    cond = bool(np.asarray(consts[node.input[1]]).reshape(-1)[0]) if len(node.input) > 1 and node.input[1] else True
    values = [np.asarray(consts[v]) for v in initial]
    count = 0
    limit = MAX_UNROLL if trip_max is None else min(trip_max, MAX_UNROLL + 1)
    while cond and count < limit:
        feeds = {ins[0].name: np.array(count, np.int64), ins[1].name: np.array(cond)}
        feeds.update({v.name: x for v, x in zip(ins[2:], values)})
        result = evaluator.run(None, feeds)
        cond, values = bool(np.asarray(result[0]).reshape(-1)[0]), result[1:]
        count += 1
    if count > MAX_UNROLL or (cond and (trip_max is None or count < trip_max)):
        return None, f"the loop runs more than {MAX_UNROLL} iterations (too long to unroll)"
    return count, None


def loop_trips(node, consts: dict, opset: int = 17):
    """(iterations, None) for a Loop that can be unrolled now, else (None, why not)."""
    inp = list(node.input) + [""] * (2 - len(node.input))
    trip = None
    if inp[0]:
        if inp[0] not in consts:
            return None, f"trip count M ('{inp[0]}') is computed at run time (only a constant trip count is unrolled)"
        trip = int(np.asarray(consts[inp[0]]).reshape(-1)[0])
    if inp[1] and inp[1] not in consts:
        return None, f"loop condition ('{inp[1]}') is computed at run time (data-dependent termination)"
    if inp[1] and not bool(np.asarray(consts[inp[1]]).reshape(-1)[0]):
        return 0, None
    body = _attr(node, "body")
    if passes_cond_through(body):
        if trip is None:
            return None, ENDLESS
        if trip > MAX_UNROLL:
            return None, f"trip count {trip} is above {MAX_UNROLL} (too long to unroll)"
        return trip, None
    try:
        return _simulated_trips(node, consts, trip, opset)
    except Exception as exc:  # noqa: BLE001 -- the condition could not be evaluated at convert time
        return None, f"the body's termination condition could not be evaluated at convert time ({exc})"


def loop_blocker(node, consts: dict, opset: int = 17) -> str | None:
    """Why this Loop cannot be unrolled now (None: it can)."""
    return loop_trips(node, consts, opset)[1]


def _stack(values: list[str], axis: int, out: str, prefix: str, opset: int, namer: Namer, consts: dict):
    """ONNX nodes stacking ``values`` along a new axis ``axis`` into ``out`` (Unsqueeze each, Concat)."""
    from onnx import helper

    nodes, parts = [], []
    axes_name = None
    if opset >= 13:
        axes_name = namer.fresh(f"{prefix}stack_axes")
        consts[axes_name] = np.array([axis], np.int64)
    for k, v in enumerate(values):
        part = namer.fresh(f"{prefix}stack{k}")
        if opset >= 13:
            nodes.append(helper.make_node("Unsqueeze", [v, axes_name], [part], name=namer.fresh(part)))
        else:
            nodes.append(helper.make_node("Unsqueeze", [v], [part], axes=[axis], name=namer.fresh(part)))
        parts.append(part)
    nodes.append(helper.make_node("Concat", parts, [out], axis=axis, name=namer.fresh(f"{prefix}concat")))
    return nodes


def resolve_loop(node, name: str, consts: dict, namer: Namer, opset: int):
    trip, _ = loop_trips(node, consts, opset)
    if trip is None:
        return None
    body = _attr(node, "body")
    carried = [v for v in node.input[2:]]
    n_carried = len(carried)
    n_scan = len(body.output) - 1 - n_carried
    if trip == 0 and n_scan:
        return None  # empty scan outputs: the handler refuses
    new_consts: dict = {}
    nodes = []
    true_name = namer.fresh(f"{name}/cond_true")
    new_consts[true_name] = np.array(True)
    scans: list[list[str]] = [[] for _ in range(n_scan)]
    for t in range(trip):
        prefix = f"{name}/iter{t}/"
        it_name = namer.fresh(f"{prefix}iteration")
        new_consts[it_name] = np.array(t, np.int64)
        bind = {body.input[0].name: it_name, body.input[1].name: true_name}
        for k, v in enumerate(carried):
            bind[body.input[2 + k].name] = v
        last = [""] + list(node.output[:n_carried]) if t == trip - 1 else None
        body_nodes, body_consts, outs = inline(body, prefix, bind, namer, last)
        nodes += body_nodes
        new_consts.update(body_consts)
        carried = outs[1:1 + n_carried]
        for k in range(n_scan):
            scans[k].append(outs[1 + n_carried + k])
    nodes += _bind_outputs(carried, node.output[:n_carried], f"{name}/", namer)
    for k in range(n_scan):
        out = node.output[n_carried + k] if n_carried + k < len(node.output) else ""
        if out:
            nodes += _stack(scans[k], 0, out, f"{name}/scan{k}/", opset, namer, new_consts)
    note = f"Loop '{name}': trip count {trip} known at convert time, unrolled ({len(body.node)} body nodes each)"
    return nodes, new_consts, note


# ---------------------------------------------------------------------------------------------- Scan
def scan_blocker(node, shapes: dict, opset: int) -> str | None:
    if opset < 9:
        return "Scan before opset 9 (batched, with sequence_lens) is not unrolled"
    n_scan = int(_attr(node, "num_scan_inputs"))
    body = _attr(node, "body")
    scan_in = list(node.input)[len(node.input) - n_scan:]
    axes = list(_attr(node, "scan_input_axes") or [0] * n_scan)
    lengths = set()
    for v, ax in zip(scan_in, axes):
        shape = shapes.get(v)
        if shape is None or any(not isinstance(d, int) for d in shape):
            return f"scan input '{v}' has no static shape (its length must be known to unroll)"
        lengths.add(shape[ax % len(shape)])
    if len(lengths) != 1:
        return f"scan inputs of different lengths {sorted(lengths)}"
    length = lengths.pop()
    if length == 0 and len(body.output) > len(node.input) - n_scan:
        return "scan of length 0 with scan outputs"
    if length > MAX_UNROLL:
        return f"scan length {length} is above {MAX_UNROLL} (too long to unroll)"
    return None


def resolve_scan(node, name: str, shapes: dict, namer: Namer, opset: int):
    if scan_blocker(node, shapes, opset) is not None:
        return None
    from onnx import helper

    n_scan = int(_attr(node, "num_scan_inputs"))
    body = _attr(node, "body")
    n_state = len(node.input) - n_scan
    scan_in = list(node.input)[n_state:]
    in_axes = list(_attr(node, "scan_input_axes") or [0] * n_scan)
    in_dirs = list(_attr(node, "scan_input_directions") or [0] * n_scan)
    n_out = len(body.output) - n_state
    out_axes = list(_attr(node, "scan_output_axes") or [0] * n_out)
    out_dirs = list(_attr(node, "scan_output_directions") or [0] * n_out)
    ranks = [len(shapes[v]) for v in scan_in]
    in_axes = [a % r for a, r in zip(in_axes, ranks)]
    length = shapes[scan_in[0]][in_axes[0]]
    new_consts: dict = {}
    nodes = []
    state = list(node.input[:n_state])
    outs_per_step: list[list[str]] = [[] for _ in range(n_out)]
    for t in range(length):
        prefix = f"{name}/iter{t}/"
        bind = {body.input[k].name: v for k, v in enumerate(state)}
        for k, v in enumerate(scan_in):
            index = t if not in_dirs[k] else length - 1 - t
            idx_name = namer.fresh(f"{prefix}index{k}")
            new_consts[idx_name] = np.array(index, np.int64)
            sliced = namer.fresh(f"{prefix}slice{k}")
            nodes.append(helper.make_node("Gather", [v, idx_name], [sliced], axis=in_axes[k],
                                          name=namer.fresh(sliced)))
            bind[body.input[n_state + k].name] = sliced
        last = list(node.output[:n_state]) if t == length - 1 else None
        body_nodes, body_consts, outs = inline(body, prefix, bind, namer, last)
        nodes += body_nodes
        new_consts.update(body_consts)
        state = outs[:n_state]
        for k in range(n_out):
            outs_per_step[k].append(outs[n_state + k])
    nodes += _bind_outputs(state, node.output[:n_state], f"{name}/", namer)
    for k in range(n_out):
        out = node.output[n_state + k] if n_state + k < len(node.output) else ""
        if not out:
            continue
        values = outs_per_step[k][::-1] if out_dirs[k] else outs_per_step[k]
        axis = out_axes[k]
        if axis < 0:
            rank = len(body.output[n_state + k].type.tensor_type.shape.dim) + 1
            axis += rank
        nodes += _stack(values, axis, out, f"{name}/scan{k}/", opset, namer, new_consts)
    note = f"Scan '{name}': length {length}, unrolled ({len(body.node)} body nodes each)"
    return nodes, new_consts, note
