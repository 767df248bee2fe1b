"""IF, WHILE and STABLEHLO_COMPOSITE: nodes that run other subgraphs, with TFLM's semantics
(tensorflow/lite/micro/kernels/if.cc, while.cc; CALL_ONCE is in stateful.py) and LiteRT's (stablehlo_composite.cc).

- IF: input 0 is a BOOL scalar (one element), the condition; inputs 1.. are the branch's inputs. The
  then_subgraph_index branch runs when it is true, else_subgraph_index otherwise; the node's outputs are copies
  of the branch's outputs.
- WHILE: the inputs are the loop variables, copied into the node's outputs, which hold them during the loop.
  cond_subgraph_index maps the variables to one BOOL; while it is true, body_subgraph_index maps the
  variables to their next values. ``Interpreter(..., max_while_iterations=N)`` bounds the body runs of one
  WHILE node per invoke: one more is a ModelError naming the node (default: no bound, as LiteRT).
- STABLEHLO_COMPOSITE (ai-edge-torch's odml.* composites): the node's inputs go to its
  decomposition_subgraph_index subgraph, whose outputs are the node's (LiteRT calls the decomposition; the
  composite's name and attributes only tell a delegate what the decomposition computes).

Shapes are static within a prepare, as TFLM requires: every callee subgraph is prepared before the node that
calls it (planner.call_order), at its declared shapes; a node passing inputs of other shapes (a model resized to
another length) has it prepared again at those, as LiteRT resizes and re-prepares a callee
(Interpreter.prepare_subgraph_at). A subgraph holds one set of shapes: when a second call site passes other
shapes (CallSiteShapes), that site gets a copy of the subgraph of its own (``with_call_site_copy``: appended, its
constants' buffers shared) and the model is prepared again, so each call runs at its caller's shapes, as LiteRT
re-prepares a callee at each call; the bytes the C runtime loads hold the same copies (shape_arithmetic.c_loaded
over that prepare). Prepare then holds the branches' / the loop's tensors to the node's: the same types, the same
shapes (a branch input, a loop variable), the same output shapes in both branches; branches whose outputs differ
are refused at prepare. A WHILE whose body changes a loop variable's shape (a sequence grown by CONCATENATION each
iteration, as greedy decoders write) runs as LiteRT runs it, with dynamic shapes (_reshaping_loop): cond and body
prepared again at each iteration's shapes, the growing outputs sized at eval (the nodes reading them prepared at
eval: interpreter.PreparedAtEval; returned by an IF branch or a composite's decomposition, the node's output is
sized at eval too; returned by a WHILE body, that loop variable grows in the outer loop as well); the C runtime, which plans every byte before the first
invoke, refuses it at load naming the loop variable.
"""

from __future__ import annotations

import copy

import numpy as np

from edge_sdk.errors import ArenaTooSmallError, ModelError
from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table
from edge_sdk.runtime.kernels.node import Node, TensorInfo

# The most call-site copies one prepare makes (with_call_site_copy): past it the conflicting call is refused.
MAX_CALL_SITE_COPIES = 64


class CallSiteShapes(ModelError):
    """A node calls subgraph ``subgraph`` at input shapes another call site already prepared it at differently
    (Interpreter.prepare_subgraph_at): the interpreter gives the node, ``site`` = (subgraph, node), a copy of the
    subgraph (``with_call_site_copy``) and prepares again; the message is the refusal when it cannot."""

    def __init__(self, message: str, subgraph: int, site: tuple[int, int]):
        super().__init__(message)
        self.subgraph, self.site = subgraph, site


def with_call_site_copy(model: Model, subgraph: int, site: tuple[int, int]) -> Model:
    """A copy of ``model`` whose node ``site`` = (subgraph, node) calls an appended copy of subgraph ``subgraph``
    (its tensor and node tables copied, its constants' buffers shared; named "<name>@<s>.<i>") wherever it called
    ``subgraph``; the other subgraphs and indices stay. Nodes of the copy call what the original calls."""
    out = copy.copy(model)
    original = model.subgraphs[subgraph]
    twin = copy.copy(original)
    twin.tensors, twin.inputs, twin.outputs = list(original.tensors), list(original.inputs), list(original.outputs)
    twin.operators = [copy.copy(op) for op in original.operators]
    twin.name = f"{original.name or subgraph}@{site[0]}.{site[1]}"
    out.subgraphs = [*model.subgraphs, twin]
    s, i = site
    caller = out.subgraphs[s] = copy.copy(out.subgraphs[s])
    caller.operators = list(caller.operators)
    op = caller.operators[i] = copy.copy(caller.operators[i])
    op.options = {k: (len(out.subgraphs) - 1 if k in op_table.row(model.op_name(op)).subgraphs and v == subgraph
                      else v) for k, v in (op.options or {}).items()}
    return out


