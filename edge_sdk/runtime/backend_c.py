"""The C micro-runtime (firmware_c/) as a Python backend, through ctypes.

    from edge_sdk.runtime.backend_c import CInterpreter
    interp = CInterpreter(model_path="net.tflite")       # or edge_sdk.Interpreter(..., backend="c")
    interp.allocate_tensors()                            # edge_init: verify, prepare, plan
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    y = interp.get_tensor(interp.get_output_details()[0]["index"])

The host library (firmware_c/build/host/libedge.so) is built on first use with ``make -C firmware_c host``
(gcc and make must be on PATH; the error says which one is missing). An installed copy builds out of tree:
in a copy of its bundled sources under the cache folder (``edge_sdk.resources.host_tree``). Results are bit-identical to the
Python kernels for the ops the C runtime has (``c_supported_ops()``; ``missing_ops(model)`` names the rest).

LiteRT semantics on top of the C runtime: an input keeps the value ``set_tensor`` gave it until it is set again.
Most inputs are written straight into the arena; the few whose bytes the C plan reuses after their last reader
(as TFLM's does) are kept here and copied in by the same foreign call that invokes. That call goes through a
tiny CPython extension (host/edge_pyfast.c, built beside the library when Python's headers are installed) or,
without one, through ctypes (~0.5 us more per invoke).
``arena_plan()`` returns the C planner's result as an ``edge_sdk.runtime.arena.ArenaPlan`` (tensor buffers only),
equal byte for byte to the Python interpreter's plan.

For `edge check` on a microcontroller: ``target_plan(data)`` runs the C runtime's loader, prepare and planner
once, naming every node a prepare refuses (``TargetPlan.refusals``),
built with the board's 32-bit struct layout (``edge-run-c --plan`` compiled by arm-linux-gnueabihf-gcc, run by
qemu-arm; the host build when those are missing, said so in ``TargetPlan.layout``): its high-water mark is the
board's to the byte. ``runtime_stack`` / ``runtime_code_bytes`` compile the runtime with the target's compiler
(-fcallgraph-info=su) for the stack of the deepest call chain and the code of an op set.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

import numpy as np

from edge_sdk.runtime import arena as _arena
from edge_sdk.runtime.patching import C_PATCH_OPS, CUT_KEY
from edge_sdk.runtime.planner import MEMORY_PLANS, c_patch_stage  # the memory= plans (documented there)
from edge_sdk.runtime.c_status import STATUS, status_name, status_names  # noqa: F401 (re-exported)
from edge_sdk import resources
from edge_sdk.errors import ArenaTooSmallError, ModelError, UnsupportedOpError
from edge_sdk.model.types import TENSOR_TYPE_NAMES, TENSOR_TYPES, Model

FIRMWARE = resources.firmware_dir()  # the sources (the checkout's firmware_c/, or the installed copy)
HOST_TREE = resources.host_tree(FIRMWARE)  # where `make host` runs: FIRMWARE itself, or its copy in the cache
LIBRARY = HOST_TREE / "build" / "host" / "libedge.so"
RUNNER = HOST_TREE / "build" / "host" / "edge-run-c"

_ORDERINGS = ("size", "first_use", "lifetime", "area")
DEFAULT_ARENA = 1 << 20
PLAN_ONLY = 1
MEMORY_MIN = 2  # EDGE_INIT_MEMORY_MIN: in-place nodes (memory="inplace", and under "min"'s patch stage)
# EDGE_PLAN_PATCH_CUT, a plan entry's tensor for the patch stage's cut window buffer, is patching.CUT_KEY; the ops
# a patch stage may hold in the C runtime (edge_init_patch) are patching.C_PATCH_OPS
PATCH_CUT = CUT_KEY

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
_pyfast = None  # the extension module when it loaded (see _load_pyfast)


class BuildError(RuntimeError):
    """The host library could not be built (a tool is missing or the build failed)."""


def build() -> Path:
    """Build firmware_c's host library and runner (make -C firmware_c host; a no-op when up to date);
    returns the library's path."""
    missing = [tool for tool in ("make", os.environ.get("CC", "gcc")) if shutil.which(tool) is None]
    if missing:
        raise BuildError(
            f"cannot build the C runtime: {', '.join(missing)} not found on PATH "
            f"(install make and a C compiler, e.g. `apt-get install make gcc`)"
        )
    cmd = ["make", "-C", str(HOST_TREE), "host", f"PYTHON={sys.executable}"]
    if HOST_TREE != FIRMWARE:  # an installed copy: its sources copied into the cache once, built there
        try:
            resources.ensure_host_tree(FIRMWARE)
        except OSError as exc:
            raise BuildError(f"cannot copy the C runtime's sources from {FIRMWARE} to {HOST_TREE}: {exc}") from exc
    # One build at a time (test workers, parallel users): the lock lives in the (ignored) build folder.
    lock_tree = HOST_TREE / "build" / "host" if HOST_TREE == FIRMWARE else HOST_TREE
    lock_tree.parent.mkdir(parents=True, exist_ok=True)
    with resources.build_lock(lock_tree):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"`make -C {HOST_TREE} host` failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        _build_pyfast()
    return LIBRARY


