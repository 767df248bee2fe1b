"""edge-sdk converters: ONNX / float TFLite in, int8 / fp16 TFLite out.

    from converters import convert
    result = convert("model.onnx", target="stm32f746-disco", quantize="int8", calibration="calib/",
                     labels="labels.txt", eval_data="test.npz")
    result.save("model.tflite")          # atomic; result.tflite is the same bytes
    result.report["accuracy"]["accuracy_drop"], result.report["layers"][0]   # worst layer first

The pipeline: import (``converters.import_onnx`` / ``converters.import_tflite``) -> ``converters.passes.optimize``
-> ``converters.quantize.quantize`` with calibration samples from ``converters.calibration`` -> the package
manifest (``edge_sdk.model.manifest``) -> with ``target``, ``edge_sdk.targets.check.check_model`` against the device
profile (loaded once): a model that cannot run there raises ``ConversionError`` listing every reason, and nothing is
written -> with ``eval_data``, accuracy and calibration of the result beside the float model
(``converters.evaluate``), recorded in the report and the manifest.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from converters.evaluate import DETECTIONS_GOAL, MAP_IOU_GOAL, TOP1_GOAL
from edge_sdk.errors import ConversionError, ModelError, UsageError

QUANTIZE_MODES = ("int8", "int16x8", "fp16", "dynamic", "none")
CALIB_METHODS = ("auto", "minmax", "percentile", "mse", "least-error")
IO_TYPES = ("int8", "float32")
PRECISIONS = ("auto", "int8")
MIN_SNR_DB = 30.0
HOLDOUT = 32  # calibration samples (every 5th, at most this many) held back to measure the result
_NEEDS_CALIBRATION = ("int8", "int16x8")


@dataclass
class ConversionResult:
    """The converted model (``model``), its serialized bytes (``tflite``) and the conversion ``report``."""

    model: object
    tflite: bytes
    report: dict = field(default_factory=dict)

    @property
    def manifest(self) -> dict | None:
        return self.report.get("manifest")

    def save(self, path) -> Path:
        """Write the .tflite atomically (a reader never sees half a file). Returns the path."""
        from edge_sdk.model import write_model

        data = write_model(self.model, path)
        if data != self.tflite:  # the model object was changed after conversion: keep both views in step
            self.tflite = data
        return Path(path)

    def write(self, path) -> Path:
        """Write ``tflite`` atomically: the bytes convert() serialized once and its target check measured (``save``
        serializes ``model`` again, for a model changed after conversion). Returns the path."""
        from edge_sdk.model import write_bytes

        write_bytes(path, self.tflite)
        return Path(path)


def _version() -> str:
    from edge_sdk import __version__

    return __version__


def _label_count_notes(model, spec: dict, labels: list[str]) -> list[str]:
    """A labels file whose line count is not a class output's class count: its classes would be named wrongly or
    not at all (``edge run``'s top-k reads the manifest's labels by index). One note per such output."""
    sg = model.subgraphs[0]
    classes = {sg.tensors[t].name: int(sg.tensors[t].shape[-1]) for t in sg.outputs if len(sg.tensors[t].shape)}
    return [f"--labels (labels=) has {len(labels)} label(s) but output '{n}' has {classes[n]} classes: "
            + (f"classes {len(labels)}..{classes[n] - 1} have no label" if len(labels) < classes[n] else
               f"the last {len(labels) - classes[n]} label(s) name no class")
            for n in spec["outputs"] if n in classes and classes[n] != len(labels)]


def _read_source(src) -> tuple[str, bytes, str, object]:
    """(format, bytes, display name, object to import) for a path, bytes, onnx.ModelProto or Model."""
    from edge_sdk.model import Model, write_model

    if isinstance(src, Model):  # its bytes: the source's sha256, and a private copy (the importer changes its model)
        data = write_model(src)
        return "tflite", data, "<Model>", data
    if hasattr(src, "SerializeToString") and hasattr(src, "graph"):
        return "onnx", src.SerializeToString(), "<onnx.ModelProto>", src
    if isinstance(src, (bytes, bytearray, memoryview)):
        data = bytes(src)
        kind = "tflite" if data[4:8] == b"TFL3" else "onnx"
        return kind, data, "<bytes>", data
    path = Path(src)
    data = path.read_bytes()  # FileNotFoundError names the path
    kind = source_format(path, data[:8])
    if kind is None:
        raise ConversionError(f"{path}: not an ONNX or TFLite model (by its name and first bytes)")
    return kind, data, str(path), data


def source_format(path, head: bytes | None = None) -> str | None:
    """"tflite" or "onnx": what a source model file is by its name and first bytes (``head``: its first 8 bytes,
    read here when not given), the rule convert() reads by (`edge convert` checks SRC with it before any
    setting); None when it is neither."""
    path = Path(path)
    if head is None:
        with open(path, "rb") as f:
            head = f.read(8)
    if head[4:8] == b"TFL3" or path.suffix.lower() == ".tflite":
        return "tflite"
    if path.suffix.lower() == ".onnx" or head[:1] == b"\x08":  # ModelProto starts with ir_version (field 1)
        return "onnx"
    return None


def _labels(labels) -> list[str] | None:
    if labels is None:
        return None
    if isinstance(labels, (str, os.PathLike)):
        lines = Path(labels).read_text(encoding="utf-8").splitlines()
        return [line.strip() for line in lines if line.strip()]
    return [str(x) for x in labels]


def _single_input_shape(model) -> tuple[int, ...] | None:
    sg = model.subgraphs[0]
    return tuple(sg.tensors[sg.inputs[0]].shape) if len(sg.inputs) == 1 else None


def _preprocess(preprocess, model, nhwc_io: bool):
    """The Preprocess for this model (given, or derived from a 4-axis image input), in the layout of the
    converted model's input; None for non-image inputs without one."""
    from converters.evaluate import as_preprocess

    shape = _single_input_shape(model)
    if preprocess is None and (shape is None or len(shape) != 4 or not (shape[1] in (1, 3) or shape[3] in (1, 3))):
        return None
    if isinstance(preprocess, dict) or preprocess is None:
        d = dict(preprocess or {})
        if nhwc_io:
            d["layout"] = "NHWC"
        return as_preprocess(d, shape)
    if nhwc_io and getattr(preprocess, "layout", "NHWC") != "NHWC":
        preprocess = dataclasses.replace(preprocess, layout="NHWC")
    return preprocess