def _callees(node: Node, args: list[TensorInfo] | None = None
             ) -> list[tuple[int, str, list[TensorInfo], list[TensorInfo]]]:
    """Per subgraph the node calls (its op-table row's ``subgraphs`` option fields, in order: IF's then / else,
    WHILE's cond / body): (index, what to call it in messages, input infos, output infos). The interpreter checked
    the indices before prepare and prepared those subgraphs first; with ``args`` (the infos the node passes in)
    each is prepared again at their shapes where they differ (Runtime.prepare_subgraph_at, as LiteRT)."""
    runtime = node.runtime
    if runtime is None:
        raise node.error("needs an interpreter that runs subgraphs")
    out = []
    for field in op_table.row(node.op).subgraphs:
        index = int(node.options[field])
        if args is not None:
            runtime.prepare_subgraph_at(index, [a.shape for a in args], node)
        infos = runtime.subgraph_infos(index)
        sg = runtime.model.subgraphs[index]
        what = f"{field.removesuffix('_subgraph_index')} subgraph {index}"
        out.append((index, what, [infos[t] for t in sg.inputs], [infos[t] for t in sg.outputs]))
    return out


def _expect_counts(node: Node, what: str, tensors: list, count: int, kind: str) -> None:
    if len(tensors) != count:
        raise node.error(f"{what} has {len(tensors)} {kind}s, the node needs {count}")


def _expect_like(node: Node, what: str, tensor: TensorInfo, like: TensorInfo, like_what: str) -> None:
    """``tensor`` has ``like``'s type and shape (the runtimes copy the bytes across: static shapes)."""
    if tensor.type != like.type:
        raise node.error(f"{what} '{tensor.name}' has type {tensor.type}, {like_what} '{like.name}' has {like.type}")
    if tuple(tensor.shape) != tuple(like.shape):
        raise node.error(f"{what} '{tensor.name}' has shape {tuple(tensor.shape)}, {like_what} '{like.name}' has "
                         f"{tuple(like.shape)}: shapes must be static across subgraph calls (as TFLM requires)")


def _expect_bool_scalar(node: Node, t: TensorInfo, what: str) -> None:
    if t.type != "BOOL":
        raise node.unsupported(f"{what} '{t.name}' has type {t.type}; it must be BOOL")
    if t.size != 1:
        raise node.error(f"{what} '{t.name}' must hold one element, has shape {tuple(t.shape)}")


def prepare_if(node: Node):
    if not node.inputs:
        raise node.error("expects a condition input, has no inputs")
    cond = node.input(0)
    _expect_bool_scalar(node, cond, "condition")
    args = [node.input(k) for k in range(1, len(node.inputs))]
    branches = []
    for index, what, ins, outs in _callees(node, args):  # then, else
        _expect_counts(node, what, ins, len(args), "input")
        _expect_counts(node, what, outs, len(node.outputs), "output")
        for k, (x, b) in enumerate(zip(args, ins)):
            _expect_like(node, f"{what} input {k}", b, x, f"node input {k + 1}")
        branches.append((index, what, outs))
    (then_index, then_what, then_outs), (else_index, else_what, else_outs) = branches
    sized = {k for k, (a, b) in enumerate(zip(then_outs, else_outs)) if a.sized_at_eval or b.sized_at_eval}
    for k, (a, b) in enumerate(zip(then_outs, else_outs)):
        if k not in sized:
            _expect_like(node, f"{else_what} output {k}", b, a, f"{then_what} output {k}")
    _outputs_from(node, then_outs, "the branches'")
    for k in sized:  # a growing WHILE's output in a branch: the node's is sized at eval too (a DataSizedOutput)
        if else_outs[k].type != then_outs[k].type:
            raise node.error(f"{else_what} output {k} has type {else_outs[k].type}, {then_what} output {k} has "
                             f"{then_outs[k].type}")
    _sized_at_eval_like(node, sized)
    runtime = node.runtime

    def run(inputs, outputs):
        branch = then_index if inputs[0].reshape(-1)[0] else else_index
        _copy_results(outputs, runtime.invoke_subgraph(branch, inputs[1:]), sized)

    return run


def _sized_at_eval_like(node: Node, sized) -> None:
    """The node's outputs ``sized`` (indices) take a callee output sized at eval (a growing WHILE's inside it): they
    are sized at eval too (an empty placeholder: the interpreter's DataSizedOutput, resized to the callee's result;
    their readers prepared at eval)."""
    for k in sized:
        node.set_output_shape(k, (0,) * len(node.outputs[k].shape))
        node.outputs[k].sized_at_eval = True


