"""`edge check`: will this model run on that device? Answered by the runtime the device's profile names.

    result = check_model("person_detect.tflite", "stm32f746-disco")
    result.verdict            # "runs" | "partial" | "fails"
    result.checked_by         # "interpreter" | "c-runtime" | "c-table" (no C compiler here: an estimate)
    result.problems           # every reason, as dicts (node, op, version, dtype, backend, constraint, value, limit)
    result.arena_bytes        # the RAM the arena needs (C targets: what the board's runtime will use)
    result.partitions         # [Partition(backend, nodes, inputs, outputs)] for subgraph 0
    result.to_dict()          # the JSON `edge check --json` prints (every node of every problem)
    format_check(result)      # the report a person reads: budgets first, one line per (op, reason), the fix

How it decides:

1. Every node is prepared by the interpreter's own prepare (``Interpreter.prepare_report``: the checks and
   kernels of ``allocate_tensors``; a node that fails is recorded and the others still prepared). That gives
   the real shapes the profile's constraints are checked against (kernel size, stride, dilation, rank, dtype,
   per-channel quantization, tensor bytes: ``edge_sdk.targets.profiles``) and, on a Python target
   (``runtime = "python"``), the verdict: the interpreter's own errors (use before def, double writers,
   missing kernels, ...) are the node's problems.
2. On a C target (``runtime = "c"``: the microcontrollers) the C runtime judges: its own loader, prepare and
   planner run once (``edge_sdk.targets.c_check.target_plan``), built with the model's type switches as
   `edge flash` builds it and with the board's 32-bit struct layout (arm-linux-gnueabihf-gcc + qemu-arm), or
   the host's layout when only a host compiler is there. A C-runtime profile for 64-bit Linux (x86-64 /
   aarch64) is measured with the library as it runs there, SIMD fast paths and their packed weights in
   (``c_check.linux_layout``: the host build on the host's architecture, the aarch64 build under
   qemu-aarch64 emulating the profile's CPU; else the host's portable build, an estimate). Every node without a C kernel (the op table's C
   side, generated from the kernels' registrations) and every node a C prepare refused (one run: the runner
   records each refusal and prepares the next node, ``TargetPlan.refusals``) are problems. Without any C
   compiler the op table answers alone and the report says so (``checked_by = "c-table"``): a node is refused
   when its C kernel is missing, too old, or does not register the node's dtype (data/weights pair for the
   convolutions: ``op_table.c_dtype_refusal``), naming op, dtype and node.
3. Each node of subgraph 0 goes to the profile's preferred backend when that backend takes it
   (``profile.supports``); otherwise it falls back to the CPU (a "fallback" problem naming the constraint).
   A delegate with ``max_partitions`` takes at most that many runs of nodes. Nodes of other subgraphs run on
   the CPU. Nodes that carry no data type (VAR_HANDLE, CALL_ONCE) are taken when the backend lists the op.
4. RAM: on a C target ``arena_bytes`` is the C runtime's high-water mark = tensor plan + scratch + persistent
   part (tensor/node/subgraph structs, kernel data, resource variables): with the board's layout that is the
   board's own high-water mark to the byte (tests/test_check_c.py); ``ram`` breaks it down and ``ram_source``
   says measured or estimate. On a Python target it is the interpreter's arena plan. It must fit
   ``ram_arena_bytes``; the model's bytes must fit ``flash_model_bytes``. C targets also get the runtime's
   stack (the target compiler's -fcallgraph-info), the runtime's code for the model's op set (the target
   compiler's objects, or without that compiler firmware_c/size_table.json: ``size_table.lookup``) and, with
   ``apply_link`` (`edge check --link`), a real firmware link's flash and RAM; ``flash_source`` says which.
   ``memory`` (edge_sdk.runtime.planner.MEMORY_PLANS): "layer" (layer by layer), "inplace" (in-place RESHAPE,
   PAD and int8 depthwise, EDGE_INIT_MEMORY_MIN; no extra MACs), "min" (the least-RAM plan: in place plus
   patch-based execution of a stage when one needs less; the stage, grid and extra MACs in ``patch`` and
   ``extra_macs``) or None (auto: "layer", else "inplace" when that is smaller, else "min" while the plan still
   exceeds the budget; a note says why). ``memory_plan`` says which plan the figure is ("layer", "inplace" or
   "patch"), and the totals computed are in ``plans``.

Verdict: ``fails`` when there is any error (an op the runtime refuses, the arena or the model too big, a
malformed model); ``partial`` when it runs but N nodes fall back to the CPU (in K CPU partitions); else
``runs``. ``partitions`` are the maximal runs of consecutive nodes on one backend, with the tensors that
cross into (``inputs``) and out of (``outputs``) each run; ``partition_nodes`` computes them for any
assignment, so the interpreter's delegate support can reuse it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from edge_sdk.runtime.delegates.base import plan_partitions
from edge_sdk.errors import BuildError, ModelError, UnsupportedOpError
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.model import Model, read_model, write_model
from edge_sdk.targets.profiles import CPU, Profile, Violation, load_profile, node_dtype

RUNS, PARTIAL, FAILS = "runs", "partial", "fails"


@dataclass(frozen=True)
class Partition:
    """A maximal run of consecutive nodes on one backend and the tensors crossing its boundary."""

    backend: str
    nodes: tuple[int, ...]
    inputs: tuple[int, ...]  # non-constant tensors it reads that something outside it produced (or model inputs)
    outputs: tuple[int, ...]  # tensors it produces that later partitions or the model's outputs read

    def to_dict(self, names: list[str] | None = None) -> dict:
        d = {"backend": self.backend, "nodes": list(self.nodes), "inputs": list(self.inputs),
             "outputs": list(self.outputs)}
        if names is not None:
            d["input_names"] = [names[t] for t in self.inputs]
            d["output_names"] = [names[t] for t in self.outputs]
        return d


@dataclass
class CheckResult:
    verdict: str
    target: str
    backend: str  # the profile's preferred backend
    problems: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    arena_bytes: int | None = None  # the RAM the arena buffer needs (compared with ram_budget): arena_size + packed
    # the model's arena as Interpreter.arena_size / CInterpreter.arena_size mean it (issue 23 point 5):
    # activations + scratch + persistent state, not the packed weight copies of the SIMD fast paths, which are
    # packed_weights_bytes (measured on a 64-bit Linux C target; 0 elsewhere: no fast paths on a board)
    arena_size: int | None = None
    packed_weights_bytes: int = 0
    ram_budget: int = 0
    model_bytes: int = 0
    flash_budget: int = 0
    partitions: list[Partition] = field(default_factory=list)
    tensor_names: list[str] = field(default_factory=list)
    model_name: str = ""
    runtime: str = "python"  # the runtime the profile names: "python" (the interpreter) or "c" (firmware_c)
    checked_by: str = "interpreter"  # "interpreter", "c-runtime" (its own prepare/planner) or "c-table" (estimate)
    ram_source: str = ""  # how arena_bytes was found (measured / estimate), in words
    ram: dict = field(default_factory=dict)  # C targets: plan, scratch, persistent bytes, layout
    fixes: list[str] = field(default_factory=list)

    link: dict = field(default_factory=dict)  # a real firmware link's sizes (apply_link), when one was made
    stack: dict = field(default_factory=dict)  # C targets: the runtime's deepest call chain (bytes, chain, ...)
    runtime_code: dict = field(default_factory=dict)  # C targets: flash of the runtime's code for this op set
    memory_plan: str = "layer"  # which plan arena_bytes is (REALISED_PLANS): "layer", "inplace" or "patch"
    plans: dict = field(default_factory=dict)  # realised plan name -> its arena bytes (the ones computed)
    extra_macs: int = 0  # MACs the chosen plan adds over the layer plan (in-place execution adds none)
    patch: str = ""  # memory_plan "patch": the stage (edge_sdk.runtime.patching.PatchPlan.describe)
    # memory_plan "patch" on a C target: the stage's grids, RAM against estimated instructions (planner.tradeoff_lines)
    patch_grids: list = field(default_factory=list)
    memory_request: str | None = None  # the plan asked for (MEMORY_PLANS: --memory layer, inplace, min; None: auto)
    # the input shapes it was judged at: [{"name", "shape", "signature", "source"}], source "--input-shape" (given),
    # "stored" (a dynamic signature judged at the stored shape: a leading batch -1) or "static"
    input_shapes: list[dict] = field(default_factory=list)
    # the interpreter's tensors sized at eval (interpreter.eval_sized_rows: WHERE, UNIQUE, a growing WHILE's, their
    # readers'): outside the arena and its figure, each with its bound or None (unknown); [] on a C target
    eval_sized: list[dict] = field(default_factory=list)

    def apply_link(self, usage: dict) -> None:
        """Add a real link's result (``edge_sdk.tools.flash.firmware_size``): the firmware's flash (model +
        runtime code and read-only data for this op set) and the linker's own refusal as a problem."""
        self.link = dict(usage)
        if not usage.get("linked"):
            self.problems.append({"kind": "link", "severity": "error", "value": None, "limit": None,
                                  "message": f"the firmware does not link: {usage.get('error')}"})
            self.verdict = FAILS


    @property
    def flash_source(self) -> str:
        """How the firmware's flash is known: "linked" (a real link), "compiled objects" (the target compiler's
        objects for this op set, an upper bound), "estimate from the size table" (no compiler here), or
        "model only" (the runtime's share unknown, or not a C target)."""
        if self.link.get("linked"):
            return "linked"
        if self.runtime_code.get("bytes"):
            return ("estimate from the size table" if self.runtime_code.get("source") == "size table"
                    else "compiled objects")
        return "model only"

    @property
    def fallback_nodes(self) -> list[int]:
        return [i for p in self.partitions if p.backend != self.backend for i in p.nodes]

    @property
    def errors(self) -> list[dict]:
        return [p for p in self.problems if p["severity"] == "error"]

    def arena_where(self) -> str:
        """Which runtime, target and plan the arena figure is, and how it was found (planner.arena_words' WHERE)."""
        from edge_sdk.runtime.planner import PLAN_WORDS

        runtime = "the C runtime" if self.runtime == "c" else "the Python interpreter"
        how = next((w for w in ("measured", "estimate") if self.ram_source.startswith(w)), "planned")
        return f"{runtime} on {self.target}, {PLAN_WORDS.get(self.memory_plan, self.memory_plan)} plan, {how}"

    def arena_line(self) -> str:
        """The arena in the words every command prints (planner.arena_words): `arena N B (...)`."""
        from edge_sdk.runtime.planner import arena_words

        return arena_words(self.arena_size, self.arena_where())

    def to_dict(self) -> dict:
        from edge_sdk.runtime.interpreter import eval_sized_bound

        return {
            "model": self.model_name,
            "target": self.target,
            "verdict": self.verdict,
            "preferred_backend": self.backend,
            "problems": self.problems,
            "notes": self.notes,
            "runtime": self.runtime,
            "checked_by": self.checked_by,
            "arena_bytes": self.arena_bytes,
            "arena_size": self.arena_size,
            "arena_where": self.arena_where(),  # planner.arena_words' WHERE, for the commands that print the figure
            "packed_weights_bytes": self.packed_weights_bytes,
            "arena_estimate": self.ram_source.startswith("estimate"),
            "ram_source": self.ram_source,
            "ram": self.ram,
            "fixes": self.fixes,
            "link": self.link,
            "stack": self.stack,
            "runtime_code": self.runtime_code,
            "flash_source": self.flash_source,
            "memory_plan": self.memory_plan,
            "memory_request": self.memory_request,
            "plans": self.plans,
            "extra_macs": self.extra_macs,
            "patch": self.patch or None,
            "patch_grids": self.patch_grids,
            "ram_budget": self.ram_budget,
            "model_bytes": self.model_bytes,
            "flash_budget": self.flash_budget,
            "fallback_nodes": len(self.fallback_nodes),
            "partitions": [p.to_dict(self.tensor_names) for p in self.partitions],
            "input_shapes": self.input_shapes,
            "eval_sized": self.eval_sized,
            "eval_sized_max_bytes": eval_sized_bound(self.eval_sized) if self.eval_sized else 0,
        }


