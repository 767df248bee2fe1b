"""Pipelines: the whole inference procedure around a model, from its package manifest or explicit options.

    from edge_sdk.tasks.pipeline import ImageClassifier, Detector, AudioClassifier

    ImageClassifier("net.tflite").predict("cat.jpg")            # [Prediction(label='cat', score=0.93), ...]
    Detector("ssd.tflite").detect(PIL.Image.open("street.png"))  # [Detection(box, label, score, class_id), ...]
    AudioClassifier("kws.tflite", frontend="audio_preprocessor_int8.tflite").predict("yes.wav")

``model`` is a path, .tflite bytes, an ``edge_sdk.model.Model`` or an ``Interpreter`` (used as it is; it must
not be shared with another thread). Everything the manifest (``edge_sdk.model.manifest``) says can be given
explicitly instead (``preprocess=``, ``labels=``, ...); explicit options win over the manifest.

Images (``ImageClassifier``, ``Detector``): a path (JPEG/PNG/BMP/anything Pillow decodes), a PIL image or a
numpy array. uint8 arrays are pixels (H, W), (H, W, 1), (H, W, 3) or (H, W, 4: alpha dropped); any other
array shaped like the model input (with or without the batch axis) is the already pre-processed tensor.
Pre-processing is ``edge_sdk.tasks.preprocess.Preprocess`` (the manifest's "preprocess"); what it leaves open comes
from the model input: size and channels from its shape, layout NHWC when the last axis is 1 or 3.
Without any pre-processing description, a float input takes pixels scaled to 0..1 and an int8/uint8
quantized input takes pixels spread over its whole integer range (value range = the dequantized
[qmin, qmax]), which is how the TFLM examples feed ``person_detect``.
A float tensor for a quantized input is quantized with the input's scale and zero point (round half away
from zero, as TFLite's QUANTIZE does, then saturate).

Scores (classification): outputs are dequantized; then ``scores`` = "probabilities" (kept), "logits"
(softmax), "sigmoid" (logistic, per class) or "auto" (the default: kept as the model computed them when the
output comes from SOFTMAX or LOGISTIC or its quantization can only hold [0, 1]; else a single value in [0, 1]
is kept and one outside is a logit (sigmoid: never softmax over a single output); a class vector is kept when
its values lie in [0, 1] and sum to 1 within a tolerance covering the output's quantization step, else
softmax). The manifest may say
``{"postprocess": {"scores": "logits"}}``. Labels: ``labels=`` (a list, or a file with one per line), else
the manifest's "labels", else the class indices as strings.

Detection (manifest key "detection", or ``Detector(..., **options)``; every key optional):

    format            "ssd" (raw box encodings + scores, decoded with anchors; the default when anchors or
                      an anchor config are given), "boxes" (outputs are already corner boxes) or
                      "postprocessed" (TFLite_Detection_PostProcess outputs: boxes, classes, scores, count)
    outputs           {"boxes": i, "scores": j}; default: the rank-3 output whose last axis is 4 (or, with
                      several, whose name says box/regress/loc) holds boxes, the other scores
    box_order         order of the 4 encoded values: "yxhw" (TF SSD, default) or "xywh" (BlazeFace/MediaPipe);
                      for format "boxes", "yxyx" (default) or "xyxy"; extra values (keypoints) are ignored
    scales            [y, x, h, w] divisors of the encodings (default [10, 10, 5, 5])
    box_encoding      "log" (h = exp(th / h_scale) * anchor_h, TF SSD; the default) or "linear"
                      (h = th / h_scale * anchor_h, BlazeFace)
    anchors           [[y_center, x_center, h, w], ...] normalized to the input, one per box
    ssd_anchors       an anchor generator config (below), used when "anchors" is absent
    score_activation  "sigmoid" (default), "softmax" or "none"
    background_class  true: class 0 is background and dropped (labels then start at class 1)
    score_threshold 0.5, iou_threshold 0.5, max_detections 100, class_aware true, multi_label false

The anchor generator (SSD style, as MediaPipe's SsdAnchorsCalculator describes it): layers are grouped by
equal consecutive ``strides``; each layer ``l`` has scale ``min_scale + (max_scale - min_scale) * l /
(num_layers - 1)``; a layer adds one anchor per ``aspect_ratios`` entry at its scale and, when
``interpolated_scale_aspect_ratio`` > 0, one more of that ratio at scale sqrt(scale_l * scale_{l+1})
(scale_{l+1} = 1 for the last layer); ``reduce_boxes_in_lowest_layer`` replaces layer 0's set by ratios
(1, 2, 0.5) at scales (0.1, s0, s0). A group's feature map is ceil(input / stride) cells; anchors are
emitted row by row, cell by cell, anchor by anchor, centred at (cell + anchor_offset) / cells, with size
scale/sqrt(ratio) x scale*sqrt(ratio), or 1 x 1 with ``fixed_anchor_size``. Keys: num_layers, min_scale,
max_scale, input_size_height, input_size_width, anchor_offset_x (0.5), anchor_offset_y (0.5), strides,
aspect_ratios ([1.0]), reduce_boxes_in_lowest_layer (false), interpolated_scale_aspect_ratio (1.0),
fixed_anchor_size (false). BlazeFace's front model: 4 layers, scales 0.1484375..0.75, 128x128, strides
[8, 16, 16, 16], fixed_anchor_size -> 896 anchors.

Boxes come back as ``(xmin, ymin, xmax, ymax)`` normalized to the model input (clipped to 0..1) and, when
the input was an image, ``box_pixels`` in the original image's pixels (undoing stretch/crop/letterbox).

Audio (``AudioClassifier``; manifest key "audio": sample_rate, frame_length, frame_step): WAV files must be
16-bit PCM (read with the standard ``wave`` module; several channels are averaged to mono) at the model's
sample rate: a different rate is refused, never silently resampled (a model without a manifest rate is taken
for 16 kHz, and a WAV at another rate is refused asking for ``sample_rate`` / `edge run --sample-rate`). Two
shapes of model:

- with a ``frontend`` model (one frame of int16 samples in, one feature vector out, e.g. TFLM's
  ``audio_preprocessor_int8``): the clip is cut into frames of the frontend's input length every
  ``frame_step`` samples (state reset per clip), the feature vectors are stacked and fed to the model
  (its input size / the feature size = frames per window); a short clip is padded with silence;
- without: the model input takes the waveform itself, ``frame_length`` = its sample count.

Longer clips are windowed (``hop`` frames/samples apart; default: one window length) and
``predict`` averages the windows' scores; ``predict_windows`` returns each window's predictions.
"""

from __future__ import annotations

import math
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from edge_sdk.errors import DataError, ModelError
from edge_sdk.runtime.kernels.quant import tflite_round
from edge_sdk.tasks.preprocess import Preprocess

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm")
AUDIO_SUFFIXES = (".wav", ".wave")
SCORE_MODES = ("auto", "probabilities", "logits", "sigmoid")
# what `edge run` says its scores are ("scores" in each result)
SCORES_SAID = {"probabilities": "as computed", "logits": "softmax of the model's outputs",
               "sigmoid": "sigmoid of the model's output"}
MAX_IMAGE_PIXELS = 64 * 1024 * 1024  # refuse decompression bombs with a clear message


class Prediction(NamedTuple):
    label: str
    score: float


class Detection(NamedTuple):
    box: tuple[float, float, float, float]  # (xmin, ymin, xmax, ymax), normalized to the model input
    label: str
    score: float
    class_id: int = -1
    box_pixels: tuple[float, float, float, float] | None = None  # in the original image, when known

    def to_dict(self) -> dict:
        d = {"box": [round(float(v), 6) for v in self.box], "label": self.label, "score": float(self.score),
             "class_id": int(self.class_id)}
        if self.box_pixels is not None:
            d["box_pixels"] = [round(float(v), 2) for v in self.box_pixels]
        return d


# ------------------------------------------------------------------------------------------------- model


def open_interpreter(model, arena_size=None, num_threads=None, backend: str = "python"):
    """An allocated ``Interpreter`` from a path, .tflite bytes, a ``Model``, an Interpreter or a ``ModelRunner``
    (its interpreter and its name: the model's file name in errors, not "<interpreter>"), and a name.
    ``backend``: "python" or "c" (``Interpreter(backend=...)``: the C runtime's CInterpreter, the same type)."""
    from edge_sdk.runtime.interpreter import Interpreter
    from edge_sdk.model.types import Model

    if isinstance(model, ModelRunner):
        return model.interpreter, model.name
    if isinstance(model, Interpreter):  # either backend: Interpreter(backend="c") is an Interpreter too
        model.allocate_tensors()
        return model, "<interpreter>"
    if isinstance(model, Model):
        it, name = Interpreter(model=model, arena_size=arena_size, num_threads=num_threads, backend=backend), "<model>"
    elif isinstance(model, (bytes, bytearray, memoryview)):
        it, name = (Interpreter(model_content=bytes(model), arena_size=arena_size, num_threads=num_threads,
                                backend=backend), "<bytes>")
    elif isinstance(model, (str, Path)):
        path = Path(model)
        if not path.exists():
            raise FileNotFoundError(2, "No such file or directory", str(path))
        if path.is_dir():
            raise IsADirectoryError(21, "Is a directory", str(path))
        it, name = (Interpreter(model_path=str(path), arena_size=arena_size, num_threads=num_threads,
                                backend=backend), str(path))
    else:
        raise ModelError(f"model must be a path, .tflite bytes, a Model or an Interpreter, not {type(model).__name__}")
    it.allocate_tensors()
    return it, name


