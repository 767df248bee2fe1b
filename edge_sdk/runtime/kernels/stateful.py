"""Resource variables and CALL_ONCE, with TFLM's semantics (tensorflow/lite/micro/kernels/*variable*.cc).

- VAR_HANDLE: its output (a RESOURCE tensor, held as one int32) is the id the runtime gives to the op's
  (container, shared_name) pair; every VAR_HANDLE naming the same variable gets the same id.
- ASSIGN_VARIABLE: TFLM allocates the variable when the first ASSIGN_VARIABLE writing it is prepared, sized
  and typed by that op's value input, and fills it with the value input's zero point (byte-wise, as TFLM's
  memset does; 0 when unquantized). We do the same when the handle comes from a VAR_HANDLE whose id is known
  at prepare; a later assignment of a different byte size or dtype is a model error. Eval copies the value
  into the variable.
- READ_VARIABLE: copies the variable into its output, whose shape is the model's declared one (the variable's
  shape is only known from an ASSIGN_VARIABLE, possibly in another subgraph). A variable the runtime does not
  hold (never assigned, or forgotten by reset_all_variables) reads as its default, the output's zero point
  byte-filled -- what TFLM's reset leaves in it.
- CALL_ONCE: runs its init subgraph at the first invoke only. TFLM's reset does not re-arm it (the op has no
  reset hook) and neither do we: after reset_all_variables the variables read as their defaults.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.runtime.kernels.node import Node, TensorInfo

# The resource id a VAR_HANDLE resolved at prepare, attached to its output tensor's TensorInfo so that an
# ASSIGN_VARIABLE reading that tensor can allocate the variable at its own prepare, as TFLM does.
_HANDLE_ATTR = "_edge_resource_id"


def _runtime(node: Node):
    if node.runtime is None:
        raise node.error("needs an interpreter that holds resource variables")
    return node.runtime


def _default_fill(t: TensorInfo) -> int:
    """The byte TFLM memsets a fresh or reset variable with: the zero point cast to int8."""
    if t.zero_point is not None and t.zero_point.size:
        return int(t.zero_point[0]) & 0xFF
    return 0


def _expect_handle(node: Node, t: TensorInfo) -> None:
    if t.type not in ("RESOURCE", "INT32"):
        raise node.error(f"input '{t.name}' must be a RESOURCE handle, has type {t.type}")
    if t.size != 1:
        raise node.error(f"resource handle '{t.name}' must hold one element, has shape {t.shape}")


def prepare_var_handle(node: Node):
    node.expect_counts(0, 1)
    out = node.outputs[0]
    if out.type not in ("RESOURCE", "INT32"):
        raise node.error(f"output '{out.name}' must be a RESOURCE tensor, has type {out.type}")
    runtime = _runtime(node)
    container = node.options.get("container") or ""
    shared_name = node.options.get("shared_name") or ""
    rid = int(runtime.resource_id(str(container), str(shared_name)))
    node.set_output_shape(0, out.shape if int(np.prod(out.shape, dtype=np.int64)) == 1 else ())
    setattr(out, _HANDLE_ATTR, rid)

    def run(inputs, outputs):
        outputs[0][...] = rid

    return run


def prepare_assign_variable(node: Node):
    node.expect_counts(2, 0)
    handle, value = node.input(0), node.input(1)
    _expect_handle(node, handle)
    if value.dtype is None:
        raise node.unsupported(f"value '{value.name}' has type {value.type}, which a variable cannot hold")
    runtime = _runtime(node)
    variables = runtime.resource_variables
    rid = getattr(handle, _HANDLE_ATTR, None)
    if handle.data is not None:
        rid = int(np.asarray(handle.data).reshape(-1)[0])
    if rid is not None:
        existing = variables.get(rid)
        if existing is None:
            fresh = np.empty(value.shape, value.dtype)
            fresh.reshape(-1).view(np.uint8)[...] = _default_fill(value)
            variables[rid] = fresh
        elif existing.dtype != value.dtype or existing.nbytes != value.size * value.dtype.itemsize:
            raise node.error(
                f"assigns {value.type} {value.shape} to resource variable {rid}, which holds "
                f"{existing.dtype} {existing.shape}"
            )
    where = node.where()

    def run(inputs, outputs):
        key = int(inputs[0].reshape(-1)[0])
        new = inputs[1]
        held = variables.get(key)
        if held is None:
            variables[key] = np.array(new, copy=True)
        elif held.dtype == new.dtype and held.size == new.size:
            held.reshape(-1)[...] = new.reshape(-1)
        else:
            from edge_sdk.errors import ModelError

            raise ModelError(f"{where}: assigns {new.dtype} {new.shape} to resource variable {key}, "
                             f"which holds {held.dtype} {held.shape}")

    return run


def prepare_read_variable(node: Node):
    node.expect_counts(1, 1)
    handle, out = node.input(0), node.outputs[0]
    _expect_handle(node, handle)
    if out.dtype is None:
        raise node.unsupported(f"output '{out.name}' has type {out.type}, which we cannot hold")
    runtime = _runtime(node)
    variables = runtime.resource_variables
    node.set_output_shape(0, out.shape)
    fill = _default_fill(out)
    nbytes = out.size * out.dtype.itemsize
    where = node.where()

    def run(inputs, outputs):
        key = int(inputs[0].reshape(-1)[0])
        held = variables.get(key)
        dst = outputs[0].reshape(-1).view(np.uint8)
        if held is None:
            dst[...] = fill
        elif held.nbytes == nbytes:
            dst[...] = np.ascontiguousarray(held).reshape(-1).view(np.uint8)
        else:
            from edge_sdk.errors import ModelError

            raise ModelError(f"{where}: resource variable {key} holds {held.dtype} {held.shape}, "
                             f"the output needs {nbytes} bytes")

    return run


def prepare_call_once(node: Node):
    node.expect_counts(0, 0)
    runtime = _runtime(node)
    index = node.options.get("init_subgraph_index", 0)
    if not isinstance(index, (int, np.integer)) or index < 0:
        raise node.error(f"init_subgraph_index {index!r} is not a subgraph index")
    index = int(index)
    if index == node.subgraph:
        raise node.error(f"init_subgraph_index {index} is the subgraph that calls it")
    done = [False]

    def run(inputs, outputs):
        if not done[0]:
            runtime.invoke_subgraph(index, [])
            done[0] = True

    return run