# ----------------------------------------------------------------------------------------------- model
def _input_shapes_line(r: CheckResult) -> str | None:
    """The line saying the input shapes judged, when one was given or an input's signature is dynamic."""
    if not any(i["source"] != "static" for i in r.input_shapes):
        return None

    def said(i: dict) -> str:
        dims = "x".join(map(str, i["shape"]))
        sig = "[" + ",".join(map(str, i["signature"])) + "]"
        if i["source"] == "--input-shape":
            return f"{i['name']} {dims} (--input-shape; signature {sig})"
        if i["source"] == "stored":
            return f"{i['name']} {dims} (the stored shape: signature {sig} is dynamic; --input-shape sets another)"
        return f"{i['name']} {dims}"
    return "  inputs judged at " + ", ".join(said(i) for i in r.input_shapes)


def _load(model_or_path) -> tuple[Model, int, str, bytes]:
    """(model, its serialized size, a display name, its bytes)."""
    if isinstance(model_or_path, Model):
        data = write_model(model_or_path)
        name = "<model>"
    elif isinstance(model_or_path, (bytes, bytearray, memoryview)):
        data = bytes(model_or_path)
        name = "<bytes>"
    else:
        path = Path(model_or_path)
        data = path.read_bytes()
        name = str(path)
    # Read back from bytes: every options table is complete (schema defaults), as a file on disk would be.
    return read_model(data), len(data), name, data


