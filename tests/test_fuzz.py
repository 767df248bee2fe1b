"""Seeded mutation fuzzing of real models: the reader (and the interpreter, on what loads) either works or
raises ModelError. Anything else fails with the seed and case number that reproduce it:

    from tests.test_fuzz import mutate, fuzz_models
    data, what = mutate(base_bytes, seed, case, hot_spots(base_bytes))

Mutations: bit flips, byte overwrites (0x00 / 0xFF / random), truncations, 4-byte ints with extreme values
and 2-byte vtable entries with extreme values, at random positions, with a share aimed at the first 64
bytes (root offset, identifier, the root table) and at the vtables and table headers.
"""

from __future__ import annotations

import contextlib
import math
import random
import signal
import struct
import sys
import traceback
import warnings

import numpy as np
import pytest

from edge_sdk import ModelError
from edge_sdk.model import schema, write_model
from edge_sdk.model.flatbuf import ROOT, Reader
from edge_sdk.model.reader import read_model
from edge_sdk.model.types import tensor_value
from edge_sdk.model.types import (
    Buffer,
    DimensionMetadata,
    Metadata,
    Model,
    Operator,
    OperatorCode,
    Quantization,
    SignatureDef,
    Sparsity,
    SubGraph,
    Tensor,
)
from tests.conftest import SHARED_MODELS, shared_model
from tests.oprunner import T, op_model

READ_CASES_TOTAL = 10_000  # loading cases across all fuzzed models, per CI run
RUN_CASES = 250  # mutated models that load, per model our interpreter runs: each is allocated and invoked
# ... but for these, within the file's time (67 s on the loaded 2-core machine before built/issue23_ops came): the
# 70-op model costs ~10x a one-op model per case (64 ms; its reads ~4.6 s), keyword_scrambled's 50 fewer cases
# (137 ms each) pay for them
RUN_CASES_OF = {"built/issue23_ops": 60, "tflite-micro/keyword_scrambled.tflite": 200}
RUN_ATTEMPTS = 3000  # mutations tried to find them (most mutations are rejected by the reader)
CASE_SECONDS = 5  # a case that takes longer than this is a hang

SHARED = [
    "tflite-micro/hello_world_int8.tflite",
    "tflite-micro/simple_add_model.tflite",
    "tflite-micro/micro_speech_quantized.tflite",
    "tflite-micro/keyword_scrambled.tflite",
    "tflite-micro/seanet/add/add0.tflite",
    "tflite-micro/seanet/conv/conv0.tflite",
]

_EXTREME32 = (0, 1, 2, 4, 0xFFFFFFFF, 0xFFFFFFFC, 0x7FFFFFFF, 0x80000000, 0x7FFFFFFC, 0xFFFF, 0x10000)
_EXTREME16 = (0, 1, 2, 3, 4, 0xFFFF, 0xFFFE, 0x8000, 0x7FFF)