def _copy_results(outputs, results, sized) -> None:
    """A callee's results into the node's outputs; those sized at eval (DataSizedOutput) resized to them first."""
    for k, (o, r) in enumerate(zip(outputs, results)):
        if k in sized:
            o.resize(r.shape)[...] = r
        else:
            o[...] = r


def _outputs_from(node: Node, callee_outs, whose: str) -> None:
    """The node's outputs take the called subgraph's output types (checked) and shapes (IF: the branches',
    STABLEHLO_COMPOSITE: the decomposition's)."""
    for k, d in enumerate(callee_outs):
        out = node.outputs[k]
        if out.type != d.type:
            raise node.error(f"output {k} '{out.name}' has type {out.type}, {whose} output {k} has {d.type}")
        node.set_output_shape(k, d.shape)


def prepare_while(node: Node):
    n = len(node.inputs)
    if len(node.outputs) != n:
        raise node.error(f"has {n} inputs and {len(node.outputs)} outputs: a WHILE's loop variables are both")
    variables = [node.input(k) for k in range(n)]
    callees = _callees(node, variables)
    (cond_index, cond_what, cond_ins, cond_outs), (body_index, body_what, body_ins, body_outs) = callees
    _expect_counts(node, cond_what, cond_ins, n, "input")
    _expect_counts(node, cond_what, cond_outs, 1, "output")
    _expect_bool_scalar(node, cond_outs[0], f"{cond_what} output")
    _expect_counts(node, body_what, body_ins, n, "input")
    _expect_counts(node, body_what, body_outs, n, "output")
    growing = _growing_variables(node, variables, body_outs)
    for k, v in enumerate(variables):
        like = f"loop variable {k}"
        _expect_like(node, f"{cond_what} input {k}", cond_ins[k], v, like)
        _expect_like(node, f"{body_what} input {k}", body_ins[k], v, like)
        if k not in growing:
            _expect_like(node, f"{body_what} output {k}", body_outs[k], v, like)
        if node.outputs[k].type != v.type:
            raise node.error(f"output {k} '{node.outputs[k].name}' has type {node.outputs[k].type}, {like} "
                             f"'{v.name}' has {v.type}")
        node.set_output_shape(k, v.shape)
    if growing:
        return _reshaping_loop(node, cond_index, body_index, growing)
    runtime = node.runtime
    where = node.where()

    def run(inputs, outputs):
        for o, x in zip(outputs, inputs):  # the node's outputs hold the loop variables (TFLM's while.cc)
            o[...] = x
        bound = runtime.max_while_iterations
        done = 0
        while runtime.invoke_subgraph(cond_index, outputs)[0].reshape(-1)[0]:
            if bound is not None and done >= bound:
                raise ModelError(f"{where}: the loop did not end within max_while_iterations={bound} iterations")
            for o, r in zip(outputs, runtime.invoke_subgraph(body_index, outputs)):
                o[...] = r
            done += 1

    return run


def _growing_variables(node: Node, variables: list[TensorInfo], body_outs: list[TensorInfo]) -> list[int]:
    """The loop variables whose shape the body changes (its output k, prepared at the variables' shapes, has
    another shape than variable k, the same type: a CONCATENATION growing a sequence, as greedy decoders write), or
    may change (its output k is sized at eval: an inner growing WHILE's, returned by the body). LiteRT marks such a
    WHILE's outputs dynamic and re-prepares cond and body at each iteration's shapes; so does this interpreter
    (_reshaping_loop)."""
    return [k for k, (v, b) in enumerate(zip(variables, body_outs))
            if b.type == v.type and (b.sized_at_eval or tuple(b.shape) != tuple(v.shape))]


def _reshaping_loop(node: Node, cond_index: int, body_index: int, growing: list[int]):
    """The eval of a WHILE whose body changes the shapes of loop variables ``growing`` (LiteRT's dynamic WHILE):
    cond and body run in interpreters of their own (SubgraphRunner), prepared again whenever the variables'
    shapes change, as LiteRT re-prepares them; those outputs are sized at eval (an empty placeholder until then,
    no arena bytes: the interpreter's DataSizedOutput; its readers are prepared at eval), the others keep their shapes
    (one that ends at another shape is a ModelError naming it)."""
    for k in growing:
        out = node.outputs[k]
        node.set_output_shape(k, (0,) * len(out.shape))  # a placeholder: the last iteration's shape, at eval
        out.sized_at_eval = True
    runtime, where = node.runtime, node.where()
    cond, body = SubgraphRunner(runtime, cond_index), SubgraphRunner(runtime, body_index)
    names = [t.name for t in node.outputs]

    def run(inputs, outputs):
        values = [np.array(x) for x in inputs]
        bound, done = runtime.max_while_iterations, 0
        while cond(values)[0].reshape(-1)[0]:
            if bound is not None and done >= bound:
                raise ModelError(f"{where}: the loop did not end within max_while_iterations={bound} iterations")
            at = f"{where}: iteration {done + 1} at {[list(v.shape) for v in values]}"
            try:
                values = body(values)
            except ArenaTooSmallError as exc:  # this iteration's shapes: the caller's budget, with the node named
                raise ArenaTooSmallError(exc.required, exc.given, f"{at}: arena") from None
            except ModelError as exc:  # the body's prepare at these shapes (a plan past MAX_ARENA_BYTES, ...)
                raise ModelError(f"{at}: {exc}") from None
            done += 1
        for k, (o, v) in enumerate(zip(outputs, values)):
            if k in growing:
                o.resize(v.shape)[...] = v
            elif o.shape != v.shape:
                raise ModelError(f"{where}: loop variable {k} '{names[k]}' ended at shape {v.shape}, not its "
                                 f"prepared {o.shape}: only {', '.join(names[g] for g in growing)} may change shape")
            else:
                o[...] = v

    return run