_CACHE: dict[tuple, object] = {}  # the last few models' prepare results and C plans (checks against many profiles)
_CACHE_SIZE = 8


def _cached(key: tuple, make):
    if key not in _CACHE:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = make()
    return _CACHE[key]


def prepare_nodes(model: Model):
    """Every node prepared by the interpreter's own prepare (``Interpreter.prepare_report``: the same checks
    and kernels as ``allocate_tensors``, a failing node recorded instead of stopping the others).

    Returns ``(nodes, failures, infos)``: see ``Interpreter.prepare_report``.
    """
    from edge_sdk.runtime.interpreter import Interpreter

    return Interpreter(model=model).prepare_report()


def _macs_of(nodes) -> list[int]:
    """MACs of subgraph 0's prepared nodes (the op table's MACs functions; 0 where there is none)."""
    from edge_sdk.runtime import op_table

    out = []
    for node in nodes[0] if nodes else []:
        try:
            row = op_table.lookup(node.op, node.version)
            fn = row.macs_function() if row.macs else None
            out.append(int(fn(node)) if fn else 0)
        except Exception:  # noqa: BLE001 - a node its kernel refused: no MACs figure
            out.append(0)
    return out


# ----------------------------------------------------------------------------------------------- partitions
def assign_backends(nodes: list[Node], profile: Profile,
                    backend: str | None = None) -> tuple[list[str], dict[int, list[Violation]]]:
    """Which backend runs each node of one subgraph: ``backend`` (default: the profile's preferred one) when it
    takes the node, else the CPU. Returns (backend name per node, violations per node that fell back).

    A delegate's ``max_partitions`` caps its runs: once used up, later nodes stay on the CPU.
    """
    backend = backend or profile.preferred_backend
    chosen: list[str] = []
    why: dict[int, list[Violation]] = {}
    if backend == CPU:
        return [CPU] * len(nodes), why
    b = profile.backend(backend)
    runs = 0
    for k, node in enumerate(nodes):
        found = b.violations(node)
        if not found and b.max_partitions is not None and runs >= b.max_partitions and chosen[-1] != backend:
            found = [Violation("max_partitions", runs, b.max_partitions,
                               f"{backend} takes at most {b.max_partitions} partition(s); "
                               "every node after its first fallback runs on the CPU")]
        if found:
            chosen.append(CPU)
            why[k] = found
        else:
            if not chosen or chosen[-1] != backend:
                runs += 1
            chosen.append(backend)
    return chosen, why


def partition_nodes(model: Model, assignment: list[str], subgraph: int = 0) -> list[Partition]:
    """Maximal runs of consecutive nodes with the same backend, with the tensors crossing each run's boundary.

    A tensor crosses in when a node of the run reads it and it is not a constant and not produced inside the
    run; it crosses out when the run produces it and a node outside the run (or the subgraph's outputs)
    reads it. The interpreter's partitioner (``edge_sdk.runtime.delegates.plan_partitions``) does the grouping.
    """
    sg = model.subgraphs[subgraph]
    const = {t for t, tensor in enumerate(sg.tensors) if not tensor.is_variable
             and 0 <= tensor.buffer < len(model.buffers) and model.buffers[tensor.buffer].data}
    planned = plan_partitions([(op.inputs, op.outputs) for op in sg.operators], assignment, sg.inputs, sg.outputs,
                              const, subgraph)
    return [Partition(p.backend, p.nodes, p.inputs, p.outputs) for p in planned]


# ----------------------------------------------------------------------------------------------- check
def _op_problem(node: Node, backend: str, severity: str, constraint: str, value, limit, message: str) -> dict:
    return {
        "kind": "op",
        "severity": severity,
        "subgraph": node.subgraph,
        "node": node.index,
        "op": node.op,
        "version": node.version,
        "dtype": node_dtype(node),
        "backend": backend,
        "constraint": constraint,
        "value": value,
        "limit": limit,
        "message": f"{node.where()} {node_dtype(node)} on {backend}: {message}",
    }


# Cortex-M cores with the DSP extension (__ARM_FEATURE_DSP): their kernels take the DSP paths, whose scratch differs
# (an int8 depthwise convolution keeps its sums in registers); the 32-bit runner emulates them (EDGE_EMULATE_DSP)
DSP_CPUS = ("cortex-m4", "cortex-m7", "cortex-m33", "cortex-m35p", "cortex-m55", "cortex-m85")


def _type_defines(model: Model, profile: Profile | None = None) -> tuple[str, ...]:
    """The C build's type switches for this model (as `edge flash` builds it: gen_ops.type_defines), and for a
    Cortex-M core with the DSP extension EDGE_EMULATE_DSP: the runner then plans the scratch the board's DSP
    kernel paths ask for (edge export measures the same; tests/test_export.py compares both with the board)."""
    from edge_sdk.runtime.op_table import c_type_switches

    used = {t.type for sg in model.subgraphs for t in sg.tensors}
    dsp = ("-DEDGE_EMULATE_DSP",) if profile is not None and profile.cpu in DSP_CPUS else ()
    return tuple(f"-D{macro}=0" for name, macro in c_type_switches().items() if name not in used) + dsp


def _c_node(model: Model, error: dict):
    """(subgraph, node) the C runtime's error record names, or None."""
    s, i = error.get("subgraph", -1), error.get("node", -1)
    if 0 <= s < len(model.subgraphs) and 0 <= i < len(model.subgraphs[s].operators):
        return s, i
    return None


def _runtime_stack(model: Model, profile: Profile) -> dict:
    """The C runtime's stack on this target for this model's kernels (c_footprint.runtime_stack: the target's
    compiler with -fcallgraph-info=su), or {"error": why not}."""
    import shutil

    from edge_sdk.runtime import op_table
    from edge_sdk.targets import c_footprint, size_table

    compiler = profile.toolchain.get("compiler", "")
    flags = size_table.code_flags(profile)
    used = {(c.name if not c.is_custom else c.custom_code) for c in model.operator_codes}
    if not compiler or shutil.which(compiler) is None:
        out = {"error": f"{compiler or 'the target compiler'} is not installed: the stack is not measured"}
        files = _with_shared(sorted({f for op, (_, f) in op_table.C_KERNELS.items() if op in used}), model)
        code = size_table.lookup(profile, files)
        out["runtime_code"] = code if code is not None else {
            "error": f"the size table (firmware_c/{size_table.TABLE_NAME}) has no entry for {profile.name}'s "
                     f"toolchain ({compiler or '?'} {' '.join(flags)}): the runtime's flash is not known"}
        return out
    try:
        rows = op_table.gen_ops_module().scan()
        names = sorted({r["name"] for r in rows if (r["custom"] or r["op"]) in used})
        out = dict(_cached(("stack", compiler, flags, tuple(names)),
                           lambda: c_footprint.runtime_stack(compiler, flags, names)))
        files = _with_shared(sorted({r["file"] for r in rows if (r["custom"] or r["op"]) in used}), model)
        try:
            out["runtime_code"] = {**c_footprint.runtime_code_bytes(compiler, flags, files),
                                   "source": "compiled objects"}
        except BuildError as exc:
            out["runtime_code"] = {"error": str(exc).splitlines()[0]}
        return out
    except (BuildError, OSError) as exc:
        return {"error": f"the stack is not measured: {str(exc).splitlines()[0]}"}


