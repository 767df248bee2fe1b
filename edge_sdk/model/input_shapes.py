"""Input shapes a tool runs a model at: ``--input-shape NAME:D0,D1,...`` (issue 23 point 3).

    data = shaped_model(data, {"x": (1, 49, 40)})    # bytes with input x at [1, 49, 40] (static from now on)
    data = shaped_model(data, None)                  # unchanged; UsageError when an input's signature has -1
    path = shaped_model_path("fe.tflite", {"x": (1, 400)})   # the same, as a file the tools can hand on

A .tflite input may declare unknown sizes: its ``shape_signature`` holds -1 there and its stored ``shape`` a
placeholder (often 1). LiteRT's Interpreter allocates at the stored shape, and so does ours (the Python API keeps
that). The command line tools do not guess: a -1 without a given shape stops before anything runs, naming the
input, its signature and the flag, instead of a kernel error at the placeholder shape. One exception, the
convention of TF / Keras exports and of `edge convert` (a dynamic batch alone becomes 1): a -1 in the leading
(batch) axis of an input of rank >= 2 runs at its stored size (hello_world's [-1, 1] at [1, 1]); every other -1
(a time, length or image axis, whose stored size is only a placeholder) needs its shape. A model error met at a
stored leading size (AudioSpectrogram's [-1, 1] is samples, not a batch) names that input and the flag to give
(``batch_placeholder_note``, appended by the CLI).

``input_shapes``: ``{name: shape}`` or one bare shape for a one-input model (``cli._input_shapes`` builds it from
the flags). A name is an input tensor's name or its SignatureDef name (subgraph 0's signature). A given shape must
keep the signature's rank and every dimension the signature fixes (-1 dims are free). The result sets the input's
shape and its shape_signature to the shape given (a static model: the C runtime's loader, a board's firmware and
`edge check` all see it as the shape to run). Misuse raises UsageError (the CLI's exit 2) naming the flag.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from edge_sdk.errors import UsageError

FLAG = "--input-shape"


def _dims(shape) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def _input_names(model) -> list[tuple[int, str, set[str]]]:
    """(tensor index, the name to print, every name that selects it) for each input of subgraph 0: its tensor
    name, and its SignatureDef name when subgraph 0 has a signature (printed first: it is what users see)."""
    sg = model.subgraphs[0]
    by_tensor: dict[int, str] = {}
    for sig in model.signature_defs or []:
        if sig.subgraph_index == 0:
            for name, t in sig.inputs.items():
                by_tensor.setdefault(t, name)
    out = []
    for t in sg.inputs:
        tensor_name = sg.tensors[t].name
        shown = by_tensor.get(t, tensor_name)
        out.append((t, shown, {tensor_name, shown}))
    return out


def signature_names(model) -> dict[str, str]:
    """{tensor name: SignatureDef name} of the subgraph-0 inputs whose signature name differs (ai-edge-torch's
    'serving_default_args_0:0' -> 'args_0'): the names a request may use beside the tensor's."""
    sg = model.subgraphs[0] if model.subgraphs else None
    return {} if sg is None else {sg.tensors[t].name: shown for t, shown, _ in _input_names(model)
                                  if shown != sg.tensors[t].name}


def _signature(tensor) -> tuple[int, ...]:
    return tuple(tensor.shape_signature) if tensor.shape_signature is not None else tuple(tensor.shape)


def _needs_shape(sig) -> bool:
    """A -1 the stored shape cannot stand for: any but a leading batch axis of a rank >= 2 input."""
    return any(d < 0 for i, d in enumerate(sig) if i > 0 or len(sig) < 2)


def dynamic_inputs(model) -> list[tuple[str, tuple[int, ...], tuple[int, ...]]]:
    """(name, shape signature, stored shape) of every subgraph-0 input that needs a given shape (a -1 beyond the
    batch axis: module docstring)."""
    sg = model.subgraphs[0]
    return [(shown, _signature(sg.tensors[t]), tuple(sg.tensors[t].shape))
            for t, shown, _ in _input_names(model) if _needs_shape(_signature(sg.tensors[t]))]