PYFAST = LIBRARY.parent / f"_edge_pyfast{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def _build_pyfast() -> Path | None:
    """Compile host/edge_pyfast.c for this Python when it is missing or older than its source; None when it
    cannot be built here (no Python headers, no compiler): the ctypes path is used then."""
    src = HOST_TREE / "host" / "edge_pyfast.c"
    include = sysconfig.get_paths().get("include")
    if not src.is_file() or not include or not (Path(include) / "Python.h").is_file():
        return None
    if PYFAST.is_file() and PYFAST.stat().st_mtime >= src.stat().st_mtime:
        return PYFAST
    tmp = PYFAST.with_name(PYFAST.name + f".{os.getpid()}.tmp")
    proc = subprocess.run([os.environ.get("CC", "gcc"), "-O2", "-shared", "-fPIC", f"-I{include}", str(src), "-o",
                           str(tmp)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        return None
    os.replace(tmp, PYFAST)  # whole file or nothing: a concurrent loader never sees half of it
    return PYFAST


def _load_pyfast():
    """The extension module, or None (not built / does not load: ctypes serves)."""
    if not PYFAST.is_file():
        return None
    try:
        spec = importlib.util.spec_from_file_location("_edge_pyfast", PYFAST)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (ImportError, OSError):
        return None
    return module


# A library built elsewhere for this machine's CPU (`edge deploy` cross-builds it on the host for a board without
# a compiler and copies it here, into the installed package): used instead of building when the package is an
# installed copy (not a checkout, which always builds its own) and it loads.
PREBUILT = resources.PACKAGE_DIR / "_prebuilt" / "libedge.so"


def _prebuilt() -> Path | None:
    return PREBUILT if HOST_TREE != FIRMWARE and PREBUILT.is_file() else None


def available() -> tuple[bool, str]:
    """Whether the C runtime can be used here without running it: (True, how) when its library is built (or
    shipped prebuilt) or can be built (make and a C compiler on PATH), else (False, why not). Cheap: nothing is
    built or loaded (``library()`` does that, and may still fail: a build error)."""
    if _lib is not None:
        return True, "loaded"
    if _prebuilt() is not None:
        return True, f"prebuilt {PREBUILT}"
    if LIBRARY.is_file():
        return True, f"built {LIBRARY}"
    missing = [tool for tool in ("make", os.environ.get("CC", "gcc")) if shutil.which(tool) is None]
    if missing:
        return False, f"not built and {', '.join(missing)} not found on PATH to build it"
    return True, "buildable"


def library_path() -> Path:
    """The library ``library()`` loads: the prebuilt copy (``PREBUILT``) when there is one, else the host build."""
    return _prebuilt() or LIBRARY


def library() -> ctypes.CDLL:
    """The loaded host library (built first if needed; a prebuilt copy that does not load here is ignored)."""
    global _lib
    with _lock:
        if _lib is None:
            lib = None
            if _prebuilt() is not None:
                try:
                    lib = ctypes.CDLL(str(PREBUILT))
                except OSError:  # built for another CPU (a copied venv): build our own
                    lib = None
            if lib is None:
                build()
                lib = ctypes.CDLL(str(LIBRARY))
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
            _pyfast = _load_pyfast()
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


def _aligned(nbytes: int) -> tuple[np.ndarray, int]:
    """A zeroed numpy buffer with a 16-byte aligned region of nbytes; returns (owner, address)."""
    owner = np.zeros(nbytes + 16, np.uint8)
    addr = owner.ctypes.data
    pad = (-addr) % 16
    return owner, addr + pad


class CInterpreter:
    """A LiteRT-style interpreter over the C runtime (see the module docstring)."""

    def __init__(self, model_path=None, model_content=None, arena_size: int | None = None, num_threads=None,
                 experimental_op_resolver_type=None, delegates=None, *, model: Model | None = None,
                 plan_only: bool = False, memory: str = "layer", patch_ops=None, patch_plan=None):
        if memory not in MEMORY_PLANS:
            raise ValueError(f"memory must be one of {', '.join(map(repr, MEMORY_PLANS))}, not {memory!r}")
        if patch_ops is not None and not set(patch_ops) <= set(C_PATCH_OPS):
            raise ValueError(f"the C runtime runs patch stages of {', '.join(C_PATCH_OPS)} only, not "
                             f"{', '.join(sorted(set(patch_ops) - set(C_PATCH_OPS)))}")
        self._memory = memory
        # memory="min": the stage and grid (an edge_sdk.runtime.patching.PatchPlan, chosen by the Python planner
        # over C_PATCH_OPS: Interpreter(..., backend="c") passes it), None: no stage beats the in-place plan
        self._patch = patch_plan if memory == "min" else None
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
        if memory == "min" and patch_plan is None:  # the planner's stage: the model file's shapes, no interpreter
            self._patch = c_patch_stage(data, patch_ops)
        if arena_size is not None and (not isinstance(arena_size, (int, np.integer)) or arena_size < 0):
            raise ValueError(f"arena_size must be a non-negative int, not {arena_size!r}")
        if num_threads is not None:  # LiteRT's checks and messages (as the Python interpreter); None means 1
            if not isinstance(num_threads, (int, np.integer)) or isinstance(num_threads, bool):
                raise ValueError("type of num_threads should be int")
            if num_threads < 1:
                raise ValueError("num_threads should >= 1")
        self._threads = 1 if num_threads is None else min(int(num_threads), MAX_THREADS)
        self._lib = library()
        self._model_owner, self._model_addr = _aligned(len(data))
        ctypes.memmove(self._model_addr, data, len(data))
        self._model_len = len(data)
        self._budget = None if arena_size is None else int(arena_size)
        self._plan_only = plan_only
        self._interp = ctypes.create_string_buffer(self._lib.edge_host_interp_size() + 16)
        self._handle = ctypes.c_void_p(ctypes.addressof(self._interp))
        self._ready = False
        self._views: dict[tuple[int, int], np.ndarray] = {}
        # Inputs whose arena bytes other planned buffers reuse during invoke keep their value here (set_tensor
        # writes it) and edge_host_invoke_copies copies it in before every invoke: LiteRT semantics, an input
        # keeps its value until set again. Other inputs are written straight into the arena.
        self._staged: dict[int, np.ndarray] = {}
        self._targets: dict[int, np.ndarray] = {}  # input index -> where set_tensor writes (staged or arena)
        self._copies, self._n_copies = None, 0
        self._run, self._run_args = self._not_ready, ()  # edge_host_invoke_copies once allocated (not plan-only)
        self._inputs: tuple[int, ...] = ()
        self._parsed: Model | None = model
        self._trace_buf = None

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

    def _raise(self, status: int):
        info, msg = self.error()
        name = status_name(status)
        text = f"C runtime: {msg} [{name}]"
        if status == STATUS["EDGE_ARENA_TOO_SMALL"]:
            raise ArenaTooSmallError(info["required"], info["given"], "C arena" if info["required_exact"]
                                     else "C arena (needs at least)")
        if status in (STATUS["EDGE_UNSUPPORTED_OP"], STATUS["EDGE_UNSUPPORTED_TYPE"], STATUS["EDGE_UNSUPPORTED"]):
            raise UnsupportedOpError(text)
        raise ModelError(text)

    # ------------------------------------------------------------------ allocate
    def _init(self, nbytes: int) -> int:
        self._arena_owner, addr = _aligned(nbytes)
        flags = (PLAN_ONLY if self._plan_only else 0) | (MEMORY_MIN if self._memory in ("inplace", "min") else 0)
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

    def _details(self, t: int, subgraph: int = 0) -> dict:
        tensor = self.model.subgraphs[subgraph].tensors[t]
        info = self._tensor(2 + subgraph, t) if self._ready else None
        shape = info["shape"] if info else tuple(tensor.shape)
        q = tensor.quantization
        if q is not None and q.scale is not None and np.size(q.scale):
            scales = np.asarray(q.scale, np.float32).reshape(-1)
            zps = np.asarray(q.zero_point, np.int32).reshape(-1)
            legacy = (float(scales[0]), int(zps[0])) if scales.size == 1 else (0.0, 0)
            qdim = int(q.quantized_dimension)
        else:
            scales, zps, legacy, qdim = np.zeros(0, np.float32), np.zeros(0, np.int32), (0.0, 0), 0
        dt = TENSOR_TYPES.get(tensor.type, (None, None))[1]
        return {
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

    def get_input_details(self) -> list[dict]:
        return [self._details(t) for t in self._io_indices(0)]

    def get_output_details(self) -> list[dict]:
        return [self._details(t) for t in self._io_indices(1)]

    def set_tensor(self, tensor_index, value) -> None:
        # fast path: a model input after allocate_tensors, given as an ndarray of exactly its dtype and shape
        view = self._targets.get(tensor_index)
        if (view is not None and type(value) is np.ndarray and value.dtype is view.dtype
                and value.shape == view.shape):
            view[...] = value
            return
        if view is None:
            if not self._ready:
                raise ValueError("Cannot set tensor: Tensor is unallocated. Try calling allocate_tensors() first")
            view = self._view(int(tensor_index))
        value = np.asarray(value)
        if value.dtype != view.dtype:
            raise ValueError(f"Cannot set tensor: Got value of type {value.dtype} but expected type {view.dtype} "
                             f"for input {tensor_index}")
        if value.shape != view.shape:
            raise ValueError(f"Cannot set tensor: Dimension mismatch. Got {value.shape} but expected {view.shape} "
                             f"for input {tensor_index}.")
        view[...] = value

    def get_tensor(self, tensor_index) -> np.ndarray:
        if not self._ready:
            raise ValueError(f"Tensor data is null for tensor {tensor_index}: call allocate_tensors() first")
        t = int(tensor_index)
        if t in self._staged:
            return np.array(self._staged[t])
        return np.array(self._view(t))

    def invoke(self) -> None:
        status = self._run(*self._run_args)
        if status:
            raise RuntimeError(f"C runtime: edge_invoke returned {status_name(status)}")

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
        fields = (ctypes.c_int64 * 10)()
        self._lib.edge_host_plan_info(self._interp, fields)
        keys = ("n_tensors", "n_scratch", "tensor_total", "lower_bound", "head_total", "ordering", "steps",
                "arena_used", "high_water", "persistent")
        out = dict(zip(keys, (int(v) for v in fields)))
        out["ordering"] = _ORDERINGS[out["ordering"]]
        return out

    @property
    def arena_size(self) -> int | None:
        """Bytes of the C arena in use (alignment padding + planned tensors and scratch + persistent data)."""
        return self.plan_info()["arena_used"] if self._ready else None

    @property
    def memory_plan(self) -> str | None:
        """The arena plan the C runtime built (edge_sdk.runtime.interpreter.REALISED_PLANS, as
        Interpreter.memory_plan): "patch" (memory="min" with a stage, see patch_plan), "inplace" (some tensor took
        over its input's bytes: two planned tensors share bytes while both are live, which only an in-place group
        does) or "layer". None before allocate_tensors."""
        if not self._ready:
            return None
        if self._patch is not None:
            return "patch"
        if self._memory == "layer":
            return "layer"
        spans = sorted((b.offset, b.offset + b.size, b.first_use, b.last_use) for b in self.arena_plan().buffers
                       if b.size and b.key[1] != PATCH_CUT)
        for i, (a0, a1, f0, l0) in enumerate(spans):
            for b0, b1, f1, l1 in spans[i + 1:]:
                if b0 >= a1:
                    break
                if f1 <= l0 and f0 <= l1:  # the same bytes, both live at one step: an in-place group
                    return "inplace"
        return "layer"

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
            out.append(dict(subgraph=s.value, node=n.value, op=self._lib.edge_op_name(op.value).decode(),
                            ns=ticks.value))
            k += 1
        return out

    def _require_ready(self, what: str) -> None:
        if not self._ready:
            raise RuntimeError(f"allocate_tensors() must be called before {what}()")


class CSignatureRunner:
    """One SignatureDef on the C runtime: ``runner(name=array, ...) -> {output name: array}`` (copies), like
    edge_sdk.runtime.interpreter.SignatureRunner. The subgraph and the tensors are resolved by the C runtime
    (edge_signature_find / edge_signature_tensor) and run with edge_invoke_at; inputs are written before every
    call (the plan may reuse their bytes)."""

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
        views = {}
        for name, value in kwargs.items():
            if name not in self._inputs:
                raise ValueError(f"Invalid Input name ({name}) for SignatureDef")
            view = interp._view(self._inputs[name], self.subgraph)
            value = np.asarray(value)
            if value.dtype != view.dtype or value.shape != view.shape:
                raise ValueError(f"Cannot set tensor '{name}': got {value.dtype} {value.shape}, expected "
                                 f"{view.dtype} {view.shape}")
            views[name] = (view, value)
        for view, value in views.values():
            view[...] = value
        status = interp._lib.edge_invoke_at(interp._interp, self.subgraph)
        if status != 0:
            raise RuntimeError(f"C runtime: edge_invoke_at returned {status_name(status)}")
        return {n: np.array(interp._view(t, self.subgraph)) for n, t in sorted(self._outputs.items())}


# ------------------------------------------------------------------------------------------------ target plan
# `edge check` on a C target: the C runtime's own loader, prepare and planner, built as that target (its type
# switches, its pointer size and struct layout) and run once without invoking. A 32-bit microcontroller's
# layout (ILP32, AAPCS: 4-byte pointers, 8-byte aligned int64) comes from a 32-bit ARM Linux build run under
# qemu-arm (user mode): its persistent part (tensor/node/subgraph structs, kernel data, resource variables),
# its plan and its high-water mark equal the board's to the byte (measured on the QEMU board, tests/
# test_check_c.py). Without that cross toolchain the host build answers: the same verdict, but the persistent
# part at the host's (64-bit) struct sizes, so the RAM figure is an estimate (said so in the result).
ILP32_CC = "arm-linux-gnueabihf-gcc"
QEMU_USER = "qemu-arm"
ILP32 = "ilp32-arm"  # measured with the board's struct layout
HOST = "host"  # measured with the host's struct layout (an estimate of the board's RAM)
# A 64-bit Linux target (a C-runtime profile on x86-64 / aarch64 Linux) runs the library built with the SIMD fast
# paths (EDGE_WITH_SIMD), whose packed weights are persistent arena memory: its check runner is built the same way.
# On this machine's own CPU the host build answers (the library's own figures); an aarch64 target is measured by
# an aarch64 build under qemu-aarch64 emulating the profile's CPU (its features pick the fast paths, as on the
# board), as tests/test_c_cross.py runs the library.
LINUX_HOST = "linux-host"  # the host's build with the fast paths: a Linux target of this machine's architecture
LINUX_AARCH64 = "linux-aarch64"  # the aarch64 build with the fast paths, under qemu-aarch64
AARCH64_CC = "aarch64-linux-gnu-gcc"
QEMU_AARCH64 = "qemu-aarch64"
QEMU_AARCH64_CPUS = ("cortex-a35", "cortex-a53", "cortex-a57", "cortex-a72", "cortex-a76", "neoverse-n1", "a64fx")
_LINUX_LAYOUTS = (LINUX_HOST, LINUX_AARCH64)


def host_arch() -> str:
    """This machine's architecture in the profiles' spelling ("x86_64", "aarch64", ...)."""
    import platform

    m = platform.machine().lower()
    return {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(m, m)


def linux_layout(arch: str) -> str | None:
    """The layout that measures a 64-bit Linux target of ``arch`` as its library runs (fast paths in): LINUX_HOST
    on this machine's architecture, LINUX_AARCH64 for aarch64 with aarch64-linux-gnu-gcc and qemu-aarch64 here;
    None when neither can be built (the caller says its figure is an estimate)."""
    if arch == host_arch() and shutil.which(os.environ.get("CC", "gcc")):
        return LINUX_HOST
    if arch == "aarch64" and shutil.which(AARCH64_CC) and shutil.which(QEMU_AARCH64):
        return LINUX_AARCH64
    return None


class TargetPlan:
    """The C runtime's answer for one model on one target layout (``target_plan``)."""

    def __init__(self, layout: str, status: int, message: str, error: dict, figures: dict, runner: str):
        self.layout = layout  # ILP32 or HOST
        self.status = status  # 0 (loaded, prepared, planned) or an edge_status.def code
        self.status_name = status_name(status)
        self.message = message  # the C runtime's one-line message ("" when it loaded)
        self.error = error  # subgraph, node, tensor, op, version, offset, required, given, exact (-1: none)
        self.figures = figures  # arena_used, high_water, persistent, tensor_total, head_total, lower_bound
        self.runner = runner
        # every node its prepare refused, in order (one run: edge-run-c --all-refusals): dicts with status
        # (name), subgraph, node, op (code), version, message; [] when it loaded or the loader refused it
        self.refusals: list[dict] = []

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def exact(self) -> bool:
        """The RAM figures are the target's own (its struct layout, and on a Linux target its fast paths' packed
        weights), not the host's."""
        return self.layout in (ILP32, *_LINUX_LAYOUTS)

    def to_dict(self) -> dict:
        return {"layout": self.layout, "status": self.status_name, "message": self.message, "error": self.error,
                "refusals": self.refusals, **self.figures}


def target_layouts() -> list[str]:
    """The layouts ``target_plan`` can measure here, best first (ILP32 needs arm-linux-gnueabihf-gcc and
    qemu-arm; HOST needs a C compiler)."""
    out = []
    if shutil.which(ILP32_CC) and shutil.which(QEMU_USER):
        out.append(ILP32)
    if shutil.which(os.environ.get("CC", "gcc")):
        out.append(HOST)
    return out


_runners: dict[tuple[str, tuple[str, ...]], Path] = {}


def _source_key(tree: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    for path in sorted([*tree.glob("include/*"), *tree.glob("src/*.h"), *tree.glob("src/*.c"),
                        *tree.glob("src/kernels/*.c"), *tree.glob("host/*.[ch]"), *tree.glob("fuzz/*.h"),
                        tree / "tools" / "gen_ops.py"]):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def check_runner(layout: str, type_defs: tuple[str, ...] = ()) -> Path:
    """edge-run-c built for ``layout`` with these type switches (cached under the cache folder; every kernel in
    its op table: a firmware links the model's ops only, the same kernels, so the verdict and the sizes agree).
    Its op table is `gen_ops.py --check`'s: with --all-refusals every refused prepare is recorded and the next
    node prepared (host/edge_run.c)."""
    key = (layout, tuple(type_defs))
    if key in _runners and _runners[key].is_file():
        return _runners[key]
    tree = FIRMWARE
    cc = ILP32_CC if layout == ILP32 else AARCH64_CC if layout == LINUX_AARCH64 else os.environ.get("CC", "gcc")
    if shutil.which(cc) is None:
        raise BuildError(f"cannot build the C runtime's check runner: {cc} not found on PATH")
    import hashlib

    tag = hashlib.sha256(" ".join([layout, cc, *type_defs, _source_key(tree), str(tree)]).encode()).hexdigest()[:12]
    folder = resources.cache_dir() / "check" / f"{layout}-{tag}"
    exe = folder / "edge-run-c"
    if not exe.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with resources.build_lock(folder / "x"):
            if not exe.is_file():
                gen = folder / "edge_ops_generated.c"
                proc = subprocess.run([sys.executable, str(tree / "tools" / "gen_ops.py"), "--check", str(gen)],
                                      capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    raise BuildError(f"gen_ops.py failed: {(proc.stderr or proc.stdout)[-2000:]}")
                simd = layout in _LINUX_LAYOUTS  # the library as a Linux target runs it: fast paths in
                sources = [tree / "host" / "edge_run.c", tree / "src" / "edge.c",
                           *sorted((tree / "src" / "kernels").glob("*.c")), tree / "host" / "edge_host.c",
                           *(sorted((tree / "src" / "simd").glob("*.c")) if simd else []), gen]
                cmd = [cc, "-std=c99", "-O1", *(["-static"] if layout in (ILP32, LINUX_AARCH64) else []),
                       *(["-DEDGE_WITH_SIMD=1"] if simd else []), *type_defs,
                       f"-I{tree / 'include'}", f"-I{tree / 'src'}", f"-I{tree / 'host'}",
                       "-o", str(exe) + ".tmp", *map(str, sources), "-lm", *(["-pthread"] if simd else [])]
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    raise BuildError(f"building the check runner failed ({cc}):\n{proc.stderr[-3000:]}")
                os.replace(str(exe) + ".tmp", exe)
    _runners[key] = exe
    return exe


def _parse_refusals(out: str) -> list[dict]:
    """The "refused STATUS SUBGRAPH NODE OP VERSION MESSAGE" lines of edge-run-c --all-refusals."""
    found = []
    for line in out.splitlines():
        parts = line.split(" ", 6)
        if parts[0] == "refused" and len(parts) == 7 and all(p.lstrip("-").isdigit() for p in parts[1:6]):
            status, sg, node, op, version = map(int, parts[1:6])
            found.append({"status": status_name(status), "subgraph": sg, "node": node, "op": op,
                          "version": version, "message": parts[6]})
    return found


def _parse_run(out: str) -> tuple[dict, dict]:
    figures, error = {}, {}
    for line in out.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "plan":
            figures.update({parts[k]: int(parts[k + 1]) for k in range(1, len(parts) - 1, 2)})
        elif parts[:2] == ["arena", "used"]:
            figures.update(arena_used=int(parts[2]), high_water=int(parts[4]), persistent=int(parts[6]))
        elif parts[0] == "error":
            error = {parts[k]: int(parts[k + 1]) for k in range(1, len(parts) - 1, 2)}
    figures.pop("ordering", None)
    return figures, error


def target_plan(data: bytes, layout: str | None = None, type_defs: tuple[str, ...] = (),
                timeout: float = 300.0, memory: str = "layer", patch=None, cpu: str | None = None) -> TargetPlan:
    """Load, prepare and plan ``data`` (a .tflite's bytes) with the C runtime built for ``layout`` (default: the
    best of ``target_layouts()``; LINUX_HOST / LINUX_AARCH64 for a 64-bit Linux target, ``linux_layout``) and
    the type switches ``type_defs`` (gen_ops.type_defines); never invokes. ``cpu``: LINUX_AARCH64's emulated CPU
    (a QEMU_AARCH64_CPUS name; else qemu's "max").
    ``memory``: the plan (edge_sdk.runtime.interpreter.MEMORY_PLANS), "layer", "inplace" (EDGE_INIT_MEMORY_MIN) or
    "min" (edge_init_patch with ``patch``, an edge_sdk.runtime.patching.PatchPlan; None: no stage, as "inplace").
    BuildError when no layout can be built here."""
    import tempfile

    layouts = target_layouts()
    if layout is None:
        if not layouts:
            raise BuildError("no C compiler found: cannot run the C runtime's prepare and planner")
        layout = layouts[0]
    exe = check_runner(layout, tuple(type_defs))
    prefix = [shutil.which(QEMU_USER) or QEMU_USER] if layout == ILP32 else []
    if layout == LINUX_AARCH64:
        prefix = [shutil.which(QEMU_AARCH64) or QEMU_AARCH64, "-cpu", cpu if cpu in QEMU_AARCH64_CPUS else "max"]
    if memory not in MEMORY_PLANS:
        raise ValueError(f"memory must be one of {', '.join(map(repr, MEMORY_PLANS))}, not {memory!r}")
    memory_flag = ["--memory-min"] if memory in ("inplace", "min") else []
    if memory == "min" and patch is not None:  # edge_init_patch's stage and grid (a patching.PatchPlan)
        memory_flag += ["--patch", f"{patch.nodes[0]},{patch.nodes[-1]},{patch.grid[0]},{patch.grid[1]}"]
    with tempfile.TemporaryDirectory(prefix="edge-check-") as tmp:
        model = Path(tmp) / "model.tflite"
        model.write_bytes(data)
        arena = 64 << 20
        all_refusals = ["--all-refusals"]
        for _ in range(7):
            try:
                proc = subprocess.run([*prefix, str(exe), str(model), "--plan", *all_refusals, *memory_flag,
                                       "--arena", str(arena)],
                                      capture_output=True, text=True, timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                raise ModelError(f"the C runtime's prepare did not finish within {timeout:g} s") from None
            if proc.returncode not in (0, 3) and all_refusals:
                # a prepare after a refused node tripped over that node's unprepared state: the C runtime as
                # it runs on the board (stop at the first refusal) still answers
                all_refusals = []
                continue
            if proc.returncode not in (0, 3):
                raise ModelError(f"the C runtime's check runner failed (exit {proc.returncode}): "
                                 f"{proc.stderr.strip()[-500:]}")
            figures, error = _parse_run(proc.stdout)
            status = error.get("status", 0) if proc.returncode == 3 else 0
            if status == STATUS["EDGE_ARENA_TOO_SMALL"] and arena < (1 << 31) - 1:
                arena = min(max(error["required"] if error.get("exact") else 0, 4 * arena), (1 << 31) - 1)
                continue
            break
        message = ""
        if status:
            message = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
            message = message.split(": ", 2)[-1] if message.startswith("edge-run-c: status") else message
            if status in (STATUS["EDGE_UNSUPPORTED_OP"], STATUS["EDGE_UNSUPPORTED_TYPE"], STATUS["EDGE_UNSUPPORTED"],
                          STATUS["EDGE_BAD_NODE"]):
                # the loader and planner alone (declared shapes, no kernels): the RAM it can still tell
                plan_only = subprocess.run([*prefix, str(exe), str(model), "--plan-only", *memory_flag[:1], "--arena",
                                            str(arena)],
                                           capture_output=True, text=True, timeout=timeout, check=False)
                if plan_only.returncode == 0:
                    figures = {f"plan_only_{k}": v for k, v in _parse_run(plan_only.stdout)[0].items()}
    plan = TargetPlan(layout, status, message, error, figures, str(exe))
    plan.refusals = _parse_refusals(proc.stdout) if status else []
    return plan


# ------------------------------------------------------------------------------------------------ stack
# The stack the runtime needs on a target: every runtime source compiled with the target's compiler and flags
# and GCC's -fcallgraph-info=su (per-function frame sizes and the call graph), then the deepest call chain
# from the entry points. Kernels are reached through the op table (indirect calls): those edges go to the
# model's kernels' prepare/eval/reset functions. A chain that comes back to a function already on it (a
# kernel running a subgraph: CALL_ONCE) is counted once; C library frames (memcpy, expf) are not known.
STACK_ENTRIES = ("edge_init_ex", "edge_invoke_at", "edge_reset_state")
_stack_graphs: dict[tuple, tuple[dict, dict]] = {}


def _parse_ci(text: str, frames: dict, edges: dict, dynamic: set, files: dict) -> None:
    import re

    for m in re.finditer(r'node: \{ title: "([^"]+)" label: "([^"]*)"', text):
        title, label = m.groups()
        sm = re.search(r"\\n(\d+) bytes \(([^)]*)\)", label)
        if sm:
            frames[title] = int(sm.group(1))
            files[title] = label.split("\\n")[1].split(":")[0] if "\\n" in label else ""
            if "dynamic" in sm.group(2) and "bounded" not in sm.group(2):
                dynamic.add(title)
    for m in re.finditer(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"', text):
        edges.setdefault(m.group(1), set()).add(m.group(2))


def stack_graph(compiler: str, cflags: tuple[str, ...], type_defs: tuple[str, ...] = ()) -> tuple:
    """(frame bytes per function, callees per function, functions with unbounded dynamic frames, source file
    per function) of the whole
    runtime compiled by ``compiler`` with ``cflags`` (cached). BuildError when it does not compile."""
    import hashlib

    key = (compiler, tuple(cflags), tuple(type_defs))
    if key in _stack_graphs:
        return _stack_graphs[key]
    if shutil.which(compiler) is None:
        raise BuildError(f"{compiler} not found on PATH: the runtime's stack cannot be measured")
    tree = FIRMWARE
    tag = hashlib.sha256(" ".join([*key[:1], *key[1], *key[2], _source_key(tree)]).encode()).hexdigest()[:12]
    folder = resources.cache_dir() / "check" / f"stack-{tag}"
    done = folder / "done"
    if not done.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with resources.build_lock(folder / "x"):
            if not done.is_file():
                sources = [tree / "src" / "edge.c", *sorted((tree / "src" / "kernels").glob("*.c"))]
                cmd = [compiler, "-std=c99", *cflags, *type_defs, f"-I{tree / 'include'}", f"-I{tree / 'src'}",
                       "-fcallgraph-info=su", "-c", *map(str, sources)]
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=folder)
                if proc.returncode != 0:
                    raise BuildError(f"compiling the runtime for its stack usage failed:\n{proc.stderr[-2000:]}")
                done.write_text("ok\n")
    frames: dict[str, int] = {}
    edges: dict[str, set] = {}
    dynamic: set = set()
    files: dict[str, str] = {}
    for ci in sorted(folder.glob("*.ci")):
        _parse_ci(ci.read_text(errors="replace"), frames, edges, dynamic, files)
    _stack_graphs[key] = (frames, edges, dynamic, files)
    _stack_folders[key] = folder
    return _stack_graphs[key]


_stack_folders: dict[tuple, Path] = {}


def runtime_objects(compiler: str, cflags: tuple[str, ...], type_defs: tuple[str, ...] = ()) -> Path:
    """The folder of edge.o and every kernel's .o compiled by ``compiler`` with ``cflags`` (``stack_graph``'s
    build, cached); BuildError when they do not compile."""
    stack_graph(compiler, tuple(cflags), tuple(type_defs))
    return _stack_folders[(compiler, tuple(cflags), tuple(type_defs))]


def runtime_code_bytes(compiler: str, cflags: tuple[str, ...], kernel_files: list[str],
                       type_defs: tuple[str, ...] = ()) -> dict:
    """Flash the runtime's code and read-only data take for an op set: the text+data of edge.o and of the
    kernel files' objects as the target compiler builds them (the objects ``stack_graph`` compiled). An upper
    bound of the linked figure: the linker drops the functions nothing calls (`edge check --link` links)."""
    stack_graph(compiler, tuple(cflags), tuple(type_defs))
    folder = _stack_folders[(compiler, tuple(cflags), tuple(type_defs))]
    size_tool = compiler[: -len("gcc")] + "size" if compiler.endswith("gcc") else "size"
    if shutil.which(size_tool) is None:
        raise BuildError(f"{size_tool} not found on PATH")
    objects = [folder / "edge.o", *(folder / (Path(f).stem + ".o") for f in kernel_files)]
    proc = subprocess.run([size_tool, *map(str, objects)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"{size_tool} failed: {proc.stderr.strip()[-500:]}")
    per_file = {}
    for line in proc.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 6 and parts[0].isdigit():
            per_file[Path(parts[-1]).stem] = int(parts[0]) + int(parts[1])
    return {"bytes": sum(per_file.values()), "per_file": per_file}


def runtime_stack(compiler: str, cflags: tuple[str, ...], kernel_names: list[str],
                  type_defs: tuple[str, ...] = ()) -> dict:
    """The deepest call chain's stack bytes from the runtime's entry points (``STACK_ENTRIES``) with the op
    table holding ``kernel_names`` (gen_ops names: edge_prepare_<name> / edge_eval_<name> / edge_reset_<name>).
    Returns {"bytes", "entry", "chain" (function names), "unknown" (callees without a frame size: the C
    library), "dynamic" (functions on the chain with unbounded frames), "recursion" (bool)}."""
    frames, edges, dynamic, files = stack_graph(compiler, tuple(cflags), tuple(type_defs))
    kernels = [f"edge_{kind}_{n}" for n in kernel_names for kind in ("prepare", "eval", "reset")]
    kernels = [f for f in kernels if f in frames]
    entry_points = {f for f in frames if f.startswith(("edge_prepare_", "edge_eval_", "edge_reset_"))}
    called = {c for cs in edges.values() for c in cs}

    def indirect_targets(fn: str) -> list[str]:
        """The runtime's own dispatch (edge.c) calls kernels through the op table; an indirect call inside a
        kernel file calls one of that file's functions whose address is taken (never called directly)."""
        where = files.get(fn, "")
        if where.endswith("edge.c"):  # init prepares (and resets), edge_reset_state resets, the rest evaluates
            name = fn.split(":")[-1]
            kinds = ("prepare", "reset") if "init" in name else ("reset",) if "reset" in name else ("eval",)
            return [f for f in kernels if f.startswith(tuple(f"edge_{k}_" for k in kinds))]
        return [f for f, w in files.items() if w == where and f not in called and f not in entry_points and f != fn]
    unknown: set = set()
    recursion = False
    memo: dict[str, tuple[int, list[str]]] = {}

    def deepest(fn: str, path: tuple[str, ...]) -> tuple[int, list[str]]:
        nonlocal recursion
        if fn in memo:
            return memo[fn]
        callees = []
        for c in edges.get(fn, ()):
            callees.extend(indirect_targets(fn) if c == "__indirect_call" else [c])
        best, chain = 0, []
        for c in callees:
            if c in path:
                recursion = True
                continue
            if c not in frames:
                unknown.add(c.split(":")[-1])
                continue
            d, ch = deepest(c, (*path, c))
            if d > best:
                best, chain = d, ch
        out = (frames.get(fn, 0) + best, [fn.split(":")[-1], *chain])
        if not any(c in path for c in callees):  # memoize only results that do not depend on the path
            memo[fn] = out
        return out

    best = (0, [], "")
    for entry in STACK_ENTRIES:
        if entry in frames:
            d, chain = deepest(entry, (entry,))
            if d > best[0]:
                best = (d, chain, entry)
    on_chain_dynamic = sorted(f for f in dynamic if f.split(":")[-1] in best[1])
    return {"bytes": best[0], "entry": best[2], "chain": best[1], "unknown": sorted(unknown),
            "dynamic": on_chain_dynamic, "recursion": recursion}
