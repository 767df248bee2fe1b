"""The C micro-runtime (firmware_c/) as the Interpreter's "c" backend, through ctypes: ``CInterpreter`` is an
``edge_sdk.runtime.interpreter.Interpreter`` (the subclass registered for backend="c") with all of its public methods.

    from edge_sdk.runtime.c_interpreter import CInterpreter
    interp = CInterpreter(model_path="net.tflite")       # or edge_sdk.Interpreter(..., backend="c")
    interp.allocate_tensors()                            # edge_init: verify, prepare, plan
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    y = interp.get_tensor(interp.get_output_details()[0]["index"])

The host library is built on first use (``edge_sdk.runtime.c_build``; a ``BuildError`` says why it cannot be).
Results are bit-identical to the Python kernels for the ops the C runtime has (``c_supported_ops()``;
``missing_ops(model)`` names the rest).

LiteRT semantics on top of the C runtime: an input keeps the value ``set_tensor`` gave it until it is set again.
Most inputs are written straight into the arena; the few whose bytes the C plan reuses after their last reader
(as TFLM's does) are kept here and copied in by the same foreign call that invokes. That call goes through a
tiny CPython extension (host/edge_pyfast.c, built beside the library when Python's headers are installed) or,
without one, through ctypes (~0.5 us more per invoke).
``arena_plan()`` returns the C planner's result as an ``edge_sdk.runtime.arena.ArenaPlan`` (tensor buffers only),
equal byte for byte to the Python interpreter's plan. ``resize_tensor_input`` rewrites the input's shape in a copy
of the model (the C loader reads shapes from the model bytes) and the next allocate_tensors prepares and plans it.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import threading
from pathlib import Path
from typing import Callable

import numpy as np

from edge_sdk.runtime import arena as _arena
from edge_sdk.runtime import c_build
from edge_sdk.runtime import c_loaded as _c_loaded
from edge_sdk.runtime import uint8 as _uint8
from edge_sdk.runtime.patching import C_PATCH_OPS, CUT_KEY
from edge_sdk.runtime.planner import (  # the memory= plans and what the C runtime is given for them (documented there)
    builds_stage, c_memory_min, c_memory_plan, c_patch_stage, c_runner_flags, check_memory)
from edge_sdk.runtime.planner import folds_under
from edge_sdk.runtime.c_status import STATUS, status_name
from edge_sdk.runtime.delegates.base import Partition
from edge_sdk.runtime.interpreter import Interpreter, check_while_bound, folded_pad_output, resize_request
from edge_sdk.errors import ArenaTooSmallError, DataError, ModelError, UnsupportedOpError
from edge_sdk.model.types import TENSOR_TYPE_NAMES, TENSOR_TYPES, Model

_ORDERINGS = ("size", "first_use", "lifetime", "area")
DEFAULT_ARENA = 1 << 20
PLAN_ONLY = 1
MEMORY_MIN = 2  # EDGE_INIT_MEMORY_MIN: in-place nodes (memory="inplace", and under "min"'s patch stage)
# EDGE_PLAN_PATCH_CUT, a plan entry's tensor for the patch stage's cut window buffer, is patching.CUT_KEY; the ops
# a patch stage may hold in the C runtime (edge_init_patch) are patching.C_PATCH_OPS
PATCH_CUT = CUT_KEY
# patch_plan not given (see CInterpreter)
_UNSET = object()

_lock = threading.Lock()
_threads_lock = threading.Lock()
MAX_THREADS = 64  # firmware_c/src/simd/edge_threads.c POOL_MAX


def _set_threads(lib):
    """libedge's edge_simd_set_threads (int32 -> int32), or None in a build without src/simd."""
    fn = getattr(lib, "_edge_set_threads", None)
    if fn is None:
        try:
            fn = lib.edge_simd_set_threads
        except AttributeError:
            fn = False
        else:
            fn.argtypes = [ctypes.c_int32]
            fn.restype = ctypes.c_int32
        lib._edge_set_threads = fn
    return fn or None


_lib: ctypes.CDLL | None = None
_pyfast = None  # the extension module when it loaded (see edge_sdk.runtime.c_build.load_pyfast)


def available() -> tuple[bool, str]:
    """Whether the C runtime can be used here without running it: (True, how) when its library is built (or
    shipped prebuilt) or can be built (make and a C compiler on PATH), else (False, why not). Cheap: nothing is
    built or loaded (``library()`` does that, and may still fail: a build error)."""
    if _lib is not None:
        return True, "loaded"
    if c_build.prebuilt() is not None:
        return True, f"prebuilt {c_build.PREBUILT}"
    if c_build.LIBRARY.is_file():
        return True, f"built {c_build.LIBRARY}"
    missing = [tool for tool in ("make", os.environ.get("CC", "gcc")) if shutil.which(tool) is None]
    if missing:
        return False, f"not built and {', '.join(missing)} not found on PATH to build it"
    return True, "buildable"


def library() -> ctypes.CDLL:
    """The loaded host library (built first if needed; a prebuilt copy that does not load here is ignored)."""
    global _lib
    with _lock:
        if _lib is None:
            lib = None
            if c_build.prebuilt() is not None:
                try:
                    lib = ctypes.CDLL(str(c_build.PREBUILT))
                except OSError:  # built for another CPU (a copied venv): build our own
                    lib = None
            if lib is None:
                c_build.build()
                lib = ctypes.CDLL(str(c_build.LIBRARY))
            c = ctypes
            p = c.c_void_p
            lib.edge_host_interp_size.restype = c.c_size_t
            lib.edge_init_ex.argtypes = [p, p, c.c_size_t, p, c.c_size_t, c.c_uint32]
            lib.edge_init_ex.restype = c.c_int
            lib.edge_init_patch.argtypes = [p, p, c.c_size_t, p, c.c_size_t, c.c_uint32, c.POINTER(_PatchPlan)]
            lib.edge_init_patch.restype = c.c_int
            lib.edge_invoke.argtypes = [p]
            lib.edge_invoke.restype = c.c_int
            lib.edge_host_invoke_copies.argtypes = [p, p, c.c_int32]
            lib.edge_host_invoke_copies.restype = c.c_int
            lib.edge_set_max_while_iterations.argtypes = [p, c.c_int32]
            lib.edge_invoke_at.argtypes = [p, c.c_int32]
            lib.edge_invoke_at.restype = c.c_int
            lib.edge_signature_find.argtypes = [p, c.c_char_p]
            lib.edge_signature_find.restype = c.c_int32
            lib.edge_signature_subgraph.argtypes = [p, c.c_int32]
            lib.edge_signature_subgraph.restype = c.c_int32
            lib.edge_signature_tensor.argtypes = [p, c.c_int32, c.c_int32, c.c_char_p]
            lib.edge_signature_tensor.restype = c.c_int32
            lib.edge_reset_state.argtypes = [p]
            lib.edge_reset_state.restype = c.c_int
            lib.edge_num_inputs.argtypes = [p]
            lib.edge_num_inputs.restype = c.c_int32
            lib.edge_num_outputs.argtypes = [p]
            lib.edge_num_outputs.restype = c.c_int32
            lib.edge_host_tensor.argtypes = [p, c.c_int32, c.c_int32, c.POINTER(p), c.POINTER(c.c_uint32),
                                             c.POINTER(c.c_int32), c.POINTER(c.c_int32), c.POINTER(c.c_int32),
                                             c.c_int32, c.POINTER(c.c_float), c.POINTER(c.c_int32)]
            lib.edge_host_tensor.restype = c.c_int32
            lib.edge_host_error.argtypes = [p, c.POINTER(c.c_int64), c.c_char_p, c.c_size_t]
            lib.edge_host_plan_info.argtypes = [p, c.POINTER(c.c_int64)]
            lib.edge_plan_count.argtypes = [p]
            lib.edge_plan_count.restype = c.c_int32
            lib.edge_plan_entry.argtypes = [p, c.c_int32, c.POINTER(_PlanEntry)]
            lib.edge_plan_entry.restype = c.c_int
            lib.edge_host_timer.restype = p
            lib.edge_set_timer.argtypes = [p, p, p, c.c_uint32]
            lib.edge_host_trace.argtypes = [p, c.c_uint32, c.POINTER(c.c_int32), c.POINTER(c.c_int32),
                                            c.POINTER(c.c_int32), c.POINTER(c.c_uint32)]
            lib.edge_host_trace.restype = c.c_int32
            lib.edge_host_kernels.argtypes = [c.c_int32, c.POINTER(c.c_int32), c.POINTER(c.c_int32),
                                              c.POINTER(c.c_char_p)]
            lib.edge_host_kernels.restype = c.c_int32
            lib.edge_op_name.argtypes = [c.c_int]
            lib.edge_op_name.restype = c.c_char_p
            lib.edge_status_str.argtypes = [c.c_int]
            lib.edge_status_str.restype = c.c_char_p
            global _pyfast
            _pyfast = c_build.load_pyfast()
            _lib = lib
        return _lib