def batch_placeholder_note(model, given=None) -> str:
    """For an error met at the stored shapes: the rank-2 inputs [-1, C] run at a stored leading size they may not
    mean (a -1 leading axis taken as a batch, module docstring; AudioSpectrogram's [-1, 1] samples are none; image
    and sequence inputs of rank 3 and up lead with a batch) and ``given`` (--input-shape) left alone, named with
    their signature and the flag; "" when there is none."""
    if given is not None and not isinstance(given, dict):
        return ""
    sg = model.subgraphs[0]
    notes = []
    for t, shown, names in _input_names(model):
        sig = _signature(sg.tensors[t])
        if len(sig) == 2 and sig[0] < 0 and not names & set(given or {}):
            example = f"{shown}:" + ",".join(f"D{i}" if d < 0 else str(d) for i, d in enumerate(sig))
            notes.append(f"input '{shown}' {_dims(sig)} ran at its stored {_dims(sg.tensors[t].shape)}, its leading "
                         f"-1 taken as a batch; if it is none, give its size: {FLAG} {example}")
    return f" ({'; '.join(notes)})" if notes else ""


def with_batch_axis(dims, want) -> tuple[int, ...]:
    """An array's ``dims`` as the shape it runs at for an input of shape ``want`` (its signature, or the shape
    --input-shape gives): with a leading axis of one added when the array lacks exactly that axis and the input's
    leading size is 1 or -1 (a [C] row for a [-1, C] classifier runs as one row, as LiteRT resized to [1, C]
    would); ``dims`` unchanged otherwise. The one rule of `edge run`, `bench` and `serve` for an array one axis
    short."""
    dims, want = tuple(int(d) for d in dims), tuple(int(d) for d in want)
    return (1,) + dims if len(dims) == len(want) - 1 and want[0] in (1, -1) else dims


def _example(name: str, sig) -> str:
    return f"{name}:" + ",".join(f"D{i}" for i in range(len(sig)))


def _resolve(model, input_shapes, flag: str) -> dict[int, tuple[int, ...]]:
    """{input tensor index: shape} from ``input_shapes``, every name and shape checked against the model."""
    inputs = _input_names(model)
    shown = ", ".join(n for _, n, _ in inputs) or "none"
    if isinstance(input_shapes, dict):
        given = dict(input_shapes)
    else:
        if len(inputs) != 1:
            raise UsageError(f"{flag}: a bare shape (no NAME:) is for a one-input model; this one has inputs {shown}")
        given = {inputs[0][1]: input_shapes}
    out: dict[int, tuple[int, ...]] = {}
    sg = model.subgraphs[0]
    for name, shape in given.items():
        match = [(t, n) for t, n, names in inputs if name in names]
        if not match:
            raise UsageError(f"{flag}: the model has no input '{name}' (inputs: {shown})")
        t, n = match[0]
        try:
            dims = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise UsageError(f"{flag}: input '{n}': {shape!r} is not a list of integers") from None
        if not dims or any(d < 1 for d in dims):
            raise UsageError(f"{flag}: input '{n}': dims must be positive integers, not {list(dims)}")
        sig = _signature(sg.tensors[t])
        if len(sig) != len(dims):
            raise UsageError(f"{flag}: input '{n}' has shape signature {_dims(sig)} (rank {len(sig)}); "
                             f"{_dims(dims)} has rank {len(dims)}")
        fixed = [i for i, (s, d) in enumerate(zip(sig, dims)) if s >= 0 and s != d]
        if fixed:
            i = fixed[0]
            raise UsageError(f"{flag}: input '{n}' has shape signature {_dims(sig)}: dim {i} is fixed at {sig[i]}, "
                             f"not {dims[i]} (only -1 dims can be given)")
        if t in out:
            raise UsageError(f"{flag}: input '{n}' given twice")
        out[t] = dims
    return out