def _calibration(calibration, model, preprocess):
    """Calibration samples for ``model``; an evaluation-style .npz (x, y) or an array of samples in the other
    layout (NCHW vs NHWC) is adapted to the model's single input first."""
    from converters.calibration import calibration_data
    from converters.evaluate import fit_samples

    shape = _single_input_shape(model)
    source = calibration
    where = "array"
    if shape is not None:
        if isinstance(source, (str, os.PathLike)) and Path(source).suffix.lower() == ".npz" and Path(source).is_file():
            with np.load(source, allow_pickle=False) as z:
                if "x" in z.files:
                    source, where = np.asarray(z["x"]), f"file {calibration} (x)"
        elif isinstance(source, (str, os.PathLike)) and Path(source).suffix.lower() == ".npy" and Path(source).is_file():
            source, where = np.load(source, allow_pickle=False), f"file {calibration}"
        if (isinstance(source, np.ndarray) and source.dtype != np.uint8  # uint8 pictures: pre-processed as images
                and source.ndim == len(shape) and tuple(source.shape[1:]) != shape[1:]):
            source = fit_samples(source, shape)
    return calibration_data(source, inputs=model, preprocess=preprocess, label="calibrating", where=where)


def _may_give_ranges(src) -> bool:
    """Whether the source may carry its own activation ranges (an ONNX model: QDQ pairs), so that int8 may
    need no calibration data; a .tflite source (a float model) never does."""
    from edge_sdk.model import Model

    if isinstance(src, Model):
        return False
    if hasattr(src, "SerializeToString") and hasattr(src, "graph"):
        return True
    if isinstance(src, (bytes, bytearray, memoryview)):
        return bytes(src[4:8]) != b"TFL3"
    return Path(src).suffix.lower() != ".tflite"


def _refuse_quantized_tflite(src):
    """The source's ``Model`` when ``src`` is a readable .tflite file or bytes (the importer takes it: one parse),
    else None; ModelError in one line when ``src`` is a .tflite file or bytes whose activations are already quantized (int8 /
    int16, or a legacy UINT8 TFLite v1 "quantized_uint8" model, which every runtime here runs as it is:
    edge_sdk.runtime.uint8): quantizing it again would need its float weights, and no calibration setting helps. A
    source that does not read is left to the importer, weights-only quantization to quantize()'s own judgement."""
    from edge_sdk.model import read_model

    if isinstance(src, (bytes, bytearray, memoryview)):
        data, name = bytes(src), "<bytes>"
    elif isinstance(src, (str, os.PathLike)) and Path(src).suffix.lower() == ".tflite" and Path(src).is_file():
        data, name = Path(src).read_bytes(), str(src)
    else:
        return None
    if data[4:8] != b"TFL3":
        return None
    try:
        model = read_model(data)
    except Exception:  # noqa: BLE001 - the importer names what is wrong with the file
        return None
    # quantized activations (a constant's quantization may be weights a DEQUANTIZE expands: a float model the
    # importer folds), in subgraph 0 as quantize() judges
    sg = model.subgraphs[0] if model.subgraphs else None
    types = {t.type for t in (sg.tensors if sg else []) if t.type in ("INT8", "INT16", "UINT8")
             and t.quantization is not None and len(t.quantization.scale)
             and not (0 < t.buffer < len(model.buffers) and len(model.buffers[t.buffer].data))}
    if not types:
        return model
    what = ("a legacy UINT8 (TFLite v1 quantized_uint8) model: edge run, check, flash, profile and export take it as "
            "it is" if "UINT8" in types else f"{'/'.join(sorted(types))} tensors: run it as it is")
    raise ModelError(f"{name}: the model is already quantized ({what}); convert takes the float model")


def _runs_gelu(profile) -> bool:
    """Whether the GELU fusion may emit GELU: the target's runtime has the kernel and its profile (a loaded
    ``Profile``) takes the op (no target: edge-sdk's interpreter and C runtime both have it; TFLM has none)."""
    if profile is None:
        return True
    from edge_sdk.runtime.op_table import runtime_refusal

    prof = profile
    if runtime_refusal(prof.runtime or "python", "GELU", 2) is not None:
        return False
    return any(prof.cpu_backend.op_constraints("GELU", d) is not None for d in ("float32", "int8"))


def _jsonable(value):
    from edge_sdk.model.manifest import jsonable as j

    return j(value)


def _io_spec(model) -> dict:
    sg = model.subgraphs[0]

    def spec(t):
        tensor = sg.tensors[t]
        q = tensor.quantization
        d = {"name": tensor.name, "shape": list(tensor.shape), "type": tensor.type}
        if q is not None and q.scale is not None and q.scale.size == 1:
            d["scale"] = float(q.scale[0])
            d["zero_point"] = int(q.zero_point[0])
        return d

    return {"inputs": [spec(t) for t in sg.inputs], "outputs": [spec(t) for t in sg.outputs]}


