"""`edge check`: will this model run on that device? Answered from the model and the device profile alone.

    result = check_model("person_detect.tflite", "stm32f746-disco")
    result.verdict            # "runs" | "partial" | "fails"
    result.problems           # every reason, as dicts (node, op, version, dtype, backend, constraint, value, limit)
    result.partitions         # [Partition(backend, nodes, inputs, outputs)] for subgraph 0
    result.to_dict()          # the JSON `edge check --json` prints

How it decides:

1. Every node is prepared with our own kernels (as ``Interpreter.allocate_tensors`` does, but a node that
   fails does not stop the others: each failure is a problem). Prepare computes the real shapes, so
   constraints are checked against the actual parameters: kernel size, stride, dilation, rank, dtype,
   per-channel quantization, tensor bytes (``edge_sdk.targets.profiles``).
2. Each node of subgraph 0 goes to the profile's preferred backend when that backend takes it
   (``profile.supports``); otherwise it falls back to the CPU (a "fallback" problem naming the constraint).
   A delegate with ``max_partitions`` takes at most that many runs of nodes (the Edge TPU compiler
   partitions once: everything after its first fallback runs on the CPU). Nodes of other subgraphs run on
   the CPU. The CPU takes a node when our kernel prepares it and the profile's CPU op list allows it;
   otherwise the node is an "error" problem.
3. The arena is our interpreter's plan over the prepared shapes (the same plan ``Interpreter.arena_size``
   reports, at least as tight as TFLM's); it must fit ``ram_arena_bytes``. The model file's bytes must fit
   ``flash_model_bytes``. ``memory``: "layer" (layer by layer), "min" (the least-RAM plan: in-place RESHAPE,
   PAD and int8 depthwise, ``Interpreter(memory="min")``; no extra MACs) or None (auto: "layer", or "min" when the layer plan
   exceeds the budget and "min" is smaller); ``memory_plan`` says which plan the figure is, and both totals
   are in ``plans``.

Verdict: ``fails`` when there is any error (an op no backend can run, the arena or the model too big, a
malformed model); ``partial`` when it runs but N nodes fall back to the CPU (in K CPU partitions); else
``runs``. ``partitions`` are the maximal runs of consecutive nodes on one backend, with the tensors that
cross into (``inputs``) and out of (``outputs``) each run; ``partition_nodes`` computes them for any
assignment, so the interpreter's delegate support can reuse it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from edge_sdk.runtime import op_table
from edge_sdk.runtime.delegates.base import plan_partitions
from edge_sdk.errors import ModelError, UnsupportedOpError
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
    arena_bytes: int | None = None
    ram_budget: int = 0
    model_bytes: int = 0
    flash_budget: int = 0
    partitions: list[Partition] = field(default_factory=list)
    tensor_names: list[str] = field(default_factory=list)
    model_name: str = ""
    memory_plan: str = "layer"  # which plan arena_bytes is: "layer" or "min"
    plans: dict = field(default_factory=dict)  # plan name -> its arena bytes (the ones computed)
    extra_macs: int = 0  # MACs the chosen plan adds over the layer plan (in-place execution adds none)

    @property
    def fallback_nodes(self) -> list[int]:
        return [i for p in self.partitions if p.backend != self.backend for i in p.nodes]

    @property
    def errors(self) -> list[dict]:
        return [p for p in self.problems if p["severity"] == "error"]

    def to_dict(self) -> dict:
        return {
            "model": self.model_name,
            "target": self.target,
            "verdict": self.verdict,
            "preferred_backend": self.backend,
            "problems": self.problems,
            "notes": self.notes,
            "arena_bytes": self.arena_bytes,
            "memory_plan": self.memory_plan,
            "plans": self.plans,
            "extra_macs": self.extra_macs,
            "ram_budget": self.ram_budget,
            "model_bytes": self.model_bytes,
            "flash_budget": self.flash_budget,
            "fallback_nodes": len(self.fallback_nodes),
            "partitions": [p.to_dict(self.tensor_names) for p in self.partitions],
        }


# ----------------------------------------------------------------------------------------------- model
def _load(model_or_path) -> tuple[Model, int, str]:
    """(model, its serialized size, a display name)."""
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
    return read_model(data), len(data), name


def prepare_nodes(model: Model):
    """Prepare every node with our kernels, tolerating failures.

    Returns ``(nodes, failures, infos)``: ``nodes[s][i]`` a ``Node`` (prepared when its kernel accepted it,
    else with the model's declared output shapes), ``failures[(s, i)]`` the exception its lookup/prepare
    raised, ``infos[s]`` the subgraph's TensorInfos (shapes as prepared).
    """
    from edge_sdk.runtime.interpreter import Interpreter

    interp = Interpreter(model=model)
    infos = [interp.tensor_infos(s) for s in range(len(model.subgraphs))]  # as interpreter.static_plan does
    nodes: list[list[Node]] = []
    failures: dict[tuple[int, int], Exception] = {}
    for s, sg in enumerate(model.subgraphs):
        n = len(infos[s])
        sg_nodes = []
        for i, op in enumerate(sg.operators):
            if not 0 <= op.opcode_index < len(model.operator_codes):
                raise ModelError(f"node {i}: opcode index {op.opcode_index} out of range")
            code = model.operator_codes[op.opcode_index]
            for t in (*op.inputs, *op.outputs, *op.intermediates):
                if not -1 <= t < n:
                    where = f"subgraph {s} node {i}" if s else f"node {i}"
                    raise ModelError(f"{where} ({code.name}): tensor {t} out of range")
            node = Node(
                index=i, subgraph=s, op=code.name, version=code.version, options=dict(op.options or {}),
                custom_options=op.custom_options,
                inputs=[None if t == -1 else infos[s][t] for t in op.inputs],
                outputs=[infos[s][t] for t in op.outputs],
                intermediates=[infos[s][t] for t in op.intermediates],
                runtime=interp,
            )
            try:
                row = op_table.lookup(node.op, node.version)
                row.prepare_function()(node)
            except UnsupportedOpError as exc:
                failures[(s, i)] = exc if str(exc).startswith(node.where()) else node.unsupported(str(exc))
            except ModelError as exc:
                failures[(s, i)] = exc
            except Exception as exc:  # noqa: BLE001 - a kernel tripped over the model: a model problem
                failures[(s, i)] = node.error(f"prepare failed: {type(exc).__name__}: {exc}")
            sg_nodes.append(node)
        nodes.append(sg_nodes)
    return nodes, failures, infos


def arena_bytes(model: Model, infos, memory: str = "layer") -> int:
    """Our interpreter's arena plan total for these (prepared) tensor infos; ``memory="min"``: the least-RAM
    plan's (edge_sdk.runtime.interpreter.inplace_aliases)."""
    from edge_sdk.runtime import arena as _arena
    from edge_sdk.runtime.interpreter import buffer_requests, inplace_aliases

    spans: dict = {}
    requests = buffer_requests(model, infos, spans=spans)
    if memory == "min":
        return _arena.plan_aliased(requests, inplace_aliases(model, infos, requests, spans)).total
    return _arena.plan(requests).total


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


def check_model(model_or_path, profile, memory: str | None = None) -> CheckResult:
    """Check a model (path, bytes or ``Model``) against a profile (name, path or ``Profile``): see module doc."""
    if memory not in (None, "layer", "min"):
        raise ValueError(f"memory must be 'layer', 'min' or None (auto), not {memory!r}")
    profile = load_profile(profile)
    model, model_bytes, name = _load(model_or_path)
    nodes, failures, infos = prepare_nodes(model)
    preferred = profile.preferred_backend
    result = CheckResult(verdict=RUNS, target=profile.name, backend=preferred, ram_budget=profile.ram_arena_bytes,
                         flash_budget=profile.flash_model_bytes, model_bytes=model_bytes, model_name=name,
                         tensor_names=[t.name for t in model.subgraphs[0].tensors] if model.subgraphs else [])
    problems = result.problems

    def cpu_problems(node: Node) -> list[dict]:
        out = []
        exc = failures.get((node.subgraph, node.index))
        if exc is not None:
            kind = "kernel" if isinstance(exc, UnsupportedOpError) else "model"
            out.append(_op_problem(node, CPU, "error", kind, node.op, None, str(exc).removeprefix(node.where() + ": ")
                                   .removeprefix(node.where() + ", ")))
        for v in profile.violations(node, CPU):
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

    try:
        result.memory_plan = memory or "layer"
        result.arena_bytes = result.plans[result.memory_plan] = arena_bytes(model, infos, result.memory_plan)
        if memory is None and result.arena_bytes > profile.ram_arena_bytes:  # auto: the least-RAM plan
            result.plans["min"] = arena_bytes(model, infos, "min")
            if result.plans["min"] < result.arena_bytes:
                result.memory_plan, result.arena_bytes = "min", result.plans["min"]
                result.notes.append(f"the layer-by-layer plan needs {result.plans['layer']} bytes, above the RAM "
                                    f"budget: using the least-RAM plan (--memory min, {result.arena_bytes} bytes; "
                                    f"in-place execution, no extra MACs)")
    except ModelError as exc:
        problems.append({"kind": "arena", "severity": "error", "value": None, "limit": profile.ram_arena_bytes,
                         "message": f"the arena cannot be planned: {exc}"})
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
    return result


def _over(need: int, have: int) -> str:
    return f"{need - have} bytes over, {need / have:.1f}x" if have else "no budget"


def _kib(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n} B" if n < 10 * 1024 else f"{n / 1024:.1f} KiB" if n < 10 * 1024 * 1024 else f"{n / 2**20:.1f} MiB"


def _ranges(idx: tuple[int, ...]) -> str:
    return f"{idx[0]}" if len(idx) == 1 else f"{idx[0]}..{idx[-1]}"


def _tensor_label(names: list[str], t: int) -> str:
    return f"'{names[t]}'" if t < len(names) and names[t] else f"#{t}"


def format_check(result: CheckResult) -> str:
    """The human report `edge check` prints."""
    r = result
    lines = [f"{r.model_name} on {r.target} (preferred backend: {r.backend}): {r.verdict.upper()}"]
    if r.verdict == PARTIAL:
        cpu_parts = [p for p in r.partitions if p.backend != r.backend]
        lines[0] += f" — {len(r.fallback_nodes)} op(s) fall back to the CPU in {len(cpu_parts)} partition(s)"
    pct = f" ({100 * r.arena_bytes / r.ram_budget:.0f}%)" if r.arena_bytes is not None and r.ram_budget else ""
    plan = ("least-RAM plan, +0 MACs" if r.memory_plan == "min" else "layer-by-layer plan")
    lines.append(f"  arena  {_kib(r.arena_bytes):>10} of {_kib(r.ram_budget)} RAM budget{pct} ({plan})")
    pct = f" ({100 * r.model_bytes / r.flash_budget:.0f}%)" if r.flash_budget else ""
    lines.append(f"  model  {_kib(r.model_bytes):>10} of {_kib(r.flash_budget)} flash budget{pct}")
    if r.partitions and (len(r.partitions) > 1 or r.backend != CPU):
        lines.append("  partitions:")
        for p in r.partitions:
            cross_in = ", ".join(_tensor_label(r.tensor_names, t) for t in p.inputs) or "-"
            cross_out = ", ".join(_tensor_label(r.tensor_names, t) for t in p.outputs) or "-"
            lines.append(f"    {p.backend:<8} nodes {_ranges(p.nodes):<10} in: {cross_in}  out: {cross_out}")
    errors = [p for p in r.problems if p["severity"] == "error"]
    fallbacks = [p for p in r.problems if p["severity"] == "fallback"]
    if errors:
        lines.append(f"problems ({len(errors)}):")
        lines.extend(f"  - {p['message']}" for p in errors)
    if fallbacks:
        lines.append(f"CPU fallbacks ({len(fallbacks)}):")
        lines.extend(f"  - {p['message']}" for p in fallbacks)
    if r.notes:
        lines.append("notes:")
        lines.extend(f"  - {n}" for n in r.notes)
    return "\n".join(lines) + "\n"