def _with_shared(files: list[str], model: Model) -> list[str]:
    """Kernel files with the shared ones they call into (c_build.shared_kernel_files: hybrid.c, LiteRT's hybrid
    kernels: float inputs only, so the firmware of a model without FLOAT32 tensors - built with that type compiled
    out, ``_type_defines`` - calls none of it and links none)."""
    from edge_sdk.runtime.c_build import shared_kernel_files

    if "-DEDGE_WITH_FLOAT32=0" in _type_defines(model):
        return list(files)
    return sorted({*files, *shared_kernel_files(files)})


def _hybrid_nodes(nodes) -> list:
    """The nodes that are LiteRT's hybrid kernels: a weighted op (its row's ``weights``) with a FLOAT32 input 0 and
    INT8 / UINT8 weights."""
    from edge_sdk.runtime import op_table

    out = []
    for sg_nodes in nodes:
        for node in sg_nodes:
            w = op_table.row(node.op).weights
            ins = getattr(node, "inputs", None) or []
            if w is None or len(ins) <= w[0] or ins[0] is None or ins[w[0]] is None:
                continue
            if ins[0].type == "FLOAT32" and ins[w[0]].type in ("INT8", "UINT8"):
                out.append(node)
    return out


def target_arena(model_or_path, profile, memory: str | None = None, *, input_shapes=None) -> CheckResult:
    """The runtime's arena on a target: the one figure flash, profile, export and convert --target print beside
    `edge check` (result.arena_size, in result.arena_line()'s words; planner.runtime_arena's meaning:
    activations + scratch + persistent state, packed weight copies apart in packed_weights_bytes). check_model
    without the stack measure; its C plans are cached per process, so a command that checked first pays once."""
    return check_model(model_or_path, profile, memory, stack=False, input_shapes=input_shapes)