def _parameters(model) -> dict:
    """The constant tensors of ``model``: how many values, how many stored bytes."""
    params = 0
    param_bytes = 0
    for sg in model.subgraphs:
        for t in sg.tensors:
            if 0 < t.buffer < len(model.buffers) and model.buffers[t.buffer].data:
                params += int(np.prod(t.shape, dtype=np.int64))
                param_bytes += len(model.buffers[t.buffer].data)
    return {"parameters": params, "parameter_bytes": param_bytes}


def _model_figures(model, data: bytes, check: dict | None) -> dict:
    """Size, ops, parameters and the RAM the model's arena needs: with a target, the check's figure (that target's
    runtime, the plan the check chose, measured or estimated as ``arena_source`` says); without one, the plan of
    edge-sdk's Python interpreter (layer by layer): its tensor plan, not a target's arena (``arena_where`` None).
    """
    ops = Counter(model.op_name(op) for sg in model.subgraphs for op in sg.operators)
    figures = {"bytes": len(data), "ops": dict(ops), **_parameters(model), "arena_bytes": None, "arena_source": None,
               "arena_where": None}
    if check is not None:
        # the check's arena_size (planner.runtime_arena's meaning), not its arena_bytes: on a Linux C target those
        # hold the SIMD fast paths' packed weight copies too (check's packed_weights_bytes, a figure apart)
        figures["arena_bytes"] = check.get("arena_size")
        figures["arena_where"] = check.get("arena_where")  # planner.arena_words' WHERE: runtime, target, plan, how
        runtime = _RUNTIME_WORDS.get(check.get("runtime"), check.get("runtime"))
        figures["arena_source"] = (f"target {check.get('target')}: the {runtime}'s arena, {check.get('memory_plan')} "
                                   f"plan; {check.get('ram_source') or 'as the check found it'}")
        return figures
    try:
        from edge_sdk.runtime.interpreter import Interpreter

        interp = Interpreter(model=model)
        interp.allocate_tensors()
        figures["arena_bytes"] = int(interp.arena_size)
        figures["arena_source"] = "no target: edge-sdk's Python interpreter's arena plan (layer by layer)"
    except ModelError as exc:
        figures["problems"] = [str(exc)]
    return figures


_RUNTIME_WORDS = {"c": "C runtime", "python": "Python interpreter"}


def _stored_shapes(model) -> dict | None:
    """{input: its stored shape} for the inputs of ``model`` (a Model) whose shape signature has a -1 (a dynamic
    dim the converted model resizes at: converters.dynamic_dims): the target check judges the model at the size it
    was converted at."""
    sg = model.subgraphs[0]
    shapes = {sg.tensors[t].name: tuple(sg.tensors[t].shape) for t in sg.inputs
              if sg.tensors[t].shape_signature is not None and -1 in tuple(sg.tensors[t].shape_signature)}
    return shapes or None


def _check(tflite: bytes, model, profile, memory: str | None = None) -> dict:
    """The device-profile check (``edge_sdk.targets.check.check_model``) of ``tflite`` (the bytes written from
    the Model ``model``: its input shapes are read off the object, not parsed again) against a loaded ``profile``,
    as plain data, plus ``reasons``: the message of every error (what makes the verdict "fails"; fallbacks to the
    CPU are problems but not reasons)."""
    from edge_sdk.targets.check import check_model

    result = check_model(tflite, profile, memory=memory, input_shapes=_stored_shapes(model))
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    problems = data.get("problems") or []
    data["reasons"] = [p.get("message", str(p)) if isinstance(p, dict) else str(p) for p in problems
                       if not isinstance(p, dict) or p.get("severity", "error") == "error"]
    return _jsonable(data)


def _task_samples(float_model, calib, eval_data, pre, guarded: bool) -> tuple:
    """(samples, what they are, why there are none) the task is judged on: the evaluation data, else the
    calibration samples the SNR guard held back (``converters.evaluate.task_samples``)."""
    from converters.evaluate import TASK_SAMPLES, task_samples
    from converters.quantize.calibrate import MEASURE_SAMPLES

    if eval_data is not None:
        return task_samples(_calibration(eval_data, float_model, pre), 0, TASK_SAMPLES, "evaluation")
    return task_samples(calib, HOLDOUT if guarded else 0, MEASURE_SAMPLES, "calibration")


def _task_judge(spec, float_model, mode: str, calib, eval_data, pre, goals: dict):
    """The widening search's view of the task guard: ``judge(qmodel) -> record`` on the samples ``_judge_task``
    will judge the result on; None without a task or samples (the search then goes by SNR alone)."""
    if spec is None:
        return None
    from converters.evaluate import TaskJudge

    samples, what, _ = _task_samples(float_model, calib, eval_data, pre, True)
    if not samples:
        return None
    return TaskJudge(spec, float_model, samples, mode, goals, what)  # the float outputs computed once per conversion