def judged_shapes(model, input_shapes=None) -> list[dict]:
    """Subgraph 0's inputs at the shapes the check judges them (edge check's CheckResult.input_shapes), from the unshaped
    model and the --input-shape given (checked again by shaped_model, which raises the UsageError)."""
    if not model.subgraphs:
        return []
    try:
        given = _resolve(model, input_shapes, FLAG) if input_shapes else {}
    except UsageError:
        given = {}  # shaped_model says it, naming the flag
    sg, out = model.subgraphs[0], []
    for t, shown, _ in _input_names(model):
        sig = [int(d) for d in _signature(sg.tensors[t])]
        source = "--input-shape" if t in given else "stored" if any(d < 0 for d in sig) else "static"
        shape = list(given[t]) if t in given else [int(d) for d in sg.tensors[t].shape]
        out.append({"name": shown, "shape": shape, "signature": sig, "source": source})
    return out


def require_static_inputs(model, given: set[int] = frozenset(), flag: str = FLAG) -> None:
    """UsageError naming the first input (not in ``given``) whose shape signature has a -1 that needs a shape
    (beyond the batch axis), its signature, the stored shape and the flag that sets it."""
    sg = model.subgraphs[0]
    for t, shown, _ in _input_names(model):
        sig = _signature(sg.tensors[t])
        if t not in given and _needs_shape(sig):
            raise UsageError(f"input '{shown}' has shape signature {_dims(sig)} (stored {_dims(sg.tensors[t].shape)})"
                             f": give its shape with {flag} {_example(shown, sig)}")


def shaped_model(data: bytes, input_shapes=None, flag: str = FLAG, model=None) -> bytes:
    """``data`` (.tflite bytes) with the inputs at ``input_shapes`` (module docstring); unchanged when none is
    given and every input is static. UsageError for misuse, or for an input with a -1 left without a shape.
    ``model``: ``data`` already parsed (a caller that holds it saves a second parse)."""
    from edge_sdk.errors import ModelError
    from edge_sdk.model import read_model, write_model

    if model is None:
        try:
            model = read_model(data)
        except ModelError:
            if input_shapes:
                raise
            return data  # nothing asked: the tool reports the unreadable model its own way, as before
    if not model.subgraphs:
        if input_shapes:
            raise UsageError(f"{flag}: the model has no subgraph (no inputs)")
        return data
    shapes = _resolve(model, input_shapes, flag) if input_shapes else {}
    require_static_inputs(model, set(shapes), flag)
    sg = model.subgraphs[0]
    shapes = {t: s for t, s in shapes.items()
              if s != tuple(sg.tensors[t].shape) or s != _signature(sg.tensors[t])}
    if not shapes:
        return data
    sg = dataclasses.replace(sg, tensors=list(sg.tensors))
    for t, shape in shapes.items():
        sg.tensors[t] = dataclasses.replace(sg.tensors[t], shape=shape, shape_signature=shape)
    return write_model(dataclasses.replace(model, subgraphs=[sg] + list(model.subgraphs[1:])))


def shaped_model_path(path, input_shapes=None, flag: str = FLAG) -> Path:
    """``path`` itself when shaped_model leaves its bytes as they are; else the shaped model written once to
    ``<cache>/shaped/<sha256[:16]>/<the same file name>`` (the name the tools print and ship stays the model's)."""
    from edge_sdk.resources import cached_copy

    path = Path(path)
    data = path.read_bytes()
    shaped = shaped_model(data, input_shapes, flag)
    if shaped is data:
        return path
    return cached_copy("shaped", path.name, shaped)


__all__ = ["FLAG", "INDEX_RANGE", "batch_placeholder_note", "dynamic_inputs", "random_input", "require_static_inputs",
           "shaped_model", "shaped_model_path", "signature_names", "with_batch_axis"]


# Random int32 / int64 / uint32 inputs are token ids, positions, indices (a GATHER of an embedding table refuses
# ids past its rows): drawn from [0, 99], LiteRT's benchmark_model default range for those types
INDEX_RANGE = (0, 99)


def random_input(rng, dtype, shape):
    """One seeded random input: floats standard normal, int32 / int64 / uint32 in INDEX_RANGE, the other integer
    types (quantized activations) over their range, bools 0 / 1."""
    import numpy as np

    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind in "iu" and dtype.itemsize >= 4:
        return rng.integers(INDEX_RANGE[0], INDEX_RANGE[1] + 1, size=shape).astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dtype)
    return np.zeros(shape, dtype)
