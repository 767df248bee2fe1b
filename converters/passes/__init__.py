"""The optimization pipeline: ``optimize(model, nhwc_io=False) -> Model``.

Each pass is a module with ``apply(model, sg) -> int`` (rewrites made in subgraph ``sg``) and
``run(model) -> Model`` (all subgraphs, then dead-code elimination):

- ``identity``        identities (same-shape RESHAPE, identity TRANSPOSE, same-type CAST, ...), reshape chains
- ``fold_constants``  ops whose inputs are all constants, evaluated by our kernels
- ``matmul``          BATCH_MATMUL with a constant rhs -> FULLY_CONNECTED; FC + ADD(const) -> FC with bias
- ``arith``           DIV(x, SQRT(v)) -> MUL(x, RSQRT(v)); DIV by a constant -> MUL by its reciprocal
- ``gelu``            GELU written out (erf or tanh form, any order) -> one GELU op (skipped with fuse_gelu=False)
- ``layout``          TRANSPOSEs sunk through layout-agnostic ops, merged and cancelled
- ``batchnorm``       MUL/ADD per-channel constants folded into CONV_2D/DEPTHWISE_CONV_2D/FC/TRANSPOSE_CONV
- ``activation``      clamps canonicalized, RELU/RELU6/RELU_N1_TO_1 fused into their producer

``optimize`` runs them in that order, over and over, until a round changes nothing (at most
``MAX_ROUNDS``), with dead-code elimination after each round. With ``nhwc_io=True`` it then moves the model's
boundary to channels-last (``layout.to_nhwc_io``) and optimizes again. What it did is attached to the
returned model as ``model.conversion_notes`` (a dict): ``{"passes": {pass: rewrites}, "nhwc_io": {"inputs":
[...], "outputs": [...]}}`` (see ``layout.to_nhwc_io`` for the entries); read it with ``notes(model)``.
"""

from __future__ import annotations

from converters import graph as G
from converters.passes import (
    activation,
    arith,
    batchnorm,
    fold_constants,
    gelu,
    identity,
    layout,
    matmul,
)
from edge_sdk.errors import ModelError
from edge_sdk.model.types import Model

PIPELINE = (
    ("identity", identity),
    ("fold_constants", fold_constants),
    ("matmul", matmul),
    ("arith", arith),
    ("gelu", gelu),
    ("layout", layout),
    ("batchnorm", batchnorm),
    ("activation", activation),
)
MAX_ROUNDS = 16


def notes(model: Model) -> dict:
    """What ``optimize`` recorded on this model ({} when it never ran)."""
    return getattr(model, "conversion_notes", {})


def _rounds(model: Model, counts: dict, skip=()) -> None:
    for _ in range(MAX_ROUNDS):
        changed = 0
        for name, module in PIPELINE:
            if name in skip:
                continue
            n = G.apply_everywhere(model, module.apply)
            counts[name] = counts.get(name, 0) + n
            changed += n
        if not changed:
            return


def optimize(model: Model, nhwc_io: bool = False, fuse_gelu: bool = True) -> Model:
    """Run the pipeline to a fixed point (in place; the same model is returned). ``fuse_gelu=False`` keeps
    GELU decompositions (for a target whose runtime has no GELU kernel)."""
    counts: dict[str, int] = {}
    skip = () if fuse_gelu else ("gelu",)
    G.make_names_unique(model)
    G.eliminate_dead_code(model)
    _rounds(model, counts, skip)
    io = {"inputs": [], "outputs": []}
    if nhwc_io:
        io = layout.to_nhwc_io(model)
        _rounds(model, counts, skip)
    for sg in range(len(model.subgraphs)):
        problems = G.topological_problems(model, sg)
        if problems:
            raise ModelError(f"optimize left subgraph {sg} out of order (a pass bug): " + "; ".join(problems))
    names = {t.name: k for k, t in enumerate(model.subgraphs[0].tensors)}
    for entry in io["inputs"] + io["outputs"]:
        entry["index"] = names.get(entry["name"], entry["index"])
    model.conversion_notes = {"passes": counts, "nhwc_io": io}
    return model


__all__ = ["PIPELINE", "notes", "optimize"]