def check_model(model_or_path, profile, memory: str | None = None, *, c_runtime: bool = True,
                stack: bool = True, input_shapes=None) -> CheckResult:
    """Check a model (path, bytes or ``Model``) against a profile (name, path or ``Profile``): see module doc.

    ``c_runtime=False`` skips running the C runtime's prepare for a C target (the op table and an estimate
    answer, as on a machine without a C compiler); ``stack=False`` skips measuring the C runtime's stack;
    ``memory``: the arena plan asked for (edge_sdk.runtime.planner.MEMORY_PLANS: "layer", "inplace", "min"; or
    None: auto). ``input_shapes`` (`--input-shape`): the inputs' shapes to judge it at
    (edge_sdk.model.input_shapes.shaped_model); a file or bytes with a -1 beyond the batch axis and no shape is a
    UsageError naming the input. A ``Model`` object is judged at its stored shapes unless shapes are given (the
    converter checks the graph it just built, at the shapes it was given)."""
    from edge_sdk.model.input_shapes import judged_shapes, shaped_model
    from edge_sdk.runtime import planner
    from edge_sdk.runtime.c_loaded import c_model
    from edge_sdk.runtime.uint8 import c_io_note

    planner.check_memory(memory, auto=True)
    profile = load_profile(profile)
    model, model_bytes, name, data = _load(model_or_path)
    judged = judged_shapes(model, input_shapes)
    if input_shapes is not None or not isinstance(model_or_path, Model):
        shaped = shaped_model(data, input_shapes, model=model)
        if shaped is not data:
            model, model_bytes, data = read_model(shaped), len(shaped), shaped
    # legacy UINT8 tensors: judged as both runtimes run them, as INT8 (the bytes the C runtime loads, its type
    # switches; the interpreter's nodes, edge_sdk.runtime.uint8)
    _, presented, uint8_pairs = c_model(model, data)  # the Model read above: no second parse
    uint8_note = c_io_note(model, uint8_pairs)
    if presented is not data:  # legacy UINT8 presented, or the shapes of shape arithmetic declared
        model, model_bytes, data = read_model(presented), len(presented), presented
    digest = hashlib.sha256(data).hexdigest()
    nodes, failures, infos = _cached(("prepare", digest), lambda: prepare_nodes(model))
    preferred = profile.preferred_backend
    is_c = profile.runtime == "c"
    result = CheckResult(verdict=RUNS, target=profile.name, backend=preferred, ram_budget=profile.ram_arena_bytes,
                         flash_budget=profile.flash_model_bytes, model_bytes=model_bytes, model_name=name,
                         tensor_names=[t.name for t in model.subgraphs[0].tensors] if model.subgraphs else [],
                         runtime="c" if is_c else "python", input_shapes=judged)
    problems = result.problems
    if uint8_note and is_c:  # a user's own firmware talks to the C runtime: it must know
        result.notes.append(uint8_note)

    # ---- the runtime's own verdict on every node
    c_plan = None
    # a C-runtime profile on 64-bit Linux: measured with the library as it runs there (c_check.linux_layout)
    linux_c = is_c and profile.kind in ("linux", "host") and profile.arch in ("x86_64", "aarch64")
    c_layout, c_cpu = None, (profile.cpu if linux_c and profile.arch == "aarch64" else None)
    c_defs = _type_defines(model, profile)  # the C build's type switches (and DSP emulation) for this target
    if is_c:
        result.checked_by = "c-table"
        if c_runtime:
            from edge_sdk.targets import c_check

            try:
                plan_kind = memory or "layer"
                if linux_c:  # the library a 64-bit Linux target runs: fast paths (and their packed weights) in
                    c_layout = c_check.linux_layout(profile.arch)
                    if c_layout is None:
                        c_layout = c_check.HOST if c_check.HOST in c_check.target_layouts() else None
                        result.notes.append(
                            f"no build of the C runtime for {profile.arch} Linux here (needs "
                            f"{c_check.AARCH64_CC} and {c_check.QEMU_AARCH64} for aarch64): RAM measured "
                            "without the SIMD fast paths, whose packed weights are not counted (an estimate)")
                c_plan = _cached(("c", digest, plan_kind, c_layout, c_cpu, c_defs), lambda: c_check.target_plan(
                    data, c_layout, type_defs=c_defs, memory=plan_kind,
                    patch=planner.c_stage_for(data, plan_kind), cpu=c_cpu, presented=True))
            except BuildError as exc:
                result.notes.append(f"the C runtime could not be built here ({str(exc).splitlines()[0]}): "
                                    "ops checked against the C kernels' registrations, RAM estimated")
        if c_plan is not None:
            result.checked_by = "c-runtime"
        runtime_failures = _c_failures(model, nodes, c_plan)
    else:
        result.checked_by = "interpreter"
        runtime_failures = failures

    def cpu_problems(node: Node) -> list[dict]:
        out = []
        exc = runtime_failures.get((node.subgraph, node.index))
        if exc is not None:
            kind = "kernel" if isinstance(exc, UnsupportedOpError) else "model"
            text = str(exc)
            short = text.removeprefix("C runtime: ")
            for prefix in (node.where() + ": ", node.where() + ", "):
                short = short.removeprefix(prefix)
            short = re.sub(r"^(subgraph \d+ )?node \d+ \([^)]*\)[:,] ", "", short)  # the C runtime's own prefix
            problem = _op_problem(node, CPU, "error", kind, node.op, None, short)
            problem["runtime_error"] = text  # the runtime's own message, as it raises it
            out.append(problem)
        for v in profile.violations(node, CPU):
            if is_c and v.constraint == "dtype" and exc is None:
                continue  # the C runtime decides which types it runs (its prepare, or its kernels' registrations)
            out.append(_op_problem(node, CPU, "error", v.constraint, v.value, v.limit, v.message))
        return out

    def note(node: Node, backend: str) -> None:
        limits = profile.backend(backend).op_constraints(node.op, node_dtype(node)) or {}
        if "note" in limits:
            result.notes.append(f"{node.where()} on {backend}: {limits['note']}")

    for s, sg_nodes in enumerate(nodes):
        if s == 0:
            assignment, why = assign_backends(sg_nodes, profile, preferred)
            result.partitions = partition_nodes(model, assignment, 0) if sg_nodes else []
        else:
            assignment, why = [CPU] * len(sg_nodes), {}
        for k, node in enumerate(sg_nodes):
            for v in why.get(k, []):
                problems.append(_op_problem(node, preferred, "fallback", v.constraint, v.value, v.limit,
                                            f"falls back to the CPU: {v.message}"))
            if assignment[k] == CPU:
                problems.extend(cpu_problems(node))
            note(node, assignment[k])
    hybrid = _hybrid_nodes(nodes)
    if hybrid:  # runs here (or its refusal is a problem above); the TFLM side said once, plainly
        result.notes.append(
            f"{len(hybrid)} node(s) ({', '.join(sorted({n.op for n in hybrid}))}) run LiteRT's hybrid kernels (FLOAT32 "
            "input, INT8 weights; the input quantized on the fly): "
            + ("edge-sdk's C runtime runs them (firmware_c/src/kernels/hybrid.c, on Cortex-M too)" if is_c
               else "edge-sdk's interpreter runs them")
            + ("" if profile.kind in ("linux", "host") else
               "; TFLM has no hybrid kernels: a TFLM build refuses this model"))
    if c_plan is not None and not c_plan.ok and _c_node(model, c_plan.error) is None \
            and c_plan.status_name != "EDGE_ARENA_TOO_SMALL":
        problems.append({"kind": "model", "severity": "error", "value": None, "limit": None,
                         "runtime_error": f"C runtime: {c_plan.message} [{c_plan.status_name}]",
                         "message": f"the C runtime refuses the model: {c_plan.message} [{c_plan.status_name}]"})

    # ---- stack (C targets with their compiler here)
    if is_c and stack:
        result.stack = _runtime_stack(model, profile)
        result.runtime_code = result.stack.pop("runtime_code", {})

    # ---- RAM (and which plan: layer by layer, or in place / least RAM when asked or when the layer plan is over).
    # The planner decides (planner.choose_plan: the plan asked for, else the auto rule over the budget) from the
    # figures of the target's runtime: the C runtime's measured arenas, else the interpreter's tensor plans.
    # result.memory_plan is the plan built (REALISED_PLANS: "layer", "inplace", "patch"), result.plans its figures.
    result.memory_request = memory
    runtime = "c" if is_c else "python"
    if c_plan is not None and c_plan.ok:
        from edge_sdk.targets import c_check

        measured = {memory or "layer": c_plan}  # by the memory= each was measured with

        def c_need(asked: str):
            """The C runtime's whole arena for the plan ``asked`` builds (its high water), or None."""
            if asked not in measured:
                try:
                    measured[asked] = _cached(("c", digest, asked, c_plan.layout, c_cpu, c_defs),
                                              lambda: c_check.target_plan(
                                                  data, c_plan.layout, c_defs, memory=asked,
                                                  patch=planner.c_stage_for(data, asked),
                                                  cpu=c_cpu, presented=True))
                except (BuildError, ModelError):
                    measured[asked] = None
            got = measured[asked]
            return (planner.runtime_arena(got.figures["high_water"], got.figures["arena_used"])
                    if got is not None and got.ok else None)

        choice = planner.choose_plan(data, memory, profile.ram_arena_bytes, runtime, need=c_need)
        if memory is None:  # auto: the figures of the plan chosen (measured while choosing)
            c_plan = measured[choice.memory]
    elif c_plan is not None and "plan_only_high_water" in c_plan.figures:  # the refused model's loader figures
        choice = planner.choose_plan(data, memory, profile.ram_arena_bytes, runtime, need=lambda asked: None)
    else:
        try:
            choice = planner.choose_plan(model, memory, profile.ram_arena_bytes, runtime, infos=infos)
        except ModelError as exc:
            choice = None
            problems.append({"kind": "arena", "severity": "error", "value": None, "limit": profile.ram_arena_bytes,
                             "message": f"the arena cannot be planned: {exc}"})
    if choice is not None:
        result.memory_plan, result.plans = choice.plan, dict(choice.figures)
        result.notes.extend(choice.notes)
        if is_c and profile.cpu in DSP_CPUS:  # the planner's choice of depthwise filter form (a DSP core's)
            filters = planner.dsp_filter_words(model, memory or choice.memory)
            if filters:
                result.notes.append(filters)
        if choice.plan == "patch":
            result.extra_macs = choice.stage.extra_macs
            ram = layer = None
            if c_plan is not None and c_plan.ok:  # the C runtime's whole arenas, not the tensor plans
                ram, layer = choice.need, c_need("layer")
                if layer is None:
                    ram = None  # compare like with like: the tensor plans
            result.patch = choice.stage.describe(sum(_macs_of(nodes)), ram=ram, layer_ram=layer)
            if is_c:  # the price of the least RAM: every grid of the stage, RAM against estimated instructions
                total = sum(_macs_of(nodes))
                result.patch_grids = planner.tradeoff_lines(planner.patch_tradeoff(data, total), total)
    if c_plan is not None and c_plan.ok:
        f = c_plan.figures
        result.arena_bytes = planner.runtime_arena(f["high_water"], f["arena_used"])  # the buffer: packed in
        result.packed_weights_bytes = f.get("packed", 0)  # of the persistent part (edge_alloc_packed)
        result.ram = {"plan_bytes": f.get("head_total"), "tensor_bytes": f.get("tensor_total"),
                      "scratch_bytes": f.get("head_total", 0) - f.get("tensor_total", 0),
                      "persistent_bytes": f.get("persistent"), "packed_weights_bytes": result.packed_weights_bytes,
                      "arena_used": f["arena_used"], "high_water": f["high_water"], "layout": c_plan.layout}
        from edge_sdk.targets import c_check

        emulated = c_cpu if c_cpu in c_check.QEMU_AARCH64_CPUS else "max"
        result.ram_source = (("measured: the C runtime's prepare and planner as this Linux target's library runs "
                              "them (SIMD fast paths and their packed weights in; "
                              + ("this machine's CPU)" if c_plan.layout == c_check.LINUX_HOST else
                                 f"the aarch64 build under qemu-aarch64 emulating {emulated})"))
                             if c_plan.layout in (c_check.LINUX_HOST, c_check.LINUX_AARCH64) else
                             ("measured: the C runtime's prepare and planner built with the board's 32-bit "
                              "struct layout" if profile.arch.startswith("arm") else
                              f"measured with a 32-bit ARM build of the C runtime ({profile.arch}'s ILP32 struct "
                              "layout assumed the same)") if c_plan.exact else
                             "estimate: the C runtime's prepare and planner on this host (64-bit structs: the "
                             "persistent part is larger than on the board)")
    elif c_plan is not None and "plan_only_high_water" in c_plan.figures:
        f = c_plan.figures
        result.arena_bytes = planner.runtime_arena(f["plan_only_high_water"], f["plan_only_arena_used"])
        result.ram = {"plan_bytes": f.get("plan_only_head_total"), "tensor_bytes": f.get("plan_only_tensor_total"),
                      "scratch_bytes": 0, "persistent_bytes": f.get("plan_only_persistent"),
                      "arena_used": f["plan_only_arena_used"], "high_water": f["plan_only_high_water"],
                      "layout": c_plan.layout}
        result.ram_source = ("estimate: the C runtime refused the model, so its loader and planner ran without "
                             "kernels (declared shapes; kernel data and scratch not counted)")
    else:
        result.arena_bytes = None if choice is None else choice.need
        if is_c and c_plan is not None:
            result.ram_source = ("estimate: the tensor plan only (the C runtime refused the model, so its "
                                 "persistent part and scratch were not measured)")
        elif is_c:
            result.ram_source = ("estimate: the tensor plan only (the C runtime could not run here: its persistent "
                                 "part and scratch are not counted)")
        else:
            result.ram_source = "the interpreter's arena plan (tensors)"
    if result.arena_bytes is not None:
        result.arena_size = result.arena_bytes - result.packed_weights_bytes
    if not is_c:  # the C runtime refuses ops sized by the data (an error above): the interpreter's alone
        from edge_sdk.runtime.interpreter import eval_sized_rows

        result.eval_sized = eval_sized_rows(nodes)
    if result.arena_bytes is not None and result.arena_bytes > profile.ram_arena_bytes:
        problems.append({
            "kind": "arena", "severity": "error", "value": result.arena_bytes, "limit": profile.ram_arena_bytes,
            "message": f"the arena needs {result.arena_bytes} bytes; {profile.name}'s RAM budget for it is "
                       f"{profile.ram_arena_bytes} bytes ({_over(result.arena_bytes, profile.ram_arena_bytes)})",
        })
    if model_bytes > profile.flash_model_bytes:
        problems.append({
            "kind": "flash", "severity": "error", "value": model_bytes, "limit": profile.flash_model_bytes,
            "message": f"the model is {model_bytes} bytes; {profile.name}'s flash budget for it is "
                       f"{profile.flash_model_bytes} bytes ({_over(model_bytes, profile.flash_model_bytes)})",
        })
    if any(p["severity"] == "error" for p in problems):
        result.verdict = FAILS
    elif result.fallback_nodes:
        result.verdict = PARTIAL
    result.fixes = _fixes(result, profile, model, failures)
    return result