class _PatchPlan(ctypes.Structure):  # edge_patch_plan_t
    _fields_ = [("first", ctypes.c_int32), ("last", ctypes.c_int32), ("rows", ctypes.c_int32),
                ("cols", ctypes.c_int32)]


class _PlanEntry(ctypes.Structure):
    _fields_ = [
        ("subgraph", ctypes.c_int32), ("tensor", ctypes.c_int32), ("node", ctypes.c_int32),
        ("first_use", ctypes.c_int32), ("last_use", ctypes.c_int32),
        ("offset", ctypes.c_int64), ("size", ctypes.c_int64),
    ]


class _Copy(ctypes.Structure):  # edge_host_copy_t
    _fields_ = [("dst", ctypes.c_void_p), ("src", ctypes.c_void_p), ("bytes", ctypes.c_size_t)]


class _TraceEntry(ctypes.Structure):
    _fields_ = [("subgraph", ctypes.c_uint16), ("node", ctypes.c_uint16), ("op", ctypes.c_uint16),
                ("reserved", ctypes.c_uint16), ("ticks", ctypes.c_uint32)]


def c_supported_ops() -> dict[str, int]:
    """Ops the C host library has a kernel for: {op name (custom code for custom ops): highest version}."""
    lib = library()
    out: dict[str, int] = {}
    k = 0
    op, ver, custom = ctypes.c_int32(), ctypes.c_int32(), ctypes.c_char_p()
    while lib.edge_host_kernels(k, ctypes.byref(op), ctypes.byref(ver), ctypes.byref(custom)) == 0:
        name = custom.value.decode() if custom.value else lib.edge_op_name(op.value).decode()
        out[name] = max(out.get(name, 0), ver.value)
        k += 1
    return out


def missing_ops(model: Model) -> list[str]:
    """The model's ops (as "NAME vN") the C runtime has no kernel for, in first-use order."""
    have = c_supported_ops()
    seen, out = set(), []
    for sg in model.subgraphs:
        for op in sg.operators:
            code = model.operator_codes[op.opcode_index]
            key = f"{code.name} v{code.version}"
            if key not in seen and not (code.name in have and code.version <= have[code.name]):
                seen.add(key)
                out.append(key)
    return out


# The arena's (and the model's) start: a cache line. The C runtime aligns tensors to 16 bytes from the arena's start
# (its plan); from a 64-byte start nearly every tensor of a conv net starts a line (sizes are multiples of 64), so
# that the AVX-512 kernels' 64-byte loads and stores do not each straddle two lines. numpy's large buffers start 16
# bytes past a page, which put every tensor there (float 1x1 conv / depthwise 1.08-1.39x slower than aligned; C
# microbenchmark, benchmarks/f32_ops.py).
ARENA_ALIGN = 64


def _aligned(nbytes: int) -> tuple[np.ndarray, int]:
    """A zeroed numpy buffer with an ARENA_ALIGN-byte aligned region of nbytes; returns (owner, address)."""
    owner = np.zeros(nbytes + ARENA_ALIGN, np.uint8)
    addr = owner.ctypes.data
    pad = (-addr) % ARENA_ALIGN
    return owner, addr + pad