def everything_model() -> bytes:
    """Two subgraphs (CALL_ONCE), a sparse constant, a custom op, metadata, a signature and a variable."""
    def q(scale, zero_point):
        return Quantization(scale=np.array([scale], np.float32), zero_point=np.array([zero_point], np.int64))

    sparse = Sparsity(
        traversal_order=[0, 1],
        block_map=[],
        dim_metadata=[
            DimensionMetadata("DENSE", dense_size=4),
            DimensionMetadata("SPARSE_CSR", array_segments=np.array([0, 1, 2, 2, 3], np.int32),
                              array_indices=np.array([0, 3, 1], np.uint8)),
        ],
    )
    buffers = [Buffer(b""), Buffer(np.array([1.5, -2.0, 3.25], np.float32).tobytes()), Buffer(b"1.14.0\0"),
               Buffer(np.arange(4, dtype=np.int8).tobytes())]
    t0 = Tensor("x", (1, 4), "INT8", quantization=q(0.5, -1), shape_signature=(-1, 4))
    t1 = Tensor("w_sparse", (4, 4), "FLOAT32", buffer=1, sparsity=sparse)
    t2 = Tensor("w_dense", (4, 4), "FLOAT32")
    t3 = Tensor("y", (1, 4), "INT8", quantization=q(0.5, -1))
    codes = [OperatorCode(schema.BUILTIN_OPERATOR_CODES["CALL_ONCE"]), OperatorCode(schema.BUILTIN_OPERATOR_CODES["DENSIFY"]),
             OperatorCode(schema.CUSTOM_CODE, "MY_CUSTOM", 2), OperatorCode(schema.BUILTIN_OPERATOR_CODES["ADD"], None, 2)]
    sg0 = SubGraph([t0, t1, t2, t3], inputs=[0], outputs=[3, 2], name="main", operators=[
        Operator(0, [], [], "CallOnceOptions", {"init_subgraph_index": 1}),
        Operator(1, [1], [2], "DensifyOptions", {}),
        Operator(2, [0, -1], [3], None, {}, custom_options=b"\x01\x02\x03"),
    ])
    a = Tensor("a", (4,), "INT8", buffer=3, quantization=q(0.25, 0))
    b = Tensor("b", (4,), "INT8", quantization=q(0.25, 0), is_variable=True)
    sg1 = SubGraph([a, b], inputs=[], outputs=[], name="init", operators=[
        Operator(3, [0, 1], [1], "AddOptions", {"fused_activation_function": "RELU6", "pot_scale_int16": False}),
    ])
    model = Model(codes, [sg0, sg1], buffers, description="fuzz: every reader path",
                  metadata=[Metadata("min_runtime_version", 2)],
                  signature_defs=[SignatureDef("serving_default", 0, {"x": 0}, {"y": 3})])
    return write_model(model)


def _built_models() -> dict[str, bytes]:
    """Small models our writer builds, so the fuzz runs without ../shared."""
    x = T((1, 4), "INT8", scale=0.5, zero_point=-1)
    w = T((1, 4), "INT8", scale=0.25, zero_point=3, data=np.arange(-2, 2, dtype=np.int8))
    y = T((1, 4), "INT8", scale=0.5, zero_point=1)
    add = op_model("ADD", [x, w], [y], options={"fused_activation_function": "RELU"})
    xi = T((2, 5), "INT8", scale=0.1, zero_point=2)
    wf = T((3, 5), "INT8", scale=[0.01, 0.02, 0.03], zero_point=0, data=np.arange(15, dtype=np.int8).reshape(3, 5))
    b = T((3,), "INT32", scale=[0.001, 0.002, 0.003], zero_point=0, data=np.array([5, -7, 100], np.int32))
    yo = T((2, 3), "INT8", scale=0.2, zero_point=-3)
    fc = op_model("FULLY_CONNECTED", [xi, wf, b], [yo])
    # control flow: subgraphs called by IF / WHILE (a mutated call may form a cycle, a mutated bound may not end)
    from tests.test_control_flow import counting_while_model, if_model, nested_model
    # issue 23's ops: each one's smallest model, inputs made constants, side by side in one model
    from tests.test_audit23_ops_s19 import fuzz_merged_model

    return {"built/add_int8": add, "built/fully_connected_int8": fc, "built/everything": everything_model(),
            "built/if_int8": if_model("INT8"), "built/while_counting": counting_while_model(),
            "built/while_if_nested": nested_model("FLOAT32"), "built/issue23_ops": fuzz_merged_model()}


def fuzz_models() -> dict[str, bytes]:
    models = _built_models()
    for rel in SHARED:
        path = SHARED_MODELS / rel
        if path.exists():
            models[rel] = path.read_bytes()
    return models


MODELS = fuzz_models()