def _c_failures(model: Model, nodes, c_plan) -> dict[tuple[int, int], Exception]:
    """Per node, why the C runtime refuses it: every node without a C kernel (the op table's C side, as the
    C loader checks them all before preparing) and, from the C runtime's one plan-only run, every node its
    prepare refused (``TargetPlan.refusals``: the runner records a refusal and prepares the next node).
    Without a C runtime here (``c_plan`` None) the kernels' registered dtypes answer: a node whose dtype its
    C kernel does not list is refused, naming op, dtype and node."""
    from edge_sdk.runtime import op_table

    out: dict[tuple[int, int], Exception] = {}
    for sg_nodes in nodes:
        for node in sg_nodes:
            # without the C runtime here, its kernels' registered types answer for it (never a guess)
            dtype = op_table.c_data_type(node) if c_plan is None else None
            reason = op_table.c_refusal(node.op, node.version, dtype)
            if reason:
                out[(node.subgraph, node.index)] = UnsupportedOpError(f"{node.where()}: {reason}")
    if c_plan is not None and not c_plan.ok:
        refusals = c_plan.refusals or [{"status": c_plan.status_name, "message": c_plan.message, **c_plan.error}]
        for ref in refusals:
            at = _c_node(model, ref)
            if at is None or at in out:
                continue
            exc_type = UnsupportedOpError if ref["status"].startswith("EDGE_UNSUPPORTED") else ModelError
            out[at] = exc_type(f"C runtime: {ref['message']} [{ref['status']}]")
    return out