class SubgraphRunner:
    """Subgraph ``index`` of the runtime's model run on its own (``subgraph_model``: it and its callees), in an
    interpreter prepared at the shapes of the values given, prepared again when they change (a WHILE whose body
    changes shapes: LiteRT re-prepares its callees at each iteration's shapes). Under the runtime's invoke_traced
    its steps are traced too, as rows of the runtime's subgraphs (``runtime.trace_sink``)."""

    def __init__(self, runtime, index: int):
        self.runtime, self.index = runtime, index
        self.interp, self.shapes = None, None
        self.order = call_closure(runtime.model, index)  # the runner's subgraph j is the runtime's order[j]

    def __call__(self, values: list[np.ndarray]) -> list[np.ndarray]:
        shapes = [tuple(v.shape) for v in values]
        if self.interp is None:  # the caller's bounds: its arena budget holds each iteration's plan (a growing loop)
            self.interp = self.runtime.standalone(subgraph_model(self.runtime.model, self.index))
        details = self.interp.get_input_details()
        if shapes != self.shapes:
            for d, shape in zip(details, shapes):
                self.interp.resize_tensor_input(d["index"], shape)
            self.interp.allocate_tensors()
            self.shapes = shapes
        for d, v in zip(details, values):
            self.interp.set_tensor(d["index"], v)
        sink = self.runtime.trace_sink()
        if sink is None:
            self.interp.invoke()
        else:
            sink.extend({**row, "subgraph": self.order[row["subgraph"]]} for row in self.interp.invoke_traced())
        return [np.array(self.interp.get_tensor(d["index"])) for d in self.interp.get_output_details()]


def call_closure(model: Model, index: int) -> list[int]:
    """Subgraph ``index`` and the subgraphs it calls (directly or not), in the order ``subgraph_model`` lays out."""
    from edge_sdk.runtime.planner import callees

    order, todo = [index], [index]
    while todo:
        for op in model.subgraphs[todo.pop()].operators:
            for c in callees(model, op):
                if c not in order:
                    order.append(c)
                    todo.append(c)
    return order


def subgraph_model(model: Model, index: int) -> Model:
    """A model whose main subgraph is ``model``'s subgraph ``index``, followed by the subgraphs it calls (directly
    or not: call_closure), their call options renumbered; buffers and operator codes shared."""
    order = call_closure(model, index)
    renumber = {old: new for new, old in enumerate(order)}
    out = copy.copy(model)
    out.subgraphs, out.signature_defs = [], []
    for old in order:
        sg = copy.copy(model.subgraphs[old])
        sg.operators = [copy.copy(op) for op in sg.operators]
        for op in sg.operators:
            fields = op_table.row(model.op_name(op)).subgraphs
            op.options = {k: renumber[int(v)] if k in fields else v for k, v in (op.options or {}).items()}
        out.subgraphs.append(sg)
    return out


def prepare_stablehlo_composite(node: Node):
    (index, what, ins, outs), = _callees(node, list(node.inputs))  # the decomposition, at the node's input shapes
    _expect_counts(node, what, ins, len(node.inputs), "input")
    _expect_counts(node, what, outs, len(node.outputs), "output")
    for k, (x, d) in enumerate(zip(node.inputs, ins)):
        _expect_like(node, f"{what} input {k}", d, node.input(k), f"node input {k}")
    _outputs_from(node, outs, what)
    sized = {k for k, d in enumerate(outs) if d.sized_at_eval}  # a growing WHILE's inside the decomposition
    _sized_at_eval_like(node, sized)
    runtime = node.runtime

    def run(inputs, outputs):
        _copy_results(outputs, runtime.invoke_subgraph(index, inputs), sized)

    return run