def _judge_task(guard: dict, spec, float_model, model, mode: str, calib, eval_data, pre, guarded: bool, goals: dict,
                min_snr: float, notes: list) -> None:
    """The guard judges the task ``spec`` says (``converters.evaluate``) on the evaluation data, else on the guard's
    own samples; its verdict becomes the guard's, and a task kept below ``min_snr`` is said in ``notes``."""
    from converters.evaluate import apply_task_verdict, judge_task
    from converters.report import task_text

    if spec is None or guard.get("measured") is False:
        apply_task_verdict(guard, None)
        return
    if guard.get("synthetic") and eval_data is None:
        record = {**{k: v for k, v in spec.items() if k != "config"}, "samples": 0, "data": "synthetic", "metrics": {},
                  "judged": False, "met": None,
                  "why": "no data: synthetic samples say nothing of the task (give eval_data / --eval to judge it)"}
    else:
        samples, what, why = _task_samples(float_model, calib, eval_data, pre, guarded)
        record = judge_task(spec, float_model, model, samples, mode, goals, what)
        if why:
            record["why"] = why
    apply_task_verdict(guard, record)
    if record.get("box_reading"):  # which reading of separate --boxes the detection metrics used
        notes.append(f"detection boxes read as {record['box_reading']}")
    if not record.get("judged"):
        notes.append(f"task {record['task']} not judged ({record.get('why')}): the SNR decides")
    elif record["met"] and not guard["snr_met"]:
        worst = ", ".join(f"'{s['name']}' {s['snr_db']:.1f} dB" for s in guard.get("short", []))
        notes.append(f"kept on its task ({task_text(record)}): SNR below {min_snr:g} dB on {worst}")
        from edge_sdk import log

        log.warning(notes[-1])


def _task_manifest(spec, guard=None) -> dict:
    """The manifest's task entries (what ``edge run`` decodes): classification, and detection in the formats
    ``edge_sdk.tasks.pipeline.Detector`` reads (postprocessed; boxes / scores outputs, with the score activation
    the guard found when the spec does not say it)."""
    if spec is None or spec["task"] not in ("classification", "detection"):
        return {}
    if spec["task"] == "classification":
        return {"task": "classification"}
    if spec["format"] == "postprocessed":
        return {"task": "detection", "detection": {"format": "postprocessed"}}
    if spec["format"] == "yolo":
        return {"task": "detection"}
    found = ((guard or {}).get("task") or {}).get("score_activation")
    config = {**({"score_activation": found} if found else {}), **(spec.get("config") or {})}
    return {"task": "detection", "detection": {**config, "format": spec["format"],
                                               "outputs": {"boxes": spec["boxes"], "scores": spec["scores"]}}}