def hot_spots(data: bytes) -> list[int]:
    """Byte positions worth aiming at: vtables (sizes and field entries) and each table's vtable offset."""
    r = Reader(data)
    m = r.read("Model", struct.unpack_from("<I", data, 0)[0], ROOT)
    spots = set()
    for vt, (_, offsets) in r._vtables.items():
        spots.update(range(vt, vt + 4 + 2 * len(offsets), 2))

    def walk(v):
        if isinstance(v, dict):
            if v.get("__pos__") is not None:
                spots.add(v["__pos__"])
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, (dict, list, tuple)):
                    walk(x)

    walk(m)
    return sorted(s for s in spots if s + 4 <= len(data))


def mutate(base: bytes, seed: int, case: int, spots: list[int]) -> tuple[bytes, str]:
    """The mutated bytes of one case, and what was done (for the failure message)."""
    rnd = random.Random(seed * 1_000_003 + case)
    d = bytearray(base)
    n = len(d)

    def where(width: int) -> int:
        r = rnd.random()
        if r < 0.3:
            return rnd.randrange(0, min(64, n - width + 1))
        if r < 0.6 and spots:
            return min(rnd.choice(spots) + rnd.choice((0, 0, 2)), n - width)
        return rnd.randrange(0, n - width + 1)

    kind = rnd.randrange(7)
    if kind == 0:
        flips = [rnd.randrange(n * 8) for _ in range(rnd.randint(1, 4))]
        for p in flips:
            d[p // 8] ^= 1 << (p % 8)
        return bytes(d), f"bit flips {flips}"
    if kind == 1:
        p = where(1)
        d[p] = rnd.choice((0x00, 0xFF, rnd.randrange(256)))
        return bytes(d), f"byte {p} = {d[p]:#x}"
    if kind == 2:
        cut = rnd.randrange(n)
        return bytes(d[:cut]), f"truncated to {cut} bytes"
    if kind in (3, 4):
        p = where(4)
        v = rnd.choice(_EXTREME32 + (n, n - 4, n + 4, rnd.randrange(1 << 32), (-p) & 0xFFFFFFFF))
        struct.pack_into("<I", d, p, v)
        return bytes(d), f"uint32 at byte {p} = {v:#x}"
    if kind == 5:
        p = rnd.choice(spots) if spots else where(2)
        v = rnd.choice(_EXTREME16 + (rnd.randrange(1 << 16),))
        struct.pack_into("<H", d, p, v)
        return bytes(d), f"uint16 at byte {p} = {v:#x}"
    ps = [where(1) for _ in range(rnd.randint(2, 8))]
    for p in ps:
        d[p] = rnd.randrange(256)
    return bytes(d), f"random bytes at {ps}"


def _describe(e: BaseException) -> str:
    frame = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
    place = f" at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}" if frame else ""
    return f"{type(e).__name__}: {str(e)[:200]}{place}"


class _Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Hang(f"no result within {CASE_SECONDS} s")


@contextlib.contextmanager
def _alarm_handler():
    if not hasattr(signal, "SIGALRM"):
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        yield
    finally:
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _time_limit():
    """Raise _Hang in the block after CASE_SECONDS (where SIGALRM exists)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _load(data: bytes):
    """read_model plus every constant's value; ModelError is a fine answer, so it is returned, not raised."""
    model = read_model(data)
    for j, sg in enumerate(model.subgraphs):
        for i in range(len(sg.tensors)):
            try:
                tensor_value(model, j, i)
            except ModelError:
                pass
    return model


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fuzz_read(name):
    base = MODELS[name]
    _load(base)
    spots = hot_spots(base)
    seed = sum(name.encode()) + len(base)
    cases = math.ceil(READ_CASES_TOTAL / len(MODELS))
    loaded = rejected = 0
    failures = []
    with _alarm_handler():
        for case in range(cases):
            data, what = mutate(base, seed, case, spots)
            try:
                with _time_limit():
                    _load(data)
                loaded += 1
            except ModelError as e:
                rejected += 1
                assert str(e), f"seed {seed} case {case} ({what}): empty ModelError message"
            except Exception as e:  # noqa: BLE001 - the point of the test (includes the hang alarm)
                failures.append(f"seed {seed} case {case} ({what}): {_describe(e)}")
    assert not failures, f"{len(failures)} of {cases} cases of {name} raised something else:\n" + "\n".join(failures[:20])
    # Both outcomes must happen, or the mutations are not reaching the reader.
    assert loaded > cases // 20 and rejected > cases // 4, (loaded, rejected)


FUZZ_ARENA_BYTES = 4 << 20
# WHILE's bound in the fuzz, as a device would set it (a mutated loop limit must not hang a case; nested loops
# multiply, so it is small): past it the invoke is a ModelError naming the node
FUZZ_WHILE_ITERATIONS = 100




def _run(model_or_bytes):
    from edge_sdk.runtime.interpreter import Interpreter

    model = model_or_bytes if not isinstance(model_or_bytes, bytes) else read_model(model_or_bytes)
    # A fixed budget, as on a device: a mutated shape can ask for a huge (valid) tensor, which must be refused
    # with ArenaTooSmallError (a ModelError) rather than taking seconds to compute (the fuzz models need < 64 KB).
    interp = Interpreter(model=model, arena_size=FUZZ_ARENA_BYTES, max_while_iterations=FUZZ_WHILE_ITERATIONS)
    interp.allocate_tensors()
    interp.invoke()


# Fuzz models that are for the reader only (they cannot run by design); every other one must run unmutated.
READER_ONLY = {"built/everything": "a made-up custom op (MY_CUSTOM v2) with no kernel: it exercises the reader"}
RUNNABLE = sorted(name for name in MODELS if name not in READER_ONLY)


@pytest.mark.parametrize("rel", SHARED)
def test_every_listed_shared_model_is_fuzzed(rel):
    """fuzz_models() leaves out what ../shared lacks: with ../shared present, none may be left out."""
    shared_model(rel)
    assert rel in MODELS and rel in RUNNABLE



@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM for the per-case time limit")
@pytest.mark.parametrize("name", RUNNABLE)
def test_fuzz_allocate_and_invoke(name):
    base = MODELS[name]
    _run(base)  # the unmutated model runs (a kernel that broke fails here, not by leaving the model out)
    spots = hot_spots(base)
    seed = sum(name.encode()) * 7 + len(base)
    failures = []
    ran = refused = 0
    with _alarm_handler():
        loaded = 0
        for case in range(RUN_ATTEMPTS):
            if loaded == RUN_CASES_OF.get(name, RUN_CASES):
                break
            data, what = mutate(base, seed, case, spots)
            try:
                model = read_model(data)
            except ModelError:
                continue
            loaded += 1
            try:
                with _time_limit(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # garbage weights overflow float math: fine
                    _run(model)
                ran += 1
            except ModelError:
                refused += 1
            except BaseException as e:
                if isinstance(e, KeyboardInterrupt):
                    raise
                failures.append(f"seed {seed} case {case} ({what}): {_describe(e)}")
    assert not failures, (
        f"{len(failures)} cases of {name} failed in allocate_tensors/invoke with something other than ModelError "
        "(reproduce: mutate(base, seed, case, hot_spots(base))):\n" + "\n".join(failures[:20])
    )
    assert ran > 0, "no mutated model ran: the fuzz is not reaching invoke()"


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM")
def test_time_limit_catches_a_hang(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "CASE_SECONDS", 0.05)
    with _alarm_handler(), pytest.raises(_Hang):
        with _time_limit():
            while True:
                pass


def test_mutations_are_reproducible_and_varied():
    base = MODELS["built/add_int8"]
    spots = hot_spots(base)
    assert mutate(base, 3, 17, spots) == mutate(base, 3, 17, spots)
    kinds = {mutate(base, 3, case, spots)[1].split(" ")[0] for case in range(200)}
    assert kinds == {"bit", "byte", "truncated", "uint32", "uint16", "random"}
