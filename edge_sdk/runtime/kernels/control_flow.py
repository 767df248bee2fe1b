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
(Interpreter.prepare_subgraph_at; one set of shapes per subgraph). Prepare then holds the branches' / the loop's
tensors to the node's: the same types, the same shapes (a branch input, a loop variable), the same output shapes
in both branches. What would need dynamic shapes (branches whose outputs differ, a loop variable that changes
shape) is refused at prepare.
"""

from __future__ import annotations

from edge_sdk.errors import ModelError
from edge_sdk.runtime import op_table
from edge_sdk.runtime.kernels.node import Node, TensorInfo


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
    for k, (a, b) in enumerate(zip(then_outs, else_outs)):
        _expect_like(node, f"{else_what} output {k}", b, a, f"{then_what} output {k}")
    _outputs_from(node, then_outs, "the branches'")
    runtime = node.runtime

    def run(inputs, outputs):
        branch = then_index if inputs[0].reshape(-1)[0] else else_index
        for o, r in zip(outputs, runtime.invoke_subgraph(branch, inputs[1:])):
            o[...] = r

    return run


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
    for k, v in enumerate(variables):
        like = f"loop variable {k}"
        _expect_like(node, f"{cond_what} input {k}", cond_ins[k], v, like)
        _expect_like(node, f"{body_what} input {k}", body_ins[k], v, like)
        _expect_like(node, f"{body_what} output {k}", body_outs[k], v, like)
        if node.outputs[k].type != v.type:
            raise node.error(f"output {k} '{node.outputs[k].name}' has type {node.outputs[k].type}, {like} "
                             f"'{v.name}' has {v.type}")
        node.set_output_shape(k, v.shape)
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


def prepare_stablehlo_composite(node: Node):
    (index, what, ins, outs), = _callees(node)  # the decomposition
    _expect_counts(node, what, ins, len(node.inputs), "input")
    _expect_counts(node, what, outs, len(node.outputs), "output")
    for k, (x, d) in enumerate(zip(node.inputs, ins)):
        _expect_like(node, f"{what} input {k}", d, node.input(k), f"node input {k}")
    _outputs_from(node, outs, what)
    runtime = node.runtime

    def run(inputs, outputs):
        for o, r in zip(outputs, runtime.invoke_subgraph(index, inputs)):
            o[...] = r

    return run