def _fixes(result: CheckResult, profile: Profile, model: Model, py_failures) -> list[str]:
    """What the user can do about the errors (another target, --exclude, a smaller input)."""
    from edge_sdk.targets.profiles import list_profiles

    out = []
    errors = result.errors
    op_errors = [p for p in errors if p["kind"] in ("kernel", "model", "op", "dtype") or p.get("constraint") in
                 ("op", "dtype")]
    if op_errors and result.runtime == "c" and not py_failures:
        out.append("the Python interpreter runs every node of this model: a Linux target (host-linux, "
                   "raspberry-pi-4, ...) runs it")
    if any(p.get("constraint") == "op" and p.get("dtype") == "FLOAT32" for p in op_errors):
        nodes = sorted({p["node"] for p in op_errors if p.get("dtype") == "FLOAT32"})
        out.append(f"quantize the float nodes ({_node_list(nodes)}) to int8 (`edge convert`), or pick a target "
                   "with an FPU")
    if any(p["kind"] == "arena" and p["value"] for p in errors):
        need = next(p["value"] for p in errors if p["kind"] == "arena" and p["value"])
        fits = []
        for other in list_profiles():
            try:
                o = load_profile(other)
            except Exception:  # noqa: BLE001 - a broken profile file is not this model's problem
                continue
            if o.name != profile.name and o.runtime == profile.runtime and o.ram_arena_bytes >= need \
                    and o.flash_model_bytes >= result.model_bytes:
                fits.append(o.name)
        if fits:
            out.append(f"a target with more RAM: {', '.join(fits[:4])}")
        out.append("a smaller input (convert with a smaller input shape) shrinks the activations")
    if result.verdict == PARTIAL or any(p["severity"] == "fallback" for p in result.problems):
        nodes = sorted({p["node"] for p in result.problems if p["severity"] == "fallback" and p["subgraph"] == 0})
        if nodes:
            out.append(f"the CPU runs the fallback nodes; `edge convert --exclude NODE` keeps a node in float "
                       f"(fallback nodes: {_node_list(nodes)})")
    if any(p["kind"] == "flash" for p in errors):
        float_bytes = _float_weight_bytes(model)
        if float_bytes:  # int8 weights take a quarter of float32's (a half of float16's) bytes
            out.append(f"int8 weights (`edge convert --quantize int8`): {_kib(float_bytes)} of the model's weights "
                       "are float, or a target with more flash")
        else:
            out.append("the weights are already integer: a model with fewer parameters (fewer channels or layers, "
                       "or pruned), or a target with more flash")
    return out


def _float_weight_bytes(model: Model) -> int:
    """Bytes of the model's constant float tensors (float32 / float16 weights, biases, tables), each buffer once."""
    seen, total = set(), 0
    for sg in model.subgraphs:
        for t in sg.tensors:
            if t.type in ("FLOAT32", "FLOAT16", "FLOAT64") and t.buffer and t.buffer not in seen \
                    and t.buffer < len(model.buffers) and len(model.buffers[t.buffer].data):
                seen.add(t.buffer)
                total += len(model.buffers[t.buffer].data)
    return total


def _node_list(idx, limit: int = 12) -> str:
    idx = list(idx)
    text = ", ".join(map(str, idx[:limit]))
    return text + (f", ... ({len(idx) - limit} more)" if len(idx) > limit else "")


def _over(need: int, have: int) -> str:
    return f"{need - have} bytes over, {need / have:.1f}x" if have else "no budget"


def linked_ram(link: dict) -> dict[str, int]:
    """`--link`'s RAM, each byte counted once: {"arena_buffer": the firmware's arena array, "statics": the rest
    of .data + .bss, "stack": the reserved stack, "total"}. The arena array is its own section (.board_large) on
    every board here; a link that leaves that section empty has it inside .bss, and it is taken out of the
    statics there (not counted twice)."""
    arena = link["arena_buffer_bytes"]
    statics = link["data_bytes"] + link["bss_bytes"] - (0 if link.get("large_bytes") else arena)
    stack = link.get("stack_bytes", 0)
    return {"arena_buffer": arena, "statics": statics, "stack": stack, "total": arena + statics + stack}


def _linked_lines(r: CheckResult) -> list[str]:
    """The real link's flash and RAM, each figure named (the arena buffer is not the arena above: the firmware
    gives the runtime its arena plus headroom, tools.flash.measure_arena)."""
    ram = linked_ram(r.link)
    need = f"the {_kib(r.arena_bytes)} arena above + headroom" if r.arena_bytes is not None else "with headroom"
    return [f"  firmware {_kib(r.link['flash_bytes']):>8} of flash, linked: model {_kib(r.model_bytes)} + runtime "
            f"code {_kib(r.link['runtime_flash_bytes'])}",
            f"         RAM {_kib(ram['total'])} linked: arena buffer {_kib(ram['arena_buffer'])} ({need}) + other "
            f"statics {_kib(ram['statics'])} (.data + .bss: runtime state, I/O buffers) + stack "
            f"{_kib(ram['stack'])} (reserved)"]


def _kib(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n} B" if n < 10 * 1024 else f"{n / 1024:.1f} KiB" if n < 10 * 1024 * 1024 else f"{n / 2**20:.1f} MiB"


def _ranges(idx: tuple[int, ...]) -> str:
    return f"{idx[0]}" if len(idx) == 1 else f"{idx[0]}..{idx[-1]}"


def _tensor_label(names: list[str], t: int) -> str:
    return f"'{names[t]}'" if t < len(names) and names[t] else f"#{t}"


def group_problems(problems: list[dict]) -> list[dict]:
    """Problems grouped by (severity, op, constraint, reason): one dict per group with ``nodes`` (every
    (subgraph, node)), ``count`` and ``reason`` (the message without the node prefix); first-seen order."""
    groups: dict[tuple, dict] = {}
    for p in problems:
        if p.get("kind") != "op":
            key = (p["severity"], p["kind"], None, p["message"])
            groups.setdefault(key, {"severity": p["severity"], "kind": p["kind"], "op": None, "reason": p["message"],
                                    "nodes": [], "count": 0})
            continue
        reason = p["message"].split(": ", 1)[1] if ": " in p["message"] else p["message"]
        # the same reason for another node differs only in the node's own numbers when it names them
        key = (p["severity"], p["op"], p["version"], p["dtype"], p["backend"], p["constraint"], reason)
        g = groups.setdefault(key, {"severity": p["severity"], "kind": "op", "op": p["op"], "version": p["version"],
                                    "dtype": p["dtype"], "backend": p["backend"], "constraint": p["constraint"],
                                    "reason": reason, "nodes": [], "count": 0})
        g["nodes"].append((p["subgraph"], p["node"]))
        g["count"] += 1
    return list(groups.values())


def _node_names(nodes: list[tuple[int, int]], limit: int = 12) -> str:
    labels = [f"{i}" if s == 0 else f"{s}:{i}" for s, i in nodes]
    text = ", ".join(labels[:limit])
    return text + (f", ... (+{len(labels) - limit})" if len(labels) > limit else "")


def _ram_parts(r: CheckResult) -> str:
    """The C runtime's arena (planner.runtime_arena: max(high water, arena used after init) - packed) as a sum
    that adds up: the plan (tensors + scratch) + persistent state + the 16-byte alignment between them, + what
    init's planner held above that steady state at its high water, - the packed weight copies (a figure apart).
    Without arena_used (an older cached result) no sum is printed, only the parts. Starts with " = " or ": "."""
    ram = r.ram
    plan, persistent = ram.get("plan_bytes"), ram.get("persistent_bytes")
    parts = (f"plan {plan} (tensors {ram.get('tensor_bytes')}, scratch {ram.get('scratch_bytes')}) + persistent "
             f"{persistent} B (structs, kernel data, resource variables)")
    used, high = ram.get("arena_used"), ram.get("high_water")
    if used is None or plan is None or persistent is None or r.arena_size is None:
        return f": {parts} after init; high water {high} B"
    align = used - plan - persistent
    if align:
        parts += f" + alignment {align} B"
    above = max(0, (high or 0) - used)
    if above:
        parts += f" + init's planner memory {above} B (held at the high water {high} B, freed after init)"
    packed = ram.get("packed_weights_bytes") or 0
    if packed:
        parts += f" - packed weight copies {packed} B"
    total = plan + persistent + align + above - packed
    if total != r.arena_size:  # the figures disagree: name the parts, print no sum
        return f": {parts} after init; high water {high} B"
    return f" = {parts}"


