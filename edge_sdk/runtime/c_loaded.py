"""The model the C runtime loads, one place for every path that hands it one: the C binding (c_interpreter), edge
check's C runner, edge flash's firmware, edge profile's board, edge export's folder.

``c_model`` / ``c_bytes`` / ``c_path`` give a .tflite as the C runtime (no dynamic tensors, no UINT8 presentation of
its own) runs it: legacy UINT8 tensors presented as INT8 (edge_sdk.runtime.uint8.present), every tensor declared at
the shape the Python prepare gives it and every value its shape arithmetic computes a constant its readers read
(edge_sdk.runtime.shape_arithmetic.c_loaded, over this module's ``_prepare_report``: the Python interpreter's
prepare, subgraphs included).
"""

from __future__ import annotations

from pathlib import Path

from edge_sdk.model.types import Model
from edge_sdk.runtime import op_table
from edge_sdk.runtime.shape_arithmetic import c_loaded
from edge_sdk.runtime.uint8 import present

# The cache folder of the model files the C runtime loads (c_path). It was "uint8/" (when presenting UINT8 was all
# it held); files there, named by their content's hash, are never read now and may be deleted.
C_MODEL_CACHE = "c-loaded-models"


def needs_prepare(model: Model) -> bool:
    """Whether the bytes the C runtime loads need the Python prepare's shapes and values (a SHAPE / RANK op, a
    subgraph call); without one the C prepare sizes every tensor from the inputs' declared shapes itself."""
    rows = [op_table.row(c.name) for c in model.operator_codes]
    return bool(model.subgraphs) and any(r.shape_only or r.subgraphs for r in rows)


def _prepare_report(model: Model):
    """The Python interpreter's prepare_report of ``model`` at its declared shapes, or None when there is nothing
    for shape_arithmetic.c_loaded to evaluate (``needs_prepare``) or the model is malformed (the C loader says
    what and where, in its own words)."""
    from edge_sdk.runtime.interpreter import Interpreter

    if not needs_prepare(model):
        return None
    try:
        return Interpreter(model=model).prepare_report()
    except Exception:  # noqa: BLE001 - see above
        return None


def c_model(model: Model | None, data: bytes) -> tuple[Model | None, bytes, frozenset]:
    """(model, bytes, pairs): ``data`` (the .tflite's bytes; ``model`` its Model when the caller has it) with the
    legacy UINT8 tensors presented as INT8 (``present``: the model, as its tensors are reported), the bytes the C
    runtime loads (that model as shape_arithmetic.c_loaded gives it: every tensor at the shape the Python prepare
    gives it, and the values shape arithmetic computes handed to the nodes that read them as constants), and the
    presented (subgraph, tensor) pairs. A model needing neither comes back as it is (and unreadable bytes too: the
    C loader names what is wrong)."""
    from edge_sdk.model import read_model, write_model

    if model is not None:
        source = model
    else:
        try:
            source = read_model(data)
        except Exception:  # the C loader reports a malformed file in its own words (edge_load's status)
            return None, data, frozenset()
    presented, chosen = present(source)
    loaded = c_loaded(presented, _prepare_report(presented))
    if not chosen and loaded is presented:
        return model, data, chosen
    return presented, write_model(loaded), chosen


def c_bytes(model_or_data) -> tuple[bytes, frozenset]:
    """The bytes the C runtime loads for a .tflite's bytes or a ``Model`` (``c_model``), and the presented
    (subgraph, tensor) pairs (empty: the bytes are the model's own)."""
    if isinstance(model_or_data, Model):
        from edge_sdk.model import write_model

        return c_model(model_or_data, write_model(model_or_data))[1:]
    _, data, chosen = c_model(None, bytes(model_or_data))
    return data, chosen


def c_path(path) -> tuple[Path, frozenset]:
    """``path`` itself when the C runtime loads its bytes as they are; else the model it loads (``c_bytes``)
    written once to ``<cache>/c-loaded-models/<sha256[:16]>/<the same file name>`` (C_MODEL_CACHE; the tools that
    build from a file - gen_ops.py, the firmware's model_data.c - read that one), and the presented pairs."""
    from edge_sdk.resources import cached_copy

    path = Path(path)
    original = path.read_bytes()
    data, chosen = c_bytes(original)
    if data is original:
        return path, chosen
    return cached_copy(C_MODEL_CACHE, path.name, data), chosen
