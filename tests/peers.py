"""Run a model in the peers — TFLM and LiteRT — for tests that compare our outputs with theirs.

``run_tflm`` / ``run_litert`` run in this process (fast, for models we built ourselves); pass
``isolate=True`` for models that may crash a peer (NOTES: LiteRT aborts on some, TFLM segfaults on a small
arena): the peer then runs in a child process, and a crash comes back as ``PeerCrashed``.
"""

from __future__ import annotations

import pickle
import re
import subprocess
import sys

import numpy as np

TFLM_ARENA = 64 << 20  # TFLM's Python default (10x the model size) is too small for activation-heavy models


class PeerCrashed(RuntimeError):
    pass


def _tflm(model: bytes, inputs: list[np.ndarray], invocations: int = 1) -> list[np.ndarray]:
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(bytes(model), arena_size=TFLM_ARENA)
    outputs = []
    for _ in range(invocations):
        for i, x in enumerate(inputs):
            interp.set_input(np.asarray(x, order="C"), i)
        interp.invoke()
        outputs = [np.array(interp.get_output(i)) for i in range(_count_outputs(model))]
    return outputs


def _count_outputs(model: bytes) -> int:
    from ai_edge_litert import schema_py_generated as schema  # test-only: the peer's own schema reader

    return schema.Model.GetRootAsModel(bytes(model), 0).Subgraphs(0).OutputsLength()


def _litert(model: bytes, inputs: list[np.ndarray], reference: bool = True, invocations: int = 1) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kwargs = {"num_threads": 1}
    if reference:
        kwargs["experimental_op_resolver_type"] = OpResolverType.BUILTIN_REF
    interp = Interpreter(model_content=bytes(model), **kwargs)
    for d, x in zip(interp.get_input_details(), inputs):
        if tuple(np.shape(x)) != tuple(d["shape"]):  # an input of another size (a -1 in its signature): resized to it
            interp.resize_tensor_input(d["index"], list(np.shape(x)))
    interp.allocate_tensors()
    outputs = []
    for _ in range(invocations):
        for d, x in zip(interp.get_input_details(), inputs):
            interp.set_tensor(d["index"], np.asarray(x, order="C"))
        interp.invoke()
        outputs = [np.array(interp.get_tensor(d["index"])) for d in interp.get_output_details()]
    return outputs


def _isolated(name: str, model: bytes, inputs, kwargs) -> list[np.ndarray]:
    import tempfile

    result = tempfile.NamedTemporaryFile(suffix=".pkl", delete=False)
    result.close()
    payload = pickle.dumps((name, bytes(model), [np.asarray(x) for x in inputs], kwargs, result.name))
    proc = subprocess.run(
        [sys.executable, "-c", "from tests import peers; peers._child()"],
        input=payload,
        capture_output=True,
        timeout=600,
        cwd=str(__import__("pathlib").Path(__file__).resolve().parent.parent),
    )
    if proc.returncode != 0:
        raise PeerCrashed(f"{name} exited with {proc.returncode}: {proc.stderr.decode(errors='replace')[-2000:]}")
    with open(result.name, "rb") as f:
        out = pickle.load(f)
    __import__("os").unlink(result.name)
    return out


def _child() -> None:
    # Peers print from C to stdout: the result goes through a file, not the pipe.
    name, model, inputs, kwargs, result_path = pickle.loads(sys.stdin.buffer.read())
    out = {"tflm": _tflm, "litert": _litert}[name](model, inputs, **kwargs)
    with open(result_path, "wb") as f:
        pickle.dump(out, f)


def run_tflm(model: bytes, inputs: list[np.ndarray], isolate: bool = False, invocations: int = 1):
    """Outputs of TFLM's Python interpreter (after ``invocations`` invokes with the same inputs)."""
    kwargs = {"invocations": invocations}
    return _isolated("tflm", model, inputs, kwargs) if isolate else _tflm(model, inputs, **kwargs)


def run_litert(model: bytes, inputs: list[np.ndarray], reference: bool = True, isolate: bool = False, invocations: int = 1):
    """Outputs of LiteRT (its reference kernels by default, else the optimized ones with XNNPACK), each input
    resized to its array's shape where that differs (as a LiteRT user feeds a dynamic input)."""
    kwargs = {"reference": reference, "invocations": invocations}
    return _isolated("litert", model, inputs, kwargs) if isolate else _litert(model, inputs, **kwargs)


# TFLM's arena for a model, as its RecordingMicroAllocator reports it.
_TFLM_CHILD = r"""
import sys
from tflite_micro.python.tflite_micro import runtime
for path in sys.argv[1:]:
    print("@@MODEL " + path, file=sys.stderr, flush=True)
    runtime.Interpreter.from_file(path, arena_size=64 << 20).print_allocations()
"""


def tflm_arenas(paths) -> dict[str, int]:
    """TFLM's planned bytes per model: its arena "head" (tensors + scratch) plus variable-tensor buffers
    (TFLM puts those in the persistent tail; we plan them as always-live buffers).

    In a child process: TFLM prints its report to (unbuffered) stderr, and may crash on a model.
    """
    proc = subprocess.run(
        [sys.executable, "-c", _TFLM_CHILD, *map(str, paths)], capture_output=True, text=True, timeout=300
    )
    out = {}
    for chunk in proc.stderr.split("@@MODEL ")[1:]:
        path, _, text = chunk.partition("\n")
        head = re.search(r"Arena allocation head (\d+) bytes", text)
        var = re.search(r"'TfLiteTensor variable buffer data' used (\d+) bytes", text)
        if head:
            out[path] = int(head.group(1)) + (int(var.group(1)) if var else 0)
    return out
