"""The delegate interface and the partitioner.

A delegate is a backend that takes some nodes of a subgraph and runs them its own way (LiteRT, an external
TFLite delegate library, an accelerator). It answers two questions:

* ``supports(node) -> (bool, reason)`` — may it take this prepared node (``edge_sdk.runtime.kernels.node.Node``:
  op, version, options, input/output ``TensorInfo`` with dtypes, shapes and quantization)? The reason says
  why not (or what it runs the node with), for the partition report.
* ``prepare_partition(model, subgraph, node_indices, inputs, outputs, nodes) -> run`` — build whatever it
  needs for one partition (once, at allocate time) and return ``run(input_arrays, output_arrays)``, which
  reads the boundary inputs and writes the boundary outputs in place, like a kernel's eval.

Partitioning rule (``plan_partitions``): every node goes to the FIRST delegate in list order whose
``supports`` accepts it, else to the CPU (our kernels); then consecutive nodes (in the subgraph's execution
order) with the same backend form one partition. A partition is therefore always a contiguous run of the
execution order, so running partitions one after another in that order satisfies every dependency without
any reordering. TFLite's own partitioner (``PartitionGraphIntoIndependentNodeSubsets``) works on the
dependency DAG instead and may merge supported nodes that are not adjacent (e.g. two parallel branches
separated in the execution order by an unsupported node that neither depends on): it can produce fewer,
larger partitions on branchy graphs, at the cost of reordering execution. Ours never reorders, is
deterministic and easy to read in a report; on chain-like graphs (most edge models) both give the same
partitions.

Some nodes always stay on the CPU, whatever the delegates say (``cpu_only_reason``): nodes that call other
subgraphs (CALL_ONCE, IF, WHILE), nodes that read or write variable tensors or resource variables (their
state lives in the interpreter, where ``reset_all_variables`` can reach it), and kernels that keep their own
state between invokes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from edge_sdk.runtime import op_table
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.model.types import Model

CPU = "cpu"

Run = Callable[[list, list], None]


class Boundary(NamedTuple):
    """Tensors crossing a partition's edge: ``inputs`` come from outside it (subgraph inputs or other
    partitions' outputs; constants are not listed, a delegate copies those), ``outputs`` are written inside
    and read outside it (by a later partition or as subgraph outputs)."""

    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


class _PartitionTuple(NamedTuple):
    backend: str
    nodes: tuple[int, ...]
    boundary: Boundary


class Partition(_PartitionTuple):
    """One partition: the tuple ``(backend, nodes, boundary)``; ``backend`` is a delegate's name or ``"cpu"``,
    ``nodes`` its node indices (consecutive in execution order). ``subgraph`` (not part of the tuple) says
    which subgraph the indices belong to."""

    def __new__(cls, backend: str, nodes, boundary, subgraph: int = 0):
        self = super().__new__(cls, str(backend), tuple(int(i) for i in nodes), Boundary(*boundary))
        self.subgraph = int(subgraph)
        return self

    def __getnewargs__(self):
        return (*self, self.subgraph)

    def __repr__(self) -> str:
        sg = f", subgraph={self.subgraph}" if self.subgraph else ""
        return (f"Partition({self.backend!r}, nodes={self.nodes}, inputs={self.inputs}, "
                f"outputs={self.outputs}{sg})")

    @property
    def inputs(self) -> tuple[int, ...]:
        return self.boundary.inputs

    @property
    def outputs(self) -> tuple[int, ...]:
        return self.boundary.outputs

    @property
    def delegated(self) -> bool:
        return self.backend != CPU


class Delegate:
    """Base class: subclass and override ``supports`` and ``prepare_partition``.

    ``name`` is the backend name shown in ``Interpreter.partitions()``. ``holds_internal_tensors``: the
    delegate keeps the tensors internal to its partitions in its own memory, so the interpreter's arena
    gives them no space (they read back as unavailable through ``get_tensor``). ``min_nodes``: shorter runs
    of supported nodes go to the CPU instead (a partition has a fixed cost: copies in and out).
    ``max_partitions``: the delegate takes at most this many runs; later nodes go to the CPU (the Edge TPU
    compiler partitions once).
    """

    name: str = "delegate"
    holds_internal_tensors: bool = True
    min_nodes: int = 1
    max_partitions: int | None = None

    def supports(self, node: Node) -> tuple[bool, str]:
        return False, f"{self.name} takes no nodes"

    def check_available(self) -> None:
        """Raise ``DeviceError`` naming what is missing when this delegate cannot execute here (the library,
        the device, the OS). Called at allocate time, before any partition is prepared; planning
        (``supports``, ``Interpreter.partitions()``) never calls it."""

    def prepare_partition(
        self,
        model: Model,
        subgraph: int,
        node_indices: Sequence[int],
        inputs: Sequence[int],
        outputs: Sequence[int],
        nodes: Sequence[Node],
    ) -> Run:
        """Return ``run(input_arrays, output_arrays)`` for the partition (``nodes`` are the subgraph's
        prepared nodes, indexed by node index, for shapes and dtypes after any input resize)."""
        raise NotImplementedError(f"delegate {self.name} cannot execute partitions")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def cpu_only_reason(node: Node) -> str | None:
    """Why a node must run on the interpreter's own kernels whatever a delegate says, or None."""
    effects = op_table.row(node.op).effects
    if effects == "calls":
        return f"{node.op} calls other subgraphs"
    if effects == "state":
        return f"{node.op} uses resource variables, which the interpreter holds"
    for info in [*node.inputs, *node.outputs]:
        if info is not None and info.is_variable:
            return f"tensor {info.index} '{info.name}' is a variable tensor (state stays in the interpreter)"
    if getattr(getattr(node, "_eval", None), "reset", None) is not None:
        return "the kernel keeps state between invokes"
    return None