def convert(src, target=None, quantize="int8", calibration=None, calib_method="minmax", io="int8", labels=None,
            preprocess=None, exclude=(), nhwc_io=False, eval_data=None, precision="auto", min_snr=MIN_SNR_DB,
            allow_lossy=False, input_shapes=None, memory=None, input_values=None,
            stateful=False, task=None, boxes=None, scores=None, min_top1=TOP1_GOAL, min_detections=DETECTIONS_GOAL,
            min_map_iou=MAP_IOU_GOAL, equalize=True, bias_correction=True, keep_int8=False) -> ConversionResult:
    """Convert ``src`` (an .onnx / float .tflite path, bytes, onnx.ModelProto or Model) to a TFLite package.

    quantize: "int8" (full integer, needs ``calibration`` -- unless the source is a quantized ONNX (QDQ) graph whose
    pairs give every activation's range: then its own scales and zero points are kept and no data is needed),
    "int16x8", "fp16", "dynamic" or "none".
    calibration: anything ``converters.calibration.calibration_data`` reads (folder of images, .npy/.npz, an
    array or iterable of samples); an .npz with ``x`` and ``y`` (evaluation format) gives its ``x``.
    calib_method: the activation ranges: "minmax" (the default), "percentile", "mse", "auto" (min / max unless a
    least-error (MSE) or percentile set measures clearly better at the outputs; the report and the manifest say
    which), or "least-error" (each tensor's range among those by the error it causes in the ops reading it,
    ``converters.quantize.least_error``; the report's calibration counts the choices). equalize / bias_correction (int8,
    int16x8): cross-layer equalization of conv -> conv pairs and the int8 layers' bias correction
    (``converters.quantize.quantize``; both on by default, the report's notes say what they did).
    io: "int8" or "float32" model inputs/outputs for integer modes. labels: a list or a file (one per line).
    preprocess: an ``edge_sdk.tasks.preprocess.Preprocess`` or its dict (image decoding for calibration/evaluation,
    recorded in the manifest). exclude: node/tensor names kept in float. nhwc_io: channels-last model I/O.
    target: a device profile (a name, a .toml path or a loaded ``Profile``: loaded once, and that one profile serves
    the GELU fusion, the widening rule and the check); a model that cannot run there raises ConversionError with
    every reason. ``report["output"]["arena_bytes"]`` is then the check's figure, the RAM of that target's runtime
    arena (``arena_source`` says which runtime, plan and how it was found); without a target it is edge-sdk's
    Python interpreter's plan, and ``arena_source`` says so.
    memory: with ``target``, the arena plan that check uses (edge_sdk.runtime.interpreter.MEMORY_PLANS: "layer",
    "inplace" = in-place ops, "min" = least RAM, in place plus patch-based execution of a stage; None = auto:
    layer, else inplace, else min, while the plan does not fit the profile's RAM budget), as `edge check --memory`;
    the plan built is the check's ``memory_plan``.
    eval_data: evaluation data (.npz with x, y or a folder of class folders): accuracy, ECE, NLL of the
    result and of the float model, and their agreement, in ``report["accuracy"]`` and the manifest.

    The accuracy guard (int8 / int16x8): every 5th calibration sample (at most ``HOLDOUT``) is held back;
    the quantized model runs on them beside the float one and each output's SNR (each joined part's too;
    argmax agreement for class distributions) is in ``report["guard"]``. precision="auto" (the default)
    widens the ops that lose the most SNR, round by round, to int16x8 where the target's runtime has the op
    in int16 (else float32 where the target runs float32; ``converters.quantize.widening_rule``), until every output reaches
    ``min_snr`` dB (``report["guard"]["widened"]`` and ``["cost"]``: bytes, MACs not in int8);
    precision="int8" keeps every op integer. On a float-first target (the Linux boards) the int8 model's time is
    estimated against its float source's from the op table's speed facts (``converters.quantize.speed``; the report's
    ``speed``): with precision "auto" an int8 model estimated slower is not written, the float source is (its
    float16 weights kept when the source stored them so), unless ``keep_int8`` (`edge convert --quantize int8` given
    explicitly): then it is written and a note says it is estimated slower. An output still short of ``min_snr`` raises ConversionError
    naming it and by how much (nothing is written) unless ``allow_lossy``, which keeps the model and says so
    in ``report["guard"]["lossy"]``.
    input_shapes: ``{input name: shape}`` (or one shape for a one-input model): the stored shape of an ONNX model's
    dynamic (named, unnamed or 0) input dims, 1 when not given. They stay -1 in the shape signature when the
    converted model resizes (converted again at twice the size, the same program: converters.dynamic_dims); else
    the model is static at the stored shape (a note says why), and a dim beyond the batch axis that was given no
    shape is an error asking for it.
    input_values: ``{input name: value}`` pins ONNX inputs to constants (a number, a list, or the text of one as
    `edge convert --input-value NAME=VALUE` gives it; ``converters.import_onnx``): each leaves the model's inputs,
    and an ``If`` on it keeps one branch; ``report["import"]["pinned_inputs"]`` says which and to what.
    Every setting (the target profile too) is checked before the model is imported, but whether an ONNX source
    without calibration data gives every activation range itself (a QDQ graph), and whether ``boxes`` / ``scores``
    name outputs of the model and fit ``task``, known once it is imported.

    fp16 and dynamic go through the same guard: the result against the float model on the calibration samples,
    else the evaluation samples, else synthetic ones (``report["guard"]["data"]`` / ``["synthetic"]``), refused
    below ``min_snr`` unless ``allow_lossy``; fp16 keeps float32 the constants float16 cannot hold
    (``report["quantization"]["report"]["kept_float32"]``).
    stateful: each streaming state input / output pair of a recurrent ONNX model (``import_notes["state_pairs"]``)
    becomes a resource variable the model keeps between invokes (``converters.stateful``: zero at the start,
    ``reset_all_variables()`` resets it); without it the state stays an input and an output. Either way
    ``report["state"]`` lists the state tensors. A model with run-time IF / WHILE converts with quantize "none",
    "int8" or "int16x8" (its subgraphs calibrated and quantized with the main graph: converters.quantize.subgraphs),
    "fp16" or "dynamic" (every subgraph's constants by the main graph's rules: converters.quantize.weights_only; the
    guard's notes name a subgraph its samples never ran).

    The guard judges the task when the model says what it is (``converters.evaluate.task_spec``): ``boxes`` /
    ``scores`` (output names or indices; `--boxes` / `--scores`) make it a detector, ``task`` ("classification",
    "detection", "segmentation", "raw"; `--task`) or a .tflite source's manifest say it, a TFLite_Detection_PostProcess
    op is one, a SOFTMAX output or one score per label is a classifier. The float and the converted model then run
    on the evaluation data (at most ``TASK_SAMPLES``), else on the guard's samples, and the task's metric decides
    (``report["guard"]["task"]``, ``["judged_by"]``): top-1 agreement >= ``min_top1`` (0.99); float detections kept
    (a converted one of the same class, IoU >= 0.5, score within 0.05) >= ``min_detections`` (0.9) with extra ones
    <= 1 - it; segmentation map IoU >= ``min_map_iou`` (0.9). SNR stays beside it (``["snr_met"]``): a model whose
    task is kept is written even when an output is below ``min_snr`` (a note says both), and one whose task is not
    is refused (unless ``allow_lossy``) even when every SNR is met. Without a task, or when it cannot be measured
    (no float detection, ...: said), SNR decides as above.

    The model travels as a ``Model`` object from import to the end; it becomes .tflite bytes once (the check
    measures those bytes and they are the result), or twice when ``eval_data`` adds its accuracy to the manifest
    after the check.
    """
    from converters.report import per_layer_table, sample_kind, strip_bins
    from edge_sdk import log
    from edge_sdk.model import write_model
    from edge_sdk.model.manifest import write_manifest

    mode = "none" if quantize in (None, False) else str(quantize).lower()
    problems = []
    if mode not in QUANTIZE_MODES:
        problems.append(f"quantize must be one of {', '.join(QUANTIZE_MODES)}, not {quantize!r}")
    if calib_method not in CALIB_METHODS:
        problems.append(f"calib_method must be one of {', '.join(CALIB_METHODS)}, not {calib_method!r}")
    if io not in IO_TYPES:
        problems.append(f"io must be one of {', '.join(IO_TYPES)}, not {io!r}")
    if precision not in PRECISIONS:
        problems.append(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    try:
        min_snr = float(min_snr)
        if min_snr != min_snr:
            raise ValueError
    except (TypeError, ValueError):
        problems.append(f"min_snr must be a number of dB, not {min_snr!r}")
    read_source = None  # the .tflite's Model when the refusal below read it (the importer takes it, unparsed again)
    if mode != "none":  # a quantized .tflite: said in one line before any setting it would make moot
        read_source = _refuse_quantized_tflite(src)
    needs_data = mode in _NEEDS_CALIBRATION and calibration is None
    if needs_data and not _may_give_ranges(src):
        problems.append(f"{mode} quantization needs calibration data (a folder of images, .npy/.npz or samples)")
    from edge_sdk.runtime.planner import MEMORY_PLANS

    if memory is not None and memory not in MEMORY_PLANS:
        problems.append(f"memory must be one of {', '.join(map(repr, MEMORY_PLANS))} or None (auto), not {memory!r}")
    elif memory is not None and target is None:
        problems.append("memory chooses the arena plan of the target check: give a target too")
    profile = None  # the target's profile, loaded once here and passed to every step that needs it
    if target is not None:
        from edge_sdk.errors import ProfileError
        from edge_sdk.targets.profiles import Profile, load_profile

        try:
            profile = load_profile(target)
        except ProfileError as exc:
            problems.append(f"target: {exc}")
        if isinstance(target, Profile):
            target = target.name  # the manifest and the messages name it
    for what, path in (("calibration", calibration), ("eval_data", eval_data)):
        if isinstance(path, (str, os.PathLike)) and not Path(path).exists():
            problems.append(f"{what}: {path} does not exist")
    if stateful and eval_data is not None:
        problems.append("eval_data runs the model sample by sample: not with stateful (its state carries over)")
    from converters.evaluate import task_goals

    goals, goal_problems = task_goals(min_top1, min_detections, min_map_iou)
    problems += goal_problems
    try:
        from edge_sdk.model.manifest import task_name

        task_name(task, "task (--task)")
    except ModelError as exc:
        problems.append(str(exc))
    if problems:
        raise ConversionError("cannot convert: bad settings", problems)
    exclude = tuple(exclude or ())
    label_list = _labels(labels)

    kind, data, name, obj = _read_source(src)
    sha256 = hashlib.sha256(data).hexdigest()
    log.stage(f"importing {name} ({kind})")
    try:
        if kind == "onnx":
            from converters.import_onnx import import_onnx as importer
        else:
            from converters.import_tflite import import_tflite as importer
    except ImportError as exc:
        raise ConversionError(f"{name}: no {kind} importer in this installation ({exc})") from None
    if input_values and kind != "onnx":
        raise ConversionError(f"{name}: input_values (--input-value) pins inputs of an ONNX source; a .tflite "
                              "keeps its own inputs")
    if kind == "onnx":
        try:  # dynamic dims stored as given or 1, kept dynamic where the result resizes (converters.dynamic_dims)
            model = importer(obj, input_shapes=input_shapes, input_values=input_values or None, open_dims=True)
        except ConversionError:  # at a placeholder 1 it may not convert: the error without one (asks the shape)
            importer(obj, input_shapes=input_shapes, input_values=input_values or None)
            raise
    else:
        model = importer(read_source if read_source is not None else obj)
    import_notes = dict(getattr(model, "import_notes", {}) or {})  # what the importer rewrote (fp16 weights, ...)
    source_manifest = None
    if kind == "tflite":  # a .tflite source may say its task, labels and detection options in its manifest
        from edge_sdk.model.manifest import read_manifest

        try:
            source_manifest = read_manifest(model)  # the imported Model's metadata: no second parse
        except ModelError:
            pass
    notes = list(getattr(model, "import_warnings", []) or [])  # what the user should know (a batch dim set to 1)
    if input_shapes is not None and kind != "onnx":
        raise ConversionError(f"{name}: input_shapes is for ONNX sources with dynamic dims; a .tflite keeps its "
                              "own input shapes")
    log.stage("optimizing")
    from converters.passes import optimize

    model = optimize(model, nhwc_io=nhwc_io, fuse_gelu=_runs_gelu(profile))
    opt_notes = dict(getattr(model, "conversion_notes", {}) or {})
    if import_notes.get("open_dims"):
        from converters import dynamic_dims

        def convert_at(shapes):
            again = importer(obj, input_shapes=shapes, input_values=input_values or None)
            return optimize(again, nhwc_io=nhwc_io, fuse_gelu=_runs_gelu(profile))

        log.stage("checking that the dynamic input dims resize")
        given = input_shapes.keys() if isinstance(input_shapes, dict) else import_notes["open_dims"].keys() \
            if input_shapes is not None else ()
        import_notes["dynamic_dims"] = dynamic_dims.settle(model, import_notes["open_dims"], convert_at, given)
        notes += import_notes["dynamic_dims"]
    float_model = model  # quantize reads it and builds a new Model; evaluation runs it as the reference
    float_figures = _parameters(float_model)
    pre = _preprocess(preprocess, float_model, nhwc_io)
    from converters.evaluate import task_spec

    label_list = label_list or (source_manifest or {}).get("labels")  # a .tflite source's labels stay
    spec = task_spec(float_model, task, boxes, scores, label_list, source_manifest)
    if labels is not None and (spec or {}).get("task") == "classification":
        for note in _label_count_notes(float_model, spec, label_list):
            notes.append(note)
            log.warning(note)  # the convert summary prints the quantizer's notes, not these

    if needs_data:  # an ONNX source: calibration data is optional when its QDQ pairs give every range
        from converters.quantize import uncovered_activations

        given, missing = uncovered_activations(float_model, mode, exclude)
        if missing and not given:  # a missing flag (misuse, exit 2), said before the graph's internals
            raise UsageError(
                f"{name}: {mode} quantization needs calibration data: give --calib (calibration=) a folder of "
                "images or a .npy/.npz of input samples (the source gives no activation ranges: it is not a QDQ "
                "graph), or --quantize fp16 / none")
        if missing:
            why = f"the source's QDQ pairs give the range of {given} activation(s) but not of {len(missing)}"
            raise ConversionError(
                f"{name}: {mode} quantization needs calibration data (--calib / calibration=: a folder of images, "
                ".npy/.npz or samples): " + why, [f"{mode} quantization needs calibration data: {why}"]
                + [f"activation '{n}' has no range" for n in missing[:8]])
    qreport = None
    calib_summary = None
    used_method = calib_method  # "auto": the method whose ranges it kept (minmax, mse or percentile)
    if mode != "none":
        log.stage(f"quantizing ({mode})")
        from converters.quantize import quantize as _quantize

        pairs = import_notes.get("state_pairs") or []
        stream_note = None
        # every mode the guard judges (int8 / int16x8 / fp16 / dynamic) reads calibration data one way: a
        # streaming model's states as streaming meets them, not the file's own (zeros)
        if calibration is not None and pairs:
            from converters.stateful import streamed_calibration

            calib, stream_note = streamed_calibration(float_model, calibration, pairs, pre, name)
        else:
            calib = _calibration(calibration, float_model, pre) if calibration is not None else None
        guarded = mode in _NEEDS_CALIBRATION
        measured_on = "calibration"
        if calib is None and not guarded and eval_data is not None:  # fp16 / dynamic: the guard measures on it
            calib, measured_on = _calibration(eval_data, float_model, pre), "evaluation"
        # A QDQ source converted without calibration data (every activation range its own): the guard can only
        # measure on synthetic samples, uniform over the input ranges, which say little of the data the source
        # was calibrated on. onnxruntime and onnx2tf trust the QDQ ranges as they are; so does this: the guard
        # still measures and says so, but widens no op and refuses nothing on that evidence (--calib judges on
        # real data)
        given_only = guarded and calibration is None
        search = "int8" if given_only and precision == "auto" else precision
        task_judge = (_task_judge(spec, float_model, mode, calib, eval_data, pre, goals)
                      if guarded and search == "auto" else None)
        result = _quantize(float_model, calib, mode=mode, method=calib_method, io=io, exclude=exclude,
                           holdout=HOLDOUT if guarded else 0, precision=search if guarded else "int8",
                           min_snr=min_snr, target=profile, equalize=equalize, bias_correction=bias_correction,
                           task_judge=task_judge, keep_int8=keep_int8,
                           float16_weights=bool((import_notes.get("dequantized_constants") or {}).get("FLOAT16")))
        model = result.model
        if stream_note:
            result.report["notes"].insert(0, stream_note)
        guard = result.report.get("guard")
        if guard is not None and not guarded and not guard.get("synthetic"):
            guard["data"] = measured_on
        if guard is not None:
            _judge_task(guard, spec, float_model, model, mode, calib, eval_data, pre, guarded, goals, min_snr,
                        result.report["notes"])
        if guard is not None and not guard["met"] and given_only and guard.get("synthetic"):
            short = [f"output '{s['name']}': SNR {s['snr_db']:.1f} dB" for s in guard["short"]]
            result.report["notes"].append(
                f"the source's QDQ ranges kept as they are (no op widened on synthetic evidence): the guard measured "
                f"on {guard['samples']} synthetic samples (uniform over the input ranges), "
                + "; ".join(short) + f" below {min_snr:g} dB; --calib data judges on real inputs")
            log.warning(result.report["notes"][-1])
        elif guard is not None and not guard["met"]:
            short = [f"output '{s['name']}'" + (f" (part '{s['part']}')" if s.get("part") else "")
                     + f": SNR {s['snr_db']:.1f} dB, {s['short_db']:.1f} dB below {min_snr:g} dB" for s in guard["short"]]
            if guard.get("judged_by") == "task":  # the task decides: its shortfall first, the SNR beside it
                from converters.evaluate import task_shortfall

                short = [task_shortfall(guard["task"])] + short
            if not allow_lossy and guard.get("judged_by") == "task":
                snr = (f"below {min_snr:g} dB on {len(short) - 1} output(s)" if len(short) > 1
                       else f"met ({min_snr:g} dB)")
                widen = "--min-snr higher widens more ops; " if guarded and precision == "auto" else ""
                raise ConversionError(f"{name}: the {mode} model does not keep its task ({short[0]}; SNR {snr}); "
                                      f"nothing was written ({widen}allow_lossy / --allow-lossy writes it anyway)", short)
            if not allow_lossy:
                if not guarded:
                    hint = (f"{mode} keeps every op as it is: --quantize none keeps float32"
                            + (", --exclude keeps an op's weights float32" if mode == "dynamic" else ""))
                elif precision == "int8":
                    hint = "precision int8 widens no op"
                elif guard.get("tried_widening"):
                    hint = f"widening up to {guard['tried_widening']} op(s) to int16x8 / float32 was not enough"
                else:
                    hint = "no op left to widen"
                if precision != "int8" and guard.get("cannot_widen"):
                    hint += (f"; {len(guard['cannot_widen'])} op(s) cannot be widened on {guard['widening_for']}: "
                             + "; ".join(f"{c['op']} '{c['output']}'" for c in guard["cannot_widen"][:4]))
                if (guard.get("flash") or {}).get("note"):  # the target's flash held the search back
                    hint += "; " + guard["flash"]["note"]
                if precision != "int8" and guard.get("limiting"):  # the search's verdict: what keeps it short
                    hint += ("; the ops that keep it short: "
                             + "; ".join(f"{c['op']} '{c['output']}' ({c['reason']})" for c in guard["limiting"][:4]))
                raise ConversionError(
                    f"{name}: the {mode} model does not keep its outputs ({len(short)} below {min_snr:g} dB on "
                    f"{guard['samples']} {sample_kind(guard)} samples; {hint}); "
                    "nothing was written (allow_lossy / --allow-lossy writes it anyway)", short)
            guard["lossy"] = short
            result.report["notes"].append("lossy: " + "; ".join(short))
        qreport = _jsonable(getattr(result, "report", None))
        chosen = ((qreport or {}).get("calibration") or {}).get("chosen") if isinstance(qreport, dict) else None
        if calib_method == "auto" and chosen:  # the manifest names the ranges the model holds
            used_method = chosen.split()[0]
        # the file's base name: a model carries no folder of the machine it was converted on
        calib_summary = {"source": Path(calibration).name if isinstance(calibration, (str, os.PathLike))
                         else type(calibration).__name__, "method": calib_method}
        if calibration is None and guarded:
            calib_summary = {"source": "none: every activation range is the source's own (QDQ)", "method": "given"}
        if calibration is not None and hasattr(calib, "known_length") and calib.known_length() is not None:
            calib_summary["samples"] = calib.known_length()
        if isinstance(qreport, dict):
            for key in ("samples", "calibration_samples"):
                if isinstance(qreport.get(key), int):
                    calib_summary["samples"] = qreport[key]
            if isinstance(qreport.get("calibration"), dict):
                calib_summary.update({k: v for k, v in qreport["calibration"].items() if not isinstance(v, (list, dict))})

    state = None
    if stateful or import_notes.get("state_pairs"):
        from converters.stateful import RESET_NOTE, make_stateful, state_tensors

        pairs = import_notes.get("state_pairs") or []
        state = ({"stateful": True, "variables": make_stateful(model, pairs, name), "reset": RESET_NOTE}
                 if stateful else {"stateful": False, "tensors": state_tensors(model, pairs)})

    manifest = {
        "converter": {"name": "edge-sdk", "version": _version()},
        "source": {"path": Path(name).name if kind and not name.startswith("<") else name, "format": kind,
                   "sha256": sha256},
        "preprocess": pre.to_dict() if pre is not None else None,
        "labels": label_list,
        **_task_manifest(spec, (qreport or {}).get("guard")),
        "target": target,
        "quantization": {"mode": mode, "method": used_method if mode in _NEEDS_CALIBRATION else None,
                         "io": io if mode in _NEEDS_CALIBRATION else "float32", "exclude": list(exclude),
                         "precision": precision if mode in _NEEDS_CALIBRATION else None,
                         "widened": [w["output"] for w in (qreport or {}).get("guard", {}).get("widened", [])]},
        "calibration": calib_summary,
        "layout": "NHWC" if nhwc_io else "source",
        "nhwc_io": opt_notes.get("nhwc_io") if nhwc_io else None,
        "io": _io_spec(model),
        "accuracy": None,
    }
    write_manifest(model, manifest)

    # The model becomes bytes once: the check measures these bytes (the C runtime reads them), and they are the
    # result unless evaluation adds its accuracy to the manifest (then the model is written once more, at the end).
    tflite = None
    check = None
    if target is not None:
        log.stage(f"checking against {target}")
        tflite = write_model(model)
        check = _check(tflite, model, profile, memory)
        if check.get("verdict") == "fails":
            raise ConversionError(f"{name}: the converted model cannot run on {target}; nothing was written",
                                  check["reasons"] or ["the device-profile check failed (no reason given)"])

    accuracy = None
    if eval_data is not None and (spec or {}).get("task") in ("detection", "segmentation"):
        notes.append(f"eval_data: top-1 / ECE against labels are a classifier's; this {spec['task']} model's task is "
                     + ("judged on it by the accuracy guard" if mode != "none" else "not judged (no lossy mode)"))
    elif eval_data is not None:  # a classifier's (or raw outputs read as class scores, as before)
        log.stage("evaluating")
        from converters.evaluate import evaluate

        accuracy = evaluate(model, eval_data, reference=float_model if mode != "none" else None,
                            labels=label_list, preprocess=pre)
        manifest["accuracy"] = strip_bins(accuracy)
        write_manifest(model, manifest)
        tflite = None

    if tflite is None:
        tflite = write_model(model)
    from edge_sdk.model.manifest import read_manifest

    manifest = read_manifest(model)  # as embedded (with its format number)
    report = {
        "source": {"path": name, "format": kind, "sha256": sha256, "bytes": len(data)},
        "output": _model_figures(model, tflite, check),
        "float": float_figures,
        "import": import_notes,
        "passes": opt_notes.get("passes"),
        "notes": notes,
        "quantization": {"mode": mode, "method": manifest["quantization"]["method"],
                         "io": manifest["quantization"]["io"], "exclude": list(exclude), "report": qreport},
        "calibration": calib_summary,
        "layers": per_layer_table(qreport),
        "guard": (qreport or {}).get("guard"),
        "check": check,
        "state": state,
        "accuracy": accuracy,
        "manifest": manifest,
    }
    return ConversionResult(model=model, tflite=tflite, report=_jsonable(report))


__all__ = ["CALIB_METHODS", "QUANTIZE_MODES", "ConversionResult", "convert"]