def _quant_params(detail: dict) -> tuple[np.ndarray, np.ndarray, int]:
    q = detail.get("quantization_parameters") or {}
    scales = np.asarray(q.get("scales", np.zeros(0)), np.float32).reshape(-1)
    zps = np.asarray(q.get("zero_points", np.zeros(0)), np.int64).reshape(-1)
    if scales.size and zps.size < scales.size:
        zps = np.resize(np.concatenate([zps, np.zeros(1, np.int64)]), scales.size) if zps.size else np.zeros(scales.size, np.int64)
    return scales, zps, int(q.get("quantized_dimension", 0))


def _broadcast(values: np.ndarray, shape, axis: int) -> np.ndarray:
    if values.size == 1 or not shape:
        return values.reshape(()) if values.size == 1 else values
    view = [1] * len(shape)
    view[axis] = values.size
    return values.reshape(view)


def is_quantized(detail: dict) -> bool:
    scales, _, _ = _quant_params(detail)
    return bool(scales.size) and np.issubdtype(np.dtype(detail["dtype"]), np.integer) and bool(np.all(scales > 0))


def quantize(x, detail: dict) -> np.ndarray:
    """Real values -> the tensor's integer type with its scale and zero point (half away from zero, saturated)."""
    dtype = np.dtype(detail["dtype"])
    scales, zps, axis = _quant_params(detail)
    x = np.asarray(x, np.float32)
    s = _broadcast(scales, x.shape, axis)
    z = _broadcast(zps, x.shape, axis)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = x / s
    q = tflite_round(scaled) + z
    info = np.iinfo(dtype)
    return np.clip(np.nan_to_num(q, nan=0.0), info.min, info.max).astype(dtype)


def dequantize(q, detail: dict) -> np.ndarray:
    """A tensor's value as float32 (quantized: (q - zero_point) * scale; float: unchanged)."""
    q = np.asarray(q)
    if not is_quantized(detail):
        return q.astype(np.float32, copy=False) if q.dtype.kind == "f" else q
    scales, zps, axis = _quant_params(detail)
    return ((q.astype(np.int64) - _broadcast(zps, q.shape, axis)) * _broadcast(scales, q.shape, axis)).astype(np.float32)


def to_input(x, detail: dict, what: str = "input") -> np.ndarray:
    """A value for an input tensor: its own dtype passes; float for a quantized input is quantized; shapes
    must match (a missing batch axis of one is added)."""
    x = np.asarray(x)
    want = tuple(int(d) for d in detail["shape"])
    if tuple(x.shape) != want and (1,) + tuple(x.shape) == want:
        x = x[None]
    if tuple(x.shape) != want:
        raise ModelError(f"{what}: shape {tuple(x.shape)} does not match the model input "
                         f"'{detail['name']}' {want}")
    dtype = np.dtype(detail["dtype"])
    if x.dtype == dtype:
        return x
    if is_quantized(detail) and x.dtype.kind in "fiub":
        return quantize(x, detail)
    if dtype.kind == "f" and x.dtype.kind in "fiub":
        return x.astype(dtype)
    if dtype.kind in "iu" and x.dtype.kind in "iub":
        info = np.iinfo(dtype)
        if x.size and (x.min() < info.min or x.max() > info.max):
            raise ModelError(f"{what}: values outside {dtype} range for input '{detail['name']}'")
        return x.astype(dtype)
    raise ModelError(f"{what}: cannot feed {x.dtype} values to the {dtype} input '{detail['name']}'")


class ModelRunner:
    """An interpreter with its manifest: set inputs, invoke, read outputs (not thread-safe)."""

    def __init__(self, model, arena_size=None, num_threads=None, backend: str = "python", name: str | None = None):
        """``name``: the model as messages name it, when ``model`` is a derived copy (a shaped model in the cache
        stands for the user's file: edge_sdk.model.input_shapes.shaped_model_path)."""
        from edge_sdk.model.manifest import read_manifest

        self.interpreter, self.name = open_interpreter(model, arena_size, num_threads, backend)
        self.name = str(name) if name is not None else self.name
        self.manifest = read_manifest(self.interpreter.model) or {}
        self.inputs = self.interpreter.get_input_details()
        self.outputs = self.interpreter.get_output_details()

    def run(self, *inputs) -> list[np.ndarray]:
        """Raw outputs (the model's own dtypes) for one set of inputs (already the inputs' dtypes/shapes)."""
        it = self.interpreter
        if len(inputs) != len(self.inputs):
            raise ModelError(f"{self.name}: the model takes {len(self.inputs)} inputs, {len(inputs)} given")
        for d, x in zip(self.inputs, inputs):
            it.set_tensor(d["index"], x)
        it.invoke()
        return [it.get_tensor(d["index"]) for d in self.outputs]


def check_labels_file(labels) -> None:
    """A labels path that is not there is an error up front (not a classifier that quietly numbers its classes)."""
    if isinstance(labels, (str, Path)) and not Path(labels).is_file():
        raise FileNotFoundError(2, "labels: no such file", str(labels))


def read_labels(labels) -> list[str] | None:
    if labels is None:
        return None
    if isinstance(labels, (str, Path)):
        path = Path(labels)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ModelError(f"{path}: labels file is not UTF-8 text") from None
        return [line.strip() for line in text.splitlines() if line.strip()]
    return [str(v) for v in labels]


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """NaN or inf among the values (a model fed NaN, or overflowing) gives NaN scores, never a numpy warning on
    the user's terminal."""
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return (e / np.sum(e, axis=axis, keepdims=True)).astype(np.float32)


def sigmoid(x: np.ndarray) -> np.ndarray:
    x = np.clip(np.asarray(x, np.float64), -80, 80)
    return (1.0 / (1.0 + np.exp(-x))).astype(np.float32)


def count_nonfinite(x) -> int:
    """How many NaN / inf values an array holds (0 for integer arrays): the one count behind every refusal of
    non-finite input (nonfinite_in for data files, refuse_nonfinite for tensors, the server's requests)."""
    x = np.asarray(x)
    return int(x.size - np.count_nonzero(np.isfinite(x))) if x.dtype.kind in "fc" else 0


