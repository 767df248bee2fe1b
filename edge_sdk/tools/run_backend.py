"""Which runtime `edge run`, `edge bench` and `edge serve` use (issue 16 point 5: the Linux default).

    choice = choose_runtime(content)                 # "auto": the C runtime when it runs the model
    choice.name, choice.reason                       # "c", "C runtime runs all 64 nodes"
    choice.line()                                    # "runtime: c (C runtime runs all 64 nodes)"
    choice.to_dict()                                 # {"runtime": "c", "runtime_reason": "..."}

``requested``:

- ``"auto"`` (the tools' default): on Linux, the C runtime (edge_sdk.runtime.c_interpreter) when its library is
  available — built, shipped prebuilt by `edge deploy`, or buildable with make and the host's C compiler — and
  its loader and prepare accept the model (every node: kernel, types, options); the Python interpreter
  otherwise, with the reason ("C runtime refuses node 3 SELECT_V2: ..."). Both compute the same results (the
  integer kernels bit-exact, float within the tests' tolerance), the C runtime faster.
- ``"c"``: the C runtime, or an error in one line when it is not available (DeviceError), its build fails
  (BuildError) or it refuses the model (ModelError), naming the node.
- ``"python"``: the Python interpreter (it runs every op of the op table; delegates are the Python API's).

The Python API (``edge_sdk.Interpreter``) keeps its own default, ``backend="python"``: this is the tools'.

A float constant holding NaN (a weight, a bias) makes every output it reaches NaN, whatever the runtime:
``nan_weights`` finds it, the one check behind `edge convert`'s refusal (``refuse_nan_weights``: it would measure
the converted model against NaN) and the warning of `edge run`, `edge bench` and `edge serve`
(``warn_nan_weights``: they still run it, and say before any result why those results mean nothing).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from edge_sdk.errors import BuildError, DeviceError, ModelError

AUTO, PYTHON, C = "auto", "python", "c"
CHOICES = (AUTO, PYTHON, C)


@dataclass(frozen=True)
class RuntimeChoice:
    """The runtime a tool runs a model with, and why (printed, and in the JSON as runtime / runtime_reason)."""

    name: str  # "c" or "python"
    reason: str
    requested: str = AUTO

    def line(self) -> str:
        return f"runtime: {self.name} ({self.reason})"

    def to_dict(self) -> dict:
        return {"runtime": self.name, "runtime_reason": self.reason}


_NODE = re.compile(r"^node (\d+) \((\S+)[^)]*\): (.*?)(?: \[EDGE_[A-Z_]+\])?$", re.S)


def c_refusal(exc: Exception) -> str:
    """'C runtime refuses node N OP: why' from the C runtime's error (CInterpreter's UnsupportedOpError /
    ModelError text "C runtime: node N (OP code X vV): why [STATUS]")."""
    text = " ".join(str(exc).split())
    text = text[len("C runtime: "):] if text.startswith("C runtime: ") else text
    m = _NODE.match(text)
    if m:
        return f"C runtime refuses node {m.group(1)} {m.group(2)}: {m.group(3)}"
    return f"C runtime refuses the model: {text}"


def nan_weights(model) -> str | None:
    """"constant tensor 'w' (subgraph S, tensor T) holds N NaN of M values" for the first float constant of
    ``model`` (a parsed Model) that holds NaN; None when none does. inf is left alone (an attention mask's -inf is
    meant)."""
    import numpy as np

    for s, sg in enumerate(model.subgraphs):
        for t, tensor in enumerate(sg.tensors):
            if tensor.type not in ("FLOAT32", "FLOAT16", "FLOAT64"):
                continue
            value = model.tensor_data(s, t)
            if value is None or not value.size:
                continue
            bad = int(np.count_nonzero(np.isnan(value)))
            if bad:
                return (f"constant tensor {tensor.name!r} (subgraph {s}, tensor {t}) holds {bad} NaN of {value.size} "
                        "values")
    return None


def refuse_nan_weights(model, path, label: str = "MODEL") -> None:
    """ModelError naming the file and the constant when ``model`` holds a NaN weight (`edge convert`'s source)."""
    found = nan_weights(model)
    if found:
        raise ModelError(f"{label} {path}: {found}: every output it reaches is NaN; fix the float model first")


def warn_nan_weights(content: bytes, path, label: str = "MODEL") -> str | None:
    """A warning line naming the file and the constant when the .tflite ``content`` holds a NaN weight (`edge
    run`, `bench`, `serve`: they run it anyway); the warning's text, or None. A file the reader refuses is left
    to the tool (it reports it its own way)."""
    from edge_sdk import log
    from edge_sdk.model import read_model

    try:
        found = nan_weights(read_model(content))
    except ModelError:
        return None
    if not found:
        return None
    text = f"{label} {path}: {found}: every output it reaches is NaN or meaningless; fix the float model"
    log.warning(text)
    return text


def _node_count(model) -> int:
    return sum(len(sg.operators) for sg in model.subgraphs)


def c_accepts(content: bytes, num_threads: int | None = None, memory: str = "layer", *,
              raise_build_error: bool = False, allocate: bool = True):
    """(the allocated CInterpreter, None) when the C runtime loads and prepares ``content``, else (None, why
    not) — why: the library is not available here, or the node it refuses. ``raise_build_error``: a library that
    should build here but does not (its build failed, the compiler is gone) raises its BuildError instead.
    ``allocate`` False (a model whose input shapes come later, per request: its stored shape is a placeholder no
    kernel may run at): the C runtime loads it and has a kernel for every op; each shape is prepared when given."""
    from edge_sdk.errors import EdgeError
    from edge_sdk.runtime import c_interpreter

    ok, why = c_interpreter.available()
    if not ok:
        return None, f"C runtime not available here: {why}"
    try:
        it = c_interpreter.CInterpreter(model_content=content, num_threads=num_threads, memory=memory)
    except BuildError as exc:
        if raise_build_error:
            raise
        return None, f"C runtime not available here: {' '.join(str(exc).split())[:300]}"
    except (EdgeError, ValueError) as exc:
        return None, c_refusal(exc)
    if not allocate:
        missing = c_interpreter.missing_ops(it.model)
        return (None, f"C runtime has no kernel for {', '.join(missing)}") if missing else (it, None)
    try:
        it.allocate_tensors()
    except EdgeError as exc:
        return None, c_refusal(exc)
    return it, None


def python_refusal(content: bytes, allocate: bool = True) -> str | None:
    """Why the Python interpreter refuses ``content`` (its load or prepare: a cycle of subgraph calls, a malformed
    model), or None when it takes it: the C runtime's refusal says "--backend python runs it" only when it does.
    ``allocate`` False (shapes given per request): its load alone, as c_accepts judges the C runtime then."""
    from edge_sdk.errors import EdgeError
    from edge_sdk.runtime.interpreter import Interpreter

    try:
        it = Interpreter(model_content=content)
        if allocate:
            it.allocate_tensors()
    except (EdgeError, ValueError) as exc:
        return " ".join(str(exc).split())
    return None


def choose_runtime(content: bytes, requested: str = AUTO, num_threads: int | None = None,
                   memory: str = "layer", per_request_shapes: bool = False) -> RuntimeChoice:
    """The runtime for ``content`` (a .tflite's bytes) under ``requested`` (module docstring). Forcing "c" on a
    model the C runtime refuses raises ModelError; on a machine without its library or the tools to build it,
    DeviceError; when its build fails, BuildError (the CLI's own exit status for it). ``per_request_shapes``
    (edge serve of a model with a -1 input dim and no --input-shape): judged by its ops, not prepared at the
    stored placeholder shape (c_accepts' ``allocate``); each request's shape is prepared when it comes."""
    if requested not in CHOICES:
        raise ValueError(f"backend must be one of {', '.join(CHOICES)}, not {requested!r}")
    if requested == PYTHON:
        return RuntimeChoice(PYTHON, "--backend python", requested)
    if requested == AUTO and not sys.platform.startswith("linux"):
        return RuntimeChoice(PYTHON, f"the C runtime is the default on Linux only (this is {sys.platform}; "
                                     "--backend c forces it)", requested)
    it, why = c_accepts(content, num_threads, memory, raise_build_error=requested == C,
                        allocate=not per_request_shapes)
    if it is None:
        if requested == C:
            if why.startswith("C runtime not available"):
                raise DeviceError(f"--backend c: {why}")
            python_why = python_refusal(content, allocate=not per_request_shapes)
            raise ModelError(f"--backend c: {why} " + ("(--backend python runs it)" if python_why is None else
                                                       f"(the Python interpreter refuses it too: {python_why})"))
        return RuntimeChoice(PYTHON, why, requested)
    n = _node_count(it.model)
    what = f"C runtime runs all {n} node{'s' if n != 1 else ''}"
    if per_request_shapes:
        what = f"C runtime has a kernel for all {n} node{'s' if n != 1 else ''}; each input shape prepared as it comes"
    return RuntimeChoice(C, what if requested == AUTO else f"--backend c: {what}", requested)


__all__ = ["AUTO", "C", "CHOICES", "PYTHON", "RuntimeChoice", "c_accepts", "c_refusal", "choose_runtime", "nan_weights",
           "python_refusal", "refuse_nan_weights", "warn_nan_weights"]
