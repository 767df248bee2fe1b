"""`edge profile`: run a model on a device over the serial protocol, time every op, check the outputs.

    report = profile_model("model.tflite", "qemu-mps2-an386", runs=10)      # flashes QEMU when needed
    report = profile_model("model.tflite", "stm32f746-disco", port="/dev/ttyACM0")
    print(format_profile(report))
    write_trace(report, "trace.json"); write_csv(report, "ops.csv"); write_plot(report, "ops.png")

What it does: connect (``--port``; else a running QEMU board from the state file whose model hash matches;
else ``edge flash`` first when the profile's method is ``qemu``), HELLO (protocol version checked by the
link), refuse a device whose model hash differs from the host's model *before* anything runs, send the inputs
(seeded random, or .npy/.npz data), reset the state, run the model ``runs`` times (one INVOKE and one
GET_TRACE per run, so every run has its own per-op record), read the outputs and compare them with
``edge_sdk.Interpreter`` on the same inputs: integer outputs bit for bit, float outputs within a tolerance
(``float_tolerance``; the report's ``float_outputs`` hold each one's largest difference and tolerance).

Times are in the device's timer unit and say which: ``cycles`` (DWT on silicon: real time at clock_hz),
``systick ticks (emulated)`` (QEMU with -icount: deterministic instruction counts, *not* time),
``emulated ticks (cost model)`` (the Python emulator), ``ns``. Only cycles of a real device (and ns) are
converted to microseconds.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import numpy as np

from edge_sdk import log
from edge_sdk import timeouts as T
from edge_sdk.tools import op_report as report_ops
from edge_sdk.errors import DeviceError, ModelError, UsageError
from edge_sdk.runtime import op_table
from edge_sdk.runtime.planner import arena_words, runtime_arena
from edge_sdk.tools.op_report import OpProfile, OpTiming, format_op_table

# ------------------------------------------------------------------------------------------------ inputs
def _coerce(a: np.ndarray, spec, where: str) -> np.ndarray:
    a = np.asarray(a)
    if a.shape != spec.shape:
        if a.size != math.prod(spec.shape):
            raise ModelError(f"{where}: shape {list(a.shape)} does not fit the model's input {spec.index} "
                             f"{spec.type} {list(spec.shape)}")
        a = a.reshape(spec.shape)
    if a.dtype != spec.dtype:
        if a.dtype.kind == "f" and spec.dtype.kind in "iu" and spec.scale:
            info = np.iinfo(spec.dtype)
            q = np.round(a / spec.scale) + spec.zero_point
            a = np.clip(q, info.min, info.max).astype(spec.dtype)
        elif np.can_cast(a.dtype, spec.dtype, "same_kind") or a.dtype.kind == spec.dtype.kind:
            a = a.astype(spec.dtype)
        else:
            raise ModelError(f"{where}: {a.dtype} data for the model's {spec.type} input {spec.index}")
    return np.ascontiguousarray(a)


def make_inputs(specs, data=None, names=None, seed: int = 0, required=None) -> tuple[list[np.ndarray], str]:
    """Inputs for the device: from ``data`` (.npy: the one input; .npz: by input name, else in order), or
    seeded random values (input_shapes.random_input: int32 / int64 in [0, 99], as LiteRT's benchmark_model), except an
    input with a ``required`` value (an output shape an op reads: Interpreter.required_input_values), which takes
    it. Returns (arrays, a description of the source)."""
    if data is not None:
        path = Path(data)
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.ndarray):
            if len(specs) != 1:
                raise ModelError(f"{path}: one array for a model with {len(specs)} inputs: use an .npz")
            return [_coerce(loaded, specs[0], str(path))], str(path)
        keys = list(loaded.files)
        names = names or []
        if names and all(n in keys for n in names):
            arrays = [loaded[n] for n in names]
        else:
            if len(keys) < len(specs):
                raise ModelError(f"{path}: {len(keys)} arrays for a model with {len(specs)} inputs")
            arrays = [loaded[k] for k in keys[:len(specs)]]
        return [_coerce(a, s, f"{path}") for a, s in zip(arrays, specs)], str(path)
    from edge_sdk.model.input_shapes import random_input

    rng = np.random.default_rng(seed)
    out = []
    for k, s in enumerate(specs):
        if required is not None and required[k] is not None:
            out.append(np.asarray(required[k], s.dtype).reshape(s.shape))
        else:
            out.append(random_input(rng, s.dtype, s.shape))
    return out, f"random (seed {seed})"


# ------------------------------------------------------------------------------------------------ units
def unit_label(hello, profile=None) -> tuple[str, bool, float | None]:
    """(label, is real time, instructions per unit or None) for the device's timer."""
    src = hello.timer_source
    emulated = hello.emulated or hello.board.startswith("qemu")
    if src == "cycles" and not emulated:
        return "cycles", True, None
    if src == "host-ns":
        return "ns", True, None
    if src == "emulated":
        return "emulated ticks (cost model)", False, None
    if src == "systick" and emulated:
        ipu = None
        if profile is not None and profile.flash.get("method") == "qemu" and profile.timer.get("hz"):
            shift = int(profile.flash.get("icount_shift", 0))
            ipu = 1e9 / (1 << shift) / float(profile.timer["hz"])
        return "systick ticks (emulated)", False, ipu
    return f"{hello.timer_units or src} ticks" + (" (emulated)" if emulated else ""), False, None


# ------------------------------------------------------------------------------------------------ trace
def subgraph_callers(model) -> dict[int, tuple[int, int]]:
    """{called subgraph: (subgraph, node) of the first node that runs it} (WHILE, IF, CALL_ONCE): the rows of a
    called subgraph are a breakdown of that node's time (op_report: the top-level rows alone make the 100%);
    `edge profile` and `edge bench` place them under it."""
    from edge_sdk.runtime.planner import callees

    caller_of: dict[int, tuple[int, int]] = {}
    for s, sg in enumerate(model.subgraphs):
        for k, op in enumerate(sg.operators):
            for c in callees(model, op):
                caller_of.setdefault(c, (s, k))
    return caller_of


# the name kernels.control_flow.with_call_site_copy gives a copy: "<original's name or index>@<s>.<i>"
_COPY_NAME = re.compile(r"^(?P<base>.*)@(?P<s>\d+)\.(?P<i>\d+)$")


def call_site_copies(model) -> list[dict]:
    """The subgraphs of ``model`` (the bytes a runtime loaded) that are per-call-site copies its prepare made (a
    subgraph called at other shapes runs as a copy per call site: kernels.control_flow.with_call_site_copy), each
    ``{"subgraph", "copy_of", "caller": [s, i]}``; [] for a model as written."""
    out = []
    for c, sg in enumerate(model.subgraphs):
        m = _COPY_NAME.match(sg.name or "")
        original = None if m is None else next(
            (o for o in range(c) if (model.subgraphs[o].name or str(o)) == m["base"]), None)
        if original is not None:
            out.append({"subgraph": c, "copy_of": original, "caller": [int(m["s"]), int(m["i"])]})
    return out


def copies_line(copies: list[dict]) -> str | None:
    """What the per-op table's copy rows are, in words (None without copies)."""
    if not copies:
        return None
    where = [f"{c['subgraph']} of {c['copy_of']} for node "
             + (f"{c['caller'][1]}" if not c["caller"][0] else f"{c['caller'][0]}:{c['caller'][1]}") for c in copies]
    return ("note: call-site copies (a subgraph called at other shapes runs as a copy per call site; the model has "
            f"none): {', '.join(where)}")


def _board_model(data: bytes, model):
    """The model the board runs (``data``: the bytes the C runtime loads, edge_sdk.runtime.c_loaded, whose
    subgraph and node indices its trace names: a copy of a subgraph per call site at other shapes, appended);
    ``model`` when those bytes do not read."""
    from edge_sdk.model import read_model

    try:
        return read_model(data)
    except ModelError:  # the host's prepared model holds the same subgraphs (c_loaded is built over its prepare)
        return model


def _run_op_ticks(records) -> list[tuple[tuple[int, int], int, int]]:
    """One run's trace records as ``((subgraph, node), ticks, times it ran)``, in first-run order: a node of a
    subgraph that an IF / WHILE calls runs once per call (a WHILE body once per iteration), so its record
    appears that many times in the run; its ticks add up. A node that calls subgraphs (IF, WHILE, CALL_ONCE)
    is timed around the call: its ticks include its callees' (the rows of those nodes say how)."""
    total: dict[tuple[int, int], list[int]] = {}
    for rec in records:
        entry = total.setdefault((rec.subgraph, rec.index), [0, 0])
        entry[0] += int(rec.ticks)
        entry[1] += 1
    return [(key, ticks, n) for key, (ticks, n) in total.items()]


# ------------------------------------------------------------------------------------------------ compare
def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.dtype == bool:
        return a.view(np.uint8)
    return a.view(f"u{a.dtype.itemsize}")


# Float outputs: the board's float kernels are the same C as the host's C runtime, but not the host
# interpreter's numpy: newlib's expf/tanhf/logf, no fused multiply-adds and another summation order differ from
# the host by a few ulps per op (LiteRT and TFLM float results differ the same way), and the ulps add up along a
# graph. max|device - host| <= FLOAT_RTOL * max(1, max|host|) scales with the output's magnitude as ulps do
# (1e-5 is about 84 float32 ulps at 1.0: 4.77e-07 after a LOGISTIC is 4 ulps), and still catches a kernel bug
# (a wrong index, a wrong rounding, a missed activation: differences of 1e-3 of the range and more). NaN must
# meet NaN, an infinity the same infinity. Integer (and bool) outputs stay bit for bit: both runtimes follow
# TFLM's integer arithmetic exactly.
FLOAT_RTOL = {np.dtype(np.float16): 4e-3, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


def float_tolerance(host: np.ndarray) -> float:
    """The largest |device - host| a float output may show (FLOAT_RTOL of its dtype, times max(1, max|host|))."""
    finite = np.abs(host[np.isfinite(host)].astype(np.float64))
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    return FLOAT_RTOL.get(host.dtype, 1e-5) * scale


def _float_difference(d: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, float]:
    """(elements outside the tolerance, the largest |d - h| over elements both hold as finite values)."""
    d64, h64 = d.astype(np.float64), h.astype(np.float64)
    both = np.isfinite(d64) & np.isfinite(h64)
    delta = np.where(both, np.abs(d64 - h64), 0.0)
    same_special = (np.isnan(d64) & np.isnan(h64)) | (~both & (d64 == h64))
    bad = ~same_special & (~both | (delta > float_tolerance(h)))
    return bad, float(delta.max()) if delta.size else 0.0


def compare_outputs(device: list[np.ndarray], host: list[np.ndarray], model, floats: list | None = None) -> list[dict]:
    """Mismatches output by output, naming the op that writes the output: integer (and bool) outputs bit for
    bit, float outputs within float_tolerance. ``floats``: a list that gets one record per float output
    (output, tensor, max_abs_diff, tolerance, bit_exact, within)."""
    sg = model.subgraphs[0]
    producer = {}
    for k, op in enumerate(sg.operators):
        for t in op.outputs:
            producer[t] = k
    out = []
    for i, (d, h) in enumerate(zip(device, host)):
        t = sg.outputs[i]
        k = producer.get(t)
        op = model.operator_codes[sg.operators[k].opcode_index].name if k is not None else None
        base = {"output": i, "tensor": sg.tensors[t].name, "op_index": k, "op": op}
        if d.shape != h.shape or d.dtype != h.dtype:
            out.append({**base, "elements": int(h.size), "differ": int(h.size),
                        "message": f"device {d.dtype} {list(d.shape)} vs host {h.dtype} {list(h.shape)}"})
            continue
        if h.dtype.kind == "c":  # complex (RFFT2D): its real and imaginary parts held as floats, [..., 2]
            d, h = (np.ascontiguousarray(a).view(a.real.dtype).reshape(*a.shape, 2) for a in (d, h))
        diff = _bits(d) != _bits(h)
        if h.dtype.kind == "f":
            bad, largest = _float_difference(d, h)
            tolerance = float_tolerance(h)
            if floats is not None:
                floats.append({"output": i, "tensor": sg.tensors[t].name, "max_abs_diff": largest,
                               "tolerance": tolerance, "bit_exact": not bool(diff.any()), "within": not bool(bad.any())})
            diff = bad
        n = int(diff.sum())
        if n:
            first = tuple(int(x) for x in np.argwhere(diff)[0])
            delta = np.abs(d.astype(np.float64) - h.astype(np.float64))
            within = f" by more than {float_tolerance(h):.3g} (the float tolerance)" if h.dtype.kind == "f" else ""
            out.append({**base, "elements": int(h.size), "differ": n, "first_index": list(first),
                        "device_value": d[first].item(), "host_value": h[first].item(),
                        "max_abs_diff": float(np.nanmax(delta)) if delta.size else 0.0,
                        "message": f"output {i} ('{sg.tensors[t].name}', written by op {k} {op}): {n} of "
                                   f"{h.size} elements differ{within}"})
    return out


def _closest(floats: list[dict]) -> dict:
    """The float output record whose difference is the largest share of its tolerance."""
    return max(floats, key=lambda f: f["max_abs_diff"] / f["tolerance"])


def validation_line(r: dict) -> str:
    """How the device's outputs compare with the host's, in words: bit for bit, or floats within the tolerance."""
    floats = r.get("float_outputs") or []
    if all(f["bit_exact"] for f in floats):
        return "outputs: identical to the host interpreter (bit for bit)"
    ints = len(r.get("outputs") or []) > len(floats)
    return ("outputs: " + ("integer outputs identical (bit for bit); " if ints else "")
            + f"float outputs within {r['float_max_abs_diff']:.3g} (tolerance {r['float_tolerance']:.3g}) of the "
            "host interpreter")


def tolerance_note(r: dict) -> str | None:
    """The tolerance float outputs were held to, when they matched bit for bit (validation_line then names none):
    a float model's validation always says its tolerance (issue 23 point 4)."""
    floats = r.get("float_outputs") or []
    if not floats or not all(f["bit_exact"] for f in floats):
        return None
    return f"  (float outputs are held to a tolerance of {r['float_tolerance']:.3g}; these matched exactly)"


# ------------------------------------------------------------------------------------------------ run
def _connect(model_path: Path, data: bytes, profile, port, build_dir, memory=None, input_shapes=None):
    """``model_path``: the user's file (flash shapes it by ``input_shapes`` and names it, not the cached copy);
    ``data``: the bytes the board runs."""
    from edge_sdk.tools import flash as fl

    note, plan = None, None
    if port is None:
        method = profile.flash.get("method")
        if method == "qemu":
            sha = hashlib.sha256(data).hexdigest()
            board = fl.find_board(sha, profile.name)
            if board is not None and memory is not None and board.get("memory_request") != memory:
                board = None  # built for another --memory: flash the plan asked for
            if board is not None:
                port, note = board["url"], f"reused the running board {board['url']}"
                plan = {"memory_plan": board.get("memory"), "patch": board.get("patch")}  # None: not on record
            else:
                r = fl.flash(model_path, profile, build_dir=build_dir, memory=memory, input_shapes=input_shapes)
                port, note = r.port, f"flashed and started {r.port} (stop it with: edge board stop {r.port})"
                plan = {"memory_plan": r.memory, "patch": r.patch}
        else:
            port = profile.serial.get("port")
            if not port:
                raise DeviceError(f"no --port: give the serial port of the {profile.name} (e.g. /dev/ttyACM0), "
                                  f"after `edge flash {model_path} --target {profile.name}`")
    return port, note, plan


def profile_model(model_path, target, port: str | None = None, runs: int = 10, inputs=None, seed: int = 0,
                  timeout: float = T.SERIAL_ANSWER_TIMEOUT, retries: int = T.SERIAL_RETRIES,
                  invoke_timeout: float = T.DEVICE_RUN_TIMEOUT, build_dir=None, memory: str | None = None,
                  input_shapes=None) -> dict:
    """Profile ``model_path`` on the device of profile ``target`` (see the module docstring); returns the
    report (a JSON-able dict). ``input_shapes`` (`--input-shape`): the model profiled (and flashed) with its
    inputs at these shapes (edge_sdk.model.input_shapes; a -1 beyond the batch axis without one is a
    UsageError)."""
    from edge_sdk.model.input_shapes import shaped_model_path
    from edge_sdk.device.serial_link import CAP_RESET_STATE, SerialLink
    from edge_sdk.runtime.interpreter import Interpreter
    from edge_sdk.runtime.c_loaded import c_path
    from edge_sdk.runtime.uint8 import c_io, c_io_note
    from edge_sdk.targets.profiles import Profile, load_profile

    if runs < 1:
        raise UsageError(f"--runs must be at least 1, not {runs}")
    if not timeout > 0:
        raise UsageError(f"--timeout must be > 0 seconds, not {timeout}")
    if retries < 0:
        raise UsageError(f"--retries must be >= 0, not {retries}")
    profile = target if isinstance(target, Profile) else load_profile(target)
    given = Path(model_path)  # the user's file: messages and the report name it, not the shaped copy
    model_path = shaped_model_path(model_path, input_shapes)
    host = Interpreter(model_content=model_path.read_bytes())
    host.allocate_tensors()
    model = host.model
    # the board runs the bytes the C runtime loads (a legacy UINT8 model presented as INT8: edge flash embeds
    # those); the host compares in the model's own types, flipping the presented inputs / outputs at the link
    board_path, uint8_pairs = c_path(model_path)
    data = board_path.read_bytes()
    port, note, plan = _connect(given, data, profile, port, build_dir, memory, input_shapes)
    log.stage(f"profiling {model_path.name} on {port}")
    link = SerialLink(port, timeout=timeout, retries=retries, invoke_timeout=invoke_timeout)
    try:
        report = _run(link, host, model, model_path, data, profile, port, note, runs, inputs, seed, CAP_RESET_STATE,
                      c_io(model, uint8_pairs))
        report["uint8_io"] = c_io_note(model, uint8_pairs)
        report["model"] = str(given)
    finally:
        link.close()
    # the arena plan the firmware runs (planner.REALISED_PLANS), when this call flashed it or found its board;
    # None: a device flashed another way (its plan is not known here)
    report["memory_plan"] = None if plan is None else plan["memory_plan"]
    if plan is not None and plan.get("memory_plan"):
        from edge_sdk.runtime.planner import PLAN_WORDS

        report["arena_where"] += f", {PLAN_WORDS.get(plan['memory_plan'], plan['memory_plan'])} plan"
    report["patch"] = None if plan is None else plan["patch"]
    return report


def _declared(specs, presented) -> list:
    """The board's tensor specs as the model declares them: a presented one (``presented``: its positions,
    edge_sdk.runtime.uint8.c_io) is the model's UINT8, zero point + 128."""
    from dataclasses import replace

    from edge_sdk.runtime.uint8 import SHIFT

    return [replace(s, type="UINT8", zero_point=s.zero_point + SHIFT) if k in presented else s
            for k, s in enumerate(specs)]


def _run(link, host, model, model_path, data, profile, port, note, runs, inputs, seed, cap_reset,
         uint8_io=((), ())) -> dict:
    from edge_sdk.runtime.uint8 import to_int8, to_uint8

    try:
        hello = link.hello()
        link.expect_model(data)
    except DeviceError as exc:
        logs = "; ".join(line.text for line in link.logs)
        raise DeviceError(f"{exc}" + (f" (device log: {logs})" if logs else "")) from None
    label, real_time, ipu = unit_label(hello, profile)
    info = link.info()
    in_specs, out_specs = _declared(info.inputs, uint8_io[0]), _declared(info.outputs, uint8_io[1])
    in_details = host.get_input_details()
    arrays, source = make_inputs(in_specs, inputs, [d["name"] for d in in_details], seed,
                                 host.required_input_values())
    # variables, or an op with effects (resource variables, called subgraphs): each run may differ from the last
    stateful = any(t.is_variable for s in model.subgraphs for t in s.tensors) or any(
        op_table.row(model.operator_codes[op.opcode_index].name).effects
        for s in model.subgraphs for op in s.operators)

    per_op: dict[tuple[int, int], list[int]] = {}
    calls: dict[tuple[int, int], int] = {}  # runs of a node inside called subgraphs (IF / WHILE): all runs together
    op_codes: dict[tuple[int, int], int] = {}
    run_ticks: list[int] = []
    high_water = arena_used = 0
    dropped = 0
    with log.progress(runs + 2, f"profile ({runs} runs)") as bar:
        for i, a in enumerate(arrays):
            link.set_input(i, to_int8(a) if i in uint8_io[0] else a)
        # both sides start alike: the host runs a fresh interpreter, so the board restarts its runtime (the state
        # after boot: variables, resource variables and CALL_ONCE as before the first invoke) rather than keep what
        # an earlier session left; a board without RESTART gets the runtime's reset (a CALL_ONCE that ran stays done)
        from edge_sdk.device.serial_link import CAP_RESTART

        if hello.capabilities & CAP_RESTART:
            link.reset_state(restart=True)
        elif hello.capabilities & cap_reset:
            link.reset_state()
        bar.advance()
        for _ in range(runs):
            r = link.invoke(1)
            trace = link.get_trace()
            run_ticks.append(int(r.last_ticks))
            for key, ticks, n in _run_op_ticks(trace.ops):
                per_op.setdefault(key, []).append(ticks)
                calls[key] = calls.get(key, 0) + n
            for rec in trace.ops:
                op_codes[(rec.subgraph, rec.index)] = rec.op_code
            high_water, arena_used, dropped = trace.arena_high_water, trace.arena_used, trace.dropped
            bar.advance()
        device_out = [to_uint8(link.get_output(i)) if i in uint8_io[1] else link.get_output(i)
                      for i in range(len(info.outputs))]
        bar.advance()

    # the host's answer for the same inputs and the same number of runs (once for stateless models)
    for d, a in zip(in_details, arrays):
        host.set_tensor(d["index"], a)
    for _ in range(runs if stateful else 1):
        host.invoke()
    host_out = [host.get_tensor(d["index"]) for d in host.get_output_details()]
    floats: list[dict] = []
    mismatches = compare_outputs(device_out, host_out, model, floats)

    n_sub = len(model.subgraphs)
    macs = [host.op_macs(s) for s in range(n_sub)]
    shapes = [host.tensor_shapes(s) for s in range(n_sub)]
    board_model = _board_model(data, model)
    caller_of = subgraph_callers(board_model)
    timings = []
    for (s, k), ticks in sorted(per_op.items()):
        m = macs[s][k] if s < n_sub and k < len(macs[s]) else None
        if m and s:  # a node of a called subgraph: its MACs each time it ran, per run
            m = m * calls[(s, k)] / max(len(ticks), 1)
        code = model.operator_codes[model.subgraphs[s].operators[k].opcode_index] \
            if s < n_sub and k < len(model.subgraphs[s].operators) else None
        name = (code.custom_code if code is not None and code.name == "CUSTOM" else code.name) if code else \
            f"OP_{op_codes[(s, k)]}"
        out_t = model.subgraphs[s].operators[k].outputs if code is not None else []
        shape = list(shapes[s][out_t[0]]) if out_t and out_t[0] >= 0 else None
        timings.append(OpTiming(index=k, op=name, samples=list(ticks), subgraph=s, output_shape=shape,
                                macs=int(m) if m else 0, caller=caller_of.get(s) if s else None))
    us_per_unit = _us_per_unit(label, real_time, hello.clock_hz)
    ops = OpProfile(ops=timings, unit=label, run_totals=run_ticks, us_per_unit=us_per_unit).rows()
    rt = np.array(run_ticks, dtype=np.float64)
    # ops_sum: subgraph 0's rows (a called subgraph's time is inside its caller's, not added twice)
    total = {"mean": float(rt.mean()), "p50": float(np.percentile(rt, 50)), "p90": float(np.percentile(rt, 90)),
             "min": int(rt.min()), "max": int(rt.max()),
             "ops_sum": float(sum(o["time"] for o in ops if not o["subgraph"])),
             "macs": int(sum(o["macs"] for o in ops))}
    if us_per_unit is not None and label == "cycles":
        total["mean_us"] = total["mean"] * us_per_unit
    return {
        "model": str(model_path), "model_sha256": hashlib.sha256(data).hexdigest(), "target": profile.name,
        "port": port, "board": hello.board, "runtime_version": hello.runtime_version,
        "protocol_version": hello.protocol_version, "timer_source": hello.timer_source, "unit": label,
        "real_time": real_time, "emulated": bool(hello.emulated or hello.board.startswith("qemu")),
        "instructions_per_unit": ipu, "clock_hz": hello.clock_hz, "runs": len(run_ticks), "run_ticks": run_ticks,
        "ops": ops, "total": total, "arena_high_water": int(high_water), "arena_used": int(arena_used),
        # the runtime's arena (planner.runtime_arena: edge check's figure, measured by the board itself) and the
        # buffer the firmware reserves for it (HELLO's arena size: that figure plus flash's margin)
        "arena_size": runtime_arena(high_water, arena_used), "arena_buffer_bytes": int(hello.arena_size),
        "arena_where": f"the runtime on {hello.board}, measured on the device",
        "trace_dropped": int(dropped), "validated": not mismatches,
        "mismatches": mismatches, "inputs": source, "float_outputs": floats,
        # the float output nearest its tolerance (its difference and tolerance: the figures the text prints)
        "float_max_abs_diff": _closest(floats)["max_abs_diff"] if floats else None,
        "float_tolerance": _closest(floats)["tolerance"] if floats else None,
        "outputs": [{"index": i, "type": s.type, "shape": list(s.shape)} for i, s in enumerate(out_specs)],
        "link": {"retransmissions": link.retransmissions, "corrupt_frames": link.corrupt_frames},
        "logs": [str(x) for x in link.logs], "note": note,
        "call_site_copies": call_site_copies(board_model),
        "_per_run": {f"{s}:{k}": v for (s, k), v in per_op.items()},
    }


# ------------------------------------------------------------------------------------------------ output
def format_profile(r: dict) -> str:
    unit = r["unit"]
    lines = [f"{Path(r['model']).name} on {r['board']} ({r['port']}), {r['runtime_version']}, {r['runs']} run(s)",
             f"timer: {unit}" + ("" if r["real_time"] else " -- not real time")
             + (f"; about {r['instructions_per_unit']:g} instructions per tick" if r.get("instructions_per_unit") else "")]
    lines += format_op_table(r["ops"])
    if copies_line(r.get("call_site_copies") or []):
        lines.append(copies_line(r["call_site_copies"]))
    t = r["total"]
    lines.append(f"total per run ({unit}): mean {t['mean']:,.1f}  p50 {t['p50']:,.1f}  p90 {t['p90']:,.1f}  "
                 f"min {t['min']:,}  max {t['max']:,}  (ops sum {t['ops_sum']:,.1f}; {t['macs']:,} MACs)")
    if "mean_us" in t:
        lines.append(f"mean time: {t['mean_us']:.1f} us at {r['clock_hz'] / 1e6:g} MHz")
    lines.append(arena_words(r["arena_size"], r["arena_where"]))
    lines.append(f"arena buffer {r['arena_buffer_bytes']} B (reserved by the firmware: the arena + flash's margin; "
                 f"high water {r['arena_high_water']} B, in use after init {r['arena_used']} B)")
    if r.get("memory_plan"):
        from edge_sdk.tools.flash import plan_words

        lines.append(f"arena plan: {plan_words(r['memory_plan'], r.get('patch'))}")
    if r["validated"]:
        lines.append(validation_line(r))
        if tolerance_note(r):
            lines.append(tolerance_note(r))
    else:
        for m in r["mismatches"]:
            lines.append(f"MISMATCH: {m['message']}")
    if r["link"]["retransmissions"]:
        lines.append(f"link: {r['link']['retransmissions']} retransmission(s), {r['link']['corrupt_frames']} "
                     f"corrupt frame(s) recovered")
    if r.get("note"):
        lines.append(f"note: {r['note']}")
    if r.get("uint8_io"):
        lines.append(f"note: {r['uint8_io']}; the host flips them at the link and compares the outputs in the "
                     "model's own types")
    return "\n".join(lines) + "\n"


def public(report: dict) -> dict:
    """The report without internal keys (what --json prints)."""
    return {k: v for k, v in report.items() if not k.startswith("_")}


def _us_per_unit(unit: str, real_time: bool, clock_hz) -> float | None:
    """Microseconds per timer unit: cycles of a real device at clock_hz, ns; None when not real time."""
    if real_time and unit == "cycles" and clock_hz:
        return 1e6 / clock_hz
    if unit == "ns":
        return 1e-3
    return None


def op_profile(r: dict) -> OpProfile:
    """The report's per-op times (every run) as the shared record type of edge_sdk.tools.op_report."""
    per_run = r["_per_run"]
    ops = [OpTiming(index=o["index"], op=o["op"], samples=per_run[f"{o['subgraph']}:{o['index']}"],
                    subgraph=o["subgraph"], output_shape=o["output_shape"], macs=o["macs"],
                    caller=tuple(o["caller"]) if o.get("caller") and o["caller"][1] is not None else None)
           for o in r["ops"]]
    return OpProfile(ops=ops, unit=r["unit"], run_totals=r["run_ticks"],
                     us_per_unit=_us_per_unit(r["unit"], r["real_time"], r["clock_hz"]), model=r["model"],
                     where=r["board"], meta={"board": r["board"]})


def write_trace(r: dict, path) -> None:
    """A Chrome / Perfetto trace: one complete event per op per run, runs back to back (report_ops.trace_document)."""
    report_ops.write_trace(op_profile(r), path)


def write_csv(r: dict, path) -> None:
    """The per-op table as CSV (report_ops.CSV_COLUMNS)."""
    report_ops.write_csv(r["ops"], path)


def write_plot(r: dict, path) -> None:
    """A horizontal bar per op (mean time), labelled, as a PNG (Pillow)."""
    report_ops.write_plot(op_profile(r), path,
                          footer="validated: " + (validation_line(r).removeprefix("outputs: ") if r["validated"]
                                                  else "NO"))