def nonfinite_in(x) -> str | None:
    """Where an array of samples (axis 0) holds NaN or inf: "N non-finite value(s) (NaN or inf) of M, the first in
    sample K", or None when every value is finite (or the array holds no floats). Scanned in slices of ~4 M values:
    a memory-mapped .npy of gigabytes is read slice by slice. (The one check of `edge` data files and of
    ``converters.evaluate.evaluate``'s arrays.)"""
    x = np.asarray(x)  # a memory map stays one (no copy)
    if x.dtype.kind not in "fc" or x.size == 0:
        return None
    rows = x.reshape(len(x), -1) if x.ndim > 1 else x.reshape(-1, 1)  # [samples, values per sample]
    step = max(1, (1 << 22) // max(1, rows.shape[1]))
    bad, first = 0, None
    for start in range(0, len(rows), step):
        block = rows[start:start + step]
        n = count_nonfinite(block)
        if n and first is None:
            first = start + int(np.flatnonzero(~np.isfinite(block).all(axis=1))[0])
        bad += n
    if not bad:
        return None
    return f"{bad} non-finite value(s) (NaN or inf) of {x.size}, the first in sample {first}"


def refuse_nonfinite(x: np.ndarray, name: str, allow: bool = False) -> None:
    """An input tensor with NaN or inf values is refused (DataError naming it and how many): a model fed NaN
    answers with confident-looking scores. ``allow``: run it anyway, with a warning naming it."""
    x = np.asarray(x)
    bad = count_nonfinite(x)
    if not bad:
        return
    what = f"{name}: {bad} of {x.size} value(s) are not finite (NaN or inf)"
    if allow:
        from edge_sdk import log

        log.warning(f"{what}; run anyway (--allow-nonfinite): its scores mean nothing")
        return
    raise DataError(f"{what}; refused (--allow-nonfinite runs it anyway)")


def score_mode(values: np.ndarray, mode: str = "auto", step: float = 0.0) -> str:
    """What ``to_scores`` does with these values: "probabilities" (kept as the model computed them), "logits"
    (softmax) or "sigmoid". "auto" (when the model's structure did not settle it, see ``auto_scores``): a single
    value is a probability when it lies in [0, 1], else a logit (sigmoid; softmax over one value is always 1);
    a class vector is kept when its values lie in [0, 1] and sum to 1 within a tolerance covering the output's
    quantization step, else softmax."""
    if mode != "auto":
        if mode not in SCORE_MODES:
            raise ModelError(f"scores must be one of {', '.join(SCORE_MODES)}, not {mode!r}")
        return mode
    v = np.asarray(values, np.float32).reshape(-1)
    in_unit = bool(v.size) and v.min() >= -1e-6 - step / 2 and v.max() <= 1 + 1e-6 + step / 2
    if v.size <= 1:
        return "probabilities" if in_unit or not v.size else "sigmoid"
    if in_unit and abs(float(v.sum()) - 1.0) <= 0.02 + v.size * float(step):
        return "probabilities"
    return "logits"


def auto_scores(runner: "ModelRunner", output: dict, mode: str) -> str:
    """Settle "auto" from the model where it can: an output made by SOFTMAX or LOGISTIC, or a quantized
    output that can only hold values in [0, 1] (scale 1/256 over the whole integer range), holds probabilities
    as the model computed them."""
    if mode != "auto":
        return mode
    model = getattr(runner.interpreter, "model", None)
    if model is not None and model.subgraphs:
        sg = model.subgraphs[0]
        for op in sg.operators:
            if output["index"] in list(op.outputs):
                if model.op_name(op) in ("SOFTMAX", "LOGISTIC"):
                    return "probabilities"
                break
    if is_quantized(output):
        scales, zps, _ = _quant_params(output)
        if scales.size == 1:
            info = np.iinfo(np.dtype(output["dtype"]))
            lo, hi = (info.min - int(zps[0])) * float(scales[0]), (info.max - int(zps[0])) * float(scales[0])
            if lo >= -1e-6 and hi <= 1 + 1e-6:
                return "probabilities"
    return "auto"


def to_scores(values: np.ndarray, mode: str = "auto", step: float = 0.0) -> np.ndarray:
    """Dequantized class outputs -> scores (see the module docstring, ``auto_scores`` and ``score_mode``)."""
    v = np.asarray(values, np.float32).reshape(-1)
    mode = score_mode(v, mode, step)
    if mode == "logits":
        return softmax(v)
    if mode == "sigmoid":
        return sigmoid(v)
    return v


def top_k(scores: np.ndarray, labels: list[str], k: int) -> list[Prediction]:
    k = max(0, min(int(k), scores.size))
    order = np.argsort(-scores, kind="stable")[:k]
    return [Prediction(labels[i], float(scores[i])) for i in order]


def classes_per_row(output: dict) -> int:
    """Classes in one row of a class-score output: [B, C..] -> prod(C..) (B the batch: a [-1, C] model run at
    [T, C] gives T rows, as LiteRT does), [C] -> C."""
    shape = [int(v) for v in output["shape"]]
    return int(np.prod(shape[1:] if len(shape) > 1 else shape))


def score_rows(y: np.ndarray, output: dict, mode: str) -> tuple[list[np.ndarray], str]:
    """A class-score output's raw values ``y`` -> (scores per batch row, the score mode taken on the first row:
    one mode for the whole batch, as one model computes it)."""
    n = classes_per_row(output)
    v = dequantize(y, output).reshape(-1, n)
    scales, _, _ = _quant_params(output)
    said = score_mode(v[0], mode, float(scales.max()) if is_quantized(output) else 0.0)
    return [to_scores(row, said) for row in v], said


def _label_list(labels, n: int, name: str, offset: int = 0) -> list[str]:
    if labels is None:
        return [str(i) for i in range(n)]
    if len(labels) != n:
        raise ModelError(f"{name}: {len(labels)} labels for {n} classes" + (" (after the background class)" if offset else ""))
    return list(labels)


# ------------------------------------------------------------------------------------------------- images


def load_image(image, max_pixels: int = MAX_IMAGE_PIXELS):
    """A PIL image from a path, bytes, PIL image or uint8 array; errors name the file and the problem."""
    from PIL import Image, UnidentifiedImageError

    if isinstance(image, Image.Image):
        return image
    if isinstance(image, np.ndarray):
        a = image
        if a.dtype != np.uint8:
            raise ModelError(f"image array: dtype {a.dtype}; pixel arrays must be uint8 (or pass a float array "
                             "shaped like the model input)")
        if a.ndim == 3 and a.shape[2] == 1:
            a = a[:, :, 0]
        if a.ndim == 2:
            return Image.fromarray(a, "L")
        if a.ndim != 3:
            raise ModelError(f"image array: shape {a.shape}; expected (H, W) or (H, W, C)")
        if a.shape[2] not in (3, 4):
            raise ModelError(f"image array: {a.shape[2]} channels; expected 1, 3 or 4")
        return Image.fromarray(np.ascontiguousarray(a[:, :, :3]), "RGB")
    if isinstance(image, (bytes, bytearray, memoryview)):
        import io

        source, name = io.BytesIO(bytes(image)), "image bytes"
    elif isinstance(image, (str, Path)):
        source = name = str(image)
        if not Path(source).exists():
            raise FileNotFoundError(2, "No such file or directory", source)
    else:
        raise ModelError(f"image must be a path, bytes, a PIL image or a numpy array, not {type(image).__name__}")
    try:
        with Image.open(source) as im:
            if im.width * im.height > max_pixels:
                raise ModelError(f"{name}: {im.width}x{im.height} pixels is above the {max_pixels} pixel limit")
            im.load()
            return im.copy() if im.mode in ("L", "RGB") else im.convert("RGBA" if "A" in im.getbands() else "RGB")
    except ModelError:
        raise
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise ModelError(f"{name}: cannot read the image ({exc})") from None


def resolve_preprocess(preprocess, manifest_pre, detail: dict, name: str) -> Preprocess:
    """Explicit (a Preprocess or dict) over the manifest's, completed from the input shape (module docstring)."""
    if isinstance(preprocess, Preprocess):
        d = preprocess.to_dict()
    elif preprocess is None:
        d = dict(manifest_pre or {})
    elif isinstance(preprocess, dict):
        d = {**(manifest_pre or {}), **preprocess}
    else:
        raise ModelError(f"preprocess must be a Preprocess or a dict, not {type(preprocess).__name__}")
    described = bool(preprocess is not None or manifest_pre)
    shape = tuple(int(v) for v in detail["shape"])
    if len(shape) not in (3, 4):
        raise ModelError(f"{name}: input '{detail['name']}' has shape {shape}; image models take (1, H, W, C) "
                         "or (1, C, H, W)")
    if len(shape) == 3:  # (1, H, W): one gray channel without its axis
        shape = shape + (1,)
        d.setdefault("layout", "NHWC")
    layout = str(d.get("layout") or ("NHWC" if shape[3] in (1, 3) else "NCHW")).upper()
    h, w, c = (shape[1], shape[2], shape[3]) if layout == "NHWC" else (shape[2], shape[3], shape[1])
    if c not in (1, 3):
        raise ModelError(f"{name}: input '{detail['name']}' has {c} channels ({layout} {shape}); images give 1 or 3")
    d["layout"] = layout
    d.setdefault("size", None)
    if not d["size"]:
        d["size"] = (w, h)
    if not d.get("channels"):
        d["channels"] = "GRAY" if c == 1 else "RGB"
    dtype = np.dtype(detail["dtype"])
    if not described:
        if is_quantized(detail) and dtype in (np.int8, np.uint8):
            info = np.iinfo(dtype)
            lo, hi = dequantize(np.array([info.min, info.max], dtype), detail).tolist()
            d["value_range"] = (lo, hi)
        elif dtype == np.uint8:
            d["dtype"] = "uint8"
        elif dtype == np.int8:
            d["dtype"] = "int8"
    pre = Preprocess.from_dict(d)
    if pre.num_channels != c:
        raise ModelError(f"{name}: preprocess gives {pre.channels} ({pre.num_channels} channels) but input "
                         f"'{detail['name']}' takes {c}")
    if tuple(pre.size) != (w, h):
        raise ModelError(f"{name}: preprocess size {pre.size[0]}x{pre.size[1]} but input '{detail['name']}' "
                         f"is {w}x{h}")
    return pre


@dataclass
class ImageMeta:
    """Where the model input came from (to map boxes back to the original image)."""

    width: int
    height: int
    target: tuple[int, int]
    resize: str


def _to_pixels(box, meta: ImageMeta | None):
    if meta is None:
        return None
    w, h = meta.target
    iw, ih = meta.width, meta.height
    x0, y0, x1, y1 = box
    if meta.resize == "stretch" or (iw, ih) == (w, h):
        return (x0 * iw, y0 * ih, x1 * iw, y1 * ih)
    if meta.resize == "center-crop":
        k = max(w / iw, h / ih)
        sw, sh = max(w, round(iw * k)), max(h, round(ih * k))
        ox, oy = -((sw - w) // 2), -((sh - h) // 2)
    else:  # letterbox
        k = min(w / iw, h / ih)
        sw, sh = max(1, round(iw * k)), max(1, round(ih * k))
        ox, oy = (w - sw) // 2, (h - sh) // 2
    fx, fy = sw / iw, sh / ih

    def px(v, size, off, f, limit):
        return float(min(max((v * size - off) / f, 0.0), limit))

    return (px(x0, w, ox, fx, iw), px(y0, h, oy, fy, ih), px(x1, w, ox, fx, iw), px(y1, h, oy, fy, ih))


class _ImagePipeline:
    def __init__(self, model, preprocess=None, labels=None, input_index: int = 0, arena_size=None):
        self.runner = ModelRunner(model, arena_size)
        self.name = self.runner.name
        self.manifest = self.runner.manifest
        if not 0 <= input_index < len(self.runner.inputs):
            raise ModelError(f"{self.name}: no input {input_index} (the model has {len(self.runner.inputs)})")
        if len(self.runner.inputs) != 1:
            raise ModelError(f"{self.name}: image pipelines take models with one input; this one has "
                             f"{len(self.runner.inputs)}")
        self.input = self.runner.inputs[input_index]
        self.preprocess = resolve_preprocess(preprocess, self.manifest.get("preprocess"), self.input, self.name)
        self.labels = read_labels(labels) if labels is not None else read_labels(self.manifest.get("labels"))

    def prepare(self, image) -> tuple[np.ndarray, ImageMeta | None]:
        """An image -> (the model input tensor with batch axis one, where it came from)."""
        want = tuple(int(d) for d in self.input["shape"])
        if isinstance(image, np.ndarray) and image.dtype == self.input["dtype"] and tuple(image.shape) == want:
            return to_input(image, self.input, "image tensor"), None  # a uint8 model's own input tensor, batch axis
        if isinstance(image, np.ndarray) and image.dtype != np.uint8:
            if tuple(image.shape) in (want, want[1:]):
                return to_input(image, self.input, "image tensor"), None
            raise ModelError(f"{image.dtype} image array of shape {image.shape}: a non-uint8 array must be the "
                             f"pre-processed input {want}; pixel arrays are uint8")
        label = str(image) if isinstance(image, (str, Path)) else "image"
        pil = load_image(image)
        meta = ImageMeta(pil.width, pil.height, tuple(self.preprocess.size), self.preprocess.resize)
        try:
            x = self.preprocess.apply(pil)
        except (OSError, ValueError) as exc:
            raise ModelError(f"{label}: cannot pre-process the image ({exc})") from None
        if x.shape != want:
            x = x.reshape(want) if x.size == math.prod(want) else x
        return to_input(x, self.input, label), meta

    def run_tensor(self, x) -> list[np.ndarray]:
        return self.runner.run(x)


class ImageClassifier(_ImagePipeline):
    """Image in, top-k (label, score) out; see the module docstring."""

    def __init__(self, model, preprocess=None, labels=None, scores: str | None = None, output_index: int = 0,
                 top_k: int = 5, arena_size=None):
        super().__init__(model, preprocess, labels, arena_size=arena_size)
        post = self.manifest.get("postprocess") or {}
        self.scores = scores or post.get("scores") or "auto"
        if self.scores not in SCORE_MODES:
            raise ModelError(f"scores must be one of {', '.join(SCORE_MODES)}, not {self.scores!r}")
        if not 0 <= output_index < len(self.runner.outputs):
            raise ModelError(f"{self.name}: no output {output_index} (the model has {len(self.runner.outputs)})")
        self.output = self.runner.outputs[output_index]
        self.output_index = output_index
        self.scores = auto_scores(self.runner, self.output, self.scores)
        self.num_classes = classes_per_row(self.output)
        self.labels = _label_list(self.labels, self.num_classes, self.name)
        self.top_k = int(top_k)

    def interpret(self, outputs: list[np.ndarray], k: int | None = None) -> list[Prediction]:
        """Raw outputs of one run (batch one) -> top-k predictions."""
        return self.interpret_rows(outputs, k)[0]

    def interpret_rows(self, outputs: list[np.ndarray], k: int | None = None) -> list[list[Prediction]]:
        """Raw outputs of one run -> top-k predictions per row of its batch ([B, classes..]: B lists)."""
        rows, self.last_scores = score_rows(outputs[self.output_index], self.output, self.scores)
        return [top_k(s, self.labels, self.top_k if k is None else k) for s in rows]

    def predict(self, image, top_k: int | None = None) -> list[Prediction]:
        x, _ = self.prepare(image)
        return self.interpret(self.runner.run(x), top_k)

    def predict_tensor(self, x, top_k: int | None = None) -> list[Prediction]:
        return self.interpret(self.runner.run(to_input(x, self.input, "tensor")), top_k)

    def predict_rows(self, x, top_k: int | None = None) -> list[list[Prediction]]:
        """A tensor shaped like the input (batch axis optional) -> top-k per row of the batch."""
        return self.interpret_rows(self.runner.run(to_input(x, self.input, "tensor")), top_k)


# ------------------------------------------------------------------------------------------------- detection


def ssd_anchors(config: dict) -> np.ndarray:
    """Anchors (N, 4) as (y_center, x_center, h, w) from an SSD anchor config (see the module docstring)."""
    try:
        num_layers = int(config["num_layers"])
        min_scale, max_scale = float(config["min_scale"]), float(config["max_scale"])
        in_h, in_w = int(config["input_size_height"]), int(config["input_size_width"])
        strides = [int(s) for s in config["strides"]]
    except KeyError as exc:
        raise ModelError(f"ssd_anchors: missing key {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise ModelError(f"ssd_anchors: bad value ({exc})") from None
    if num_layers != len(strides) or num_layers < 1 or min(strides) <= 0:
        raise ModelError(f"ssd_anchors: num_layers {num_layers} needs as many positive strides, got {strides}")
    ratios_cfg = [float(r) for r in config.get("aspect_ratios", [1.0])]
    off_x, off_y = float(config.get("anchor_offset_x", 0.5)), float(config.get("anchor_offset_y", 0.5))
    reduce_lowest = bool(config.get("reduce_boxes_in_lowest_layer", False))
    interp_ratio = float(config.get("interpolated_scale_aspect_ratio", 1.0))
    fixed = bool(config.get("fixed_anchor_size", False))

    def scale_of(layer: int) -> float:
        if num_layers == 1:
            return (min_scale + max_scale) / 2
        return min_scale + (max_scale - min_scale) * layer / (num_layers - 1)

    groups = []
    layer = 0
    while layer < num_layers:
        ratios, scales = [], []
        last = layer
        while last < num_layers and strides[last] == strides[layer]:
            s = scale_of(last)
            if last == 0 and reduce_lowest:
                ratios += [1.0, 2.0, 0.5]
                scales += [0.1, s, s]
            else:
                ratios += ratios_cfg
                scales += [s] * len(ratios_cfg)
                if interp_ratio > 0:
                    nxt = 1.0 if last == num_layers - 1 else scale_of(last + 1)
                    ratios.append(interp_ratio)
                    scales.append(math.sqrt(s * nxt))
            last += 1
        r = np.sqrt(np.asarray(ratios, np.float64))
        sc = np.asarray(scales, np.float64)
        hw = np.ones((len(ratios), 2)) if fixed else np.stack([sc / r, sc * r], axis=1)
        fh, fw = math.ceil(in_h / strides[layer]), math.ceil(in_w / strides[layer])
        yc = (np.arange(fh) + off_y) / fh
        xc = (np.arange(fw) + off_x) / fw
        a = len(ratios)
        grid = np.empty((fh, fw, a, 4))
        grid[..., 0] = yc[:, None, None]
        grid[..., 1] = xc[None, :, None]
        grid[..., 2] = hw[None, None, :, 0]
        grid[..., 3] = hw[None, None, :, 1]
        groups.append(grid.reshape(-1, 4))
        layer = last
    return np.concatenate(groups).astype(np.float32)


def decode_boxes(encoded: np.ndarray, anchors: np.ndarray, scales=(10.0, 10.0, 5.0, 5.0), box_order: str = "yxhw",
                 box_encoding: str = "log") -> np.ndarray:
    """Box encodings (N, >=4) relative to anchors (N, 4: yc, xc, h, w) -> corner boxes (N, 4: ymin, xmin, ymax, xmax)."""
    e = np.asarray(encoded, np.float64)
    a = np.asarray(anchors, np.float64)
    if e.ndim != 2 or e.shape[1] < 4 or a.shape != (e.shape[0], 4):
        raise ModelError(f"detection: {e.shape[0] if e.ndim == 2 else '?'} box encodings of shape {e.shape} "
                         f"need anchors of shape (N, 4), got {a.shape}")
    order = {"yxhw": (0, 1, 2, 3), "xywh": (1, 0, 3, 2)}.get(box_order)
    if order is None:
        raise ModelError(f"detection: box_order must be yxhw or xywh, not {box_order!r}")
    ty, tx, th, tw = (e[:, i] for i in order)
    sy, sx, sh, sw = (float(s) for s in scales)
    yc = ty / sy * a[:, 2] + a[:, 0]
    xc = tx / sx * a[:, 3] + a[:, 1]
    if box_encoding == "log":
        h = np.exp(np.clip(th / sh, -30, 30)) * a[:, 2]
        w = np.exp(np.clip(tw / sw, -30, 30)) * a[:, 3]
    elif box_encoding == "linear":
        h = th / sh * a[:, 2]
        w = tw / sw * a[:, 3]
    else:
        raise ModelError(f"detection: box_encoding must be log or linear, not {box_encoding!r}")
    return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=1)


def iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """IoU of one corner box (4,) with many (N, 4), any consistent corner order (min, min, max, max)."""
    lo = np.maximum(box[:2], boxes[:, :2])
    hi = np.minimum(box[2:], boxes[:, 2:])
    inter = np.prod(np.clip(hi - lo, 0, None), axis=1)
    area = np.prod(np.clip(box[2:] - box[:2], 0, None))
    areas = np.prod(np.clip(boxes[:, 2:] - boxes[:, :2], 0, None), axis=1)
    union = area + areas - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def nms(boxes, scores, classes=None, iou_threshold: float = 0.5, score_threshold: float = 0.5,
        max_detections: int = 100, class_aware: bool = True) -> np.ndarray:
    """Greedy non-maximum suppression: indices kept, best first. Boxes (N, 4) corner boxes; a box suppresses
    a lower-scored one whose IoU with it is above ``iou_threshold`` (same class only when ``class_aware``).
    Ties keep the lower index first. Each round is one vectorized IoU; at most ``max_detections`` rounds."""
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    scores = np.asarray(scores, np.float64).reshape(-1)
    classes = np.zeros(scores.size, np.int64) if classes is None else np.asarray(classes).reshape(-1)
    cand = np.flatnonzero(scores >= score_threshold)
    cand = cand[np.argsort(-scores[cand], kind="stable")]
    keep = []
    while cand.size and len(keep) < max_detections:
        best = cand[0]
        keep.append(int(best))
        rest = cand[1:]
        over = iou(boxes[best], boxes[rest]) > iou_threshold
        if class_aware:
            over &= classes[rest] == classes[best]
        cand = rest[~over]
    return np.asarray(keep, np.int64)


_DETECTION_DEFAULTS = {
    "format": None, "outputs": None, "box_order": None, "scales": [10.0, 10.0, 5.0, 5.0], "box_encoding": "log",
    "anchors": None, "ssd_anchors": None, "score_activation": "sigmoid", "background_class": False,
    "score_threshold": 0.5, "iou_threshold": 0.5, "max_detections": 100, "class_aware": True, "multi_label": False,
}


def postprocess_outputs(model, outputs: list[dict]) -> list[int] | None:
    """Positions in ``outputs`` (get_output_details) of the boxes, classes, scores and count: the outputs of a
    TFLite_Detection_PostProcess node by their place in the node (TF2 detection exports list the model's outputs in
    another order, e.g. scores, boxes, count, classes; some list the raw predictions too), else None."""
    where = {int(d["index"]): i for i, d in enumerate(outputs)}
    for op in model.subgraphs[0].operators:
        if model.op_name(op) == "TFLite_Detection_PostProcess" and all(t in where for t in op.outputs[:4]):
            return [where[t] for t in op.outputs[:4]]
    return None


class Detector(_ImagePipeline):
    """Image in, boxes out: decode with anchors, then NMS; options as in the module docstring."""

    def __init__(self, model, preprocess=None, labels=None, arena_size=None, **options):
        super().__init__(model, preprocess, labels, arena_size=arena_size)
        unknown = set(options) - set(_DETECTION_DEFAULTS)
        if unknown:
            raise ModelError(f"Detector: unknown option(s) {', '.join(sorted(unknown))}")
        cfg = {**_DETECTION_DEFAULTS, **(self.manifest.get("detection") or {}),
               **{k: v for k, v in options.items() if v is not None}}
        self.config = cfg
        outs = self.runner.outputs
        fmt = cfg["format"]
        node_order = postprocess_outputs(self.runner.interpreter.model, outs)
        if fmt is None:
            fmt = "ssd" if (cfg["anchors"] is not None or cfg["ssd_anchors"]) else (
                "postprocessed" if (node_order or len(outs) == 4) and not cfg["outputs"] else "boxes")
        if fmt not in ("ssd", "boxes", "postprocessed"):
            raise ModelError(f"{self.name}: detection format must be ssd, boxes or postprocessed, not {fmt!r}")
        self.format = fmt
        if fmt == "postprocessed":
            if node_order is None and len(outs) != 4:
                raise ModelError(f"{self.name}: 'postprocessed' detection needs 4 outputs (boxes, classes, scores, "
                                 f"count); the model has {len(outs)}")
            self.num_classes = None
            self.post_order = node_order or [0, 1, 2, 3]
            return
        self.box_out, self.score_out = self._pick_outputs(cfg["outputs"])
        bshape = tuple(int(d) for d in outs[self.box_out]["shape"])
        sshape = tuple(int(d) for d in outs[self.score_out]["shape"])
        self.num_boxes = bshape[-2] if len(bshape) >= 2 else 0
        if len(bshape) < 2 or bshape[-1] < 4 or math.prod(bshape[:-2]) != 1:
            raise ModelError(f"{self.name}: box output '{outs[self.box_out]['name']}' has shape {bshape}; "
                             "expected (1, N, >=4)")
        n_scores = math.prod(sshape)
        if n_scores % self.num_boxes:
            raise ModelError(f"{self.name}: score output {sshape} does not hold a whole number of classes for "
                             f"{self.num_boxes} boxes")
        self.num_classes = n_scores // self.num_boxes
        self.first_class = 1 if cfg["background_class"] else 0
        if self.num_classes - self.first_class < 1:
            raise ModelError(f"{self.name}: no classes left after the background class")
        self.labels = _label_list(self.labels, self.num_classes - self.first_class, self.name, self.first_class)
        if fmt == "ssd":
            if cfg["anchors"] is not None:
                anchors = np.asarray(cfg["anchors"], np.float32)
            elif cfg["ssd_anchors"]:
                anchors = ssd_anchors(cfg["ssd_anchors"])
            else:
                raise ModelError(f"{self.name}: ssd detection needs anchors or an ssd_anchors config")
            if anchors.shape != (self.num_boxes, 4):
                raise ModelError(f"{self.name}: {anchors.shape[0] if anchors.ndim else 0} anchors for "
                                 f"{self.num_boxes} boxes (anchors shape {anchors.shape})")
            self.anchors = anchors

    def _pick_outputs(self, chosen) -> tuple[int, int]:
        outs = self.runner.outputs
        if chosen:
            names = [d["name"] for d in outs]

            def index(key: str) -> int:
                v = chosen.get(key) if isinstance(chosen, dict) else None
                if isinstance(v, str) and v in names:
                    return names.index(v)
                try:
                    i = int(v)
                except (TypeError, ValueError):
                    raise ModelError(f"{self.name}: detection output {key}={v!r} is neither an output index "
                                     f"(0..{len(outs) - 1}) nor an output name ({', '.join(names)})") from None
                if not 0 <= i < len(outs):
                    raise ModelError(f"{self.name}: detection output {key}={i} out of range ({len(outs)} outputs: "
                                     f"{', '.join(names)})")
                return i

            if not isinstance(chosen, dict) or "boxes" not in chosen:
                raise ModelError(f"{self.name}: detection outputs must be {{'boxes': i, 'scores': j}}")
            b = index("boxes")
            if "scores" not in chosen:
                if len(outs) != 2:
                    raise ModelError(f"{self.name}: {len(outs)} outputs: say which one holds the scores too "
                                     "(--scores NAME|INDEX)")
                return b, 1 - b
            s = index("scores")
            if b == s:
                raise ModelError(f"{self.name}: boxes and scores cannot both be output {b}")
            return b, s
        # the flags and the API's option both named: `edge run` / `edge serve` users and Detector callers
        listed = ", ".join(f"{i} {d['name']!r}" for i, d in enumerate(outs))
        say = f"(outputs: {listed}; --boxes OUTPUT --scores OUTPUT, or the option outputs={{'boxes': i, 'scores': j}})"
        if len(outs) != 2:
            raise ModelError(f"{self.name}: {len(outs)} outputs; say which hold boxes and scores {say}")
        four = [i for i, d in enumerate(outs) if len(d["shape"]) >= 2 and int(d["shape"][-1]) == 4]
        if len(four) != 1:
            named = [i for i, d in enumerate(outs) if any(k in d["name"].lower() for k in ("box", "regress", "loc"))]
            four = named if len(named) == 1 else []
        if not four:
            raise ModelError(f"{self.name}: cannot tell the box output from the score output {say}")
        return four[0], 1 - four[0]

    def interpret(self, outputs: list[np.ndarray], meta: ImageMeta | None = None) -> list[Detection]:
        cfg = self.config
        if self.format == "postprocessed":
            return self._postprocessed(outputs, meta)
        raw = dequantize(outputs[self.box_out], self.runner.outputs[self.box_out])
        raw = np.asarray(raw, np.float64).reshape(self.num_boxes, -1)
        logits = np.asarray(dequantize(outputs[self.score_out], self.runner.outputs[self.score_out]),
                            np.float64).reshape(self.num_boxes, self.num_classes)
        act = cfg["score_activation"]
        if act == "sigmoid":
            scores = sigmoid(logits)
        elif act == "softmax":
            scores = softmax(logits, axis=1)
        elif act == "none":
            scores = logits.astype(np.float32)
        else:
            raise ModelError(f"detection: score_activation must be sigmoid, softmax or none, not {act!r}")
        scores = scores[:, self.first_class:]
        if self.format == "ssd":
            corners = decode_boxes(raw, self.anchors, cfg["scales"], cfg["box_order"] or "yxhw", cfg["box_encoding"])
        else:
            order = cfg["box_order"] or "yxyx"
            if order not in ("yxyx", "xyxy"):
                raise ModelError(f"detection: box_order for format 'boxes' must be yxyx or xyxy, not {order!r}")
            corners = raw[:, :4] if order == "yxyx" else raw[:, [1, 0, 3, 2]]
        if cfg["multi_label"]:
            bi, ci = np.nonzero(scores >= float(cfg["score_threshold"]))
            cand_boxes, cand_scores, cand_classes = corners[bi], scores[bi, ci], ci
        else:
            ci = np.argmax(scores, axis=1)
            cand_boxes, cand_scores, cand_classes = corners, scores[np.arange(scores.shape[0]), ci], ci
        keep = nms(cand_boxes, cand_scores, cand_classes, float(cfg["iou_threshold"]), float(cfg["score_threshold"]),
                   int(cfg["max_detections"]), bool(cfg["class_aware"]))
        return [self._detection(cand_boxes[k], int(cand_classes[k]), float(cand_scores[k]), meta) for k in keep]

    def _detection(self, yxyx, cls: int, score: float, meta) -> Detection:
        ymin, xmin, ymax, xmax = (float(np.clip(v, 0.0, 1.0)) for v in yxyx)
        box = (xmin, ymin, xmax, ymax)
        label = self.labels[cls] if self.labels and 0 <= cls < len(self.labels) else str(cls)
        return Detection(box, label, score, cls + getattr(self, "first_class", 0), _to_pixels(box, meta))

    def _postprocessed(self, outputs, meta) -> list[Detection]:
        outs = self.runner.outputs
        vals = [np.asarray(dequantize(outputs[i], outs[i]), np.float64) for i in self.post_order]
        boxes, classes, scores, count = vals[0].reshape(-1, 4), vals[1].reshape(-1), vals[2].reshape(-1), vals[3]
        # class ids and the count are whole numbers: rounded, not truncated (a model written elsewhere with an
        # int8 copy of them reads class 1 back as 0.996)
        n = min(int(np.rint(count.reshape(-1)[0])), boxes.shape[0], scores.size)
        res = []
        thr = float(self.config["score_threshold"])
        for i in range(n):
            if scores[i] >= thr:
                cls = int(np.rint(classes[i]))
                label = self.labels[cls] if self.labels and 0 <= cls < len(self.labels) else str(cls)
                ymin, xmin, ymax, xmax = (float(np.clip(v, 0, 1)) for v in boxes[i])
                box = (xmin, ymin, xmax, ymax)
                res.append(Detection(box, label, float(scores[i]), cls, _to_pixels(box, meta)))
        return res[: int(self.config["max_detections"])]

    def detect(self, image) -> list[Detection]:
        x, meta = self.prepare(image)
        return self.interpret(self.runner.run(x), meta)


# ------------------------------------------------------------------------------------------------- audio


MAX_WAV_SECONDS = 600


def read_wav(path) -> tuple[np.ndarray, int]:
    """A WAV file -> (int16 mono samples, sample rate). 16-bit PCM only; channels are averaged."""
    name = str(path)
    if isinstance(path, (str, Path)) and not Path(path).exists():
        raise FileNotFoundError(2, "No such file or directory", name)
    try:
        with wave.open(str(path) if isinstance(path, Path) else path, "rb") as w:
            width, channels, rate, n = w.getsampwidth(), w.getnchannels(), w.getframerate(), w.getnframes()
            if width != 2:
                raise ModelError(f"{name}: {8 * width}-bit samples; only 16-bit PCM WAV is supported")
            if rate <= 0 or n > MAX_WAV_SECONDS * rate:
                raise ModelError(f"{name}: {n} frames at {rate} Hz is outside what we read (<= {MAX_WAV_SECONDS} s)")
            data = w.readframes(n)
    except ModelError:
        raise
    except (wave.Error, EOFError, OSError) as exc:
        raise ModelError(f"{name}: cannot read the WAV file ({exc}); only 16-bit PCM WAV is supported") from None
    a = np.frombuffer(data[: len(data) - len(data) % (2 * channels)], "<i2").reshape(-1, channels)
    if channels > 1:
        a = np.round(a.astype(np.float64).mean(axis=1)).astype(np.int16)
    else:
        a = a[:, 0].astype(np.int16)
    return a, rate


def samples_by_channel(model) -> bool:
    """True when the model's one input is read by AudioSpectrogram, whose input is [samples, channels]: a [-1, 1]
    there is one channel of samples of any length, not a batch (a WAV sizes its axis 0)."""
    sg = model.subgraphs[0]
    return len(sg.inputs) == 1 and any(model.op_name(op) == "AudioSpectrogram" and list(op.inputs[:1]) == [sg.inputs[0]]
                                       for op in sg.operators)


def raw_audio_shapes(model, wavs: list[str], sample_rate: int | None = None, name: str = "the model"):
    """The input shape each WAV gives a model whose one input is raw samples of any length (signature [-1],
    [-1, -1] or [1, -1]; [-1, 1] read by AudioSpectrogram, samples x one channel): {input name: (1, samples),
    (samples,) or (samples, 1)} per file, the length taken from the file at
    the model's rate (``sample_rate``, `--sample-rate`, else the manifest's "audio" entry; a file at another rate
    is refused by AudioClassifier, never resampled). None when the model is not such a model (its input shape
    is then asked for as usual). No rate known: a UsageError asking for --sample-rate. ``model``: a Model."""
    from edge_sdk.errors import UsageError
    from edge_sdk.model.input_shapes import dynamic_inputs, judged_shapes
    from edge_sdk.model.manifest import read_manifest

    if len(model.subgraphs[0].inputs) != 1:
        return None
    dynamic = dynamic_inputs(model) or [(i["name"], tuple(i["signature"]), None) for i in judged_shapes(model)
                                        if samples_by_channel(model) and tuple(i["signature"]) == (-1, 1)]
    if len(dynamic) != 1:
        return None
    shown, sig, _ = dynamic[0]
    if not (sig in ((-1,), (-1, 1)) or (len(sig) == 2 and sig[0] in (-1, 1) and sig[1] == -1)):
        return None
    audio = (read_manifest(model) or {}).get("audio") or {}
    rate = sample_rate or audio.get("sample_rate")
    said = f"{name} takes raw samples of any length (input '{shown}' [{', '.join(map(str, sig))}])"
    if not rate:
        raise UsageError(f"{wavs[0]}: {said} and does not say their sample rate (no 'audio' manifest entry): pass "
                         "--sample-rate HZ, the rate it was trained at (the length is then the file's)")
    shapes = []
    for wav in wavs:
        samples, wav_rate = read_wav(wav)
        if wav_rate != rate:  # AudioClassifier's refusal, said before the model is shaped to a wrong length
            raise DataError(f"{wav}: {wav_rate} Hz audio but {name} takes {rate} Hz; resample it first (edge-sdk "
                            "does not resample)")
        n = int(audio.get("frame_length") or samples.size)  # a manifest window: the model's own length
        if n < 1:
            raise DataError(f"{wav}: no samples; {said}")
        shapes.append({shown: (n,) if len(sig) == 1 else (n, 1) if sig == (-1, 1) else (1, n)})
    return shapes


def _samples_for(x: np.ndarray, detail: dict) -> np.ndarray:
    """int16 samples -> an input of the detail's dtype (float: /32768; quantized: via float)."""
    dtype = np.dtype(detail["dtype"])
    if dtype == np.int16 and not is_quantized(detail):
        return x.astype(np.int16)
    f = x.astype(np.float32) / 32768.0
    if dtype.kind == "f":
        return f.astype(dtype)
    if is_quantized(detail):
        return quantize(f, detail)
    raise ModelError(f"audio input '{detail['name']}': cannot feed samples to a {dtype} input without quantization")


class AudioClassifier:
    """WAV (or int16 samples) in, top-k (label, score) out; see the module docstring."""

    def __init__(self, model, labels=None, frontend=None, sample_rate: int | None = None,
                 frame_length: int | None = None, frame_step: int | None = None, hop: int | None = None,
                 scores: str | None = None, top_k: int = 5, arena_size=None):
        self.runner = ModelRunner(model, arena_size)
        self.name = self.runner.name
        self.manifest = self.runner.manifest
        audio = self.manifest.get("audio") or {}
        if len(self.runner.inputs) != 1:
            raise ModelError(f"{self.name}: audio models take one input; this one has {len(self.runner.inputs)}")
        self.input = self.runner.inputs[0]
        self.output = self.runner.outputs[0]
        # 16 kHz is assumed only when neither the caller nor the manifest says: a WAV at another rate is then
        # refused asking for the rate (--sample-rate), not for a resampling to a guess.
        self.rate_assumed = not (sample_rate or audio.get("sample_rate"))
        self.sample_rate = int(sample_rate or audio.get("sample_rate") or 16000)
        if self.sample_rate <= 0:
            raise ModelError(f"sample_rate must be a positive number of Hz, not {self.sample_rate}")
        self.scores = scores or (self.manifest.get("postprocess") or {}).get("scores") or "auto"
        if self.scores not in SCORE_MODES:
            raise ModelError(f"scores must be one of {', '.join(SCORE_MODES)}, not {self.scores!r}")
        self.scores = auto_scores(self.runner, self.output, self.scores)
        self.top_k = int(top_k)
        in_size = int(np.prod(self.input["shape"]))
        self.frontend = ModelRunner(frontend) if frontend is not None else None
        if self.frontend is not None:
            fin, fout = self.frontend.inputs[0], self.frontend.outputs[0]
            self.frame_length = int(np.prod(fin["shape"]))
            if frame_length is not None and int(frame_length) != self.frame_length:
                raise ModelError(f"{self.frontend.name}: takes {self.frame_length} samples per frame, "
                                 f"frame_length {frame_length} given")
            self.feature_size = int(np.prod(fout["shape"]))
            if in_size % self.feature_size:
                raise ModelError(f"{self.name}: input of {in_size} values is not a whole number of "
                                 f"{self.feature_size}-value feature frames from {self.frontend.name}")
            self.frames = in_size // self.feature_size
            self.frame_step = int(frame_step or audio.get("frame_step") or self.frame_length)
        else:
            self.frame_length = int(frame_length or audio.get("frame_length") or in_size)
            if self.frame_length != in_size:
                raise ModelError(f"{self.name}: input takes {in_size} samples, frame_length {self.frame_length}")
            self.frame_step = int(frame_step or audio.get("frame_step") or self.frame_length)
            self.frames = 1
        if self.frame_step <= 0:
            raise ModelError(f"frame_step must be positive, not {self.frame_step}")
        self.hop = int(hop or audio.get("hop") or self.frames)
        n_classes = int(np.prod(self.output["shape"]))
        lab = read_labels(labels) if labels is not None else read_labels(self.manifest.get("labels"))
        self.labels = _label_list(lab, n_classes, self.name)

    @property
    def window_samples(self) -> int:
        """Samples one model window covers."""
        return (self.frames - 1) * self.frame_step + self.frame_length

    def _samples(self, wav) -> tuple[np.ndarray, str]:
        if isinstance(wav, (str, Path)):
            samples, rate = read_wav(wav)
            name = str(wav)
        elif isinstance(wav, tuple) and len(wav) == 2:
            samples, rate = np.asarray(wav[0]), int(wav[1])
            name = "audio"
        else:
            samples, rate, name = np.asarray(wav), self.sample_rate, "audio"
        if rate != self.sample_rate and self.rate_assumed:
            raise ModelError(f"{name}: {rate} Hz audio, and {self.name} has no 'audio' manifest entry saying its "
                             f"rate ({self.sample_rate} Hz assumed): pass --sample-rate HZ (sample_rate=) with the "
                             "rate it was trained at")
        if rate != self.sample_rate:
            raise ModelError(f"{name}: {rate} Hz audio but the model takes {self.sample_rate} Hz; resample it "
                             "first (edge-sdk does not resample)")
        samples = np.asarray(samples)
        if samples.ndim != 1 or samples.dtype != np.int16:
            raise ModelError(f"{name}: samples must be a 1-D int16 array, not {samples.dtype} {samples.shape}")
        return samples, name

    def _features(self, samples: np.ndarray) -> np.ndarray:
        """(frames, feature) rows for the whole clip: frontend features, or the raw frames' model input."""
        n = max(1, -(-max(0, samples.size - self.frame_length) // self.frame_step) + 1)
        if self.frontend is None:
            return np.zeros((n, 0))  # unused: windows are cut from samples directly
        fe = self.frontend
        fe.interpreter.reset_all_variables()
        fin = fe.inputs[0]
        padded = np.zeros(max(samples.size, (n - 1) * self.frame_step + self.frame_length), np.int16)
        padded[: samples.size] = samples
        rows = []
        for i in range(n):
            frame = padded[i * self.frame_step: i * self.frame_step + self.frame_length]
            (y,) = fe.run(_samples_for(frame, fin).reshape(tuple(int(d) for d in fin["shape"])))[:1]
            rows.append(np.array(y).reshape(-1))
        return np.stack(rows)

    def _windows(self, samples: np.ndarray) -> list[tuple[float, np.ndarray]]:
        shape = tuple(int(d) for d in self.input["shape"])
        out = []
        if self.frontend is None:
            n = max(1, -(-max(0, samples.size - self.frame_length) // (self.frame_step * self.hop)) + 1)
            padded = np.zeros(max(samples.size, (n - 1) * self.frame_step * self.hop + self.frame_length), np.int16)
            padded[: samples.size] = samples
            for i in range(n):
                s = i * self.frame_step * self.hop
                x = _samples_for(padded[s: s + self.frame_length], self.input).reshape(shape)
                out.append((s / self.sample_rate, x))
            return out
        if samples.size < self.window_samples:  # a short clip: pad with silence to one window
            samples = np.concatenate([samples, np.zeros(self.window_samples - samples.size, np.int16)])
        feats = self._features(samples)
        need = self.frames
        n = (feats.shape[0] - need) // self.hop + 1
        fdetail = self.frontend.outputs[0]
        for i in range(n):
            block = feats[i * self.hop: i * self.hop + need]
            if np.dtype(fdetail["dtype"]) == np.dtype(self.input["dtype"]) and not is_quantized(fdetail):
                x = block.astype(self.input["dtype"]).reshape(shape)
            else:
                x = to_input(dequantize(block, fdetail).reshape(shape), self.input, "features")
            out.append((i * self.hop * self.frame_step / self.sample_rate, x))
        return out

    def _scores(self, x) -> np.ndarray:
        (y,) = self.runner.run(x)[:1]
        scales, _, _ = _quant_params(self.output)
        step = float(scales.max()) if is_quantized(self.output) else 0.0
        v = dequantize(y, self.output).reshape(-1)
        self.last_scores = score_mode(v, self.scores, step)
        return to_scores(v, self.last_scores)

    def predict_windows(self, wav, top_k: int | None = None) -> list[tuple[float, list[Prediction]]]:
        """Per window: (start time in seconds, top-k predictions)."""
        samples, _ = self._samples(wav)
        k = self.top_k if top_k is None else top_k
        return [(t, top_k_fn(self._scores(x), self.labels, k)) for t, x in self._windows(samples)]

    def predict(self, wav, top_k: int | None = None) -> list[Prediction]:
        """Top-k over the clip (scores averaged over its windows)."""
        samples, _ = self._samples(wav)
        scores = np.mean([self._scores(x) for _, x in self._windows(samples)], axis=0)
        return top_k_fn(scores, self.labels, self.top_k if top_k is None else top_k)


top_k_fn = top_k


# ------------------------------------------------------------------------------------------------- choosing


def model_task(runner: ModelRunner, task: str | None = None) -> str:
    """"classify", "detect" or "audio": given, from the manifest's "task", else guessed from the outputs."""
    task = task or runner.manifest.get("task")
    aliases = {"classification": "classify", "image_classification": "classify", "detection": "detect",
               "object_detection": "detect", "audio_classification": "audio", "classify": "classify",
               "detect": "detect", "audio": "audio"}
    if task is not None:
        if task not in aliases:
            raise ModelError(f"{runner.name}: unknown task {task!r} (classify, detect or audio)")
        return aliases[task]
    if runner.manifest.get("detection") is not None:
        return "detect"
    if runner.manifest.get("audio") is not None:
        return "audio"
    outs = runner.outputs
    if len(outs) == 4 or (len(outs) == 2 and all(len(d["shape"]) == 3 for d in outs)):
        return "detect"
    if postprocess_outputs(runner.interpreter.model, outs) is not None:  # its outputs besides others
        return "detect"
    return "classify"


def guessed_tensor_model(runner: ModelRunner, task: str | None) -> bool:
    """A model guessed a classifier (no task given, no manifest entry) whose one output is no vector of class
    scores: more than one axis above 1 (an attention block's (1, 4, 5, 4), a feature map, YOLO's (1, 84, 8400)
    candidates). `edge run` prints its output for a .npy or an image, as for an .npz, not a top-k of flattened
    values."""
    if task or runner.manifest.get("task") or runner.manifest.get("postprocess") or runner.manifest.get("labels"):
        return False
    return len(runner.outputs) == 1 and sum(int(d) > 1 for d in runner.outputs[0]["shape"]) > 1


def run_inputs(model, inputs, top_k: int = 5, task: str | None = None, labels=None, frontend=None,
               preprocess=None, detection: dict | None = None, num_threads=None,
               backend: str = "python", allow_nonfinite: bool = False,
               sample_rate: int | None = None, name: str | None = None) -> list[dict]:
    """What ``edge run`` prints: per input ``{"input", "predictions": [{"label", "score"}]}`` or
    ``{"input", "detections": [...]}``. Images, .wav files (audio models) and .npy tensors (classifiers and
    detectors: a tensor shaped like the input, or uint8 pixels). ``detection``: Detector options (e.g.
    ``{"outputs": {"boxes": "loc", "scores": 1}}``; they make the model a detector unless ``task`` says
    otherwise). ``backend``: the interpreter, "python" or "c" (`edge run` picks it: edge_sdk.tools.run_backend).
    A .npy with NaN or inf is refused naming it (``allow_nonfinite``: run with a warning). ``sample_rate``: the
    rate of a model that takes raw audio samples and has no "audio" manifest entry (`--sample-rate`). A .npy of
    T rows for a classifier run at a batch of T (a [-1, C] input given [T, C]): one result per row, with "row".
    ``name``: the model as messages name it (the user's file when ``model`` is its shaped copy)."""
    paths = [str(p) for p in inputs]
    for p in paths:  # every file is there before the model is even read
        if not Path(p).is_file():
            raise FileNotFoundError(2, "No such file" if not Path(p).exists() else "Not a file", p)
    check_labels_file(labels)
    runner = ModelRunner(model, num_threads=num_threads, backend=backend, name=name)
    arrays = [p for p in paths if p.lower().endswith(".npz")]
    if arrays or len(runner.inputs) != 1:  # every input fed by name: any model, each output printed
        others = [p for p in paths if not p.lower().endswith(".npz")]
        if others:
            raise ModelError(f"{others[0]}: {runner.name} takes {len(runner.inputs)} inputs "
                             f"({_inputs_said(runner.inputs)}): give them in one .npz (keys: {NPZ_KEYS})"
                             if len(runner.inputs) != 1 else
                             f"{others[0]}: give .npz files alone (not mixed with images, WAVs or .npy)")
        return [{"input": p, "outputs": _output_rows(runner, runner.run(*npz_inputs(p, runner, allow_nonfinite)))}
                for p in paths]
    detection = {k: v for k, v in (detection or {}).items() if v is not None}
    kind = model_task(runner, task or ("detect" if detection else None))
    if detection and kind != "detect":
        raise ModelError(f"{runner.name}: detection options ({', '.join(sorted(detection))}) given for a {kind} model")
    wavs = [p for p in paths if p.lower().endswith(AUDIO_SUFFIXES)]
    if kind == "classify" and (frontend is not None or wavs):
        kind = "audio"
    if kind == "audio":
        _check_audio_model(runner, frontend, wavs[0] if wavs else None, sample_rate)
        images = [p for p in paths if p.lower().endswith(IMAGE_SUFFIXES)]
        if images:
            raise ModelError(f"{images[0]}: an image, but {runner.name} is run as an audio model (WAV input)")
    elif wavs:
        raise ModelError(f"{wavs[0]}: a WAV file, but {runner.name} is a {kind} model that takes images "
                         f"(input {_shape_of(runner.inputs[0])})")
    if kind == "audio":
        pipe = AudioClassifier(runner, labels=labels, frontend=frontend, top_k=top_k,
                               sample_rate=sample_rate)
    elif kind == "detect":
        pipe = Detector(runner, preprocess=preprocess, labels=labels, **detection)
    else:
        pipe = None
    results = []
    def tensor(p: str) -> np.ndarray:
        try:
            x = np.load(p, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DataError(f"{p}: cannot read the .npy tensor ({exc})") from None
        refuse_nonfinite(x, p, allow_nonfinite)
        return x

    for p in paths:
        if kind == "detect":  # a .npy: the pre-processed input tensor, or uint8 pixels (Detector.prepare)
            found = pipe.detect(tensor(p) if p.lower().endswith(".npy") else p)
            results.append({"input": p, "detections": [d.to_dict() for d in found]})
            continue
        if kind == "audio":
            preds = pipe.predict(p, top_k)
        elif labels is None and guessed_tensor_model(runner, task):  # no class scores: print the output
            if p.lower().endswith(".npy"):
                x = fit_input(tensor(p), runner.inputs[0], p)
            else:
                x, _ = _ImagePipeline(runner, preprocess).prepare(p)
            results.append({"input": p, "outputs": _output_rows(runner, runner.run(x))})
            continue
        elif p.lower().endswith(".npy"):
            if pipe is None:
                pipe = ImageClassifier(runner, preprocess=preprocess, labels=labels, top_k=top_k) \
                    if len(runner.inputs[0]["shape"]) in (3, 4) else TensorClassifier(runner, labels, top_k)
            rows = pipe.predict_rows(tensor(p), top_k)
            said = SCORES_SAID.get(getattr(pipe, "last_scores", "probabilities"), "as computed")
            results += [{"input": p, **({"row": i} if len(rows) > 1 else {}),
                         "predictions": [{"label": x.label, "score": x.score} for x in preds], "scores": said}
                        for i, preds in enumerate(rows)]
            continue
        else:
            if pipe is None or isinstance(pipe, TensorClassifier):
                pipe = ImageClassifier(runner, preprocess=preprocess, labels=labels, top_k=top_k)
            preds = pipe.predict(p, top_k)
        results.append({"input": p, "predictions": [{"label": x.label, "score": x.score} for x in preds],
                        "scores": SCORES_SAID.get(getattr(pipe, "last_scores", "probabilities"), "as computed")})
    return results


NPZ_KEYS = "input tensor names, or arg_0, arg_1.. in signature order"


def _inputs_said(details: list[dict]) -> str:
    return ", ".join(f"'{d['name']}' {_shape_of(d)}" for d in details)


def _signature_order(model, details: list[dict]) -> list[int]:
    """Positions in ``details`` (subgraph 0's input details) in the order of the model's signature (its first one
    over subgraph 0: what arg_0, arg_1.. name, as TF's exported functions call them), else the subgraph's input
    order."""
    order = list(range(len(details)))
    sigs = [sd for sd in getattr(model, "signature_defs", None) or [] if sd.subgraph_index == 0]
    if sigs:
        where = {int(d["index"]): k for k, d in enumerate(details)}
        by_sig = [where[t] for t in sigs[0].inputs.values() if t in where]
        if sorted(by_sig) == order:
            order = by_sig
    return order


def npz_arrays(path: str, model, details: list[dict], name: str) -> list[tuple[str, np.ndarray]]:
    """(key, array) per input of ``details`` (subgraph 0's input details: name, index; shape and dtype for the
    messages) from the .npz at ``path``, as the file holds it: keyed by the input's tensor name, its signature
    name or arg_i (signature order). A missing or extra key is one ModelError naming the file and the input;
    shapes and dtypes are the caller's to check (npz_inputs; `edge bench` first shapes the model by them)."""
    try:
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.ndarray):
            raise DataError(f"{path}: a .npy array, not an .npz archive")
        with loaded:
            data = {k: loaded[k] for k in loaded.files}
    except (OSError, ValueError, EOFError) as exc:
        raise DataError(f"{path}: cannot read the .npz ({' '.join(str(exc).split())[:200]})") from None
    sig_names: dict[int, str] = {}
    sigs = [sd for sd in getattr(model, "signature_defs", None) or [] if sd.subgraph_index == 0]
    if sigs:
        sig_names = {t: n for n, t in sigs[0].inputs.items()}
    names = {}  # position in details -> the keys that may name it
    for pos_in_sig, k in enumerate(_signature_order(model, details)):
        d = details[k]
        names[k] = [d["name"], sig_names.get(int(d["index"])), f"arg_{pos_in_sig}"]
    out, used = [], set()
    for k, d in enumerate(details):
        key = next((n for n in names[k] if n is not None and n in data), None)
        if key is None:
            raise ModelError(f"{path}: no array for input '{d['name']}' {_shape_of(d)} (keys: {NPZ_KEYS}; "
                             f"the file has {', '.join(sorted(data)) or 'none'})")
        used.add(key)
        out.append((key, data[key]))
    extra = sorted(set(data) - used)
    if extra:
        raise ModelError(f"{path}: array '{extra[0]}' names no input of {name} "
                         f"(inputs: {_inputs_said(details)}; keys: {NPZ_KEYS})")
    return out


def fit_input(x: np.ndarray, detail: dict, path: str, key: str | None = None) -> np.ndarray:
    """``x`` from ``path`` (array ``key`` of an .npz; None: a .npy) as a value for the input ``detail``: its shape
    (or that shape without its batch axis of one) and a dtype that feeds it, else one ModelError naming the file,
    the array and the input."""
    want = tuple(int(v) for v in detail["shape"])
    if tuple(x.shape) != want and (1,) + tuple(x.shape) != want:
        what = f"array '{key}'" if key is not None else "array"
        raise ModelError(f"{path}: {what} shaped {list(x.shape)} {x.dtype.name} for input '{detail['name']}' "
                         f"{_shape_of(detail)}")
    return to_input(x, detail, f"{path}: array '{key}'" if key is not None else path)


def npz_inputs(path: str, runner: ModelRunner, allow_nonfinite: bool = False) -> list[np.ndarray]:
    """The model's inputs from an .npz, in runner.inputs order: one array per input, keyed by its tensor name,
    its signature name or arg_i (signature order). A missing, extra or misshapen key is one ModelError naming
    the file, the input and the shape / dtype it takes."""
    out = []
    for (key, x), d in zip(npz_arrays(path, runner.interpreter.model, runner.inputs, runner.name), runner.inputs):
        refuse_nonfinite(x, f"{path}[{key}]", allow_nonfinite)
        out.append(fit_input(x, d, path, key))
    return out


def _output_rows(runner: ModelRunner, values: list[np.ndarray]) -> list[dict]:
    """Each output as ``{"name", "shape", "dtype", "values"}`` (and ``"dequantized"`` for a quantized one)."""
    rows = []
    for d, v in zip(runner.outputs, values):
        row = {"name": d["name"], "shape": [int(n) for n in np.shape(v)], "dtype": np.dtype(v.dtype).name,
               "values": np.asarray(v).tolist()}
        if is_quantized(d):
            row["dequantized"] = dequantize(v, d).tolist()
        rows.append(row)
    return rows


def _shape_of(detail: dict) -> str:
    return "[" + ",".join(str(int(v)) for v in detail["shape"]) + "] " + np.dtype(detail["dtype"]).name


def _check_audio_model(runner: ModelRunner, frontend, wav: str | None, sample_rate: int | None = None) -> None:
    """A WAV goes to a model that takes audio: one the manifest says is (an "audio" entry or task), one fed
    features by a --frontend, one whose single input is a vector of samples ([N] or [1, N]), or one the caller
    says takes raw samples at a rate (--sample-rate). Another input shape is refused, naming the file and the
    input, and saying what to pass."""
    if runner.manifest.get("audio") is not None or frontend is not None or sample_rate is not None:
        return
    if runner.manifest.get("task") in ("audio", "audio_classification"):
        return
    d = runner.inputs[0] if runner.inputs else None
    shape = [int(v) for v in d["shape"]] if d is not None else []
    if len(runner.inputs) == 1 and (len(shape) == 1 or (len(shape) == 2 and shape[0] == 1)):
        return
    if len(shape) >= 3 and max(shape[1:]) > 1:
        what = f"{wav}: a WAV file, but" if wav else "audio input:"
        raise ModelError(f"{what} {runner.name} takes input '{d['name']}' {_shape_of(d)}, and has no 'audio' "
                         "manifest entry to say it is audio: for raw audio samples pass --sample-rate HZ (the rate "
                         "it was trained at), for audio features --frontend FEATURE_MODEL; else give an image or a "
                         ".npy tensor")


class TensorClassifier:
    """Classification post-processing for models that take tensors, not images (.npy inputs, edge serve's JSON):
    top-k per row of the output's batch axis."""

    def __init__(self, runner: ModelRunner, labels, k: int):
        self.runner, self.input, self.output = runner, runner.inputs[0], runner.outputs[0]
        n = classes_per_row(self.output)
        lab = read_labels(labels) if labels is not None else read_labels(runner.manifest.get("labels"))
        self.labels = _label_list(lab, n, runner.name)
        self.scores = auto_scores(runner, self.output,
                                  (runner.manifest.get("postprocess") or {}).get("scores") or "auto")
        self.k = k

    def predict_tensor(self, x, k=None):
        return self.predict_rows(x, k)[0]

    def predict_rows(self, x, k=None) -> list[list[Prediction]]:
        """A tensor shaped like the input (batch axis optional) -> top-k per row of the batch."""
        return self.interpret_rows(self.runner.run(to_input(x, self.input, "tensor")), k)

    def interpret_rows(self, outputs: list[np.ndarray], k=None) -> list[list[Prediction]]:
        """Raw outputs of one run -> top-k predictions per row of its batch ([T, classes]: T lists)."""
        rows, self.last_scores = score_rows(outputs[0], self.output, self.scores)
        return [top_k(s, self.labels, self.k if k is None else k) for s in rows]


def format_results(results: list[dict]) -> str:
    lines = []
    for r in results:
        lines.append(f"{r['input']}" + (f" row {r['row']}:" if "row" in r else ":"))
        if "outputs" in r:
            for o in r["outputs"]:
                shown = np.array2string(np.asarray(o.get("dequantized", o["values"])), threshold=32,
                                        precision=5, separator=", ").replace("\n", "\n" + " " * 4)
                said = " dequantized" if "dequantized" in o else ""
                lines.append(f"  {o['name']} [{','.join(map(str, o['shape']))}] {o['dtype']}{said}:")
                lines.append(f"    {shown}")
        elif "detections" in r:
            if not r["detections"]:
                lines.append("  (no detections)")
            for d in r["detections"]:
                box = ", ".join(f"{v:.3f}" for v in d["box"])
                lines.append(f"  {d['label']:<20} {d['score']:.4f}  box ({box})")
        else:
            for p in r["predictions"]:
                lines.append(f"  {p['label']:<20} {p['score']:.4f}")
            if r.get("scores") not in (None, "as computed"):
                lines.append(f"  (scores: {r['scores']})")
    return "\n".join(lines) + "\n"
