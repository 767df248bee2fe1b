"""Run a TFLite model on numpy, TFLM style: prepare validates, eval runs blind.

    interp = Interpreter(model_path="net.tflite")      # or model_content=bytes; arena_size=N for a budget
    interp.allocate_tensors()                           # every check happens here, never in invoke()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    y = interp.get_tensor(interp.get_output_details()[0]["index"])

The public methods mirror ``ai_edge_litert.interpreter.Interpreter`` for the common path (same details
dicts, same ValueError messages from set_tensor). Our own additions: ``arena_size`` (bytes the plan uses),
``arena_plan()`` (an ``edge_sdk.runtime.arena.ArenaPlan`` you can print) and ``Interpreter(..., arena_size=N)``,
which makes ``allocate_tensors`` raise ``ArenaTooSmallError(required, given)`` when the plan needs more;
``memory=`` picks the arena plan (edge_sdk.runtime.planner.MEMORY_PLANS): "layer" (the default, layer by layer),
"inplace" (in-place RESHAPE / PAD / int8 depthwise / elementwise ops, planner.inplace_aliases; +0 MACs) or "min"
(the least RAM: "inplace" plus patch-based execution of a stage of the graph when that needs less still,
``patch_plan()``; edge_sdk.runtime.patching), the planner deciding which (planner.plan_tensors), all
bit-exact with the layer-by-layer plan; ``memory_plan`` says which plan was built ("layer", "inplace" or "patch").
``num_threads`` (LiteRT's checks: an int >= 1; None means 1, like LiteRT's single-threaded reference kernels)
caps the BLAS threads the kernels' matrix products use during invoke (``edge_sdk.runtime.kernels.blas``, set once per
invoke and restored after it, so numpy outside invoke keeps its own setting).
Control flow (IF, WHILE, CALL_ONCE: edge_sdk.runtime.kernels.control_flow, stateful): the constructor refuses a model
whose subgraph calls form a cycle (ModelError naming it, planner.call_order); allocate_tensors prepares each subgraph
after the subgraphs it calls, so IF / WHILE hold their callees to static shapes. ``max_while_iterations`` (None: no
bound, as LiteRT) bounds the body runs of each WHILE node per invoke: one more is a ModelError naming the node.

allocate_tensors, step by step:

1. For each subgraph, a ``TensorInfo`` per tensor: constants carry their value, variable tensors do not (they
   live in the arena), shapes come from the model or from ``resize_tensor_input``.
2. For each operator, in order: check its tensor indices (in range; an input written by an operator is
   written by an EARLIER one; an output is written by one operator only and is neither a constant nor a
   subgraph input), look its row up in ``edge_sdk.runtime.op_table`` (op and version), and call the row's prepare,
   which validates dtypes/options, sets the output shapes and returns the eval function. Errors name the
   node (index, op, version) and its input dtype. A prepared node whose outputs follow from shapes and
   constants alone (SHAPE, RANK and the small arithmetic on them: know_at_prepare) is evaluated there and then,
   so the nodes after it take those values as their parameters (a RESHAPE's new shape, FILL's dims) at any
   input shape; the node still runs at every invoke. A tensor nobody writes may be read (converters leave
   such scratch tensors): it holds zeros. An output whose size depends on the data (the row's ``data_sized``:
   WHERE, UNIQUE) gets an empty placeholder shape, so no arena bytes; its eval sizes it (``DataSizedOutput``,
   LiteRT's dynamic tensor resized at eval) in its own array outside the arena (subgraph 0 only). A node reading
   such a tensor is prepared at eval too (``PreparedAtEval``, as LiteRT prepares the nodes after a dynamic tensor:
   at the input shapes of each invoke, again when they change), its outputs sized at eval in turn; a node calling
   subgraphs (IF, WHILE) reading one is refused here, naming it.
3. Plan one arena (``edge_sdk.runtime.arena``) over every non-constant tensor with bytes, on one time axis shared
   by all subgraphs, as TFLM does: step 0 is "before subgraph 0's first op" (its inputs appear there),
   op ``i`` is a later step; an operator that calls other subgraphs (CALL_ONCE, IF, WHILE) nests their
   steps inside its own, so the callee's tensors never collide with anything the caller holds across
   the call. Subgraphs nothing calls (other signatures) get their own steps after subgraph 0's.
   Lifetimes: a tensor lives from the step that writes it (subgraph inputs: the subgraph's first step) to
   its last reader; subgraph 0's outputs live to the very end (readable after invoke); variable tensors
   live for the whole axis (they keep state between invokes). A model input's bytes may be reused after
   its last reader, as in TFLM; such an input's value is kept in a staging array outside the arena and
   copied in at each invoke, so callers see LiteRT's semantics (set once, invoke many times; read it back).
   Read other signatures' outputs from what their runner returns. Resource variables (VAR_HANDLE/ASSIGN_VARIABLE) are numpy arrays the
   runtime holds in ``resource_variables``, outside the arena and outside ``arena_size``.
4. One ``numpy.uint8`` buffer of the plan's total; each tensor is a view into it. Variables start at their
   buffer's value, else zero (INT8: the zero point, as TFLM's ResetVariableTensors does).
5. Pre-built steps ``(eval, inputs, outputs)`` per subgraph: invoke() only runs them. A kernel that raises
   during invoke is a bug, not a model problem: it comes back as a RuntimeError naming the node.

Calling allocate_tensors again is a no-op unless an input was resized (then everything is prepared and
planned afresh, and variable tensors restart from their initial values).

Delegates (``Interpreter(..., delegates=["litert", ...])``, names or ``edge_sdk.runtime.delegates.Delegate`` objects;
see ``edge_sdk.runtime.delegates``): after step 2 (every node is still prepared by our kernels, so shapes and checks
are ours and the CPU fallback exists), each subgraph is cut into partitions: every node goes to the first
delegate (in list order) that supports it, else to our kernels, and consecutive nodes with the same backend
form one partition (contiguous runs of the execution order, never reordered; ``partitions()`` gives the
plan). In step 3 a delegate partition counts as one step spanning its nodes' steps: its boundary inputs
live until its last node's step, its boundary outputs from its first node's step, and tensors internal to it
get no arena space when the delegate holds them itself (``get_tensor`` on them then raises). Before step 5
each delegate checks that it can execute here (``DeviceError`` naming the missing library or device) and
prepares each of its partitions into one step. ``partitions()`` works without allocate_tensors, so the plan
is available where the delegates cannot execute.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from edge_sdk import log
from edge_sdk.runtime import arena as _arena
from edge_sdk.runtime import op_table
from edge_sdk.runtime import patching as _patching
from edge_sdk.runtime import planner as _planner
from edge_sdk.runtime import uint8 as _uint8
from edge_sdk.runtime.planner import MAX_ARENA_BYTES, buffer_requests, check_memory
from edge_sdk.runtime.shape_arithmetic import know_at_prepare
from edge_sdk.runtime.delegates.base import CPU, assign_backends, limit_runs, plan_partitions
from edge_sdk.errors import ArenaTooSmallError, ModelError, UnsupportedOpError
from edge_sdk.runtime.kernels import blas as _blas
from edge_sdk.runtime.kernels import control_flow as _control_flow
from edge_sdk.runtime.kernels.node import Node, TensorInfo
from edge_sdk.model.types import TENSOR_TYPES, Model

# The step timer of an invoke_traced() running in this context: (its interpreter, the timer). _run takes the timer
# as an argument; invoke_subgraph, which the control-flow kernels call with no timer to hand on, finds it here: a
# context variable (per thread / task), not an attribute, so an invoke() elsewhere is never timed by it.
_TRACING: contextvars.ContextVar = contextvars.ContextVar("edge_sdk_invoke_traced", default=(None, None))

_NUMPY_TO_TFLITE: dict[np.dtype, str] = {}
for _name, (_code, _dt) in TENSOR_TYPES.items():
    if _dt is not None and _name not in ("RESOURCE", "INT4", "INT2", "UINT4"):
        _NUMPY_TO_TFLITE.setdefault(_dt, _name)


def resize_request(sg, t: int, tensor_size, strict: bool) -> tuple[int, ...]:
    """The shape ``resize_tensor_input(t, tensor_size, strict)`` asks for, checked as LiteRT checks it (one home
    for both runtimes' messages): only a subgraph input, whole non-negative dims, and under ``strict`` only the
    signature's -1 dims may change."""
    if t not in sg.inputs:
        raise ValueError(f"Cannot resize tensor {t}: only subgraph inputs can be resized")
    try:
        shape = tuple(int(d) for d in np.asarray(tensor_size).reshape(-1))
    except (TypeError, ValueError):
        raise ValueError(f"Cannot resize tensor {t}: bad shape {tensor_size!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"Cannot resize tensor {t}: negative dimension in {shape}")
    if strict:
        tensor = sg.tensors[t]
        sig = tensor.shape_signature if tensor.shape_signature is not None else tensor.shape
        if len(sig) != len(shape) or any(g != -1 and g != d for g, d in zip(sig, shape)):
            raise ValueError(
                f"ResizeInputTensorStrict only allows mutating unknown dimensions identified by -1 "
                f"(signature {tuple(sig)}, requested {shape})"
            )
    return shape


def check_while_bound(bound) -> int | None:
    """``max_while_iterations``: None (unbounded, as LiteRT) or an int >= 0, the most body runs one WHILE node
    may make per invoke (one more is a ModelError naming the node, never a hang)."""
    if bound is None:
        return None
    if isinstance(bound, bool) or not isinstance(bound, (int, np.integer)) or bound < 0:
        raise ValueError(f"max_while_iterations must be None or an int >= 0, not {bound!r}")
    return int(bound)


def _type_name(dtype: np.dtype) -> str:
    return _NUMPY_TO_TFLITE.get(np.dtype(dtype), str(np.dtype(dtype)).upper())


def _details_dtype(type_name: str):
    dt = TENSOR_TYPES.get(type_name, (None, None))[1]
    if dt is not None:
        return dt.type
    return np.bytes_ if type_name == "STRING" else np.void


class _Prepared:
    """Everything allocate_tensors builds; replaced as a whole on the next allocate."""

    def __init__(self):
        self.infos: list[list[TensorInfo]] = []
        self.views: list[list[np.ndarray | None]] = []
        self.steps: list[list[tuple[Callable, list, list]]] = []
        self.nodes: list[list[Node]] = []
        self.arena: np.ndarray = np.zeros(0, np.uint8)
        self.plan: _arena.ArenaPlan | None = None
        self.variables: list[tuple[np.ndarray, np.ndarray | int]] = []  # (view, initial value)
        # Model inputs whose arena bytes later tensors reuse: the caller's values live in a staging array
        # (what set_tensor/get_tensor/tensor() see), copied into the arena at the start of every invoke.
        self.staged: list[tuple[np.ndarray, np.ndarray]] = []  # (arena view, staging array)
        self.user_views: dict[tuple[int, int], np.ndarray] = {}
        self.partitions: list[list] = []  # per subgraph, edge_sdk.runtime.delegates.Partition
        self.assignments: list[list[tuple[str, str]]] = []  # per subgraph, per node: (backend, reason)
        self.step_where: list[list[str]] = []  # per subgraph, per step: what ran (for error messages)
        self.held: dict[tuple[int, int], str] = {}  # tensors a delegate keeps to itself -> which partition
        # Constant-only nodes computed once at allocate (see Interpreter._fold_constants): (subgraph, node),
        # and the bytes their outputs hold outside the arena.
        self.folded: set[tuple[int, int]] = set()
        self.folded_bytes: int = 0
        self.patch: _patching.PatchPlan | None = None  # the least-RAM plan's patch stage (memory="min", plan "patch")
        # PADs folded into the conv that reads them: the planner's PadFold records (planner.folded_pads, as
        # buffer_requests planned them) by (subgraph, node) of each PAD, never run
        self.pad_folds: dict[tuple[int, int], _planner.PadFold] = {}
        self.invoked = False  # an invoke ran to its end: the tensors sized at eval hold that invoke's sizes


class Interpreter:
    """A LiteRT-compatible interpreter over edge-sdk's kernels (see the module docstring).

    ``backend="c"`` makes the same type over the C micro-runtime in firmware_c/ (built on first use): an
    ``edge_sdk.runtime.c_interpreter.CInterpreter``, the subclass registered for "c" (edge_sdk.runtime imports
    it), with every public method of this class."""

    # backend name -> the subclass that runs it (`class CInterpreter(Interpreter, backend="c")` registers itself)
    _BACKENDS: dict[str, type] = {}

    def __init_subclass__(cls, backend: str | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if backend is not None:
            Interpreter._BACKENDS[backend] = cls

    def __new__(cls, *args, backend: str = "python", **kwargs):
        # Interpreter(..., backend="c") is an instance of the registered subclass; Python then runs that class's
        # __init__ with the same arguments (never this class's).
        if cls is Interpreter and backend != "python":
            if backend not in Interpreter._BACKENDS:
                raise ValueError(f"backend must be 'python' or 'c', not {backend!r}")
            cls = Interpreter._BACKENDS[backend]
        return super().__new__(cls)

    def __init__(
        self,
        model_path=None,
        model_content=None,
        arena_size: int | None = None,
        num_threads: int | None = None,
        experimental_op_resolver_type=None,
        delegates=None,
        *,
        model: Model | None = None,
        backend: str = "python",
        memory: str = "layer",
        patch_ops=None,
        max_while_iterations: int | None = None,
    ):
        check_memory(memory)
        self._memory = memory
        self._patch_ops = _patching.PATCH_OPS if patch_ops is None else tuple(patch_ops)
        self._memory_plan = "layer"
        self._delegates: list = []
        if delegates:
            from edge_sdk.runtime.delegates import resolve_all

            self._delegates = resolve_all(delegates)
        if model is None:
            from edge_sdk.model import read_model

            if model_path is not None and model_content is None:
                model = read_model(str(model_path))
            elif model_content is not None and model_path is None:
                model = read_model(bytes(model_content))
            else:
                raise ValueError("Exactly one of model_path and model_content must be given")
        if not isinstance(model, Model):
            raise TypeError(f"model must be an edge_sdk.model.Model, not {type(model).__name__}")
        if not model.subgraphs:
            raise ModelError("model has no subgraphs")
        if arena_size is not None and (not isinstance(arena_size, (int, np.integer)) or arena_size < 0):
            raise ValueError(f"arena_size must be a non-negative int, not {arena_size!r}")
        if num_threads is not None:  # LiteRT's checks and messages; None means 1, as in LiteRT
            if not isinstance(num_threads, (int, np.integer)):
                raise ValueError("type of num_threads should be int")
            if num_threads < 1:
                raise ValueError("num_threads should >= 1")
        # BLAS threads the kernels may use inside invoke (edge_sdk.runtime.kernels.blas, entered once per invoke).
        self._threads = 1 if num_threads is None else int(num_threads)
        # legacy UINT8 tensors run as INT8 (zero points - 128); set_tensor / get_tensor flip their values
        model, self._uint8 = _uint8.present(model)
        self._model = model
        # Control flow: subgraphs are prepared callees first; calls that form a cycle are refused here, at load.
        self._call_order = _planner.call_order(model)
        self.max_while_iterations = check_while_bound(max_while_iterations)
        self._infos_in_prepare: list[list[TensorInfo]] | None = None  # subgraph_infos() while preparing
        self._callee_prepare: _CalleePrepare | None = None  # prepare_subgraph_at() while preparing
        self._budget = None if arena_size is None else int(arena_size)
        self._resized: dict[tuple[int, int], tuple[int, ...]] = {}
        self._p: _Prepared | None = None
        self._planned: _Prepared | None = None  # partitions() before allocate_tensors: nodes and plan only
        # The Runtime protocol (edge_sdk.runtime.kernels.node.Runtime).
        self.resource_variables: dict[int, np.ndarray] = {}
        self._resource_ids: dict[tuple[str, str], int] = {}
        self._signatures = {s.signature_key: s for s in model.signature_defs}

    # ------------------------------------------------------------------ Runtime protocol (for kernels)
    def resource_id(self, container: str, shared_name: str) -> int:
        return self._resource_ids.setdefault((container, shared_name), len(self._resource_ids))

    def invoke_subgraph(self, subgraph_index: int, inputs: list[np.ndarray]) -> list[np.ndarray]:
        p = self._p
        views = p.views[subgraph_index]
        sg = self._model.subgraphs[subgraph_index]
        for t, x in zip(sg.inputs, inputs):
            views[t][...] = x
        owner, timer = _TRACING.get()
        self._run(subgraph_index, timer if owner is self else None)
        return [np.array(views[t]) for t in sg.outputs]

    def standalone(self, model: Model) -> Interpreter:
        """An interpreter of ``model`` under this one's bounds (arena_size, max_while_iterations): where a WHILE whose
        body changes shapes runs its cond and body, prepared again at each iteration's shapes
        (kernels.control_flow.SubgraphRunner)."""
        return Interpreter(model=model, arena_size=self._budget, max_while_iterations=self.max_while_iterations)

    def trace_sink(self) -> list | None:
        """The rows list of an invoke_traced() of this interpreter running in this context (where a growing WHILE's
        cond and body, run by interpreters of their own, add their rows: kernels.control_flow.SubgraphRunner), else
        None."""
        owner, timer = _TRACING.get()
        return timer.rows if owner is self else None

    def subgraph_infos(self, subgraph_index: int) -> list[TensorInfo]:
        """Subgraph ``subgraph_index``'s tensor infos while nodes are being prepared: a control-flow kernel reads its
        callees' (prepared first, planner.call_order) input and output shapes and types."""
        return self._infos_in_prepare[subgraph_index]

    def prepare_subgraph_at(self, subgraph_index: int, shapes, caller: Node) -> None:
        """While preparing: a control-flow node (``caller``) calls subgraph ``subgraph_index`` with inputs of these
        shapes. As LiteRT (its IF / WHILE resize the callee's inputs to the caller's and re-prepare it), the
        callee, prepared first at its declared shapes, is prepared again at these when they differ (its callees
        in turn); a model resized to another input length then runs its branches and loop bodies at that length.
        A subgraph runs at one set of input shapes: a second call site asking for others gets a copy of its own
        (kernels.control_flow.CallSiteShapes, handled by _prepare_in_call_order)."""
        st = self._callee_prepare
        s, sg = int(subgraph_index), self._model.subgraphs[int(subgraph_index)]
        want = tuple(tuple(int(d) for d in shape) for shape in shapes)
        if st is None or len(want) != len(sg.inputs):
            return  # not preparing, or the caller's count check names the mismatch
        site = (caller.subgraph, caller.index)
        for other, (shapes_there, where) in st.calls.setdefault(s, {}).items():
            if other != site and shapes_there != want:  # this site gets a copy of its own (_prepare_in_call_order)
                raise _control_flow.CallSiteShapes(
                    f"{caller.where()}: calls subgraph {s} with input shapes {[list(x) for x in want]}, {where} "
                    f"with {[list(x) for x in shapes_there]}: more call sites at other shapes than the "
                    f"{_control_flow.MAX_CALL_SITE_COPIES} copies a prepare makes", s, site)
        st.calls[s][site] = (want, caller.where())
        infos = st.infos[s]
        if tuple(tuple(infos[t].shape) for t in sg.inputs) == want:
            return
        for calls in st.calls.values():  # the calls s made at its old shapes are made again now
            for key in [k for k in calls if k[0] == s]:
                del calls[key]
        resized = {**self._resized, **{(s, t): shape for t, shape in zip(sg.inputs, want)}}
        infos[:] = _planner.tensor_infos(self._model, s, resized)
        st.deferred.pop(s, None)
        if st.failures is not None:
            for key in [k for k in st.failures if k[0] == s]:
                del st.failures[key]
        st.nodes[s] = self._prepare_subgraph(s, infos, st.failures)

    # ------------------------------------------------------------------ model facts
    @property
    def model(self) -> Model:
        return self._model

    @property
    def loaded_model(self) -> Model:
        """The model this interpreter runs (``model``: the one given, with a copy of a subgraph per call site at other
        shapes, appended); its subgraph and node indices are the ones invoke_traced names (as CInterpreter's)."""
        return self._model

    def num_subgraphs(self) -> int:
        return len(self._model.subgraphs)

    @property
    def arena_size(self) -> int | None:
        """Bytes the arena plan uses (None before allocate_tensors)."""
        return None if self._p is None else self._p.plan.total

    def arena_parts(self) -> dict | None:
        """arena_size broken down, in bytes, with the C runtime's keys (CInterpreter.arena_parts): the Python
        arena is its tensor plan alone (its kernels' temporaries are numpy arrays outside it, no persistent
        structs, no packed weights). None before allocate_tensors."""
        if self._p is None:
            return None
        return {"tensors": self._p.plan.total, "scratch": 0, "fast_path_scratch": 0, "persistent": 0,
                "alignment": 0, "init_extra": 0, "packed_weights": 0}

    def eval_sized_tensors(self) -> list[dict]:
        """The tensors sized at eval, outside the arena and arena_size (eval_sized_rows), their bytes those of the
        last invoke (None before the first)."""
        self._require_allocated("eval_sized_tensors")
        p = self._p
        return eval_sized_rows(p.nodes, p.views if p.invoked else None)

    @property
    def packed_weights_bytes(self) -> int | None:
        """Bytes of the arena holding packed weight copies: 0, the Python kernels pack none (the C runtime's SIMD
        fast paths do: CInterpreter.packed_weights_bytes). None before allocate_tensors."""
        return None if self._p is None else 0

    @property
    def num_threads(self) -> int:
        """Threads the kernels may use inside invoke (BLAS, edge_sdk.runtime.kernels.blas); results are the same
        for any count."""
        return self._threads

    @property
    def memory_plan(self) -> str | None:
        """The arena plan allocate_tensors built (REALISED_PLANS): "layer" (layer by layer), "inplace" (in-place
        RESHAPE / PAD / int8 depthwise, see inplace_aliases; +0 MACs) or "patch" (memory="min" found a patch stage
        that needs less than "inplace": see patch_plan for its stage, grid, RAM and extra MACs). "layer" under
        memory="inplace" or "min" too when no node can run in place or running in place would not make the plan
        smaller (the C runtime's rule as well). None before allocate_tensors."""
        return None if self._p is None else self._memory_plan

    def patch_plan(self) -> _patching.PatchPlan | None:
        """The least-RAM plan's patch stage (edge_sdk.runtime.patching.PatchPlan: nodes, grid, windows, RAM,
        extra MACs), or None when it has none (memory other than "min", or no stage beats the in-place plan)."""
        self._require_allocated("patch_plan")
        return self._p.patch

    def arena_plan(self) -> _arena.ArenaPlan:
        if self._p is None:
            raise RuntimeError("allocate_tensors() must be called before arena_plan()")
        return self._p.plan

    def tensor_shapes(self, subgraph_index: int = 0) -> list[tuple[int, ...]]:
        """Every tensor's shape after prepare (computed by the kernels), in tensor order."""
        self._require_allocated("tensor_shapes")
        return [tuple(info.shape) for info in self._p.infos[subgraph_index]]

    def op_macs(self, subgraph_index: int = 0) -> list[int | None]:
        """Multiply-accumulates per operator, from the op table's MACs functions on the prepared nodes
        (None for ops that have no MACs function)."""
        self._require_allocated("op_macs")
        out: list[int | None] = []
        for node in self._p.nodes[subgraph_index]:
            fn = None
            row = op_table.OPS.get(node.op)
            if row is not None and row.macs:
                try:
                    fn = row.macs_function()
                except UnsupportedOpError:
                    fn = None
            out.append(None if fn is None else int(fn(node)))
        return out

    def _require_allocated(self, what: str) -> None:
        if self._p is None:
            raise RuntimeError(f"allocate_tensors() must be called before {what}()")

    # ------------------------------------------------------------------ allocate
    def allocate_tensors(self) -> None:
        """Prepare every node and plan the arena (a no-op when already allocated and nothing was resized,
        as in LiteRT: the arena, and the state in it, stay)."""
        if self._p is not None:
            return
        p = self._prepare_and_partition()
        self._planned = None
        delegated = self._delegated_partitions(p)
        for d in self._delegates:
            if any(d is delegate for delegate, _ in delegated):
                d.check_available()
        spans: dict = {}
        requests = buffer_requests(
            self._model, p.infos, [(part, delegate.holds_internal_tensors) for delegate, part in delegated],
            spans=spans,
        )
        for r in requests:
            if r.size > MAX_ARENA_BYTES:
                raise ModelError(f"tensor '{r.name}' needs {r.size} bytes, above the {MAX_ARENA_BYTES} byte limit")
        # the planner's tensor plan for memory= (the layer plan, planned once, under every plan; with delegates)
        chosen = _planner.plan_tensors(self._model, p.infos, self._memory, self._patch_ops, requests=requests,
                                       spans=spans, delegated=bool(delegated))
        plan, p.patch, self._memory_plan, pad_folds = chosen.arena, chosen.stage, chosen.memory_plan, chosen.pad_folds
        if self._memory != "layer" and delegated:  # delegates run whole partitions over their boundary tensors
            log.warning(f"memory={self._memory!r} with delegate partitions: using the layer-by-layer plan")
        elif self._memory != "layer" and chosen.memory_plan == "layer":  # nothing in place, or it saves nothing
            log.debug(f"memory={self._memory!r}: no in-place plan needs less than the layer-by-layer plan; "
                      "using the layer plan")
        if self._budget is not None and plan.total > self._budget:
            raise ArenaTooSmallError(plan.total, self._budget)
        if plan.total > MAX_ARENA_BYTES:
            raise ModelError(f"the model needs a {plan.total} byte arena, above the {MAX_ARENA_BYTES} byte limit")
        for f in pad_folds:  # the plan's PAD folds (none with delegates, none under a patch stage: the planner's)
            p.nodes[f.subgraph][f.conv] = _prepare_folded_conv(p.nodes[f.subgraph][f.conv], p.infos[f.subgraph], f)
            p.pad_folds[(f.subgraph, f.pad)] = f
        p.plan = plan
        p.arena = np.zeros(plan.total, np.uint8)
        for d, part in delegated:
            for k in _planner.internal_keys(self._model, part, d.holds_internal_tensors):
                p.held[k] = f"{d.name} partition of nodes {part.nodes[0]}..{part.nodes[-1]}"
        self._make_views(p, set(p.held))
        self._stage_inputs(p)
        token = _blas.enter(self._threads)
        try:
            self._fold_constants(p)
        finally:
            _blas.leave(token)
        self._make_steps(p, {id(part): delegate for delegate, part in delegated})
        self._p = p
        self._reset_variable_tensors()

    def _prepare_and_partition(self) -> _Prepared:
        """Steps 1-2 (tensor infos, every node prepared by our kernels) and the partition plan."""
        p = _Prepared()
        for s in range(len(self._model.subgraphs)):
            p.infos.append(self.tensor_infos(s))
        p.nodes = self._prepare_in_call_order(p.infos)
        model = self._model  # with a copy of a callee per call site at other shapes (control_flow.CallSiteShapes)
        for s, nodes in enumerate(p.nodes):
            sg = model.subgraphs[s]
            if self._delegates:
                assigned = limit_runs(assign_backends(nodes, self._delegates), self._delegates)
                assigned = [(CPU, "its input is sized at eval: the interpreter prepares it then")
                            if isinstance(node._eval, PreparedAtEval) else a for node, a in zip(nodes, assigned)]
            else:
                assigned = [(CPU, "no delegates")] * len(nodes)
            constants = {info.index for info in p.infos[s] if info.is_const}
            p.assignments.append(assigned)
            p.partitions.append(
                plan_partitions(
                    [(op.inputs, op.outputs) for op in sg.operators],
                    [b for b, _ in assigned],
                    sg.inputs,
                    sg.outputs,
                    constants,
                    s,
                )
            )
        return p

    def _delegated_partitions(self, p: _Prepared) -> list:
        """(delegate, partition) for every partition a delegate runs, all subgraphs."""
        by_name = {d.name: d for d in self._delegates}
        return [(by_name[part.backend], part) for parts in p.partitions for part in parts if part.backend in by_name]

    def _planned_or_allocated(self) -> _Prepared:
        if self._p is not None:
            return self._p
        if self._planned is None:
            self._planned = self._prepare_and_partition()
        return self._planned

    def partitions(self, subgraph_index: int = 0) -> list:
        """The partition plan of a subgraph: a list of ``edge_sdk.runtime.delegates.Partition`` =
        ``(backend, node indices, boundary)`` in execution order, ``backend`` a delegate's name or ``"cpu"``,
        ``boundary.inputs`` the non-constant tensors coming in from outside the partition and
        ``boundary.outputs`` the tensors it writes that are read outside it (or are subgraph outputs).

        Works before allocate_tensors (it then prepares the nodes, without planning the arena or checking
        that the delegates can execute here), so it answers on machines without the delegates' devices."""
        if not 0 <= int(subgraph_index) < len(self._model.subgraphs):
            raise ValueError(f"subgraph_index is out of range: {subgraph_index}")
        return list(self._planned_or_allocated().partitions[subgraph_index])

    def node_backends(self, subgraph_index: int = 0) -> list[tuple[str, str]]:
        """Per node of a subgraph, ``(backend, reason)``: which backend takes it and why (for a CPU node:
        every delegate's reason for refusing it)."""
        if not 0 <= int(subgraph_index) < len(self._model.subgraphs):
            raise ValueError(f"subgraph_index is out of range: {subgraph_index}")
        return list(self._planned_or_allocated().assignments[subgraph_index])

    @property
    def delegates(self) -> list:
        return list(self._delegates)

    def tensor_infos(self, s: int) -> list[TensorInfo]:
        """Subgraph ``s``'s tensor infos before prepare: the model file's shapes, or resize_tensor_input's
        (edge_sdk.runtime.planner.tensor_infos, the planner's light pass over the model)."""
        return _planner.tensor_infos(self._model, s, self._resized)

    def prepare_report(self) -> tuple[list[list[Node]], dict[tuple[int, int], Exception], list[list[TensorInfo]]]:
        """Prepare every node exactly as ``allocate_tensors`` does, but a node that fails does not stop the
        others (what ``edge check`` reports). Returns ``(nodes, failures, infos)``: ``nodes[s][i]`` the Node
        (prepared when its kernel accepted it, else with the model's declared output shapes),
        ``failures[(s, i)]`` the ModelError / UnsupportedOpError that ``allocate_tensors`` would raise for it,
        ``infos[s]`` the subgraph's tensor infos (shapes as prepared). A malformed model (a tensor, opcode or
        subgraph index out of range) still raises ModelError: no node can be judged then."""
        infos = [self.tensor_infos(s) for s in range(len(self._model.subgraphs))]
        failures: dict[tuple[int, int], Exception] = {}
        nodes = self._prepare_in_call_order(infos, failures)
        return nodes, failures, infos

    def _prepare_in_call_order(self, infos: list[list[TensorInfo]],
                               failures: dict[tuple[int, int], Exception] | None = None) -> list[list[Node]]:
        """Every subgraph's prepared nodes (by subgraph index), prepared callees first (planner.call_order). A call
        site passing a subgraph other shapes than an earlier one (CallSiteShapes) gets a copy of that subgraph
        (control_flow.with_call_site_copy: the model gains a subgraph) and everything is prepared again (``infos``
        refilled, ``failures`` cleared), up to MAX_CALL_SITE_COPIES copies; past them the call is refused."""
        for _ in range(_control_flow.MAX_CALL_SITE_COPIES):
            try:
                return self._prepare_once_in_call_order(infos, failures)
            except _control_flow.CallSiteShapes as conflict:
                self._model = _control_flow.with_call_site_copy(self._model, conflict.subgraph, conflict.site)
                self._call_order = _planner.call_order(self._model)
                infos[:] = [self.tensor_infos(s) for s in range(len(self._model.subgraphs))]
                if failures is not None:
                    failures.clear()
        return self._prepare_once_in_call_order(infos, failures)

    def _prepare_once_in_call_order(self, infos: list[list[TensorInfo]],
                                    failures: dict[tuple[int, int], Exception] | None) -> list[list[Node]]:
        nodes: list[list[Node]] = [[] for _ in infos]
        self._infos_in_prepare = infos
        st = self._callee_prepare = _CalleePrepare(infos, nodes, failures)
        called = _called_subgraphs(self._model)
        try:
            for s in self._call_order:
                if s in called and failures is None:  # a callee its caller may prepare again at other shapes
                    own: dict[tuple[int, int], Exception] = {}
                    nodes[s] = self._prepare_subgraph(s, infos[s], own)
                    if own:
                        st.deferred[s] = own[min(own)]
                else:
                    nodes[s] = self._prepare_subgraph(s, infos[s], failures)
            for exc in st.deferred.values():  # refused at the shapes every caller calls it with
                raise exc
        finally:
            self._infos_in_prepare = self._callee_prepare = None
        return nodes

    def _prepare_subgraph(self, s: int, infos: list[TensorInfo],
                          failures: dict[tuple[int, int], Exception] | None = None) -> list[Node]:
        """Prepare subgraph s's nodes. With ``failures`` (prepare_report) a node's problem is recorded there
        and preparing goes on with the next node; without it the first problem raises."""
        model = self._model
        sg = model.subgraphs[s]
        n = len(infos)
        sgw = f"subgraph {s} " if s else ""
        for kind, idx in (("input", sg.inputs), ("output", sg.outputs)):
            for t in idx:
                if not 0 <= t < n:
                    raise ModelError(f"{sgw}{kind} tensor index {t} out of range (subgraph has {n} tensors)")
        # The first operator writing each tensor: reading it at or before that operator is use before def.
        # (A tensor nobody writes may be read: converters leave such scratch tensors; it holds zeros.)
        producer: dict[int, int] = {}
        for i, op in enumerate(sg.operators):
            for t in op.outputs:
                if isinstance(t, (int, np.integer)):
                    producer.setdefault(int(t), i)
        written: dict[int, int] = {}
        nodes = []
        for i, op in enumerate(sg.operators):
            if not 0 <= op.opcode_index < len(model.operator_codes):
                raise ModelError(
                    f"{sgw}node {i}: opcode index {op.opcode_index} out of range "
                    f"(model has {len(model.operator_codes)} operator codes)"
                )
            code = model.operator_codes[op.opcode_index]
            name, version = code.name, code.version
            where = f"{sgw}node {i} ({name} v{version})"

            def tensor_at(t: int, kind: str, k: int, optional: bool) -> TensorInfo | None:
                if t == -1 and optional:
                    return None
                if not isinstance(t, (int, np.integer)) or not 0 <= t < n:
                    raise ModelError(f"{where}: {kind} {k} is tensor {t}, but the subgraph has {n} tensors")
                return infos[t]

            ins = [tensor_at(t, "input", k, True) for k, t in enumerate(op.inputs)]
            outs = [tensor_at(t, "output", k, False) for k, t in enumerate(op.outputs)]
            inter = [tensor_at(t, "intermediate", k, False) for k, t in enumerate(op.intermediates)]
            node = Node(
                index=i,
                subgraph=s,
                op=name,
                version=version,
                options=dict(op.options or {}),
                custom_options=op.custom_options,
                inputs=ins,
                outputs=outs,
                intermediates=inter,
                runtime=self,
            )
            try:
                self._prepare_node(node, op, sg, infos, producer, written, where)
            except _control_flow.CallSiteShapes:
                raise  # not this node's failure: _prepare_in_call_order gives it a copy of the callee
            except (ModelError, UnsupportedOpError) as exc:
                if failures is None:
                    raise
                failures[(s, i)] = exc
                for info in outs:  # later nodes see the output as declared; it counts as written
                    written.setdefault(info.index, i)
            nodes.append(node)
        return nodes

    def _prepare_node(self, node: Node, op, sg, infos: list[TensorInfo], producer: dict[int, int],
                      written: dict[int, int], where: str) -> None:
        """One node's checks (callees, kernel, use before def, double writers) and its kernel's prepare."""
        model = self._model
        name, version, i = node.op, node.version, node.index
        outs = node.outputs
        for field in op_table.row(name).subgraphs:
            callee = node.options.get(field)
            if not isinstance(callee, (int, np.integer)) or not 0 <= callee < len(model.subgraphs):
                raise node.error(f"{field} {callee!r} is not a subgraph of this model")
        try:
            row = op_table.lookup(name, version)
            prepare = row.prepare_function()
        except UnsupportedOpError as exc:
            raise node.unsupported(str(exc)) from None
        for k, t in enumerate(op.inputs):
            if t != -1 and producer.get(t, -1) >= i and not (infos[t].is_variable or t in sg.inputs):
                raise ModelError(
                    f"{where}: input {k} (tensor {t} '{infos[t].name}') is used before node "
                    f"{producer[t]} writes it"
                )
        for k, t in enumerate(op.outputs):
            if infos[t].is_const:
                raise ModelError(f"{where}: output {k} (tensor {t} '{infos[t].name}') is a constant")
            if t in written:
                raise ModelError(
                    f"{where}: output {k} (tensor {t} '{infos[t].name}') is also written by node {written[t]}"
                )
            if t in sg.inputs:
                raise ModelError(f"{where}: output {k} (tensor {t} '{infos[t].name}') is a subgraph input")
        sized = [k for k, info in enumerate(node.inputs) if info is not None and info.sized_at_eval]
        if sized:  # it reads an earlier node's output sized at eval: prepared at eval too (PreparedAtEval)
            run = self._prepared_at_eval(node, prepare, sized[0], producer, sg)
        else:
            try:
                run = prepare(node)
            except ModelError:
                raise
            except Exception as exc:  # a kernel tripped over something the model gave it
                raise node.error(f"prepare failed: {type(exc).__name__}: {exc}") from exc
        if not callable(run):
            raise node.error(f"kernel {row.kernel} returned {type(run).__name__}, not an eval function")
        node._eval = run  # kept with the node for _make_steps
        for k in op_table.row(name).data_sized:  # sized at eval (DataSizedOutput), outside the arena
            if node.subgraph != 0:
                raise node.unsupported(f"output {k} '{outs[k].name}' has a size that depends on the data: this "
                                       "interpreter allocates such a tensor at eval only in the main subgraph")
            outs[k].sized_at_eval = True
        for k, info in enumerate(outs):
            if info.dtype is None:
                raise node.unsupported(f"output {k} '{info.name}' has type {info.type}, which we cannot hold")
            written[info.index] = i
        if not sized:
            know_at_prepare(node)

    def _prepared_at_eval(self, node: Node, prepare, k: int, producer: dict[int, int], sg) -> PreparedAtEval:
        """The eval of a node whose input ``k`` is sized at eval (a DataSizedOutput): its kernel is prepared at eval
        at the shapes its inputs have then (PreparedAtEval), as LiteRT prepares the nodes after a dynamic tensor;
        its outputs are sized at eval in turn (placeholder shapes here, no arena bytes). A node calling subgraphs
        is refused (its callees are planned into the arena), naming the input and the node that writes it."""
        info = node.inputs[k]
        if op_table.row(node.op).subgraphs:
            writer = producer[info.index]
            writer_op = self._model.operator_codes[sg.operators[writer].opcode_index].name
            raise node.unsupported(
                f"input {k} '{info.name}' is an output whose size depends on the data (node {writer}, {writer_op}); "
                f"this interpreter prepares its readers at eval, but not a {node.op}, whose subgraphs it plans")
        declared = [tuple(out.shape) for out in node.outputs]
        for out in node.outputs:
            out.shape, out.sized_at_eval = (0,) * len(out.shape), True  # placeholders: the shapes prepare at eval sets
        if len(node.outputs) == 1:
            node.outputs[0].max_elements = eval_sized_bound_elements(node)
        return PreparedAtEval(node, prepare, declared, self._budget)

    def _make_views(self, p: _Prepared, held: set = frozenset()) -> None:
        plan = p.plan
        for s, infos in enumerate(p.infos):
            views: list[np.ndarray | None] = []
            for info in infos:
                key = (s, info.index)
                if info.is_const:
                    views.append(info.data)
                elif key in held:
                    views.append(None)  # lives inside a delegate
                elif (p.patch is not None and s == p.patch.subgraph and info.index in p.patch.buffer_bytes
                      and info.index != p.patch.output):
                    # a patch stage's intermediate: only per-patch windows exist (in its arena slot); what
                    # get_tensor sees is a private array (as after a layer plan reused the bytes)
                    views.append(np.zeros(info.shape, info.dtype))
                elif key in plan:
                    b = plan[key]
                    views.append(p.arena[b.offset : b.offset + b.size].view(info.dtype).reshape(info.shape))
                elif info.dtype is not None:
                    # Unused or empty: a private array, outside the arena (never read by any kernel).
                    views.append(np.zeros(info.shape, info.dtype))
                else:
                    views.append(None)
                if info.is_variable and views[-1] is not None:
                    tensor = self._model.subgraphs[s].tensors[info.index]
                    if self._model.buffers[tensor.buffer].data:
                        init = np.array(self._model.tensor_data(s, info.index))
                        if init.size != views[-1].size:
                            raise ModelError(
                                f"{'subgraph %d ' % s if s else ''}variable tensor {info.index} '{info.name}': "
                                f"initial value has {init.size} elements, shape {info.shape} needs {views[-1].size}"
                            )
                        init = init.reshape(info.shape)
                    elif info.type == "INT8" and info.zero_point is not None and info.zero_point.size:
                        init = int(info.zero_point[0])
                        if not -128 <= init <= 127:
                            raise ModelError(
                                f"{'subgraph %d ' % s if s else ''}variable tensor {info.index} '{info.name}': "
                                f"zero point {init} is outside INT8's range"
                            )
                    else:
                        init = 0
                    p.variables.append((views[-1], init))
            p.views.append(views)

    def _fold_constants(self, p: _Prepared) -> None:
        """Run every node whose inputs are all constant (weights, or outputs of such nodes: DEQUANTIZE of
        float16 / int8 weights, DENSIFY, shape arithmetic on constants) once, here, and leave it out of invoke.

        Its outputs get their own arrays outside the arena, holding the value for good (``folded_bytes``); the
        arena plan is unchanged (it stays the C runtime's and TFLM's, which run these nodes every invoke).
        Not folded: nodes a delegate runs, nodes without inputs, ops with state or side effects (resource
        variables, CALL_ONCE / IF / WHILE) and kernels with state of their own (an eval with ``reset``)."""
        for s, nodes in enumerate(p.nodes):
            views = p.views[s]
            const = {info.index for info in p.infos[s] if info.is_const}
            for i, node in enumerate(nodes):
                if p.assignments[s][i][0] != CPU or op_table.row(node.op).effects or hasattr(node._eval, "reset"):
                    continue
                ins = [info for info in node.inputs if info is not None]
                if not ins or any(info.index not in const for info in ins):
                    continue
                if any((s, info.index) in p.held or info.dtype is None or info.sized_at_eval for info in node.outputs):
                    continue
                outs = [np.zeros(info.shape, info.dtype) for info in node.outputs]
                try:
                    node._eval([None if info is None else views[info.index] for info in node.inputs], outs)
                except ModelError:
                    raise
                except Exception as exc:
                    raise RuntimeError(f"{node.where()}: eval of a constant node failed: "
                                       f"{type(exc).__name__}: {exc}") from exc
                for info, value in zip(node.outputs, outs):
                    views[info.index] = value
                    const.add(info.index)
                    p.folded_bytes += value.nbytes
                p.folded.add((s, i))

    @property
    def folded_nodes(self) -> list[tuple[int, int]]:
        """(subgraph, node) of the constant-only nodes allocate_tensors computed once (invoke skips them)."""
        return sorted(self._p.folded) if self._p is not None else []

    def folded_pads(self) -> list[tuple[int, int]]:
        """(subgraph, node) of every PAD folded into the conv that reads it (planner.folded_pads): never run, its
        output out of the arena, the conv reading the PAD's input with explicit padding."""
        return sorted(self._p.pad_folds) if self._p is not None else []

    @property
    def folded_bytes(self) -> int:
        """Bytes outside the arena holding the outputs of the folded nodes (see ``folded_nodes``)."""
        return 0 if self._p is None else self._p.folded_bytes

    def _stage_inputs(self, p: _Prepared) -> None:
        """LiteRT keeps a model input's value across invokes; TFLM's plan reuses its bytes after its last
        reader. We keep TFLM's plan and LiteRT's semantics: such inputs get a staging array outside the arena
        (``input_staging_bytes``), copied in at the start of every invoke."""
        plan = p.plan
        for t in self._model.subgraphs[0].inputs:
            key = (0, t)
            if key not in plan or p.infos[0][t].is_const:
                continue
            b = plan[key]
            reused = any(
                o.key != key and o.first_use > b.last_use and o.offset < b.end and b.offset < o.end
                for o in plan.buffers
            )
            if reused:
                stage = np.zeros_like(p.views[0][t])
                p.staged.append((p.views[0][t], stage))
                p.user_views[key] = stage

    @property
    def input_staging_bytes(self) -> int:
        """Bytes outside the arena that keep inputs whose arena bytes are reused (see ``_stage_inputs``)."""
        return 0 if self._p is None else sum(stage.nbytes for _, stage in self._p.staged)

    def _user_view(self, s: int, t: int) -> np.ndarray | None:
        return self._p.user_views.get((s, t), self._p.views[s][t])

    def _make_steps(self, p: _Prepared, delegated: dict | None = None) -> None:
        delegated = delegated or {}
        for s, nodes in enumerate(p.nodes):
            views = p.views[s]
            steps = []
            where = []
            stage = p.patch.nodes if p.patch is not None and p.patch.subgraph == s else ()
            for part in p.partitions[s]:
                delegate = delegated.get(id(part))
                if delegate is None:
                    for i in part.nodes:
                        if (s, i) in p.folded or (s, i) in p.pad_folds:
                            continue
                        node = nodes[i]
                        if i in stage:  # the whole stage runs at its first node, patch by patch
                            run = self._patch_runner(p) if i == stage[0] else _no_step
                            steps.append((run, [], []))
                            where.append(node.where() if i != stage[0] else
                                         f"patch stage of nodes {stage[0]}..{stage[-1]} (at {node.where()})")
                            continue
                        ins = [None if info is None else views[info.index] for info in node.inputs]
                        outs = [DataSizedOutput(views, info) if info.sized_at_eval else views[info.index]
                                for info in node.outputs]
                        run = node._eval.bound(views) if isinstance(node._eval, PreparedAtEval) else node._eval
                        steps.append((run, ins, outs))
                        where.append(node.where())
                    continue
                run = delegate.prepare_partition(
                    self._model, s, list(part.nodes), list(part.inputs), list(part.outputs), nodes
                )
                if not callable(run):
                    raise ModelError(f"delegate {delegate.name} returned {type(run).__name__}, not a callable")
                sgw = f"subgraph {s} " if s else ""
                steps.append((run, [views[t] for t in part.inputs], [views[t] for t in part.outputs]))
                where.append(f"{sgw}{delegate.name} partition of nodes {part.nodes[0]}..{part.nodes[-1]}")
            p.steps.append(steps)
            p.step_where.append(where)

    def _patch_runner(self, p: _Prepared):
        """The step running p.patch's stage: for every patch, every stage node's kernel on its windows.

        Each (node, window) gets its own kernel prepared here (the same prepare function, on TensorInfos of
        the window's shape; window kernels get Node.window), so eval runs blind. Per-patch buffers are views
        of their arena slots; a window of the stage input is a view of the whole input; the cut's window is
        computed into a private array and copied into the cut. Patch columns outside, rows inside (as the C
        runtime's run_patch_stage): with plan.carry a stage tensor's rows shared with the patch row above are
        moved to the top of its buffer and its node computes the rows below them (patching.computed_rows)."""
        plan = p.patch
        s = plan.subgraph
        infos, views, nodes = p.infos[s], p.views[s], p.nodes[s]
        slots = {t: p.plan[(s, t)] for t in plan.buffer_bytes if t != plan.output}
        computed = {t: _patching.computed_rows(w, plan.carry) for t, w in plan.rows.items()}
        cache: dict = {}
        work = []
        for c in range(plan.grid[1]):
            for r in range(plan.grid[0]):
                for sn in plan.stage:
                    self._patch_node_work(p, plan, slots, computed, cache, work, sn, r, c)

        def run_patches(_inputs, _outputs):
            for fn, ins, outs, copy in work:
                fn(ins, outs)
                if copy is not None:
                    copy[0][...] = copy[1]

        return run_patches

    def _patch_node_work(self, p: _Prepared, plan, slots, computed, cache, work, sn, r: int, c: int) -> None:
        """Stage node ``sn``'s work items in patch (r, c): the kept rows' move when there are some, then its kernel
        on the rows it computes (``computed``: patching.computed_rows per tensor)."""
        s = plan.subgraph
        infos, views, nodes = p.infos[s], p.views[s], p.nodes[s]
        node = nodes[sn.index]
        rule_h, rule_w = sn.rules
        full_row, ocol = plan.rows[sn.output][r], plan.cols[sn.output][c]
        orow = computed[sn.output][r]
        out_info = infos[sn.output]
        if orow[0] > full_row[0]:  # rows [full_row[0], orow[0]) computed in patch row r - 1: to the top
            prev = plan.rows[sn.output][r - 1]
            was = _slot_view(p.arena, slots[sn.output], out_info, prev, ocol)
            now = _slot_view(p.arena, slots[sn.output], out_info, full_row, ocol)
            kept = orow[0] - full_row[0]
            work.append((_move_rows, [was[:, full_row[0] - prev[0]:orow[0] - prev[0]]], [now[:, :kept]],
                         None))
        if orow[0] >= orow[1]:
            return  # every row of this window was computed above
        out_shape = _patching.local_shape(out_info, orow, ocol)
        ins, shapes = [], []
        for info in node.inputs:
            if info is None or info.is_const:
                ins.append(None if info is None else views[info.index])
                shapes.append(None)
                continue
            t = info.index
            nr, nc = rule_h.needs(*orow), rule_w.needs(*ocol)
            if t == plan.input:
                src, (r0, c0) = views[t], (0, 0)
            else:
                src = _slot_view(p.arena, slots[t], infos[t], plan.rows[t][r], plan.cols[t][c])
                r0, c0 = plan.rows[t][r][0], plan.cols[t][c][0]
            ins.append(src[:, nr[0] - r0:nr[1] - r0, nc[0] - c0:nc[1] - c0, :])
            shapes.append(_patching.local_shape(info, nr, nc))
        window = None
        patch_rule = op_table.row(sn.op).patch
        if patch_rule == "window":
            window = (rule_h.local_pad(orow[0]), rule_w.local_pad(ocol[0]), out_shape[1], out_shape[2])
        elif patch_rule == "pad":
            window = (rule_h.local_pad(orow[0]), rule_w.local_pad(ocol[0]))
        key = (sn.index, tuple(shapes), window)
        if key not in cache:
            cache[key] = _prepare_window(node, shapes, out_shape, window)
        if sn.output == plan.output:  # through the cut's window buffer, as in the C runtime
            tmp = _slot_view(p.arena, p.plan[(s, _patching.CUT_KEY)], out_info, orow, ocol)
            dst = views[sn.output][:, orow[0]:orow[1], ocol[0]:ocol[1], :]
            work.append((cache[key], ins, [tmp], (dst, tmp)))
        else:
            out = _slot_view(p.arena, slots[sn.output], out_info, full_row, ocol)
            work.append((cache[key], ins, [out[:, orow[0] - full_row[0]:]], None))

    def _reset_variable_tensors(self) -> None:
        for view, init in self._p.variables:
            view[...] = init

    # ------------------------------------------------------------------ run
    def invoke(self) -> None:
        if self._p is None:
            raise RuntimeError("Invoke called on model that is not ready: call allocate_tensors() first")
        token = _blas.enter(self._threads)
        try:
            self._run(0)
        finally:
            _blas.leave(token)
        self._p.invoked = True

    def invoke_profiled(self) -> list[tuple[int, str, float]]:
        """invoke(), timing each step of subgraph 0 (``edge bench``'s per-op profile; invoke() stays untimed):
        ``[(node_index, op, seconds)]`` in execution order. A delegate partition is one step, reported at its
        first node as ``"<delegate>[first..last]"``. Ops that call other subgraphs include their time (their
        callees' steps: ``invoke_traced``)."""
        return [(e["node"], e["op"], e["ns"] / 1e9) for e in self.invoke_traced() if e["subgraph"] == 0]

    def invoke_traced(self) -> list[dict]:
        """invoke(), timing every step of every subgraph it runs: ``[{"subgraph", "node", "op", "ns"}]`` in the
        order the steps finished, the C runtime's trace() entries (CInterpreter.trace), so that `edge bench`
        lays out both backends' rows in one place. A node of an IF branch / WHILE body has one entry per call
        (a body's per iteration); the calling node's entry includes its callees' time."""
        import time

        if self._p is None:
            raise RuntimeError("Invoke called on model that is not ready: call allocate_tensors() first")
        p = self._p
        labels = [[(i, p.nodes[s][i].op) if part.backend == CPU
                   else (i, f"{part.backend}[{part.nodes[0]}..{part.nodes[-1]}]")
                   for part in p.partitions[s] for i in (part.nodes if part.backend == CPU else part.nodes[:1])
                   if (s, i) not in p.folded and (s, i) not in p.pad_folds] for s in range(len(p.steps))]
        clock, out = time.perf_counter_ns, []

        def timer(s: int, k: int, fn, ins, outs) -> None:  # step k of subgraph s, timed
            t0 = clock()
            fn(ins, outs)
            index, op = labels[s][k]
            out.append({"subgraph": s, "node": index, "op": op, "ns": clock() - t0})

        timer.rows = out  # trace_sink: the rows of steps run by other interpreters on this one's behalf
        traced = _TRACING.set((self, timer))  # for the subgraphs the steps call (invoke_subgraph)
        token = _blas.enter(self._threads)
        try:
            self._run(0, timer)
        finally:
            _blas.leave(token)
            _TRACING.reset(traced)
        p.invoked = True
        return out

    def _run(self, s: int, timer=None) -> None:
        """Run subgraph s's steps (callers hold the BLAS thread limit: invoke, the signature runner; kernels
        calling subgraphs run inside their invoke). ``timer(s, k, fn, ins, outs)``: runs step k itself, timed
        (invoke_traced); None: untimed."""
        p = self._p
        if s == 0 and p.staged:
            for view, stage in p.staged:
                np.copyto(view, stage)
        steps = p.steps[s]
        try:
            if timer is None:
                for fn, ins, outs in steps:
                    fn(ins, outs)
            else:
                for k, (fn, ins, outs) in enumerate(steps):
                    timer(s, k, fn, ins, outs)
        except ModelError:
            raise
        except Exception as exc:
            # Prepare validated the model, so this is a kernel bug, not a model problem: a RuntimeError
            # naming the node (not a ModelError, which callers may treat as "bad model" and swallow).
            # The loop keeps no counter: the failed step is the one whose (own) input list is still bound.
            i = next(k for k, step in enumerate(steps) if step[1] is ins)
            raise RuntimeError(f"{p.step_where[s][i]}: eval failed: {type(exc).__name__}: {exc}") from exc

    def reset_all_variables(self) -> None:
        """Back to the state after allocate, as TFLM's reset(): variable tensors to their initial values,
        resource variables forgotten (reads give the zero-point default; CALL_ONCE does not run again), and
        kernels with their own state (e.g. spectral subtraction's noise estimate) reset via ``eval.reset()``."""
        if self._p is not None:
            self._reset_variable_tensors()
            for steps in self._p.steps:
                for fn, _, _ in steps:
                    reset = getattr(fn, "reset", None)
                    if reset is not None:
                        reset()
        self.resource_variables.clear()

    # ------------------------------------------------------------------ tensors
    def _check_index(self, tensor_index, subgraph_index: int = 0) -> tuple[int, int]:
        if not 0 <= int(subgraph_index) < len(self._model.subgraphs):
            raise ValueError(
                f"subgraph_index is out of range: {subgraph_index} for the model, which has "
                f"{len(self._model.subgraphs)} subgraphs."
            )
        n = len(self._model.subgraphs[subgraph_index].tensors)
        if not isinstance(tensor_index, (int, np.integer)) or not 0 <= tensor_index < n:
            raise ValueError(f"Invalid tensor index {tensor_index} exceeds max tensor index {n}")
        return int(tensor_index), int(subgraph_index)

    def _shape(self, s: int, t: int) -> tuple[int, ...]:
        if self._p is not None:
            return tuple(self._p.infos[s][t].shape)
        return tuple(self._resized.get((s, t), self._model.subgraphs[s].tensors[t].shape))

    def _tensor_details(self, t: int, s: int = 0) -> dict:
        tensor = self._model.subgraphs[s].tensors[t]
        shape = self._shape(s, t)
        sig = tensor.shape_signature if tensor.shape_signature is not None else tensor.shape
        q = tensor.quantization
        if q is not None and q.scale is not None and np.size(q.scale) > 0:
            scales = np.asarray(q.scale, np.float32).reshape(-1)
            zps = np.asarray(q.zero_point if q.zero_point is not None else np.zeros(scales.size), np.int32).reshape(-1)
            legacy = (float(scales[0]), int(zps[0])) if scales.size == 1 and zps.size >= 1 else (0.0, 0)
            qdim = int(q.quantized_dimension)
        else:
            scales, zps, legacy, qdim = np.zeros(0, np.float32), np.zeros(0, np.int32), (0.0, 0), 0
        details = {
            "name": tensor.name,
            "index": t,
            "shape": np.array(shape, np.int32),
            "shape_signature": np.array(sig, np.int32),
            "dtype": _details_dtype(tensor.type),
            "quantization": legacy,
            "quantization_parameters": {
                "scales": scales,
                "zero_points": zps,
                "quantized_dimension": qdim,
                "block_size": 0,
            },
            "sparsity_parameters": _sparsity_details(tensor.sparsity),
        }
        if self.no_data(t, s):  # our mark (LiteRT has none): get_tensor raises "Tensor data is null" for it
            details["no_data"] = True
        return _uint8.details(details) if (s, t) in self._uint8 else details

    def get_input_details(self) -> list[dict]:
        return [self._tensor_details(t) for t in self._model.subgraphs[0].inputs]

    def get_output_details(self) -> list[dict]:
        return [self._tensor_details(t) for t in self._model.subgraphs[0].outputs]

    def get_tensor_details(self, subgraph_index: int = 0) -> list[dict]:
        if not 0 <= subgraph_index < len(self._model.subgraphs):
            raise ValueError(
                f"subgraph_index is out of range: {subgraph_index} for the model, which has "
                f"{len(self._model.subgraphs)} subgraphs."
            )
        return [self._tensor_details(t, subgraph_index) for t in range(len(self._model.subgraphs[subgraph_index].tensors))]

    def set_tensor(self, tensor_index, value, subgraph_index: int = 0) -> None:
        t, s = self._check_index(tensor_index, subgraph_index)
        if self._p is None:
            raise ValueError("Cannot set tensor: Tensor is unallocated. Try calling allocate_tensors() first")
        info = self._p.infos[s][t]
        view = self._user_view(s, t)
        value = np.asarray(value)
        if (s, t) in self._uint8 and value.dtype == np.uint8:
            value = _uint8.to_int8(value)
        if info.dtype is None or view is None:
            raise ValueError(f"Cannot set tensor: tensor {t} has type {info.type}, which cannot be set")
        if value.dtype != info.dtype:
            raise ValueError(
                f"Cannot set tensor: Got value of type {_type_name(value.dtype)} but expected type "
                f"{info.type} for input {t}, name: {info.name} "
            )
        if value.ndim != len(info.shape):
            raise ValueError(
                f"Cannot set tensor: Dimension mismatch. Got {value.ndim} but expected {len(info.shape)} for input {t}."
            )
        for d, (got, want) in enumerate(zip(value.shape, info.shape)):
            if got != want:
                raise ValueError(
                    f"Cannot set tensor: Dimension mismatch. Got {got} but expected {want} for dimension {d} of input {t}."
                )
        if info.is_const:
            raise ValueError(f"Cannot set tensor: tensor {t} '{info.name}' is a constant")
        view[...] = value

    def required_input_values(self) -> list[np.ndarray | None]:
        """Per model input (get_input_details' order): the one value it may hold, for an input an op reads as
        the shape its output was sized with at prepare (RESHAPE's shape, TRANSPOSE_CONV's output_shape: any other
        value is a DataError at invoke), else None. Made-up inputs (random feeds: edge profile, benchmarks) take
        it. Needs allocate_tensors."""
        if self._p is None or not self._p.infos:
            raise ValueError("required_input_values needs allocate_tensors first")
        infos = self._p.infos[0]
        return [None if infos[t].expected is None else infos[t].expected.copy()
                for t in self._model.subgraphs[0].inputs]

    def no_data(self, tensor_index, subgraph_index: int = 0) -> str | None:
        """Why the tensor holds no data after allocate_tensors (get_tensor raises LiteRT's "Tensor data is null"
        for it, get_tensor_details marks it ``no_data``), else None: a tensor a delegate keeps to itself, or the
        output of a PAD folded into the conv that reads it (never computed)."""
        t, s = int(tensor_index), int(subgraph_index)
        p = self._p
        if p is None:
            return None
        if (s, t) in p.held:
            return f"it lives inside the {p.held[(s, t)]} (only tensors crossing partitions are readable)"
        return folded_pad_output(self._model, p.pad_folds, s, t)

    def get_tensor(self, tensor_index, subgraph_index: int = 0) -> np.ndarray:
        t, s = self._check_index(tensor_index, subgraph_index)
        reason = self.no_data(t, s)
        if reason:
            raise ValueError(f"Tensor data is null for tensor {t}: {reason}")
        if self._p is None or self._p.views[s][t] is None:
            raise ValueError(f"Tensor data is null for tensor {t}: call allocate_tensors() first")
        if (s, t) in self._uint8:
            return _uint8.to_uint8(self._user_view(s, t))
        return np.array(self._user_view(s, t))

    def tensor(self, tensor_index) -> Callable[[], np.ndarray]:
        """A function returning a numpy view of the tensor's current memory (don't keep the view across
        allocate_tensors(); keep the function)."""
        t, _ = self._check_index(tensor_index)

        def view() -> np.ndarray:
            if self._p is None:
                raise ValueError("Tensor is unallocated: call allocate_tensors() first")
            reason = self.no_data(t)
            if reason:
                raise ValueError(f"Tensor data is null for tensor {t}: {reason}")
            return self._user_view(0, t)

        return view

    def resize_tensor_input(self, input_index, tensor_size, strict: bool = False, subgraph_index: int = 0) -> None:
        t, s = self._check_index(input_index, subgraph_index)
        shape = resize_request(self._model.subgraphs[s], t, tensor_size, strict)
        if shape == self._shape(s, t):
            return
        self._resized[(s, t)] = shape
        self._p = None  # allocate_tensors re-plans
        self._planned = None

    # ------------------------------------------------------------------ signatures
    def get_signature_list(self) -> dict:
        return {
            k: {"inputs": sorted(sig.inputs), "outputs": sorted(sig.outputs)} for k, sig in self._signatures.items()
        }

    def _get_full_signature_list(self) -> dict:
        return {
            k: {"inputs": dict(sorted(sig.inputs.items())), "outputs": dict(sorted(sig.outputs.items()))}
            for k, sig in self._signatures.items()
        }

    def get_signature_runner(self, signature_key: str | None = None) -> SignatureRunner:
        if signature_key is None:
            if len(self._signatures) != 1:
                raise ValueError(
                    f"SignatureDef signature_key is None and model has {len(self._signatures)} Signatures. "
                    "None is only allowed when the model has 1 SignatureDef"
                )
            signature_key = next(iter(self._signatures))
        return SignatureRunner(self, signature_key)


class SignatureRunner:
    """Calls one SignatureDef: ``runner(x=array, ...) -> {output name: array}`` (copies)."""

    def __init__(self, interpreter: Interpreter, signature_key: str):
        if signature_key not in interpreter._signatures:
            raise ValueError(f'Invalid signature_key provided: "{signature_key}".')
        self._interp = interpreter
        self._sig = interpreter._signatures[signature_key]
        s = self._sig.subgraph_index
        if not 0 <= s < interpreter.num_subgraphs():
            raise ModelError(f"signature '{signature_key}' names subgraph {s}, which the model does not have")
        n = len(interpreter.model.subgraphs[s].tensors)
        for kind, names in (("input", self._sig.inputs), ("output", self._sig.outputs)):
            for name, t in names.items():
                if not 0 <= t < n:
                    raise ModelError(f"signature '{signature_key}' {kind} '{name}' is tensor {t}, out of range")

    def get_input_details(self) -> dict:
        s = self._sig.subgraph_index
        return {k: self._interp._tensor_details(t, s) for k, t in sorted(self._sig.inputs.items())}

    def get_output_details(self) -> dict:
        s = self._sig.subgraph_index
        return {k: self._interp._tensor_details(t, s) for k, t in sorted(self._sig.outputs.items())}

    def __call__(self, **kwargs) -> dict[str, np.ndarray]:
        interp, sig, s = self._interp, self._sig, self._sig.subgraph_index
        if len(kwargs) != len(sig.inputs):
            raise ValueError(
                "Invalid number of inputs provided for running a SignatureDef, "
                f"expected {len(sig.inputs)} vs provided {len(kwargs)}"
            )
        for name, value in kwargs.items():
            if name not in sig.inputs:
                raise ValueError(f"Invalid Input name ({name}) for SignatureDef")
            shape = tuple(np.shape(value))
            if shape != interp._shape(s, sig.inputs[name]):
                interp.resize_tensor_input(sig.inputs[name], shape, subgraph_index=s)
        if interp._p is None:
            interp.allocate_tensors()
        for name, value in kwargs.items():
            interp.set_tensor(sig.inputs[name], value, subgraph_index=s)
        token = _blas.enter(interp._threads)
        try:
            interp._run(s)
        finally:
            _blas.leave(token)
        return {name: interp.get_tensor(t, s) for name, t in sorted(sig.outputs.items())}


def _sparsity_details(sp) -> dict:
    if sp is None:
        return {}
    dims = []
    for d in sp.dim_metadata:
        if d.format == "DENSE":
            dims.append({"format": 0, "dense_size": d.dense_size})
        else:
            dims.append({"format": 1, "array_segments": d.array_segments, "array_indices": d.array_indices})
    return {
        "traversal_order": np.array(sp.traversal_order, np.int32),
        "block_map": np.array(sp.block_map, np.int32),
        "dim_metadata": dims,
    }


# op-table families whose output 0 holds as many elements as input 0 (op_table.OpRow.family): a node of one reading
# a tensor sized at eval with a known bound (TensorInfo.max_elements) has that bound too
SAME_ELEMENTS = ("unary", "last_axis", "reshape")


def _elements_at_most(info) -> int | None:
    """The most elements input ``info`` of a node prepared at eval holds: its bound when sized at eval (None: none
    known), else its static size."""
    return info.max_elements if info.sized_at_eval else info.size


def eval_sized_bound_elements(node: Node) -> int | None:
    """The most elements output 0 of ``node`` (prepared at eval: an input sized at eval) can hold, where it follows
    from its inputs' bounds (None otherwise: "no bound known"). Family "unary" / "last_axis" / "reshape": input 0's.
    "binary" (ADD, MUL, comparisons, SELECT_V2): a broadcast of shapes of at most A and B elements has at most A x B
    ([n, 1] + [1, m] -> [n, m]; a tensor read twice counts once). GATHER: output = params.shape[:axis] +
    indices.shape[batch_dims:] + params.shape[axis + 1:], so static params [.., N, ..] and indices of at most I
    elements give at most I x params.size / (N x the batch dims' elements); params sized at eval, at most P x I."""
    row = op_table.row(node.op)
    present = [info for info in node.inputs if info is not None]
    if not present:
        return None
    if row.family in SAME_ELEMENTS:
        return _elements_at_most(present[0]) if node.inputs[0] is not None else None
    if row.family == "binary" or node.op == "GATHER":
        distinct = {info.index: info for info in present}.values()
        bounds = [_elements_at_most(info) for info in distinct]
        if None in bounds:
            return None
        if node.op == "GATHER" and len(present) == 2 and not present[0].sized_at_eval:
            params, positions = present
            rank = len(params.shape)
            axis = int(node.options.get("axis", 0)) % max(rank, 1)
            batch_dims = int(node.options.get("batch_dims", 0)) % max(len(positions.shape), 1)
            per_position = params.size // max(1, int(np.prod(params.shape[:batch_dims], dtype=np.int64))
                                              * params.shape[axis]) if rank else 0
            return bounds[1] * per_position
        return int(np.prod(bounds, dtype=np.int64))
    return None


def eval_sized_rows(nodes: list[list[Node]], views: list[list] | None = None) -> list[dict]:
    """The tensors sized at eval (module docstring, step 2: WHERE's / UNIQUE's outputs, a growing WHILE's loop
    variables, the outputs of the nodes prepared at eval after them): each an array of its own outside the arena,
    in neither arena_size nor the arena plan. Per tensor, in node order: {"subgraph", "tensor", "name", "dtype",
    "writer" ("node N (OP vV)"), "max_bytes": the most it can hold, known at prepare (TensorInfo.max_elements:
    WHERE, UNIQUE), else None (unknown: a growing loop, a node prepared at eval), "shape" and "bytes": at the last
    invoke's data (``views``: the interpreter's arrays after an invoke), else None}. ``nodes``: per subgraph, the
    prepared nodes (Interpreter.prepare_report's or allocate_tensors')."""
    rows = []
    for s, subgraph_nodes in enumerate(nodes):
        for node in subgraph_nodes:
            for info in node.outputs:
                if not info.sized_at_eval or info.dtype is None:
                    continue
                held = views[s][info.index] if views is not None else None
                itemsize = np.dtype(info.dtype).itemsize
                rows.append({"subgraph": s, "tensor": info.index, "name": info.name, "dtype": info.type.lower(),
                             "writer": node.where(),
                             "max_bytes": None if info.max_elements is None else info.max_elements * itemsize,
                             "shape": None if held is None else list(held.shape),
                             "bytes": None if held is None else int(held.nbytes)})
    return rows


def eval_sized_bound(rows: list[dict]) -> int | None:
    """The most bytes the tensors sized at eval (eval_sized_rows) can hold together; None when one has no known
    bound (0 without any)."""
    bounds = [r["max_bytes"] for r in rows]
    return None if None in bounds else sum(bounds)


def eval_sized_words(rows: list[dict], limit: int = 4) -> str:
    """The tensors sized at eval (eval_sized_rows) in words, for `edge check` and `edge bench`: outside the arena,
    each at its size as run (bench: measured) or "sized at eval" (check), with its bound or "no bound known"; ""
    without any."""
    if not rows:
        return ""
    measured = all(r["bytes"] is not None for r in rows)
    bounded = [r["max_bytes"] for r in rows if r["max_bytes"] is not None]
    limit_said = (f", at most {sum(bounded)} B" if len(bounded) == len(rows) else ", no bound known" if not bounded
                  else f", at most {sum(bounded)} B for the {len(bounded)} with a bound, no bound known for the rest")
    head = (f"outside the arena (not in its figure): {len(rows)} tensor{'s' if len(rows) > 1 else ''} sized at eval"
            + (f", {sum(r['bytes'] for r in rows)} B at this run's data" if measured else "") + limit_said)
    said = []
    for r in rows[:limit]:
        size = (f"{r['bytes']} B at [{', '.join(map(str, r['shape']))}]" if r["bytes"] is not None
                else "sized at eval")
        said.append(f"'{r['name']}' {r['dtype']} of {r['writer']}: {size}, "
                    + (f"at most {r['max_bytes']} B" if r["max_bytes"] is not None else "no bound known"))
    more = f"; {len(rows) - limit} more" if len(rows) > limit else ""
    return f"{head} ({'; '.join(said)}{more})"


class DataSizedOutput:
    """What eval gets for an output whose size depends on the data (OpRow.data_sized: WHERE, UNIQUE), as LiteRT
    resizes a dynamic tensor at eval: ``resize(shape)`` gives it that shape and returns the array to write (outside
    the arena: its bytes were never planned), which get_tensor and the output details then show."""

    def __init__(self, views: list, info: TensorInfo):
        self.views, self.info = views, info

    def resize(self, shape) -> np.ndarray:
        shape = tuple(int(d) for d in shape)
        current = self.views[self.info.index]
        if current is None or current.shape != shape:
            self.views[self.info.index] = np.zeros(shape, self.info.dtype)
            self.info.shape = shape
        return self.views[self.info.index]


class PreparedAtEval:
    """The eval of a node reading a tensor sized at eval (WHERE's, UNIQUE's, a growing WHILE's output, or such a
    node's in turn), as LiteRT prepares the nodes after a dynamic tensor at invoke: its kernel is prepared at the
    input shapes of this invoke (again whenever they change; small integer inputs sized at eval also by value, as a
    kernel may take parameters from them), its outputs sized then (DataSizedOutput: outside the arena, each held
    to the interpreter's arena_size and MAX_ARENA_BYTES). ``declared``: the outputs' shapes in the model."""

    def __init__(self, node: Node, prepare, declared: list[tuple[int, ...]], budget: int | None):
        self.node, self.prepare, self.declared, self.budget = node, prepare, declared, budget
        self.key, self.run, self.out_shapes = None, None, None
        self.data_sized = op_table.row(node.op).data_sized  # outputs its kernel sizes itself (DataSizedOutput)

    def bound(self, views: list) -> Callable:
        """The step: reads its inputs from ``views`` at eval (a DataSizedOutput replaces its tensor's view)."""
        def step(_inputs, outputs):
            self(views, outputs)

        return step

    def __call__(self, views: list, outputs: list) -> None:
        node = self.node
        arrays = [None if info is None else views[info.index] for info in node.inputs]
        key = [None if a is None else (a.shape, _value_key(info, a)) for info, a in zip(node.inputs, arrays)]
        if key != self.key:
            self._prepare_at(arrays)
            self.key = key
        outs = [o if k in self.data_sized else o.resize(shape)
                for k, (o, shape) in enumerate(zip(outputs, self.out_shapes))]
        self.run(arrays, outs)

    def _prepare_at(self, arrays: list) -> None:
        """The kernel's prepare on infos of these arrays' shapes (the outputs at their declared shapes: the kernel
        sets them); a refusal is a ModelError naming the node and the shapes."""
        from dataclasses import replace

        node = self.node
        ins = [info if a is None or not info.sized_at_eval else
               replace(info, shape=tuple(a.shape), sized_at_eval=False,
                       value=None if _value_key(info, a) is None else np.array(a))
               for info, a in zip(node.inputs, arrays)]
        outs = [replace(info, shape=shape, sized_at_eval=False) for info, shape in zip(node.outputs, self.declared)]
        sub = replace(node, inputs=ins, outputs=outs, output_shapes={})
        shapes = [None if a is None else list(a.shape) for a in arrays]
        at = f"{node.where()}: prepared at eval at input shapes {shapes}"
        try:
            self.run = self.prepare(sub)
        except ModelError as exc:  # the kernel's message names the node already
            raise ModelError(f"{at}: {str(exc).removeprefix(node.where() + ': ')}") from None
        except Exception as exc:  # a kernel tripped over the shapes this invoke gave it
            raise ModelError(f"{at}: prepare failed: {type(exc).__name__}: {exc}") from exc
        self.out_shapes = [tuple(o.shape) for o in outs]
        need = sum(math.prod(o.shape) * o.dtype.itemsize for o in outs)
        if self.budget is not None and need > self.budget:
            raise ArenaTooSmallError(need, self.budget, f"{at}: outputs")
        if need > MAX_ARENA_BYTES:
            raise ModelError(f"{at}: outputs need {need} bytes, above the {MAX_ARENA_BYTES} byte limit")


def _value_key(info: TensorInfo, array: np.ndarray) -> bytes | None:
    """A small integer input sized at eval (at most 16 elements: shape-like parameters) keys the prepare by its
    bytes and is given to the kernel as a value known at prepare; None for any other input."""
    if not info.sized_at_eval or array.dtype.kind not in "iu" or array.size > 16:
        return None
    return array.tobytes()


def folded_pad_output(model: Model, pad_folds, s: int, t: int) -> str | None:
    """When tensor t of subgraph s is the output of a PAD in ``pad_folds`` ((subgraph, node) pairs: folded into the
    conv that reads it, never run), the reason it holds no data; else None."""
    for fs, k in pad_folds:
        op = model.subgraphs[fs].operators[k]
        if fs == s and op.outputs and op.outputs[0] == t:
            return (f"node {k} ({model.op_name(op)}) that writes it is folded into the convolution that reads it "
                    "(the conv pads its input itself), so it is never computed")
    return None


def _no_step(_inputs, _outputs) -> None:
    """A patch stage's nodes after its first (the stage runs as one step there)."""


def _move_rows(ins, outs) -> None:
    """A patch row's kept rows to the top of their buffer (the two views may overlap: numpy copies through a
    temporary then)."""
    outs[0][...] = ins[0]


def _slot_view(arena: np.ndarray, slot, info: TensorInfo, rows, cols) -> np.ndarray:
    """A per-patch buffer: the window (rows x cols) of tensor ``info`` at the start of its arena slot."""
    shape = _patching.local_shape(info, rows, cols)
    n = _patching.nbytes(shape, info.dtype)
    return arena[slot.offset:slot.offset + n].view(info.dtype).reshape(shape)


@dataclass
class _CalleePrepare:
    """Interpreter.prepare_subgraph_at's state during one prepare: every subgraph's infos and nodes (replaced when
    a callee is prepared again), the failures being recorded (prepare_report; None: the first one raises), the
    first failure of each callee prepared at its declared shapes (raised after all, unless a caller prepared it
    again), and per callee the (caller subgraph, node) -> (input shapes, where) of its calls."""

    infos: list
    nodes: list
    failures: dict | None
    deferred: dict = field(default_factory=dict)
    calls: dict = field(default_factory=dict)


def _called_subgraphs(model) -> set[int]:
    """The subgraphs some node calls (its op row's ``subgraphs`` option fields: IF, WHILE, ...)."""
    out = set()
    for sg in model.subgraphs:
        for op in sg.operators:
            if 0 <= op.opcode_index < len(model.operator_codes):
                for name in op_table.row(model.operator_codes[op.opcode_index].name).subgraphs:
                    callee = (op.options or {}).get(name)
                    if isinstance(callee, (int, np.integer)):
                        out.add(int(callee))
    return out


def _prepare_folded_conv(node, infos, fold):
    """The conv of a folded PAD (planner.folded_pads) prepared again on the PAD's input: its input 0 is the PAD's
    input tensor (its bytes and shape, the PAD output's quantization: a PAD copies bytes) and its window the
    explicit padding (fold.top, fold.left) with the conv's own output (fold.oh x fold.ow:
    kernels.conv.patch_window)."""
    from dataclasses import replace

    src = infos[fold.source]
    ins = list(node.inputs)
    ins[0] = replace(node.inputs[0], index=src.index, name=src.name, shape=tuple(src.shape))
    sub = Node(index=node.index, subgraph=node.subgraph, op=node.op, version=node.version,
               options=dict(node.options), custom_options=node.custom_options, inputs=ins, outputs=node.outputs,
               intermediates=node.intermediates, runtime=node.runtime, window=(fold.top, fold.left, fold.oh, fold.ow))
    shape = tuple(node.outputs[0].shape)
    sub._eval = op_table.lookup(node.op, node.version).prepare_function()(sub)
    if tuple(sub.outputs[0].shape) != shape:
        raise ModelError(f"{node.where()}: folding the PAD before it made output {tuple(sub.outputs[0].shape)}, "
                         f"not {shape}")
    return sub


def _prepare_window(node, shapes, out_shape, window):
    """``node``'s kernel prepared for one patch window: inputs of ``shapes`` (None: unchanged), the output of
    ``out_shape``; ``window`` is Node.window for window kernels, (pad_top, pad_left) for PAD."""
    from dataclasses import replace

    ins = [info if shape is None else replace(info, shape=tuple(shape)) for info, shape in zip(node.inputs, shapes)]
    sub_window = None
    patch_rule = op_table.row(node.op).patch
    if patch_rule == "window":
        sub_window = window
    elif patch_rule == "pad":
        pads = np.array(node.inputs[1].data).reshape(4, 2).copy()
        in_shape = shapes[0]
        pads[1] = (window[0], out_shape[1] - window[0] - in_shape[1])
        pads[2] = (window[1], out_shape[2] - window[1] - in_shape[2])
        ins[1] = replace(node.inputs[1], data=pads.astype(np.asarray(node.inputs[1].data).dtype))
    outs = [replace(node.outputs[0], shape=tuple(out_shape))]
    sub = Node(index=node.index, subgraph=node.subgraph, op=node.op, version=node.version,
               options=dict(node.options), custom_options=node.custom_options, inputs=ins, outputs=outs,
               intermediates=[], runtime=node.runtime, window=sub_window)
    run = op_table.lookup(node.op, node.version).prepare_function()(sub)
    if tuple(sub.outputs[0].shape) != tuple(out_shape):
        raise ModelError(f"{node.where()}: a patch window of output {tuple(out_shape)} came out "
                         f"{tuple(sub.outputs[0].shape)}")
    return run