class CInterpreter(Interpreter, backend="c"):
    """``Interpreter(..., backend="c")``: the same Interpreter type, over the C runtime (see the module docstring).
    Every public method of the Python Interpreter is here, run by the C runtime (tests/test_c_interpreter_type.py
    lists them); the Python Interpreter's constructor never runs for it. Facts only the Python planner knows
    (``op_macs``, ``tensor_infos``, ``prepare_report``) come from a Python Interpreter of the same model at the
    same input shapes.

    ``patch_plan`` (memory="min"): the stage the C runtime runs patch by patch (an
    edge_sdk.runtime.patching.PatchPlan; None: no stage). Not given, the planner chooses it over C_PATCH_OPS (or
    ``patch_ops``) from the model file's shapes (planner.c_patch_stage)."""

    def __init__(self, model_path=None, model_content=None, arena_size: int | None = None, num_threads=None,
                 experimental_op_resolver_type=None, delegates=None, *, model: Model | None = None,
                 backend: str | None = None, plan_only: bool = False, memory: str = "layer", patch_ops=None,
                 patch_plan=_UNSET, max_while_iterations: int | None = None):
        if backend not in (None, "c"):
            raise ValueError(f"CInterpreter runs the C runtime: backend must be 'c', not {backend!r}")
        check_memory(memory)
        if patch_ops is not None and not set(patch_ops) <= set(C_PATCH_OPS):
            raise ValueError(f"the C runtime runs patch stages of {', '.join(C_PATCH_OPS)} only, not "
                             f"{', '.join(sorted(set(patch_ops) - set(C_PATCH_OPS)))}")
        self._memory = memory
        self._patch_ops = patch_ops
        # WHILE's bound (edge_set_max_while_iterations after each edge_init; C's int32, so capped there)
        self.max_while_iterations = check_while_bound(max_while_iterations)
        if delegates:
            raise ValueError("the C backend runs every op itself: delegates are not supported with backend='c'")
        if model is not None:
            from edge_sdk.model import write_model

            data = write_model(model)
        elif model_path is not None and model_content is None:
            try:
                data = Path(model_path).read_bytes()
            except OSError as e:
                raise ModelError(f"cannot read model file {model_path}: {e.strerror or e}") from e
        elif model_content is not None and model_path is None:
            data = bytes(model_content)
        else:
            raise ValueError("Exactly one of model_path and model_content must be given")
        # legacy UINT8 tensors: the C runtime loads the model they run in as INT8 (edge_sdk.runtime.uint8);
        # set_tensor / get_tensor flip their values, the details report them as the model declares them
        model, data, self._uint8 = _c_loaded.c_model(model, data)
        # memory="min": the stage and grid (a PatchPlan; None: no stage). Not given: the planner's stage over the
        # model file's shapes, no interpreter (planner.c_patch_stage); resize_tensor_input asks it again.
        self._planner_stage = builds_stage(memory) and patch_plan is _UNSET
        if self._planner_stage:
            self._patch = self._stage_for(data if model is None else model)
        else:
            self._patch = patch_plan if builds_stage(memory) and patch_plan is not _UNSET else None
        if arena_size is not None and (not isinstance(arena_size, (int, np.integer)) or arena_size < 0):
            raise ValueError(f"arena_size must be a non-negative int, not {arena_size!r}")
        if num_threads is not None:  # LiteRT's checks and messages (as the Python interpreter); None means 1
            if not isinstance(num_threads, (int, np.integer)) or isinstance(num_threads, bool):
                raise ValueError("type of num_threads should be int")
            if num_threads < 1:
                raise ValueError("num_threads should >= 1")
        self._threads = 1 if num_threads is None else min(int(num_threads), MAX_THREADS)
        self._lib = library()
        self._budget = None if arena_size is None else int(arena_size)
        self._plan_only = plan_only
        self._interp = ctypes.create_string_buffer(self._lib.edge_host_interp_size() + 16)
        self._handle = ctypes.c_void_p(ctypes.addressof(self._interp))
        self._views: dict[tuple[int, int], np.ndarray] = {}
        # Inputs whose arena bytes other planned buffers reuse during invoke keep their value here (set_tensor
        # writes it) and edge_host_invoke_copies copies it in before every invoke: LiteRT semantics, an input
        # keeps its value until set again. Other inputs are written straight into the arena.
        self._staged: dict[int, np.ndarray] = {}
        self._load(data)
        self._parsed: Model | None = model
        self._resized: dict[tuple[int, int], tuple[int, ...]] = {}  # (subgraph, input) -> shape (resize_tensor_input)
        self._shadow: Interpreter | None = None  # the Python Interpreter answering the planner's questions

    def _load(self, data: bytes) -> None:
        """Hold ``data`` (the model bytes the C runtime loads, at an ARENA_ALIGN boundary) and forget any earlier
        allocation: allocate_tensors prepares and plans afresh."""
        self._model_owner, self._model_addr = _aligned(len(data))
        ctypes.memmove(self._model_addr, data, len(data))
        self._model_len = len(data)
        self._loaded: Model | None = None  # loaded_model, read when asked
        self._ready = False
        self._views.clear()
        self._staged.clear()
        self._targets: dict[int, np.ndarray] = {}  # input index -> where set_tensor writes (staged or arena)
        self._copies, self._n_copies = None, 0
        self._run, self._run_args = self._not_ready, ()  # edge_host_invoke_copies once allocated (not plan-only)
        self._inputs: tuple[int, ...] = ()
        self._trace_buf = None

    def _stage_for(self, source) -> object:
        """The patch stage the planner chooses for ``source`` (bytes or a Model) over the ops the C runtime runs in
        a stage (C_PATCH_OPS, or this interpreter's patch_ops)."""
        return c_patch_stage(source, self._patch_ops)

    def _planned(self) -> str:
        """The plan to build (REALISED_PLANS), as the planner decides it (its one rule for both runtimes): "patch"
        with a stage, "layer" for memory="layer", else planner.c_memory_plan's "inplace" or "layer" (no node runs
        in place, or in place saves nothing) for the model the C runtime loads (resized shapes included)."""
        if self._patch is not None:
            return "patch"
        if not c_memory_min(self._memory):
            return "layer"
        return c_memory_plan(ctypes.string_at(self._model_addr, self._model_len), "inplace")[0]

    # ------------------------------------------------------------------ errors
    def error(self) -> tuple[dict, str]:
        """The C runtime's error record (status, subgraph, node, tensor, op_code, op_version, offset,
        required, given, required_exact) and its one-line message."""
        fields = (ctypes.c_int64 * 10)()
        msg = ctypes.create_string_buffer(512)
        self._lib.edge_host_error(self._interp, fields, msg, 512)
        keys = ("status", "subgraph", "node", "tensor", "op_code", "op_version", "offset", "required", "given",
                "required_exact")
        return dict(zip(keys, (int(v) for v in fields))), msg.value.decode("utf-8", "replace")

    def _op_refusal(self, info: dict) -> str:
        """The op table's reason the C runtime has no kernel for the failing node's op, when it says more than
        that (an op whose output size depends on the data): "; <reason>", else ""."""
        from edge_sdk.runtime import op_table

        try:
            sg = self.model.subgraphs[info["subgraph"]]
            code = self.model.operator_codes[sg.operators[info["node"]].opcode_index]
        except (IndexError, ModelError):
            return ""
        if not op_table.row(code.name).data_sized:
            return ""
        return "; " + (op_table.c_refusal(code.name, code.version) or "")

    def _uint8_refusal(self, info: dict) -> str:
        """What to do when the refused node's tensor (the C message names it: edge.c raw_uint8_tensor) is a legacy
        quantized UINT8 one: "; <the fix>", else ""."""
        try:
            tensor = self.model.subgraphs[info["subgraph"]].tensors[info["tensor"]]
        except (IndexError, ModelError):
            return ""
        if tensor.type != "UINT8":
            return ""
        return ("; a legacy quantized_uint8 tensor: the C runtime runs it as INT8 once the model is presented so "
                "(edge_sdk.runtime.c_loaded.c_bytes, its I/O flipped by c_io), as every edge tool hands it over")

    def _raise(self, status: int):
        info, msg = self.error()
        name = status_name(status)
        text = f"C runtime: {msg} [{name}]"
        if status == STATUS["EDGE_ARENA_TOO_SMALL"]:
            raise ArenaTooSmallError(info["required"], info["given"], "C arena" if info["required_exact"]
                                     else "C arena (needs at least)")
        if status == STATUS["EDGE_UNSUPPORTED_OP"]:
            text += self._op_refusal(info)
        if status == STATUS["EDGE_UNSUPPORTED_TYPE"] and info["node"] >= 0 and info["tensor"] >= 0:
            text = text[:-len(f" [{name}]")] + self._uint8_refusal(info) + f" [{name}]"
        if status in (STATUS["EDGE_UNSUPPORTED_OP"], STATUS["EDGE_UNSUPPORTED_TYPE"], STATUS["EDGE_UNSUPPORTED"]):
            raise UnsupportedOpError(text)
        raise ModelError(text)

    # ------------------------------------------------------------------ allocate
    def _init(self, nbytes: int) -> int:
        self._arena_owner, addr = _aligned(nbytes)
        self._plan = self._planned()
        # EDGE_INIT_MEMORY_MIN for both least-RAM requests: in-place groups where the plan is "inplace" (the C
        # runtime finds the same groups: test_planner holds them together) and, whatever the plan, the compact
        # 5-byte-a-channel requantization of CONV_2D on builds without a SIMD fast path
        flags = (PLAN_ONLY if self._plan_only else 0) | (MEMORY_MIN if c_memory_min(self._memory) else 0)
        plan = None
        if self._patch is not None:
            plan = _PatchPlan(self._patch.nodes[0], self._patch.nodes[-1], *self._patch.grid)

        def init():
            if plan is None:
                return self._lib.edge_init_ex(self._interp, self._model_addr, self._model_len, addr, nbytes, flags)
            return self._lib.edge_init_patch(self._interp, self._model_addr, self._model_len, addr, nbytes, flags,
                                             ctypes.byref(plan))

        set_threads = _set_threads(self._lib)
        if set_threads is None:  # a build without the Linux fast paths: one thread
            return init()
        with _threads_lock:  # the count is read by every node's prepare (process-wide setting): held around init
            previous = set_threads(self._threads)
            try:
                return init()
            finally:
                set_threads(previous)

    def patch_plan(self):
        """memory="min": the stage the C runtime runs patch by patch (edge_sdk.runtime.patching.PatchPlan, the
        Python planner's over C_PATCH_OPS), or None."""
        return self._patch

    @property
    def num_threads(self) -> int:
        """Threads the large CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED nodes split their work across (their
        SIMD paths on 64-bit Linux CPUs; results are the same for any count)."""
        return self._threads

    def allocate_tensors(self) -> None:
        if self._ready:
            return
        too_small = STATUS["EDGE_ARENA_TOO_SMALL"]
        if self._budget is not None:
            status = self._init(self._budget)
        else:
            size = DEFAULT_ARENA
            status = self._init(size)
            for _ in range(8):  # grow to what the runtime asks for (a lower bound when it ran out early)
                if status != too_small:
                    break
                info, _ = self.error()
                size = max(info["required"], 2 * size) if not info["required_exact"] else info["required"]
                status = self._init(size)
        if status != 0:
            self._raise(status)
        bound = self.max_while_iterations
        self._lib.edge_set_max_while_iterations(self._interp, -1 if bound is None else min(bound, 2**31 - 1))
        self._ready = True
        self._arena_len = len(self._arena_owner) - 16
        self._inputs = tuple(self._io_indices(0))
        self._views.clear()
        self._staged.clear()
        if not self._plan_only:
            reused = sorted(self._reused_inputs())
            for t in reused:
                self._staged[t] = np.array(self._view(t))
            self._copies = (_Copy * max(len(reused), 1))(*[
                _Copy(self._view(t).ctypes.data, self._staged[t].ctypes.data, self._staged[t].nbytes)
                for t in reused])
            self._n_copies = len(reused)
            self._targets = {t: self._staged.get(t, self._view(t)) for t in self._inputs}
            if _pyfast is not None:
                fn = ctypes.cast(self._lib.edge_host_invoke_copies, ctypes.c_void_p).value
                self._run = _pyfast.invoke
                self._run_args = (fn, self._handle.value, ctypes.addressof(self._copies), self._n_copies)
            else:
                self._run = self._lib.edge_host_invoke_copies
                self._run_args = (self._handle, self._copies, self._n_copies)

    def _reused_inputs(self) -> frozenset[int]:
        """Subgraph-0 inputs whose planned bytes overlap another planned buffer (tensor or scratch) that is
        live at some step: only those need re-staging before every invoke."""
        entries = self.plan_entries()
        wanted = set(self._inputs)
        out = set()
        for e in entries:
            if e["subgraph"] != 0 or e["tensor"] not in wanted:
                continue
            lo, hi = e["offset"], e["offset"] + e["size"]
            for o in entries:
                if o is e or o["size"] <= 0:
                    continue
                if o["offset"] < hi and lo < o["offset"] + o["size"]:
                    out.add(e["tensor"])
                    break
        return frozenset(out)

    # ------------------------------------------------------------------ tensors
    def _tensor(self, kind: int, i: int):  # kind 0 input, 1 output, 2 + s tensor i of subgraph s
        data, nbytes = ctypes.c_void_p(), ctypes.c_uint32()
        typ, rank = ctypes.c_int32(), ctypes.c_int32()
        dims = (ctypes.c_int32 * 16)()
        scale, zp = ctypes.c_float(), ctypes.c_int32()
        if self._lib.edge_host_tensor(self._interp, kind, i, ctypes.byref(data), ctypes.byref(nbytes),
                                      ctypes.byref(typ), ctypes.byref(rank), dims, 16, ctypes.byref(scale),
                                      ctypes.byref(zp)) != 0:
            return None
        return dict(data=data.value, bytes=nbytes.value, type=TENSOR_TYPE_NAMES.get(typ.value, str(typ.value)),
                    shape=tuple(dims[k] for k in range(rank.value)), scale=scale.value, zero_point=zp.value)

    def _view(self, t: int, subgraph: int = 0) -> np.ndarray:
        """A numpy view of tensor t's bytes (cached: after allocate_tensors the data never moves)."""
        view = self._views.get((subgraph, t))
        if view is None:
            view = self._views[(subgraph, t)] = self._new_view(t, subgraph)
        return view

    def _new_view(self, t: int, subgraph: int) -> np.ndarray:
        info = self._tensor(2 + subgraph, t)
        if info is None:
            raise ValueError(f"Invalid tensor index {t}")
        dtype = TENSOR_TYPES[info["type"]][1]
        if dtype is None or not info["data"]:
            raise ValueError(f"Tensor data is null for tensor {t}")
        count = int(np.prod(info["shape"], dtype=np.int64))
        if count * dtype.itemsize > info["bytes"]:
            raise ValueError(f"tensor {t} is held packed ({info['type']}); it cannot be viewed")
        buf = (ctypes.c_uint8 * (count * dtype.itemsize)).from_address(info["data"])
        return np.frombuffer(buf, dtype=dtype, count=count).reshape(info["shape"])

    def _io_indices(self, kind: int) -> list[int]:
        if kind == 0 and self._inputs:
            return list(self._inputs)
        model = self.model
        sg = model.subgraphs[0]
        return list(sg.inputs if kind == 0 else sg.outputs)

    @property
    def model(self) -> Model:
        if self._parsed is None:
            from edge_sdk.model import read_model

            self._parsed = read_model(bytes((ctypes.c_uint8 * self._model_len).from_address(self._model_addr)))
        return self._parsed

    @property
    def loaded_model(self) -> Model:
        """The model the C runtime loaded (edge_sdk.runtime.c_loaded: tensors at their prepared shapes, known values
        as constants, a copy of a subgraph per call site at other shapes, appended): the subgraph and node indices
        its trace and error records name. ``model`` is the one you gave."""
        from edge_sdk.model import read_model

        if self._loaded is None:
            self._loaded = read_model(ctypes.string_at(self._model_addr, self._model_len))
        return self._loaded

    def standalone(self, model: Model) -> CInterpreter:
        """An interpreter of ``model`` under this one's bounds (arena_size, max_while_iterations), as
        Interpreter.standalone (the Python kernels' Runtime service; the C runtime's own WHILE runs in C)."""
        return CInterpreter(model=model, arena_size=self._budget, max_while_iterations=self.max_while_iterations)

    def eval_sized_tensors(self) -> list[dict]:
        """[], always: the C runtime plans every byte before the first invoke, and refuses at load the ops whose
        outputs the data sizes (Interpreter.eval_sized_tensors lists the Python interpreter's)."""
        return []

    def trace_sink(self) -> list | None:
        """None, always: the rows list Interpreter.trace_sink gives the Python kernels of a growing WHILE run by
        interpreters of their own; the C runtime refuses such a loop at load and traces its own nodes (trace())."""
        return None

    def _details(self, t: int, subgraph: int = 0) -> dict:
        tensor = self.model.subgraphs[subgraph].tensors[t]
        info = self._tensor(2 + subgraph, t) if self._ready else None
        shape = info["shape"] if info else self._resized.get((subgraph, t), tuple(tensor.shape))
        q = tensor.quantization
        if q is not None and q.scale is not None and np.size(q.scale):
            scales = np.asarray(q.scale, np.float32).reshape(-1)
            zps = np.asarray(q.zero_point, np.int32).reshape(-1)
            legacy = (float(scales[0]), int(zps[0])) if scales.size == 1 else (0.0, 0)
            qdim = int(q.quantized_dimension)
        else:
            scales, zps, legacy, qdim = np.zeros(0, np.float32), np.zeros(0, np.int32), (0.0, 0), 0
        dt = TENSOR_TYPES.get(tensor.type, (None, None))[1]
        details = {
            "name": tensor.name,
            "index": t,
            "shape": np.array(shape, np.int32),
            "shape_signature": np.array(tensor.shape_signature or shape, np.int32),
            "dtype": dt.type if dt is not None else np.void,
            "quantization": legacy,
            "quantization_parameters": {"scales": scales, "zero_points": zps, "quantized_dimension": qdim,
                                        "block_size": 0},
            "sparsity_parameters": {},
        }
        if self.no_data(t, subgraph):  # our mark (LiteRT has none): get_tensor raises "Tensor data is null" for it
            details["no_data"] = True
        return _uint8.details(details) if (subgraph, t) in self._uint8 else details

    def get_input_details(self) -> list[dict]:
        return [self._details(t) for t in self._io_indices(0)]

    def get_output_details(self) -> list[dict]:
        return [self._details(t) for t in self._io_indices(1)]

    def set_tensor(self, tensor_index, value, subgraph_index: int = 0) -> None:
        # fast path: a model input after allocate_tensors, given as an ndarray of exactly its dtype and shape
        view = self._targets.get(tensor_index) if not subgraph_index else None
        if (view is not None and type(value) is np.ndarray and value.dtype is view.dtype
                and value.shape == view.shape):
            view[...] = value
            return
        if view is None:
            if not self._ready:
                raise ValueError("Cannot set tensor: Tensor is unallocated. Try calling allocate_tensors() first")
            view = self._view(int(tensor_index), int(subgraph_index))
        value = np.asarray(value)
        if (subgraph_index, tensor_index) in self._uint8 and value.dtype == np.uint8:
            value = _uint8.to_int8(value)
        if value.dtype != view.dtype:
            raise ValueError(f"Cannot set tensor: Got value of type {value.dtype} but expected type {view.dtype} "
                             f"for input {tensor_index}")
        if value.shape != view.shape:
            raise ValueError(f"Cannot set tensor: Dimension mismatch. Got {value.shape} but expected {view.shape} "
                             f"for input {tensor_index}.")
        view[...] = value

    def required_input_values(self) -> list[np.ndarray | None]:
        """As Interpreter.required_input_values: per model input, the one value an op that reads it as its output
        shape lets it hold, else None (the Python prepare of the same model at the same input shapes)."""
        return self._python().required_input_values()

    def no_data(self, tensor_index, subgraph_index: int = 0) -> str | None:
        """As Interpreter.no_data: why the tensor holds no data in the C plan (a folded PAD's output), else None."""
        t, s = int(tensor_index), int(subgraph_index)
        if not self._ready or (s == 0 and t in self._staged):
            return None
        info = self._tensor(2 + s, t)
        if info is None or info["data"] or TENSOR_TYPES.get(info["type"], (None, None))[1] is None:
            return None
        return folded_pad_output(self.model, self.folded_pads(), s, t) or "the C plan gives it no bytes"

    def get_tensor(self, tensor_index, subgraph_index: int = 0) -> np.ndarray:
        if not self._ready:
            raise ValueError(f"Tensor data is null for tensor {tensor_index}: call allocate_tensors() first")
        t, s = int(tensor_index), int(subgraph_index)
        reason = self.no_data(t, s)
        if reason:
            raise ValueError(f"Tensor data is null for tensor {t}: {reason}")
        value = self._staged[t] if s == 0 and t in self._staged else self._view(t, s)
        return _uint8.to_uint8(value) if (s, t) in self._uint8 else np.array(value)

    def invoke(self) -> None:
        status = self._run(*self._run_args)
        if status:
            self._raise_invoke(status, "edge_invoke")

    def _raise_invoke(self, status: int, call: str):
        if status == STATUS["EDGE_LIMIT"]:  # a kernel stopped the invoke (WHILE's bound): the record names the node
            _, msg = self.error()
            raise ModelError(f"C runtime: {msg} (max_while_iterations={self.max_while_iterations})")
        if status == STATUS["EDGE_BAD_INPUT"]:  # a position out of range (GATHER ...), a run-time shape (RESHAPE ...)
            _, msg = self.error()
            raise DataError(f"C runtime: {msg} (run-time input)")
        raise RuntimeError(f"C runtime: {call} returned {status_name(status)}")

    @staticmethod
    def _not_ready(*_args) -> int:
        raise RuntimeError("Invoke called on model that is not ready: call allocate_tensors() first")

    # ------------------------------------------------------------------ signatures
    def get_signature_list(self) -> dict:
        return {s.signature_key: {"inputs": sorted(s.inputs), "outputs": sorted(s.outputs)}
                for s in self.model.signature_defs}

    def get_signature_runner(self, signature_key: str | None = None) -> CSignatureRunner:
        keys = [s.signature_key for s in self.model.signature_defs]
        if signature_key is None:
            if len(keys) != 1:
                raise ValueError(f"SignatureDef signature_key is None and model has {len(keys)} Signatures. "
                                 "None is only allowed when the model has 1 SignatureDef")
            signature_key = keys[0]
        if signature_key not in keys:
            raise ValueError(f'Invalid signature_key provided: "{signature_key}".')
        self.allocate_tensors()
        return CSignatureRunner(self, signature_key)

    def reset_all_variables(self) -> None:
        if self._ready and not self._plan_only:
            self._lib.edge_reset_state(self._interp)

    # ------------------------------------------------------------------ arena, plan, timing
    def plan_info(self) -> dict:
        """The C plan's figures: n_tensors, n_scratch, tensor_total, lower_bound, head_total (tensors + scratch),
        ordering, steps, arena_used, high_water, persistent (the arena's tail: structs, kernel data, variables and
        packed weights), packed (of persistent: the fast paths' packed weight copies, edge_alloc_packed)."""
        fields = (ctypes.c_int64 * 11)()
        self._lib.edge_host_plan_info(self._interp, fields)
        keys = ("n_tensors", "n_scratch", "tensor_total", "lower_bound", "head_total", "ordering", "steps",
                "arena_used", "high_water", "persistent", "packed")
        out = dict(zip(keys, (int(v) for v in fields)))
        out["ordering"] = _ORDERINGS[out["ordering"]]
        return out

    @property
    def arena_size(self) -> int | None:
        """The model's arena (issue 23 point 5; the meaning Interpreter.arena_size and `edge check`'s arena_size
        share): activations and scratch (the plan) + persistent state (the runtime's tensor/node structs, kernel
        data, variables) + alignment padding, at the high water (init's planner working memory, when it exceeds
        the plan, included: what the arena must hold), NOT the packed weight copies of the SIMD fast paths (a
        copy of constant weights, a figure of its own: packed_weights_bytes; the buffer holds both). The Python
        interpreter's figure is its tensor plan alone (its per-op state is Python objects, its variables live
        outside the arena): this one is larger by the C runtime's structs, kernel data and scratch
        (tests/test_arena_meaning.py states the difference to the byte). On a host build the scratch includes the
        SIMD fast paths' own (im2col blocks, GEMM work) that a board's portable kernels do not need: arena_parts()
        names it (fast_path_scratch), so a host figure far above the board's says why. None before
        allocate_tensors."""
        if not self._ready:
            return None
        from edge_sdk.runtime.planner import runtime_arena

        info = self.plan_info()
        return runtime_arena(info["high_water"], info["arena_used"], info["packed"])

    def arena_parts(self) -> dict | None:
        """arena_size broken down, in bytes (the parts add up to it; tests/test_walk23b_paths.py):
        ``tensors`` the tensor plan (the Python interpreter's arena_size for the same plan), ``scratch`` the
        kernels' scratch, of which ``fast_path_scratch`` is what this build's SIMD fast paths need beyond the
        portable kernels a board runs (e.g. a float CONV_2D's im2col blocks: up to 48 rows of the window, 98,304 B
        for a 512-tap window; the same model prepared at SIMD level 0 in a child process tells; None when it
        cannot be told), ``persistent`` (tensor / node structs,
        kernel data, variables), ``alignment`` and ``init_extra`` (init's planner memory above the steady state).
        ``packed_weights`` (the fast paths' packed weight copies) is apart: not in arena_size. None before
        allocate_tensors."""
        if not self._ready:
            return None
        info = self.plan_info()
        scratch = info["head_total"] - info["tensor_total"]
        portable = self._portable_scratch(scratch)
        parts = {"tensors": info["tensor_total"], "scratch": scratch,
                 "fast_path_scratch": None if portable is None else max(0, scratch - portable),
                 "persistent": info["persistent"] - info["packed"],
                 "alignment": info["arena_used"] - info["head_total"] - info["persistent"],
                 "init_extra": max(0, info["high_water"] - info["arena_used"])}
        parts["arena_size"] = self.arena_size
        parts["packed_weights"] = info["packed"]
        return parts

    def _portable_scratch(self, scratch: int) -> int | None:
        """The kernels' scratch of this model prepared by the portable kernels (SIMD level 0, as a board's build
        has them): ``scratch`` itself on a build or CPU without a fast path; None when it cannot be told here
        (no host runner next to the library). Measured in a child process, edge-run-c with EDGE_SIMD_LEVEL=0
        (its own process-wide level, read once): this process's level, which every prepare here reads, is left
        alone. A full prepare (a plan-only one runs no kernel prepare, so it has no scratch at all)."""
        import os
        import subprocess
        import tempfile

        from edge_sdk.runtime.c_build import RUNNER

        lib = self._lib
        if not hasattr(lib, "edge_simd_level"):
            return scratch
        lib.edge_simd_level.argtypes, lib.edge_simd_level.restype = [], ctypes.c_int32
        if lib.edge_simd_level() <= 0:
            return scratch
        if not RUNNER.is_file():
            return None
        flags = c_runner_flags(self._memory, self._patch)
        with tempfile.TemporaryDirectory(prefix="edge-portable-") as tmp:
            model = os.path.join(tmp, "model.tflite")
            with open(model, "wb") as f:
                f.write(ctypes.string_at(self._model_addr, self._model_len))
            proc = subprocess.run([str(RUNNER), model, "--plan", *flags], capture_output=True, text=True,
                                  env={**os.environ, "EDGE_SIMD_LEVEL": "0"}, timeout=120, check=False)
        plan = next((line.split() for line in proc.stdout.splitlines() if line.startswith("plan ")), None)
        if proc.returncode != 0 or plan is None:
            return None
        fields = dict(zip(plan[1::2], plan[2::2]))  # "plan tensor_total T lower_bound L head_total H ..."
        return int(fields["head_total"]) - int(fields["tensor_total"])

    @property
    def packed_weights_bytes(self) -> int | None:
        """Bytes of the arena holding packed weight copies (the SIMD fast paths repack constant conv / depthwise /
        fully-connected / batch-matmul weights at prepare); 0 on a build without them. None before
        allocate_tensors."""
        return self.plan_info()["packed"] if self._ready else None

    @property
    def memory_plan(self) -> str | None:
        """The arena plan the C runtime built (edge_sdk.runtime.planner.REALISED_PLANS, as Interpreter.memory_plan):
        the planner's choice (``_planned``) at allocate_tensors: "patch" (memory="min" with a stage, see
        patch_plan), "inplace" or "layer". tests/test_planner.py holds it to the placement the C runtime made (two
        planned tensors sharing bytes while both are live: an in-place group). None before allocate_tensors."""
        return self._plan if self._ready else None

    def plan_entries(self) -> list[dict]:
        """Every planned buffer (tensors, then kernels' scratch) as dicts."""
        self._require_ready("plan_entries")
        out = []
        e = _PlanEntry()
        for k in range(self._lib.edge_plan_count(self._interp)):
            self._lib.edge_plan_entry(self._interp, k, ctypes.byref(e))
            out.append({f: int(getattr(e, f)) for f, _ in _PlanEntry._fields_})
        return out

    def arena_plan(self) -> _arena.ArenaPlan:
        """The C plan's tensor buffers as an ArenaPlan (keys (subgraph, tensor)), comparable with
        edge_sdk.runtime.interpreter.Interpreter.arena_plan() / static_plan()."""
        info = self.plan_info()
        model = self.model
        buffers = []
        for e in self.plan_entries():
            if e["tensor"] == PATCH_CUT:  # the patch stage's cut window buffer (edge_sdk.runtime.patching.CUT_KEY)
                cut = model.subgraphs[0].tensors[self._patch.output].name
                buffers.append(_arena.PlannedBuffer((e["subgraph"], PATCH_CUT), f"patch window of '{cut}'",
                                                    e["offset"], e["size"], e["first_use"], e["last_use"]))
                continue
            if e["tensor"] < 0:
                continue
            name = model.subgraphs[e["subgraph"]].tensors[e["tensor"]].name
            if e["subgraph"]:
                name = f"[{e['subgraph']}] {name}"
            buffers.append(_arena.PlannedBuffer((e["subgraph"], e["tensor"]), name, e["offset"], e["size"],
                                                e["first_use"], e["last_use"]))
        return _arena.ArenaPlan(buffers=buffers, total=info["tensor_total"], lower_bound=info["lower_bound"],
                                ordering=info["ordering"])

    def enable_trace(self, capacity: int = 4096) -> None:
        """Time every op from now on with the host clock (ns); read with trace() after invoke()."""
        self._require_ready("enable_trace")
        self._trace_buf = (_TraceEntry * capacity)()
        self._lib.edge_set_timer(self._interp, self._lib.edge_host_timer(), self._trace_buf, capacity)

    def trace(self) -> list[dict]:
        """Per-op timings of the last invoke: dicts of subgraph, node, op (name), ns."""
        out = []
        s, n, op, ticks = ctypes.c_int32(), ctypes.c_int32(), ctypes.c_int32(), ctypes.c_uint32()
        k = 0
        while self._lib.edge_host_trace(self._interp, k, ctypes.byref(s), ctypes.byref(n), ctypes.byref(op),
                                        ctypes.byref(ticks)) == 0:
            name = self._lib.edge_op_name(op.value).decode()
            if name == "CUSTOM":  # the C table names builtin codes only: a custom op by its custom_code, as Python
                name = self.model.op_name(self.model.subgraphs[s.value].operators[n.value])
            out.append(dict(subgraph=s.value, node=n.value, op=name, ns=ticks.value))
            k += 1
        return out

    def _require_ready(self, what: str) -> None:
        if not self._ready:
            raise RuntimeError(f"allocate_tensors() must be called before {what}()")

    # ------------------------------------------------------------------ resize
    def resize_tensor_input(self, input_index, tensor_size, strict: bool = False, subgraph_index: int = 0) -> None:
        """As Interpreter.resize_tensor_input (same checks and messages). The C runtime's loader takes shapes from
        the model bytes, so the input's shape is rewritten in a copy of the model (the model you gave stays as
        it is: ``model``, the details' shape_signature); allocate_tensors then prepares and plans afresh."""
        model = self.model
        t, s = self._index(input_index, subgraph_index)
        sg = model.subgraphs[s]
        shape = resize_request(sg, t, tensor_size, strict)
        tensor = sg.tensors[t]
        now = self._tensor(2 + s, t)["shape"] if self._ready else self._resized.get((s, t), tuple(tensor.shape))
        if shape == tuple(now):
            return
        from edge_sdk.model import write_model

        self._resized[(s, t)] = shape
        self._shadow = None
        data = write_model(self._loaded_at_resized_shapes())
        self._load(data)
        if self._planner_stage:  # the stage was chosen for the old shapes
            self._patch = self._stage_for(data)

    def _index(self, tensor_index, subgraph_index: int = 0) -> tuple[int, int]:
        """(tensor, subgraph) checked against the model, with the Python Interpreter's messages."""
        s = self._subgraph_index(subgraph_index)
        n = len(self.model.subgraphs[s].tensors)
        if not isinstance(tensor_index, (int, np.integer)) or not 0 <= tensor_index < n:
            raise ValueError(f"Invalid tensor index {tensor_index} exceeds max tensor index {n}")
        return int(tensor_index), s

    def _subgraph_index(self, subgraph_index) -> int:
        n = len(self.model.subgraphs)
        if not 0 <= int(subgraph_index) < n:
            raise ValueError(f"subgraph_index is out of range: {subgraph_index} for the model, which has "
                             f"{n} subgraphs.")
        return int(subgraph_index)

    # ------------------------------------------------------------------ the rest of the Interpreter API
    def num_subgraphs(self) -> int:
        return len(self.model.subgraphs)

    def get_tensor_details(self, subgraph_index: int = 0) -> list[dict]:
        s = self._subgraph_index(subgraph_index)
        return [self._details(t, s) for t in range(len(self.model.subgraphs[s].tensors))]

    def tensor(self, tensor_index) -> Callable[[], np.ndarray]:
        """A function returning a numpy view of the tensor's current memory (the staging array of an input whose
        arena bytes are reused; don't keep the view across allocate_tensors(), keep the function)."""
        t, _ = self._index(tensor_index)

        def view() -> np.ndarray:
            if not self._ready:
                raise ValueError("Tensor is unallocated: call allocate_tensors() first")
            reason = self.no_data(t)
            if reason:
                raise ValueError(f"Tensor data is null for tensor {t}: {reason}")
            return self._staged[t] if t in self._staged else self._view(t)

        return view

    def tensor_shapes(self, subgraph_index: int = 0) -> list[tuple[int, ...]]:
        """Every tensor's shape after the C runtime's prepare, in tensor order."""
        self._require_ready("tensor_shapes")
        n = len(self.model.subgraphs[subgraph_index].tensors)
        return [tuple(self._tensor(2 + subgraph_index, t)["shape"]) for t in range(n)]

    def invoke_subgraph(self, subgraph_index: int, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """Run one subgraph on ``inputs`` (written into its input tensors) with edge_invoke_at; its outputs, as
        copies."""
        self._require_ready("invoke_subgraph")
        sg = self.model.subgraphs[subgraph_index]
        for t, x in zip(sg.inputs, inputs):
            self._view(t, subgraph_index)[...] = x
        status = self._lib.edge_invoke_at(self._interp, subgraph_index)
        if status != 0:
            self._raise_invoke(status, "edge_invoke_at")
        return [np.array(self._view(t, subgraph_index)) for t in sg.outputs]

    def invoke_profiled(self) -> list[tuple[int, str, float]]:
        """invoke(), timing each op of subgraph 0 with the C runtime's op timer (host clock): ``[(node_index, op,
        seconds)]`` in execution order, as Interpreter.invoke_profiled. A trace enabled before stays enabled."""
        return [(e["node"], e["op"], e["ns"] / 1e9) for e in self.invoke_traced() if e["subgraph"] == 0]

    def invoke_traced(self) -> list[dict]:
        """invoke(), timing every op of every subgraph it runs with the C runtime's op timer (host clock):
        trace()'s entries ``{"subgraph", "node", "op", "ns"}``, as Interpreter.invoke_traced. A trace enabled
        before stays enabled."""
        if not self._ready:
            raise RuntimeError("Invoke called on model that is not ready: call allocate_tensors() first")
        earlier = self._trace_buf
        n_ops = sum(len(sg.operators) for sg in self.model.subgraphs)
        if earlier is not None and len(earlier) >= 4 * n_ops:  # a trace on already (bench's runs): no new buffer
            self.invoke()
            return self.trace()
        self.enable_trace(max(4096, 4 * n_ops))
        try:
            self.invoke()
            entries = self.trace()
        finally:
            if earlier is None:
                self._lib.edge_set_timer(self._interp, None, None, 0)
            else:
                self._lib.edge_set_timer(self._interp, self._lib.edge_host_timer(), earlier, len(earlier))
            self._trace_buf = earlier
        return entries

    def resource_id(self, container: str, shared_name: str) -> int:
        """The Runtime protocol's id of a resource variable (Python kernels ask it). The C runtime keeps its
        resource variables itself (edge.c); here the ids number the (container, shared name) pairs asked for."""
        ids = self.__dict__.setdefault("_resource_ids", {})
        return ids.setdefault((container, shared_name), len(ids))

    @property
    def delegates(self) -> list:
        return []  # the C runtime runs every op itself

    def partitions(self, subgraph_index: int = 0) -> list:
        """One partition per subgraph, backend "c": the C runtime runs every node (no delegates). Works before
        allocate_tensors, like Interpreter.partitions."""
        if not 0 <= int(subgraph_index) < len(self.model.subgraphs):
            raise ValueError(f"subgraph_index is out of range: {subgraph_index}")
        return [Partition("c", part.nodes, part.boundary, part.subgraph)
                for part in self._python(allocate=False).partitions(subgraph_index)]

    def node_backends(self, subgraph_index: int = 0) -> list[tuple[str, str]]:
        if not 0 <= int(subgraph_index) < len(self.model.subgraphs):
            raise ValueError(f"subgraph_index is out of range: {subgraph_index}")
        return [("c", "the C runtime runs every node")] * len(self.model.subgraphs[subgraph_index].operators)

    @property
    def folded_nodes(self) -> list[tuple[int, int]]:
        """[]: the C runtime has no general constant folding (the Python interpreter's). Its one fold, a DEQUANTIZE
        of a constant computed at prepare (planner.folded_constants), keeps the node in the profile (its eval does
        nothing) and counts its bytes with the packed copies (packed_weights_bytes), not here."""
        return []

    @property
    def folded_bytes(self) -> int:
        return 0

    def folded_pads(self) -> list[tuple[int, int]]:
        """(subgraph, node) of every PAD the C runtime folds into the conv that reads it: edge_pad_folds applies
        planner.folded_pads' rule to the same tensors (none under a patch stage, as in the Python interpreter:
        planner.folds_under)."""
        self._require_ready("folded_pads")
        infos = [self.tensor_infos(s) for s in range(len(self.model.subgraphs))]
        return sorted((f.subgraph, f.pad) for f in folds_under(self.model, infos, self._patch))

    @property
    def input_staging_bytes(self) -> int:
        """Bytes outside the arena that keep inputs whose arena bytes the plan reuses (0 before allocate)."""
        return sum(a.nbytes for a in self._staged.values())

    def op_macs(self, subgraph_index: int = 0) -> list[int | None]:
        """Multiply-accumulates per operator (the op table's MACs functions on the Python planner's prepared
        nodes, at this interpreter's input shapes)."""
        self._require_ready("op_macs")
        return self._python().op_macs(subgraph_index)

    def subgraph_infos(self, subgraph_index: int) -> list:
        """The Runtime protocol's callee infos (Python IF / WHILE kernels ask while they prepare): the Python
        interpreter's at this interpreter's input shapes, after its prepare (callees prepared)."""
        return self._python(allocate=False).prepare_report()[2][subgraph_index]

    def prepare_subgraph_at(self, subgraph_index: int, shapes, caller) -> None:
        """The Runtime protocol's callee prepare (Interpreter.prepare_subgraph_at): the Python interpreter's own
        prepare does it (its shapes reach the bytes this one loads: shape_arithmetic.c_loaded); nothing here."""

    def tensor_infos(self, s: int) -> list:
        """The Python planner's TensorInfo per tensor of subgraph ``s`` (at this interpreter's input shapes)."""
        return self._python(allocate=False).tensor_infos(s)

    def prepare_report(self) -> tuple[list, dict, list]:
        """The Python prepare's report (Interpreter.prepare_report) at this interpreter's input shapes; what the
        C runtime's own prepare refuses is edge_sdk.targets.c_check.target_plan's ``refusals``."""
        return self._python(allocate=False).prepare_report()

    def _loaded_at_resized_shapes(self) -> Model:
        """The model the C runtime loads at this interpreter's input shapes (shape_arithmetic.c_loaded over the
        Python prepare at those shapes: every tensor declared at its prepared shape, the values shape arithmetic
        gives handed to their readers as constants). The model's own shapes when it is not readable (the C loader
        names what is wrong, in its own words)."""
        from edge_sdk.runtime.shape_arithmetic import c_loaded, with_shapes

        model = self.model
        if not _c_loaded.needs_prepare(model):  # the C prepare sizes the rest from the inputs' declared shapes
            return with_shapes(model, self._resized)
        try:
            shadow = self._python(allocate=False)
            report = shadow.prepare_report()
        except ModelError:
            return model
        return c_loaded(shadow.model, report)  # its model: a callee copied per call site at other shapes

    def _python(self, allocate: bool = True) -> Interpreter:
        """A Python Interpreter of the same model at the same input shapes (made once per shape)."""
        if self._shadow is None:
            shadow = Interpreter(model=self.model)
            for (s, t), shape in self._resized.items():
                shadow.resize_tensor_input(t, shape, subgraph_index=s)
            self._shadow = shadow
        if allocate:
            self._shadow.allocate_tensors()
        return self._shadow


class CSignatureRunner:
    """One SignatureDef on the C runtime: ``runner(name=array, ...) -> {output name: array}`` (copies), like
    edge_sdk.runtime.interpreter.SignatureRunner. The subgraph and the tensors are resolved by the C runtime
    (edge_signature_find / edge_signature_tensor) and run with edge_invoke_at; inputs are written before every
    call (the plan may reuse their bytes); an input given at another shape is resized to it first
    (CInterpreter.resize_tensor_input: re-prepared, re-planned), as LiteRT's SignatureRunner does."""

    def __init__(self, interp: CInterpreter, signature_key: str):
        lib, handle = interp._lib, interp._interp
        k = lib.edge_signature_find(handle, signature_key.encode())
        if k < 0:
            raise ModelError(f"C runtime: no signature '{signature_key}'")
        self._interp, self.subgraph = interp, lib.edge_signature_subgraph(handle, k)
        sig = next(s for s in interp.model.signature_defs if s.signature_key == signature_key)
        self._inputs, self._outputs = {}, {}
        for kind, names, table in ((0, sig.inputs, self._inputs), (1, sig.outputs, self._outputs)):
            for name in names:
                t = lib.edge_signature_tensor(handle, k, kind, name.encode())
                if t < 0:
                    raise ModelError(f"C runtime: signature '{signature_key}' has no {('input', 'output')[kind]} "
                                     f"'{name}'")
                table[name] = t

    def get_input_details(self) -> dict:
        return {n: self._interp._details(t, self.subgraph) for n, t in sorted(self._inputs.items())}

    def get_output_details(self) -> dict:
        return {n: self._interp._details(t, self.subgraph) for n, t in sorted(self._outputs.items())}

    def __call__(self, **kwargs) -> dict[str, np.ndarray]:
        interp = self._interp
        if len(kwargs) != len(self._inputs):
            raise ValueError("Invalid number of inputs provided for running a SignatureDef, "
                             f"expected {len(self._inputs)} vs provided {len(kwargs)}")
        for name, value in kwargs.items():  # each input resized to its value's shape, as LiteRT's SignatureRunner
            if name not in self._inputs:
                raise ValueError(f"Invalid Input name ({name}) for SignatureDef")
            shape = tuple(np.shape(value))
            if interp._ready and shape != tuple(interp._view(self._inputs[name], self.subgraph).shape):
                interp.resize_tensor_input(self._inputs[name], shape, subgraph_index=self.subgraph)
        if not interp._ready:
            interp.allocate_tensors()  # re-prepared and re-planned at the new shapes
        views = {}
        for name, value in kwargs.items():
            view = interp._view(self._inputs[name], self.subgraph)
            value = np.asarray(value)
            if (self.subgraph, self._inputs[name]) in interp._uint8 and value.dtype == np.uint8:
                value = _uint8.to_int8(value)  # a legacy uint8 input (edge_sdk.runtime.uint8)
            if value.dtype != view.dtype or value.shape != view.shape:
                raise ValueError(f"Cannot set tensor '{name}': got {value.dtype} {value.shape}, expected "
                                 f"{view.dtype} {view.shape}")
            views[name] = (view, value)
        for view, value in views.values():
            view[...] = value
        status = interp._lib.edge_invoke_at(interp._interp, self.subgraph)
        if status != 0:
            raise RuntimeError(f"C runtime: edge_invoke_at returned {status_name(status)}")
        return {n: _uint8.to_uint8(interp._view(t, self.subgraph)) if (self.subgraph, t) in interp._uint8
                else np.array(interp._view(t, self.subgraph)) for n, t in sorted(self._outputs.items())}