def format_check(result: CheckResult) -> str:
    """The human report `edge check` prints: the verdict, the budgets, one line per (op, reason), the fixes."""
    r = result
    runtime = {"c-runtime": "the C runtime's own prepare", "c-table": "the C kernel table (no C compiler here)",
               "interpreter": "the interpreter's own prepare"}.get(r.checked_by, r.checked_by)
    lines = [f"{r.model_name} on {r.target}: {r.verdict.upper()}  (checked with {runtime}; "
             f"preferred backend: {r.backend})"]
    if r.verdict == PARTIAL:
        cpu_parts = [p for p in r.partitions if p.backend != r.backend]
        lines[0] += f" — {len(r.fallback_nodes)} op(s) fall back to the CPU in {len(cpu_parts)} partition(s)"
    judged = _input_shapes_line(r)
    if judged:
        lines.append(judged)
    over = r.arena_bytes is not None and r.ram_budget and r.arena_bytes > r.ram_budget
    pct = f" ({100 * r.arena_bytes / r.ram_budget:.0f}%)" if r.arena_bytes is not None and r.ram_budget else ""
    from edge_sdk.runtime.planner import PLAN_WORDS

    plan = f"{PLAN_WORDS.get(r.memory_plan, r.memory_plan)} plan"
    if r.memory_plan != "layer":
        plan += f", +{r.extra_macs} MACs"
    lines.append(f"  RAM    {_kib(r.arena_bytes):>10} of {_kib(r.ram_budget)} RAM budget for the arena{pct} ({plan})"
                 f"{'  OVER' if over else ''}")
    # the arena in the words every command uses, and (C runtime) what it is made of: one line either way
    arena = r.arena_line() if r.arena_size is not None else ""
    if r.ram and arena:
        lines.append(f"         {arena}{_ram_parts(r)}")
    elif r.ram:
        lines.append(f"         {_ram_parts(r)[2:]}")
    elif arena:
        lines.append(f"         {arena}")
    if r.eval_sized:
        from edge_sdk.runtime.interpreter import eval_sized_words

        lines.append(f"         {eval_sized_words(r.eval_sized)}")
    if r.packed_weights_bytes and r.arena_size is not None:
        lines.append(f"         = arena {r.arena_size} B (activations, scratch, persistent state: the figure "
                     f"Interpreter.arena_size gives) + packed weight copies {r.packed_weights_bytes} B (the SIMD "
                     "fast paths' repacked weights)")
    if r.ram_source:
        lines.append(f"         {r.ram_source}")
    if r.patch:
        lines.append(f"         {r.patch}")
    if r.patch_grids:
        lines.append("         the stage's grids, RAM vs instructions (tensor plan; instructions estimated from the "
                     "recomputed MACs and the depthwise MACs run in place, planner.PATCH_RECOMPUTE_COST / "
                     "PATCH_INPLACE_DW_COST each, fitted on the QEMU M4; the least-RAM request's kernel forms cost "
                     "more: `benchmarks/c_runtime.py --mcu` counts them):")
        lines.extend(f"           {g}" for g in r.patch_grids)
    if r.stack.get("bytes"):
        st = r.stack
        lines.append(f"  stack  {st['bytes']:>8} B  the runtime's deepest call chain ({' -> '.join(st['chain'][:5])}"
                     f"{' ...' if len(st['chain']) > 5 else ''}; -fcallgraph-info, C library frames not counted)")
    elif r.stack.get("error"):
        lines.append(f"  stack  {'?':>8}    {r.stack['error']}")
    over = r.flash_budget and r.model_bytes > r.flash_budget
    pct = f" ({100 * r.model_bytes / r.flash_budget:.0f}%)" if r.flash_budget else ""
    lines.append(f"  flash  {_kib(r.model_bytes):>10} of {_kib(r.flash_budget)} model budget{pct}"
                 f"{'  OVER' if over else ''}")
    code = r.runtime_code
    if r.link.get("linked"):
        pass  # the firmware line below: linked
    elif code.get("bytes") and code.get("source") == "size table":
        stale = f"; stale for {', '.join(code['stale'])}: sources changed since" if code.get("stale") else ""
        lines.append(f"         + runtime code {_kib(code['bytes'])} for this op set: {_kib(r.model_bytes + code['bytes'])}"
                     f" in all (flash: estimate from the size table, {code.get('compiler')} not installed here"
                     f"{stale})")
    elif code.get("bytes"):
        lines.append(f"         + runtime code {_kib(code['bytes'])} for this op set (compiled objects, an upper "
                     f"bound; `--link` links): {_kib(r.model_bytes + code['bytes'])} in all")
    elif code.get("error"):
        lines.append(f"         + runtime code ?: {code['error']}")
    if r.link.get("linked"):
        lines.extend(_linked_lines(r))
    if r.partitions and (len(r.partitions) > 1 or r.backend != CPU):
        lines.append("  partitions:")
        for p in r.partitions:
            cross_in = ", ".join(_tensor_label(r.tensor_names, t) for t in p.inputs) or "-"
            cross_out = ", ".join(_tensor_label(r.tensor_names, t) for t in p.outputs) or "-"
            lines.append(f"    {p.backend:<8} nodes {_ranges(p.nodes):<10} in: {cross_in}  out: {cross_out}")
    for severity, title in (("error", "problems"), ("fallback", "CPU fallbacks")):
        groups = [g for g in group_problems(r.problems) if g["severity"] == severity]
        groups.sort(key=lambda g: g["kind"] == "op")  # budgets (arena, flash) and model problems first
        if not groups:
            continue
        n = sum(max(g["count"], 1) for g in groups)
        lines.append(f"{title} ({n}{' nodes' if n != len(groups) else ''}, {len(groups)} kind(s)):")
        for g in groups:
            if g["kind"] == "op":
                lines.append(f"  - {g['op']} v{g['version']} {g['dtype']}: {g['reason']} — {g['count']} node(s): "
                             f"{_node_names(g['nodes'])}")
            else:
                lines.append(f"  - {g['reason']}")
    if r.fixes:
        lines.append("fix:")
        lines.extend(f"  - {f}" for f in r.fixes)
    if r.notes:
        lines.append("notes:")
        lines.extend(f"  - {n}" for n in dict.fromkeys(r.notes))
    return "\n".join(lines) + "\n"