def assign_backends(nodes: Sequence[Node], delegates: Sequence[Delegate]) -> list[tuple[str, str]]:
    """Per node, ``(backend, reason)``: the first delegate that supports it, else ``"cpu"`` with every
    delegate's reason for refusing it."""
    out = []
    for node in nodes:
        pinned = cpu_only_reason(node)
        if pinned is not None:
            out.append((CPU, pinned))
            continue
        reasons = []
        for d in delegates:
            ok, why = d.supports(node)
            if ok:
                out.append((d.name, why))
                break
            reasons.append(f"{d.name}: {why}")
        else:
            out.append((CPU, "; ".join(reasons) if reasons else "no delegates"))
    return out


def limit_runs(assigned: Sequence[tuple[str, str]], delegates: Sequence[Delegate]) -> list[tuple[str, str]]:
    """Apply each delegate's ``min_nodes`` (shorter runs go to the CPU) and then ``max_partitions`` (runs after
    its first N go to the CPU) to a per-node ``(backend, reason)`` assignment."""
    out = list(assigned)
    by_name = {d.name: d for d in delegates}

    def runs():
        i = 0
        while i < len(out):
            j = i
            while j < len(out) and out[j][0] == out[i][0]:
                j += 1
            yield i, j, out[i][0]
            i = j

    for i, j, b in list(runs()):
        d = by_name.get(b)
        if d is not None and j - i < d.min_nodes:
            out[i:j] = [(CPU, f"{b}: a run of {j - i} node(s) is shorter than its min_nodes {d.min_nodes}")] * (j - i)
    taken: dict[str, int] = {}
    for i, j, b in list(runs()):
        d = by_name.get(b)
        if d is None:
            continue
        taken[b] = taken.get(b, 0) + 1
        if d.max_partitions is not None and taken[b] > d.max_partitions:
            why = f"{b} takes at most {d.max_partitions} partition(s); later nodes run on the CPU"
            out[i:j] = [(CPU, why)] * (j - i)
    return out


def plan_partitions(
    subgraph_ops: Sequence[tuple[Sequence[int], Sequence[int]]],
    backends: Sequence[str],
    subgraph_inputs: Sequence[int],
    subgraph_outputs: Sequence[int],
    constants: set[int] | frozenset[int] = frozenset(),
    subgraph: int = 0,
) -> list[Partition]:
    """Group consecutive nodes with the same backend into partitions and find their boundary tensors.

    ``subgraph_ops[i]`` is node i's ``(inputs, outputs)`` tensor indices (-1 = omitted input);
    ``backends[i]`` its backend.
    """
    runs: list[tuple[str, list[int]]] = []
    for i, b in enumerate(backends):
        if runs and runs[-1][0] == b:
            runs[-1][1].append(i)
        else:
            runs.append((b, [i]))
    # Which runs read each tensor (to find outputs read outside their run).
    run_of = {}
    for r, (_, idx) in enumerate(runs):
        for i in idx:
            run_of[i] = r
    readers: dict[int, set[int]] = {}
    for i, (ins, _) in enumerate(subgraph_ops):
        for t in ins:
            if t >= 0:
                readers.setdefault(int(t), set()).add(run_of[i])
    graph_outputs = {int(t) for t in subgraph_outputs}
    partitions = []
    for r, (backend, idx) in enumerate(runs):
        produced: list[int] = []
        produced_set: set[int] = set()
        for i in idx:
            for t in subgraph_ops[i][1]:
                if t >= 0 and t not in produced_set:
                    produced.append(int(t))
                    produced_set.add(int(t))
        ins: list[int] = []
        seen: set[int] = set()
        for i in idx:
            for t in subgraph_ops[i][0]:
                t = int(t)
                if t < 0 or t in constants or t in produced_set or t in seen:
                    continue
                seen.add(t)
                ins.append(t)
        outs = [t for t in produced if t in graph_outputs or readers.get(t, set()) - {r}]
        partitions.append(Partition(backend, tuple(idx), Boundary(tuple(ins), tuple(outs)), subgraph))
    return partitions


def partition_nodes(
    model: Model, subgraph: int, nodes: Sequence[Node], delegates: Sequence[Delegate]
) -> list[Partition]:
    """Partitions of one subgraph's prepared nodes (see the module docstring for the rule)."""
    sg = model.subgraphs[subgraph]
    backends = [b for b, _ in limit_runs(assign_backends(nodes, delegates), delegates)]
    constants = {n_in.index for node in nodes for n_in in node.inputs if n_in is not None and n_in.is_const}
    return plan_partitions(
        [(op.inputs, op.outputs) for op in sg.operators], backends, sg.inputs, sg.outputs, constants, subgraph
    )
