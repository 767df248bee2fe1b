"""Accuracy and calibration of a classifier, and how far a quantized model strays from its float source.

    report = evaluate("digits_int8.tflite", "digits_test.npz", reference="digits_cnn.onnx", plot="rel.png")
    report["model"]["top1"], report["model"]["ece"], report["accuracy_drop"], report["agreement"]

Data (``load_dataset``): a ``.npz`` with arrays ``x`` (samples, in the model's input layout or the other of
NCHW/NHWC) and ``y`` (integer class ids), a ``(x, y)`` tuple of arrays, or a folder holding one sub-folder of
images per class (class ids: the position of the folder's name in the labels, else sorted folder names),
decoded with Pillow and pre-processed as the model's manifest says.

Metrics (all on the model's outputs read as class scores; logits are turned into probabilities with a
softmax, outputs that already are probabilities are used as they are):

- top-1 / top-5 accuracy;
- expected calibration error: confidence = the top probability; 15 equal-width bins over [0, 1] (a sample with
  confidence c falls in bin ceil(c * 15) - 1, so each bin is (lo, hi] and c = 0 joins the first);
  ECE = sum over bins of |accuracy(bin) - mean confidence(bin)| * count(bin) / N;
- negative log-likelihood: the mean of -ln p(true class), with p clipped below at 1e-12;
- against a reference (the float source): accuracy drop (reference top-1 - model top-1), ECE change
  (model - reference), argmax agreement, mean absolute difference of the (dequantized) raw outputs.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from edge_sdk.errors import ModelError

ECE_BINS = 15
NLL_EPS = 1e-12
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff", ".pgm", ".ppm"}


# --------------------------------------------------------------------------------------------- metrics


def softmax(logits: np.ndarray) -> np.ndarray:
    z = np.asarray(logits, np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def to_probabilities(outputs: np.ndarray, kind: str = "auto") -> np.ndarray:
    """Class probabilities from a model's (N, K) outputs: ``kind`` "logits", "probs" or "auto" (probabilities
    when every row is non-negative and sums to 1 within 1e-2, else logits)."""
    out = np.asarray(outputs, np.float64)
    if out.ndim != 2:
        raise ModelError(f"classifier outputs must be (samples, classes), got shape {out.shape}")
    if kind == "auto":
        kind = "probs" if (out.min() >= 0 and np.allclose(out.sum(axis=1), 1.0, atol=1e-2)) else "logits"
    if kind == "probs":
        p = np.clip(out, 0.0, None)
        return p / np.maximum(p.sum(axis=1, keepdims=True), 1e-300)
    if kind == "logits":
        return softmax(out)
    raise ModelError(f"unknown output kind {kind!r} (logits, probs or auto)")


def _labels(y, n: int, classes: int) -> np.ndarray:
    y = np.asarray(y).reshape(-1)
    if y.shape[0] != n:
        raise ModelError(f"{n} predictions but {y.shape[0]} labels")
    if not np.issubdtype(y.dtype, np.integer):
        if not np.all(np.equal(np.mod(y, 1), 0)):
            raise ModelError("labels must be integer class ids")
        y = y.astype(np.int64)
    if y.size and (y.min() < 0 or y.max() >= classes):
        raise ModelError(f"label {int(y.max() if y.max() >= classes else y.min())} is outside the model's "
                         f"{classes} classes")
    return y.astype(np.int64)


def top_k_accuracy(probs: np.ndarray, y, k: int = 1) -> float:
    """Fraction of samples whose true class is among the k highest scores (ties: lower class id first)."""
    probs = np.asarray(probs)
    y = _labels(y, probs.shape[0], probs.shape[1])
    k = min(k, probs.shape[1])
    order = np.argsort(-probs, axis=1, kind="stable")[:, :k]
    return float(np.mean(np.any(order == y[:, None], axis=1))) if len(y) else float("nan")


def reliability_bins(probs: np.ndarray, y, bins: int = ECE_BINS) -> list[dict]:
    """Per equal-width confidence bin: its bounds, sample count, accuracy and mean confidence (None if empty)."""
    probs = np.asarray(probs, np.float64)
    y = _labels(y, probs.shape[0], probs.shape[1])
    conf = probs.max(axis=1)
    correct = probs.argmax(axis=1) == y
    index = np.clip(np.ceil(conf * bins).astype(np.int64) - 1, 0, bins - 1)
    rows = []
    for b in range(bins):
        sel = index == b
        n = int(sel.sum())
        rows.append({
            "lower": b / bins, "upper": (b + 1) / bins, "count": n,
            "accuracy": float(correct[sel].mean()) if n else None,
            "confidence": float(conf[sel].mean()) if n else None,
        })
    return rows


def expected_calibration_error(probs: np.ndarray, y, bins: int = ECE_BINS) -> float:
    rows = reliability_bins(probs, y, bins)
    n = sum(r["count"] for r in rows)
    if n == 0:
        return float("nan")
    return float(sum(abs(r["accuracy"] - r["confidence"]) * r["count"] for r in rows if r["count"]) / n)


def negative_log_likelihood(probs: np.ndarray, y) -> float:
    probs = np.asarray(probs, np.float64)
    y = _labels(y, probs.shape[0], probs.shape[1])
    if not len(y):
        return float("nan")
    return float(-np.mean(np.log(np.clip(probs[np.arange(len(y)), y], NLL_EPS, None))))


def classification_metrics(outputs: np.ndarray, y, kind: str = "auto", bins: int = ECE_BINS) -> dict:
    """top1, top5, ece, nll, the reliability bins and the sample count for (N, K) outputs and labels."""
    probs = to_probabilities(outputs, kind)
    return {
        "samples": int(probs.shape[0]),
        "classes": int(probs.shape[1]),
        "top1": top_k_accuracy(probs, y, 1),
        "top5": top_k_accuracy(probs, y, 5),
        "ece": expected_calibration_error(probs, y, bins),
        "nll": negative_log_likelihood(probs, y),
        "bins": reliability_bins(probs, y, bins),
    }


def agreement(outputs: np.ndarray, reference_outputs: np.ndarray) -> dict:
    """Argmax agreement and mean absolute output (logit) error of a model against its reference."""
    a = np.asarray(outputs, np.float64)
    b = np.asarray(reference_outputs, np.float64)
    if a.shape != b.shape:
        raise ModelError(f"model outputs {a.shape} and reference outputs {b.shape} differ in shape")
    return {
        "agreement": float(np.mean(a.argmax(axis=1) == b.argmax(axis=1))) if len(a) else float("nan"),
        "mean_abs_logit_error": float(np.mean(np.abs(a - b))) if a.size else float("nan"),
        "max_abs_logit_error": float(np.max(np.abs(a - b))) if a.size else float("nan"),
    }


def compare(outputs: np.ndarray, reference_outputs: np.ndarray, y, kind: str = "auto") -> dict:
    """The model's and the reference's metrics, plus accuracy drop, ECE change and output agreement."""
    model = classification_metrics(outputs, y, kind)
    ref = classification_metrics(reference_outputs, y, kind)
    return {
        "model": model,
        "reference": ref,
        "accuracy_drop": ref["top1"] - model["top1"],
        "top5_drop": ref["top5"] - model["top5"],
        "ece_change": model["ece"] - ref["ece"],
        "nll_change": model["nll"] - ref["nll"],
        **agreement(outputs, reference_outputs),
    }


# --------------------------------------------------------------------------------------------- data


def as_preprocess(preprocess=None, input_shape=None):
    """An ``edge_sdk.tasks.preprocess.Preprocess`` from one, from its dict (a manifest's "preprocess"), or derived
    from a 4-axis model input shape (NHWC when the last axis is 1 or 3, else NCHW; gray for one channel;
    values 0..1). A dict without a size takes the model input's."""
    from edge_sdk.tasks.preprocess import Preprocess

    if isinstance(preprocess, Preprocess):
        return preprocess
    d = dict(preprocess or {})
    if preprocess is not None and not isinstance(preprocess, dict):
        raise ModelError(f"preprocess must be a dict or a Preprocess, not {type(preprocess).__name__}")
    if input_shape is not None and len(input_shape) == 4:
        shape = tuple(int(v) for v in input_shape)
        layout = str(d.get("layout") or ("NHWC" if shape[3] in (1, 3) else "NCHW")).upper()
        h, w, c = (shape[1], shape[2], shape[3]) if layout == "NHWC" else (shape[2], shape[3], shape[1])
        d.setdefault("layout", layout)
        if not d.get("size"):
            d["size"] = (w, h)
        if not d.get("channels"):
            d["channels"] = "GRAY" if c == 1 else "RGB"
    if not d.get("size"):
        raise ModelError("images need a size: give a preprocess with size, or a model with a 4-axis input")
    return Preprocess.from_dict(d)


def load_image(path, preprocess=None, input_shape=None) -> np.ndarray:
    """One image file -> one float32 sample (no batch axis), pre-processed by ``edge_sdk.tasks.preprocess.Preprocess``
    (``preprocess``: a Preprocess or its dict; missing size/channels/layout come from ``input_shape``)."""
    p = as_preprocess(preprocess, input_shape)
    try:
        return p.apply(path)[0]
    except OSError as exc:
        raise ModelError(f"image {path}: cannot decode it ({exc})") from None


def load_dataset(source, preprocess=None, labels=None, input_shape=None) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) from a .npz (arrays x and y), an (x, y) tuple, or a folder of class-named image folders."""
    if isinstance(source, tuple) and len(source) == 2:
        return np.asarray(source[0]), np.asarray(source[1])
    path = Path(source)
    if path.is_dir():
        classes = sorted(p.name for p in path.iterdir() if p.is_dir())
        if not classes:
            raise ModelError(f"{path}: no class folders (expected one sub-folder of images per class)")
        names = list(labels) if labels else classes
        xs, ys = [], []
        for cls in classes:
            if cls not in names:
                raise ModelError(f"{path}: folder {cls!r} is not one of the model's labels")
            for f in sorted((path / cls).iterdir()):
                if f.suffix.lower() in IMAGE_SUFFIXES:
                    xs.append(load_image(f, preprocess, input_shape))
                    ys.append(names.index(cls))
        if not xs:
            raise ModelError(f"{path}: no images in its class folders")
        return np.stack(xs), np.asarray(ys, np.int64)
    if not path.exists():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    if path.suffix == ".npz":
        with np.load(path) as data:
            missing = [k for k in ("x", "y") if k not in data.files]
            if missing:
                raise ModelError(f"{path}: evaluation .npz needs arrays x and y (missing {', '.join(missing)}; "
                                 f"has {', '.join(data.files) or 'none'})")
            return np.asarray(data["x"]), np.asarray(data["y"])
    raise ModelError(f"{path}: evaluation data must be a .npz with x and y, or a folder of class folders")


def refuse_nonfinite_samples(x: np.ndarray, source) -> None:
    """Evaluation samples with NaN or inf are refused (DataError naming the array and its first such sample), as
    `edge evaluate` refuses the file: NaN samples make every accuracy figure NaN or quietly wrong. ``source``: the
    ``data`` they came from (a .npz path, an (x, y) tuple or a folder of images)."""
    from edge_sdk.errors import DataError
    from edge_sdk.tasks.pipeline import nonfinite_in

    said = nonfinite_in(x)
    if said:
        what = "evaluation data (x, y): array x" if isinstance(source, tuple) else f"evaluation data {source}: " + \
            ("array 'x'" if Path(source).suffix == ".npz" else "its images")
        raise DataError(f"{what}: {said}; refused: data must be finite numbers")


# --------------------------------------------------------------------------------------------- running


def fit_samples(x: np.ndarray, input_shape) -> np.ndarray:
    """Samples (N, ...) shaped for a model input of ``input_shape`` (batch 1): NCHW <-> NHWC when needed."""
    x = np.asarray(x)
    want = tuple(int(d) for d in input_shape[1:])
    have = tuple(x.shape[1:])
    if have == want:
        return x
    if x.ndim == len(want) and have == want[1:] and input_shape[0] == 1:  # samples given without the batch dim
        return x
    if x.ndim == 4 and len(want) == 3:
        if (have[1], have[2], have[0]) == want:
            return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        if (have[2], have[0], have[1]) == want:
            return np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    if int(np.prod(have)) == int(np.prod(want)):
        return x.reshape((x.shape[0],) + want)
    raise ModelError(f"samples of shape {have} do not fit the model input {tuple(input_shape)}")


class _TFLiteRunner:
    def __init__(self, model):
        """``model``: a ``Model`` (run as it is, not serialized) or .tflite bytes."""
        from edge_sdk.model import Model
        from edge_sdk.runtime.interpreter import Interpreter

        self.interp = Interpreter(model=model) if isinstance(model, Model) else Interpreter(model_content=bytes(model))
        self.interp.allocate_tensors()
        ins = self.interp.get_input_details()
        if len(ins) != 1:
            raise ModelError(f"evaluation runs single-input classifiers; this model has {len(ins)} inputs")
        self.input = ins[0]
        self.output = self.interp.get_output_details()[0]
        self.input_shape = tuple(int(d) for d in self.input["shape"])

    def run(self, x: np.ndarray) -> np.ndarray:
        from edge_sdk.runtime.kernels.quant import tflite_round

        d, o = self.input, self.output
        scale, zp = d["quantization"]
        if np.issubdtype(d["dtype"], np.integer) and scale:
            info = np.iinfo(d["dtype"])
            x = np.clip(tflite_round(np.asarray(x, np.float64) / scale) + zp, info.min, info.max)
        x = np.asarray(x).astype(d["dtype"])
        oscale, ozp = o["quantization"]
        rows = []
        for i in range(x.shape[0]):
            self.interp.set_tensor(d["index"], x[i].reshape(self.input_shape))
            self.interp.invoke()
            y = self.interp.get_tensor(o["index"]).astype(np.float64)
            if np.issubdtype(o["dtype"], np.integer) and oscale:
                y = (y - ozp) * oscale
            rows.append(y.reshape(-1))
        return np.stack(rows)


class _OnnxRunner:
    def __init__(self, source):
        try:
            import onnxruntime as ort
        except ImportError:  # pragma: no cover - onnxruntime is a test extra
            raise ModelError("evaluating an ONNX model needs onnxruntime (pip install onnxruntime)") from None
        data = source.SerializeToString() if hasattr(source, "SerializeToString") else source
        if isinstance(data, (str, Path)):
            data = Path(data).read_bytes()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 3
        self.sess = ort.InferenceSession(bytes(data), opts, providers=["CPUExecutionProvider"])
        inp = self.sess.get_inputs()
        if len(inp) != 1:
            raise ModelError(f"evaluation runs single-input classifiers; this model has {len(inp)} inputs")
        self.name = inp[0].name
        self.input_shape = tuple(d if isinstance(d, int) and d > 0 else 1 for d in inp[0].shape)

    def run(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float32)
        rows = [self.sess.run(None, {self.name: x[i:i + 1].reshape(self.input_shape)})[0].reshape(-1)
                for i in range(x.shape[0])]
        return np.stack(rows).astype(np.float64)


def _is_onnx(source) -> bool:
    if hasattr(source, "SerializeToString") and hasattr(source, "graph"):
        return True
    return isinstance(source, (str, Path)) and str(source).lower().endswith(".onnx")


def _model_source(source):
    """A ``Model`` as it is (our interpreter runs it without a serialization), else the .tflite bytes."""
    from edge_sdk.model import Model

    if isinstance(source, Model):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    return Path(source).read_bytes()


def runner(source):
    """An object with ``input_shape`` and ``run(x) -> (N, K) float outputs`` for a .tflite or ``Model`` (our
    interpreter; int8 I/O is quantized / dequantized with the tensors' parameters) or an ONNX model
    (onnxruntime)."""
    if _is_onnx(source):
        return _OnnxRunner(source)
    return _TFLiteRunner(_model_source(source))


def _shard_outputs(r, rows: list) -> np.ndarray:
    """A Ray worker's share: the outputs (n, K) of its runner ``r`` (built once per worker) for ``rows``."""
    return r.run(np.stack(rows))


def run_rows(source, r, x: np.ndarray, label: str = "evaluating") -> np.ndarray:
    """``r.run(x)`` (``r = runner(source)``), or on the Ray pool the CLI opened (``edge evaluate --ray``): the rows
    in shards, one runner per worker, the outputs concatenated in row order (the same array)."""
    from edge_sdk.tasks import scale_ray

    pool = scale_ray.active()
    if pool is None:
        return r.run(x)
    src = source if _is_onnx(source) else _model_source(source)
    parts = [out for _, out in pool.map(functools.partial(runner, src), _shard_outputs, list(x), label,
                                        total=len(x))]
    return np.concatenate(parts) if parts else r.run(x)


def predict(source, x: np.ndarray) -> np.ndarray:
    """The model's float outputs (N, K) for samples x (N, ...)."""
    r = runner(source)
    return r.run(fit_samples(x, r.input_shape))


def _manifest(source) -> dict | None:
    if _is_onnx(source):
        return None
    from edge_sdk.model.manifest import read_manifest

    try:
        return read_manifest(source if not isinstance(source, (str, Path)) else Path(source).read_bytes())
    except ModelError:
        return None


def evaluate(model, data, reference=None, labels=None, preprocess=None, plot=None, kind: str = "auto") -> dict:
    """Evaluate ``model`` (a .tflite path/bytes/Model, or .onnx) on ``data``; with ``reference`` (the float
    source) also the comparison. Pre-processing and labels default to the model's manifest. ``plot``: path of
    a reliability-diagram PNG to write. Returns a plain dict (JSON-ready)."""
    manifest = _manifest(model) or {}
    if isinstance(labels, (str, Path)):
        labels = [line.strip() for line in Path(labels).read_text(encoding="utf-8").splitlines() if line.strip()]
    preprocess = preprocess if preprocess is not None else manifest.get("preprocess")
    labels = labels if labels is not None else manifest.get("labels")
    r = runner(model)
    x, y = load_dataset(data, preprocess, labels, r.input_shape)
    refuse_nonfinite_samples(x, data)
    outputs = run_rows(model, r, fit_samples(x, r.input_shape))
    if reference is not None:
        rr = runner(reference)
        ref_outputs = run_rows(reference, rr, fit_samples(x, rr.input_shape), "evaluating the reference")
        report = compare(outputs, ref_outputs, y, kind)
    else:
        report = {"model": classification_metrics(outputs, y, kind)}
    report["labels"] = list(labels) if labels else None
    if plot:
        from converters.report import reliability_diagram

        reliability_diagram(report["model"]["bins"], plot,
                            reference_bins=report["reference"]["bins"] if reference is not None else None,
                            title=f"top-1 {100 * report['model']['top1']:.2f}%  ECE {report['model']['ece']:.4f}",
                            model=Path(model).name if isinstance(model, (str, Path)) else "")
        report["plot"] = str(plot)
    return report


# --------------------------------------------------------------------------------------------- the task guard
#
# The conversion's accuracy guard (``converters.quantize``) measures every output's SNR against the float model.
# When the model says what it is, the guard also judges the task on the same samples (or the evaluation data):
# ``task_spec`` finds the task, ``judge_task`` runs the float and the converted model and measures it, and
# ``apply_task_verdict`` makes the task's verdict the guard's (the SNR stays beside it, never hidden).

TOP1_GOAL = 0.99  # classification: the converted model's top-1 equals the float model's on >= 99% of samples
DETECTIONS_GOAL = 0.9  # detection: >= 90% of the float detections kept, extra detections <= 10% of them
MAP_IOU_GOAL = 0.9  # segmentation: the IoU of the converted model's map with the float one's
STRINGS_GOAL = 0.8  # recognition (CTC): the fraction of samples whose greedy-decoded string is the float one's
MATCH_IOU = 0.5  # a float detection is kept by a converted one of its class with IoU >= this ...
SCORE_TOLERANCE = 0.05  # ... and a score within this of its own
SCORE_THRESHOLD = 0.5  # detections: decoded at this score (the converted model's also down to it - SCORE_TOLERANCE)
TASK_SAMPLES = 100  # evaluation data: the task is judged on at most this many samples
GOAL_FLAGS = {"top1": "--min-top1", "detections": "--min-detections", "map_iou": "--min-map-iou",
              "strings": "min_strings"}
POSTPROCESS_OP = "TFLite_Detection_PostProcess"


def task_goals(min_top1=TOP1_GOAL, min_detections=DETECTIONS_GOAL, min_map_iou=MAP_IOU_GOAL,
               min_strings=STRINGS_GOAL) -> tuple[dict, list]:
    """({"top1", "detections", "map_iou", "strings"}: goal fractions, problems): each goal a number in [0, 1]."""
    goals, problems = {}, []
    for key, value in (("top1", min_top1), ("detections", min_detections), ("map_iou", min_map_iou),
                       ("strings", min_strings)):
        try:
            v = float(value)
            if not 0.0 <= v <= 1.0:
                raise ValueError
            goals[key] = v
        except (TypeError, ValueError):
            problems.append(f"{GOAL_FLAGS[key]} must be a fraction in [0, 1], not {value!r}")
    return goals, problems


def _output_names(model) -> list[str]:
    sg = model.subgraphs[0]
    return [sg.tensors[t].name for t in sg.outputs]


def _output_name(model, value, what: str) -> str:
    """An output named by name or index -> its name; a SettingError (a ConversionError, exit 2) naming the
    model's outputs otherwise."""
    from edge_sdk.errors import SettingError

    names = _output_names(model)
    if isinstance(value, str) and value in names:
        return value
    try:
        i = int(value)
    except (TypeError, ValueError):
        i = None
    if i is not None and 0 <= i < len(names):
        return names[i]
    raise SettingError(f"{what}: no model output {value!r} (outputs: {', '.join(names)})")


def _unit_range(model, k: int) -> bool:
    """Whether output ``k`` is produced by an op whose fixed int8 output quantization (its row's ``quant_fixed``)
    spans [0, 1] at most: its values are probabilities (LOGISTIC, SOFTMAX)."""
    from edge_sdk.runtime import op_table

    sg = model.subgraphs[0]
    t = sg.outputs[k]
    op = next((o for o in sg.operators if t in o.outputs), None)
    if op is None:
        return False
    fixed = [(scale, zp) for kind, scale, zp in op_table.row(model.op_name(op)).quant_fixed if kind == "INT8"]
    return any((-128 - zp) * scale >= 0.0 and (127 - zp) * scale <= 1.0 for scale, zp in fixed)


def _check_detection_shapes(model, boxes: str, scores: str, fmt: str) -> None:
    """Boxes (1, N, >=4) or (1, 4, N) and scores holding a whole number of classes per box (ConversionError naming
    both outputs' shapes otherwise); one YOLO-style output: (1, 4 + C, N) or (1, N, 4 + C), C >= 1."""
    from edge_sdk.errors import ConversionError

    sg = model.subgraphs[0]
    shape = {sg.tensors[t].name: tuple(int(d) for d in sg.tensors[t].shape) for t in sg.outputs}
    b = [d for d in shape[boxes] if d != 1] or [1]
    if fmt == "yolo":
        if len(b) != 2 or min(b) < 5:
            raise ConversionError(f"--boxes / --scores: output '{boxes}' {shape[boxes]} is not YOLO-style rows "
                                  "(1, 4 + classes, boxes)")
        return
    n = None
    if len(b) == 2:  # (N, >=4) rows, or (4, N) columns
        n = b[0] if b[1] >= 4 and not (b[0] == 4 and b[1] > 4) else b[1] if b[0] == 4 else None
    size = int(np.prod(shape[scores]))
    if n is None or size % n:
        raise ConversionError(f"--boxes / --scores: boxes '{boxes}' {shape[boxes]} and scores '{scores}' "
                              f"{shape[scores]} do not hold the same boxes (expected (1, N, 4) and (1, N, classes))")


def _sequence_scores(model, t: int, produced: dict) -> bool:
    """Whether output ``t`` holds per-step class scores of one sequence, as a CTC recognizer gives them: (1, T, C),
    T > 1, C > 1, from an op whose row says ``distribution`` (SOFTMAX, LOG_SOFTMAX)."""
    from edge_sdk.runtime import op_table

    sg = model.subgraphs[0]
    shape = tuple(int(d) for d in sg.tensors[t].shape)
    return (len(shape) == 3 and shape[0] == 1 and shape[1] > 1 and shape[2] > 1 and t in produced
            and op_table.row(model.op_name(sg.operators[produced[t]])).distribution)


def _yolo_rows(model, t: int, produced: dict) -> bool:
    """Whether output ``t`` is YOLO-style detection rows as Ultralytics exports them: (1, 4 + C, N) or (1, N, 4 + C)
    made (through value-moving ops) by a join of 4 box values with C >= 1 class scores from an op whose fixed int8
    output spans [0, 1] at most (LOGISTIC: sigmoid scores)."""
    from converters.quantize.joins import output_join
    from edge_sdk.runtime import op_table

    sg = model.subgraphs[0]
    shape = tuple(int(d) for d in sg.tensors[t].shape)
    if len(shape) != 3 or shape[0] != 1 or min(shape[1:]) < 5:
        return False
    joined = output_join(model, t, produced)
    if joined is None:
        return False
    join = sg.operators[produced[joined]]
    axis = int((join.options or {}).get("axis", 0)) % 3
    parts = [p for p in join.inputs if p >= 0]
    if len(parts) < 2 or shape[axis] != min(shape[1:]) or parts[-1] not in produced:
        return False
    last = sg.operators[produced[parts[-1]]]
    unit = [(scale, zp) for kind, scale, zp in op_table.row(model.op_name(last)).quant_fixed if kind == "INT8"]
    sizes = [int(sg.tensors[p].shape[axis]) for p in parts]
    return (sum(sizes[:-1]) == 4 and any(zp == -128 and abs(scale - 1 / 256) < 1e-9 for scale, zp in unit))


def _probability_map(model, k: int) -> bool:
    """Whether output ``k`` is one channel of per-pixel probabilities the size of an image input -- (1, 1, H, W) or
    (1, H, W, 1) from an op whose fixed int8 output spans [0, 1] (LOGISTIC; through value-moving ops), H and W
    those of a 4-axis input: a segmentation map (a DB text detector's)."""
    from edge_sdk.runtime import op_table

    sg = model.subgraphs[0]
    shape = tuple(int(d) for d in sg.tensors[sg.outputs[k]].shape)
    t = sg.outputs[k]
    producer = {o: op for op in sg.operators for o in op.outputs if o >= 0}
    while t in producer and op_table.row(model.op_name(producer[t])).moves_values:  # the layout's TRANSPOSE
        t = producer[t].inputs[0]
    fixed = [(scale, zp) for kind, scale, zp in op_table.row(model.op_name(producer[t])).quant_fixed
             if kind == "INT8"] if t in producer else []
    if len(shape) != 4 or shape[0] != 1 or not any(zp == -128 and abs(scale - 1 / 256) < 1e-9 for scale, zp in fixed):
        return False
    hw = shape[2:] if shape[1] == 1 else shape[1:3] if shape[3] == 1 else None
    ins = [tuple(int(d) for d in sg.tensors[t].shape) for t in sg.inputs]
    return hw is not None and min(hw) > 1 and any(len(s) == 4 and (s[2:] == hw or s[1:3] == hw) for s in ins)


def task_spec(model, task=None, boxes=None, scores=None, labels=None, manifest=None) -> dict | None:
    """What the (float) model's outputs mean, for the guard, or None (raw tensors: SNR only). In order:

    - ``boxes`` / ``scores`` (output names or indices; `--boxes` / `--scores`): detection. Boxes (1, N, >=4)
      corners (or SSD encodings when the manifest's detection options give anchors), scores (1, N, classes);
      the same output for both: rows of (cx, cy, w, h, class scores...) as YOLOv8 exports them, (1, 4 + C, N)
      or (1, N, 4 + C), the longer axis counting the boxes;
    - ``task`` (given, else the manifest's "task" / "detection": ``edge_sdk.model.manifest.manifest_task``);
    - a ``TFLite_Detection_PostProcess`` op whose four outputs are model outputs: detection;
    - one output of YOLO-style rows, (1, 4 + C, N) joined from 4 box values and C sigmoid scores (``_yolo_rows``,
      as Ultralytics exports YOLOv8): detection, as ``--boxes`` / ``--scores`` naming it would say;
    - a model whose one output is a probability map the size of its image input (``_probability_map``):
      segmentation (map IoU at 0.5);
    - an output of per-step class scores, (1, T, C) from an op whose row says ``distribution`` (a CTC recognizer's
      SOFTMAX), or any (1, T, C) output with the task "recognition": recognition, judged by the greedy-decoded
      strings (class 0 the blank);
    - outputs of a class distribution (the op row's ``distribution``: SOFTMAX, LOG_SOFTMAX), or whose last axis
      holds one score per label (``labels``): classification.

    ConversionError when what is given does not fit the model (an unknown output, a task without its outputs)."""
    from edge_sdk.errors import ConversionError
    from edge_sdk.model.manifest import manifest_task, task_name

    manifest = manifest or {}
    try:
        kind = task_name(task, "task (--task)") or manifest_task(manifest)
    except ModelError as exc:
        raise ConversionError(str(exc)) from None
    if boxes is not None or scores is not None:
        return _detection_of_outputs(model, kind, boxes, scores, manifest)
    sg = model.subgraphs[0]
    produced = {t: i for i, op in enumerate(sg.operators) for t in op.outputs if t >= 0}
    if kind in (None, "detection"):
        found = _detection_found(model, produced, labels, manifest)
        if found is not None:
            return found
    if kind is None:
        found = _probability_map_found(model)
        if found is not None:
            return found
    if kind == "detection":
        return _detection_given(model, task, labels, manifest)
    if kind == "raw":
        return None
    if kind == "recognition" or kind is None:
        found = _recognition_spec(model, task, kind, produced)
        if found is not None:
            return found
    if kind == "segmentation":
        return _segmentation_given(model, task, manifest)
    return _classification_spec(model, task, kind, labels, produced)


def _detection_of_outputs(model, kind, boxes, scores, manifest) -> dict:
    """Detection on the outputs ``boxes`` / ``scores`` name (either may come from the manifest's detection outputs,
    or be the one output left); the same output for both: YOLO rows."""
    from edge_sdk.errors import ConversionError

    names = _output_names(model)
    config = {k: v for k, v in (manifest.get("detection") or {}).items() if k != "outputs"}
    if kind not in (None, "detection"):
        raise ConversionError(f"--boxes / --scores name detection outputs, but the task is {kind}")
    chosen = dict((manifest.get("detection") or {}).get("outputs") or {})
    b = _output_name(model, boxes if boxes is not None else chosen.get("boxes"), "boxes (--boxes)") \
        if boxes is not None or chosen.get("boxes") is not None else None
    s = _output_name(model, scores if scores is not None else chosen.get("scores"), "scores (--scores)") \
        if scores is not None or chosen.get("scores") is not None else None
    if b is None or s is None:
        rest = [n for n in names if n not in (b, s)]
        if len(rest) != 1:
            raise ConversionError(f"--boxes / --scores: give both (the model has {len(names)} outputs: "
                                  f"{', '.join(names)})")
        b, s = (b, rest[0]) if b is not None else (rest[0], s)
    fmt = "yolo" if b == s else "ssd" if (config.get("anchors") is not None or config.get("ssd_anchors")) \
        else "boxes"
    if fmt != "yolo" and "score_activation" not in config and _unit_range(model, names.index(s)):
        config["score_activation"] = "none"  # probabilities already (LOGISTIC, SOFTMAX)
    _check_detection_shapes(model, b, s, fmt)
    return {"task": "detection", "source": "--boxes / --scores", "format": fmt, "boxes": b, "scores": s,
            "config": config}


def _detection_found(model, produced, labels, manifest) -> dict | None:
    """Detection the graph itself says: a TFLite_Detection_PostProcess whose four outputs are model outputs, or
    (unless the manifest names the detection outputs) one output of YOLO-style rows."""
    sg = model.subgraphs[0]
    config = {k: v for k, v in (manifest.get("detection") or {}).items() if k != "outputs"}
    for op in sg.operators:
        if model.op_name(op) == POSTPROCESS_OP and all(t in sg.outputs for t in op.outputs[:4]) \
                and len(op.outputs) >= 4:
            return {"task": "detection", "source": f"the model's {POSTPROCESS_OP} op", "format": "postprocessed",
                    "outputs": [sg.tensors[t].name for t in op.outputs[:4]], "config": config}
    if (manifest.get("detection") or {}).get("outputs"):
        return None
    rows = [n for n, t in zip(_output_names(model), sg.outputs) if _yolo_rows(model, t, produced)]
    if len(rows) == 1:  # one output of YOLO-style rows: a detector, as if --boxes / --scores named it
        return {**task_spec(model, None, rows[0], rows[0], labels, manifest),
                "source": "YOLO-style rows (4 box values joined with sigmoid class scores)"}
    return None


def _probability_map_found(model) -> dict | None:
    """Segmentation when the model's one output is a probability map the size of its image input (DB text maps)."""
    names = _output_names(model)
    maps = [n for k, n in enumerate(names) if _probability_map(model, k)]
    if len(maps) == 1 and len(names) == 1:
        return {"task": "segmentation", "source": "a one-channel probability map the size of the input",
                "output": maps[0], "threshold": None}
    return None


def _detection_given(model, task, labels, manifest) -> dict:
    """The task detection, given or from the manifest: its detection outputs must be named there."""
    from edge_sdk.errors import SettingError

    chosen = (manifest.get("detection") or {}).get("outputs") or {}
    if chosen.get("boxes") is None:
        raise SettingError("the task is detection, but which outputs hold the boxes and the scores is not "
                              f"said: give --boxes and --scores (outputs: {', '.join(_output_names(model))})")
    spec = task_spec(model, None, chosen.get("boxes"), chosen.get("scores"), labels, manifest)
    return {**spec, "source": "the task given" if task else "the manifest"}


def _recognition_spec(model, task, kind, produced) -> dict | None:
    """Recognition on a (1, T, C) output of per-step class scores: found from a distribution op's output, or, with
    the task recognition given, any (1, T, C) output with T > 1. None when nothing is found and none was asked."""
    from edge_sdk.errors import ConversionError

    sg = model.subgraphs[0]
    names = _output_names(model)
    sequences = [n for n, t in zip(names, sg.outputs) if _sequence_scores(model, t, produced)]
    if kind is None and not sequences:
        return None
    if not sequences:  # given: any (1, T, C) output, T > 1
        sequences = [n for n, t in zip(names, sg.outputs) if len(sg.tensors[t].shape) == 3
                     and int(sg.tensors[t].shape[0]) == 1 and min(int(d) for d in sg.tensors[t].shape[1:]) > 1]
    if not sequences:
        raise ConversionError(f"the task is recognition, but no output holds (1, steps, classes) scores "
                              f"(outputs: {', '.join(names)})")
    source = "the task given" if task else "the manifest" if kind else \
        f"a (1, steps, classes) {model.op_name(sg.operators[produced[sg.outputs[names.index(sequences[0])]]])} output"
    return {"task": "recognition", "source": source, "output": sequences[0], "blank": 0}


def _segmentation_given(model, task, manifest) -> dict:
    """The task segmentation, given or from the manifest: the manifest's map output, else the first of rank >= 3."""
    from edge_sdk.errors import ConversionError

    sg = model.subgraphs[0]
    names = _output_names(model)
    seg = manifest.get("segmentation") or {}
    maps = [n for n, t in zip(names, sg.outputs) if len(sg.tensors[t].shape) >= 3]
    if seg.get("output") is not None:
        maps = [_output_name(model, seg["output"], "segmentation output")]
    if not maps:
        raise ConversionError(f"the task is segmentation, but no output is a map (rank >= 3; outputs: "
                              f"{', '.join(names)})")
    return {"task": "segmentation", "source": "the task given" if task else "the manifest", "output": maps[0],
            "threshold": seg.get("threshold")}


def _classification_spec(model, task, kind, labels, produced) -> dict | None:
    """Classification on the outputs holding one class vector per sample (a distribution op's output, or one score
    per label); with the task classification given, any output whose last axis is >= 2. None: raw tensors."""
    from edge_sdk.errors import ConversionError
    from edge_sdk.runtime import op_table

    sg = model.subgraphs[0]
    names = _output_names(model)
    classes = []
    for n, t in zip(names, sg.outputs):
        shape = tuple(sg.tensors[t].shape)
        if not shape or shape[-1] < 2:
            continue
        if int(np.prod(shape[:-1])) != 1:  # one class vector per sample (not per anchor / position)
            continue
        if t in produced and op_table.row(model.op_name(sg.operators[produced[t]])).distribution:
            classes.append((n, f"{model.op_name(sg.operators[produced[t]])} output"))
        elif labels and shape[-1] == len(labels) and int(np.prod(shape[:-1])) == 1:
            classes.append((n, f"{len(labels)} labels"))
    if kind == "classification" and not classes:
        classes = [(n, "the task given" if task else "the manifest") for n, t in zip(names, sg.outputs)
                   if sg.tensors[t].shape and sg.tensors[t].shape[-1] >= 2]
        if not classes:
            raise ConversionError(f"the task is classification, but no output holds class scores (outputs: "
                                  f"{', '.join(names)})")
    if not classes:
        return None
    source = "the task given" if task else "the manifest" if kind else "; ".join(dict.fromkeys(s for _, s in classes))
    return {"task": "classification", "source": source, "outputs": [n for n, _ in classes]}


# ------------------------------------------------------------------------------------- task metrics


def top1_agreement(reference_rows: np.ndarray, model_rows: np.ndarray) -> dict:
    """Class scores (rows, K) of the float model and of the converted one: ``top1`` the fraction of rows whose
    argmax is the same, ``top5`` the fraction whose float argmax is among the converted model's 5 highest
    (ties: the lower class first, as argmax)."""
    f = np.nan_to_num(np.asarray(reference_rows, np.float64))
    q = np.nan_to_num(np.asarray(model_rows, np.float64))
    if f.shape != q.shape or f.ndim != 2:
        raise ModelError(f"class scores {f.shape} and {q.shape}: expected two equal (rows, classes) shapes")
    if not len(f):
        return {"rows": 0, "top1": None, "top5": None}
    fa = f.argmax(axis=1)
    top = np.argsort(-q, axis=1, kind="stable")[:, :min(5, q.shape[1])]
    return {"rows": int(len(f)), "top1": float(np.mean(q.argmax(axis=1) == fa)),
            "top5": float(np.mean(np.any(top == fa[:, None], axis=1)))}


def _iou_many(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    from edge_sdk.tasks.pipeline import iou

    return iou(np.asarray(box, np.float64), np.asarray(boxes, np.float64).reshape(-1, 4))


def match_detections(reference, candidates, iou_min: float = MATCH_IOU, score_tol: float = SCORE_TOLERANCE) -> list:
    """Greedy matching: each reference detection, highest score first, takes the unmatched candidate of its class
    whose score is within ``score_tol`` of its own and whose IoU with it is the highest and >= ``iou_min``.
    Detections: (boxes (n, 4) corners, classes (n,), scores (n,)). Returns the (reference, candidate) pairs."""
    rb, rc, rs = (np.asarray(a) for a in reference)
    cb, cc, cs = (np.asarray(a) for a in candidates)
    free = np.ones(len(cs), bool)
    pairs = []
    for i in np.argsort(-rs, kind="stable"):
        ok = free & (cc == rc[i]) & (np.abs(cs - rs[i]) <= score_tol + 1e-9)
        if not ok.any():
            continue
        overlap = np.where(ok, _iou_many(rb[i], cb), -1.0)
        j = int(np.argmax(overlap))
        if overlap[j] >= iou_min:
            free[j] = False
            pairs.append((int(i), j))
    return pairs


def detection_agreement(reference: list, reference_low: list, model: list, model_low: list,
                        iou_min: float = MATCH_IOU, score_tol: float = SCORE_TOLERANCE) -> dict:
    """Per sample, the float detections at the score threshold (``reference``) and down to the threshold minus
    ``score_tol`` (``reference_low``), the converted model's the same (``model``, ``model_low``): a float
    detection is kept when a converted one (down to the lower threshold: a score within the tolerance may fall
    just under the threshold) matches it (``match_detections``); a converted detection at the threshold that no
    float one (down to the lower threshold) matches is extra. Fractions are of the float detections."""
    n_ref = sum(len(r[2]) for r in reference)
    kept = sum(len(match_detections(r, m, iou_min, score_tol)) for r, m in zip(reference, model_low))
    n_model = sum(len(m[2]) for m in model)
    matched = sum(len(match_detections(m, r, iou_min, score_tol)) for m, r in zip(model, reference_low))
    extra = n_model - matched
    return {"float_detections": n_ref, "model_detections": n_model, "kept": kept, "extra": extra,
            "kept_fraction": kept / n_ref if n_ref else None, "extra_fraction": extra / n_ref if n_ref else None}


def map_iou(reference_maps: list, model_maps: list) -> dict:
    """Segmentation maps per sample, as boolean (H, W) foreground masks or integer (H, W) class maps: the IoU of
    the converted model's map with the float one's, pooled over the samples (class maps: per class, then the mean
    over the classes either map holds). None when neither map holds anything."""
    inter, union = {}, {}
    for f, q in zip(reference_maps, model_maps):
        f, q = np.asarray(f), np.asarray(q)
        classes = [True] if f.dtype == bool else np.union1d(np.unique(f), np.unique(q)).tolist()
        for c in classes:
            a, b = f == c, q == c
            inter[c] = inter.get(c, 0) + int(np.sum(a & b))
            union[c] = union.get(c, 0) + int(np.sum(a | b))
    ious = [inter[c] / union[c] for c in union if union[c]]
    return {"map_iou": float(np.mean(ious)) if ious else None, "classes": len(ious)}


def _rows(value, n: int | None = None) -> np.ndarray:
    """An output without its batch axes as (rows, values): (1, N, K) -> (N, K); (1, K, N) -> (N, K) when the
    rows are known to be N or the longer axis; (1, N) -> (N, 1)."""
    a = np.asarray(value, np.float64)
    while a.ndim > 2 and a.shape[0] == 1:
        a = a[0]
    if a.ndim == 1:
        return a.reshape(-1, 1)
    a = a.reshape(-1, a.shape[-1]) if a.ndim > 2 else a
    if n is not None:
        return a if a.shape[0] == n else a.T if a.shape[1] == n else a.reshape(n, -1)
    return a if a.shape[0] >= a.shape[1] else a.T


def _activate(scores: np.ndarray, how: str) -> np.ndarray:
    from edge_sdk.tasks.pipeline import sigmoid, softmax

    if how == "sigmoid":
        return sigmoid(scores)
    if how == "softmax":
        return softmax(scores, axis=1)
    return scores


CENTRE_SHARE = 0.25  # a share of boxes read as corners with x2 < x1 or y2 < y1 beyond which they are cx, cy, w, h


def _box_rows(value) -> np.ndarray:
    """A --boxes output's values as rows of 4 (boxes, 4): (1, N, 4), or (1, 4, N) transposed."""
    raw = _rows(value)
    return raw.T if raw.shape[1] < 4 <= raw.shape[0] else raw


def box_reading(boxes: list) -> tuple[str, str]:
    """How to read separate --boxes: ("yxyx", why) corners (yxyx or xyxy alike for IoU), or ("cxcywh", why) when
    more than CENTRE_SHARE of the float model's boxes read as corners would be inverted (x2 < x1 or y2 < y1): a
    centre-size encoding (TFLite_Detection_PostProcess's other form) read as corners overlaps nothing, and every
    detection would be lost without a word. ``boxes``: per sample (n, >=4) float rows."""
    rows = np.concatenate([np.asarray(b, np.float64)[:, :4] for b in boxes]) if boxes else np.zeros((0, 4))
    if not len(rows):
        return "yxyx", "corners (no boxes to tell)"
    inverted = float(np.mean((rows[:, 2] < rows[:, 0]) | (rows[:, 3] < rows[:, 1])))
    if inverted > CENTRE_SHARE:
        return "cxcywh", (f"centre form cx, cy, w, h ({100 * inverted:.0f}% of the float boxes read as corners had "
                          "x2 < x1 or y2 < y1)")
    return "yxyx", f"corners ({100 * inverted:.0f}% of the float boxes inverted as corners)"


def decode_detections(values: dict, spec: dict, threshold: float) -> tuple:
    """The detections of one sample (``values``: output name -> float value) as (boxes (n, 4) corners, classes,
    scores): the postprocessed op's outputs as they are; boxes and scores decoded (SSD anchors, YOLO centre
    boxes), scored (``spec["score_activation"]``), one class per box (the best), then NMS (IoU 0.5, the class's
    own boxes) as ``edge_sdk.tasks.pipeline.Detector`` does. Only detections scoring >= ``threshold``."""
    from edge_sdk.tasks.pipeline import decode_boxes, nms, ssd_anchors

    cfg = spec.get("config") or {}
    if spec["format"] == "postprocessed":
        b, c, s, n = (np.asarray(values[k], np.float64) for k in spec["outputs"])
        # class ids and the count are whole numbers; an int8 output dequantizes them to near ones (1 -> 0.996)
        n = max(0, min(int(np.rint(n.reshape(-1)[0])), s.size))
        boxes, classes, scores = b.reshape(-1, 4)[:n], np.rint(c.reshape(-1)[:n]).astype(np.int64), s.reshape(-1)[:n]
        keep = scores >= threshold
        return boxes[keep], classes[keep], scores[keep]
    if spec["format"] == "yolo":
        rows = _rows(values[spec["boxes"]])
        raw, logits = rows[:, :4], rows[:, 4:]
    else:
        raw = _rows(values[spec["boxes"]])
        if raw.shape[1] < 4 <= raw.shape[0]:
            raw = raw.T
        logits = _rows(values[spec["scores"]], raw.shape[0])
    scores = _activate(logits, spec.get("score_activation") or "none")
    if cfg.get("background_class"):
        scores = scores[:, 1:]
    if spec["format"] == "ssd":
        anchors = np.asarray(cfg["anchors"], np.float32) if cfg.get("anchors") is not None \
            else ssd_anchors(cfg["ssd_anchors"])
        corners = decode_boxes(raw, anchors, cfg.get("scales", (10.0, 10.0, 5.0, 5.0)), cfg.get("box_order") or "yxhw",
                               cfg.get("box_encoding", "log"))
    elif (cfg.get("box_order") or ("cxcywh" if spec["format"] == "yolo" else "yxyx")) == "cxcywh":
        cx, cy, w, h = raw[:, 0], raw[:, 1], raw[:, 2], raw[:, 3]
        corners = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)  # IoU needs corners only
    else:
        corners = raw[:, :4]  # yxyx or xyxy: IoU is the same in either order
    if not scores.shape[1]:
        return np.zeros((0, 4)), np.zeros(0, np.int64), np.zeros(0)
    classes = scores.argmax(axis=1)
    best = scores[np.arange(len(scores)), classes]
    keep = nms(corners, best, classes, float(cfg.get("iou_threshold", 0.5)), threshold,
               int(cfg.get("max_detections", 100)), bool(cfg.get("class_aware", True)))
    return corners[keep], classes[keep], best[keep]


def _segmentation_map(value, threshold: float) -> np.ndarray:
    """A map output -> a class map (the class axis: the smaller of axis 1 and the last; one channel: foreground
    where the value is over ``threshold``)."""
    a = np.asarray(value, np.float64)
    while a.ndim > 3 and a.shape[0] == 1:
        a = a[0]
    if a.ndim == 2:
        a = a[..., None]
    axis = 0 if a.shape[0] < a.shape[-1] else a.ndim - 1
    if a.shape[axis] == 1:
        return np.take(a, 0, axis=axis) > threshold
    return a.argmax(axis=axis)


# ------------------------------------------------------------------------------------- running both models


class _Run:
    """A model in an interpreter with the tf.lite API (edge-sdk's or LiteRT's): float samples in (quantized for
    an integer input), float outputs out (dequantized), in output order; each sample from the initial state."""

    def __init__(self, interp, runtime: str):
        interp.allocate_tensors()
        self.interp, self.runtime = interp, runtime
        self.ins, self.outs = interp.get_input_details(), interp.get_output_details()

    def __call__(self, sample) -> list[np.ndarray]:
        from edge_sdk.tasks.pipeline import dequantize, to_input

        it = self.interp
        if hasattr(it, "reset_all_variables"):
            it.reset_all_variables()
        for d, x in zip(self.ins, sample):
            it.set_tensor(d["index"], to_input(x, d, "sample"))
        it.invoke()
        return [np.array(dequantize(it.get_tensor(d["index"]), d), np.float64) for d in self.outs]


def _litert(model):
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        return None
    from edge_sdk.model import write_model

    return _Run(Interpreter(model_content=write_model(model), num_threads=1,
                            experimental_op_resolver_type=OpResolverType.BUILTIN_REF), "LiteRT's reference kernels")


def _ours(model):
    from edge_sdk.runtime.interpreter import Interpreter

    return _Run(Interpreter(model=model), "edge-sdk's interpreter")


def _first(*makers):
    """The first runner one of ``makers`` gives (None: not installed); ModelError with the last refusal."""
    why = None
    for make in makers:
        try:
            run = make()
        except (ModelError, RuntimeError, ValueError) as exc:
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            continue
        if run is not None:
            return run
    raise ModelError(why or "ai-edge-litert is not installed")


def _float_run(float_model):
    """The float model's runner, as the SNR guard picks it: edge-sdk's interpreter, else LiteRT's reference kernels."""
    return _first(lambda: _ours(float_model), lambda: _litert(float_model))


def _converted_run(float_model, model, mode: str, interpreter=None):
    """The converted model's runner: edge-sdk's interpreter, LiteRT's reference kernels when it refuses a model (a
    dynamic-range model in edge-sdk's hybrid kernels; where neither runs it, the float model over its dequantized
    weights, as the SNR guard then measures). ``interpreter``: edge-sdk's interpreter over ``model``, prepared
    already (the quantizer's verification prepared it: not prepared twice)."""
    if interpreter is not None:
        return _Run(interpreter, "edge-sdk's interpreter")
    if mode == "dynamic":
        from converters.quantize.weights_only import dequantized_weights

        return _first(lambda: _ours(model), lambda: _litert(model),
                      lambda: _ours(dequantized_weights(float_model, model)))
    return _first(lambda: _ours(model), lambda: _litert(model))


class FloatReference:
    """The float model's outputs on the task's samples, run once: the widening search judges each step's model on
    the same samples and the float side of that comparison does not change (held by ``TaskJudge``, one per
    conversion). ``outputs()``: per sample a dict output name -> float64 value; ModelError, said on every call,
    when no runtime here runs the float model."""

    def __init__(self, float_model, samples):
        self.float_model, self.samples = float_model, list(samples)
        self._outputs: list[dict] | None = None
        self._refused: str | None = None
        self.derived: dict = {}  # what task_metrics reads from the float outputs alone (decoded detections)

    def outputs(self) -> list[dict]:
        if self._refused is not None:
            raise ModelError(self._refused)
        if self._outputs is None:
            try:
                float_run = _float_run(self.float_model)
            except ModelError as exc:
                self._refused = str(exc)
                raise
            names = _output_names(self.float_model)
            self._outputs = [dict(zip(names, float_run(sample))) for sample in self.samples]
        return self._outputs


def judge_task(spec: dict, float_model, model, samples, mode: str = "int8", goals: dict | None = None,
               data: str = "held-back", reference: FloatReference | None = None, interpreter=None) -> dict:
    """Run the float ``float_model`` and the converted ``model`` (``Model`` objects; ``mode`` picks the converted
    model's runtime) on ``samples`` (each a list of arrays, one per input, as the float model takes them) and
    measure the task ``spec`` (``task_spec``) says (``task_metrics``). ``reference``: the float model's outputs on
    these samples already computed (``FloatReference`` of the same model and samples; else run here).
    ``interpreter``: edge-sdk's ``Interpreter`` over ``model``, already prepared (else one is made here). The record:
    ``task``, ``source``, ``samples``, ``data``, ``runtime``, ``metrics``, ``goal`` ({metric: fraction}), ``judged``
    (False, with ``why``, when nothing could be measured: no sample, no float detection, empty maps, no runtime)
    and ``met``."""
    record = {k: v for k, v in spec.items() if k != "config"}
    record.update(samples=0, data=data, metrics={}, judged=False, met=None)
    if reference is None:
        reference = FloatReference(float_model, samples)
    samples = reference.samples
    if not samples:
        return {**record, "why": f"no {data} samples to judge it on"}
    try:
        ref = reference.outputs()
        run = _converted_run(float_model, model, mode, interpreter)
    except ModelError as exc:
        return {**record, "why": f"no runtime here runs the {mode} model ({exc})"}
    names = _output_names(float_model)
    got = [dict(zip(names, run(sample))) for sample in samples]
    return {**task_metrics(spec, ref, got, goals, data, reference.derived), "runtime": run.runtime}


class TaskJudge:
    """The widening search's view of the task guard: ``judge(qmodel) -> record`` (``judge_task``'s) of each step's
    model on the same samples, the float model run on them once (``reference``) for the whole search."""

    def __init__(self, spec: dict, float_model, samples, mode: str = "int8", goals: dict | None = None,
                 data: str = "held-back"):
        self.spec, self.float_model, self.mode, self.goals, self.data = spec, float_model, mode, goals, data
        self.reference = FloatReference(float_model, samples)

    takes_interpreter = True  # the search hands it the interpreter the quantizer prepared (widen.Prepared)

    def __call__(self, qmodel, interpreter=None) -> dict:
        """``interpreter``: edge-sdk's interpreter over ``qmodel``, prepared already (the quantizer's verification
        prepared one for every model it builds), else one is prepared here."""
        return judge_task(self.spec, self.float_model, qmodel, self.reference.samples, self.mode, self.goals,
                          self.data, self.reference, interpreter)


def ctc_greedy(probs, blank: int = 0) -> tuple:
    """Greedy CTC decoding of one sequence's (T, C) scores: the argmax per time step (ties: the lower class, as
    argmax), repeats collapsed, blanks dropped -> the class ids."""
    best = np.asarray(probs).reshape(-1, np.shape(probs)[-1]).argmax(axis=1)
    keep = np.ones(len(best), bool)
    keep[1:] = best[1:] != best[:-1]
    return tuple(int(c) for c in best[keep] if c != blank)


def _reference_detections(spec: dict, ref: list) -> tuple:
    """What a detection task reads from the float outputs alone: (the spec with its score activation and box order
    settled, the score threshold, the lower threshold, the float detections at each, the record's entries)."""
    cfg = spec.get("config") or {}
    extra = {}
    activation = cfg.get("score_activation")
    if spec["format"] != "postprocessed" and activation in (None, "auto"):
        values = np.concatenate([(_rows(r[spec["boxes"]])[:, 4:] if spec["format"] == "yolo"
                                  else r[spec["scores"]]).reshape(-1) for r in ref])
        activation = "none" if values.size and 0.0 <= values.min() and values.max() <= 1.0 else "sigmoid"
    spec = {**spec, "score_activation": activation}
    if activation is not None:
        extra["score_activation"] = activation
    if spec["format"] == "boxes" and not cfg.get("box_order"):  # corners, unless the float boxes say centre form
        order, extra["box_reading"] = box_reading([_box_rows(r[spec["boxes"]]) for r in ref])
        spec = {**spec, "config": {**cfg, "box_order": order}}
    thr = float(cfg.get("score_threshold", SCORE_THRESHOLD))
    low = max(0.0, thr - SCORE_TOLERANCE)
    ref_at, ref_low = [decode_detections(r, spec, thr) for r in ref], [decode_detections(r, spec, low) for r in ref]
    return spec, thr, low, ref_at, ref_low, extra


def task_metrics(spec: dict, ref: list, got: list, goals: dict | None = None, data: str = "held-back",
                 ref_cache: dict | None = None) -> dict:
    """The task ``spec`` says, measured on the outputs of the float model (``ref``) and of the converted one
    (``got``): per sample a dict output name -> float value. Classification top-1 / top-5 agreement, detection
    matching (``detection_agreement``), segmentation map IoU, recognition (CTC) identical greedy-decoded strings
    (``ctc_greedy``). The record as ``judge_task`` gives it, without the runtime. ``ref_cache``: a dict kept with
    ``ref`` (``FloatReference.derived``) where what is read from ``ref`` alone (its decoded detections) is kept
    for the next call on the same ``ref``."""
    goals = goals or task_goals()[0]
    record = {k: v for k, v in spec.items() if k != "config"}
    record.update(samples=len(ref), data=data, metrics={}, judged=False, met=None)
    if not ref:
        return {**record, "samples": 0, "why": f"no {data} samples to judge it on"}
    task = spec["task"]
    if task == "classification":
        per = []
        for n in spec["outputs"]:
            k = ref[0][n].shape[-1] if ref[0][n].ndim else 1
            m = top1_agreement(np.concatenate([r[n].reshape(-1, k) for r in ref]),
                               np.concatenate([g[n].reshape(-1, k) for g in got]))
            per.append({"output": n, **m})
        worst = min(per, key=lambda m: m["top1"])
        record["metrics"] = {"top1": worst["top1"], "top5": min(m["top5"] for m in per), "outputs": per}
        record["goal"] = {"top1": goals["top1"]}
        return {**record, "judged": True, "met": worst["top1"] >= goals["top1"]}
    if task == "recognition":
        n, blank = spec["output"], int(spec.get("blank", 0))
        pairs = [(ctc_greedy(r[n], blank), ctc_greedy(g[n], blank)) for r, g in zip(ref, got)]
        steps = [(np.asarray(r[n]).reshape(-1, r[n].shape[-1]).argmax(1), np.asarray(g[n]).reshape(-1, g[n].shape[-1])
                  .argmax(1)) for r, g in zip(ref, got)]
        record["metrics"] = {"strings": float(np.mean([a == b for a, b in pairs])),
                             "steps": float(np.mean(np.concatenate([a == b for a, b in steps]))),
                             "mean_length": float(np.mean([len(a) for a, _ in pairs])), "blank": blank}
        record["goal"] = {"strings": goals.get("strings", STRINGS_GOAL)}
        if not any(a for a, _ in pairs):
            return {**record, "why": f"the float model decodes only empty strings on the {len(ref)} samples"}
        return {**record, "judged": True, "met": record["metrics"]["strings"] >= record["goal"]["strings"]}
    if task == "segmentation":
        cut = spec.get("threshold")
        if cut is None:  # one cut for both models: 0.5 when the float maps are probabilities, else 0 (logits)
            low, high = min(float(r[spec["output"]].min()) for r in ref), max(float(r[spec["output"]].max()) for r in ref)
            cut = 0.5 if 0.0 <= low and high <= 1.0 else 0.0
        m = map_iou([_segmentation_map(r[spec["output"]], cut) for r in ref],
                    [_segmentation_map(g[spec["output"]], cut) for g in got])
        record["metrics"], record["goal"] = m, {"map_iou": goals["map_iou"]}
        if m["map_iou"] is None:
            return {**record, "why": f"neither model's map holds anything on the {len(ref)} samples"}
        return {**record, "judged": True, "met": m["map_iou"] >= goals["map_iou"]}
    # detection: scores as the float model gives them (probabilities kept; else logits through a sigmoid)
    key = ("detection", repr(spec))
    if ref_cache is None or key not in ref_cache:
        found = _reference_detections(spec, ref)
        if ref_cache is not None:
            ref_cache[key] = found
    else:
        found = ref_cache[key]
    spec, thr, low, ref_at, ref_low, extra = found
    record.update(extra)
    got_at, got_low = [decode_detections(g, spec, thr) for g in got], [decode_detections(g, spec, low) for g in got]
    m = detection_agreement(ref_at, ref_low, got_at, got_low)
    record["metrics"] = {**m, "score_threshold": thr, "match_iou": MATCH_IOU, "score_tolerance": SCORE_TOLERANCE}
    record["goal"] = {"detections": goals["detections"]}
    if not m["float_detections"]:
        return {**record, "why": f"the float model detects nothing (score >= {thr:g}) on the {len(ref)} samples"}
    met = m["kept_fraction"] >= goals["detections"] and m["extra_fraction"] <= 1.0 - goals["detections"] + 1e-12
    return {**record, "judged": True, "met": met}


def task_samples(data, held_back: int = 0, limit: int = TASK_SAMPLES, what: str = "evaluation") -> tuple:
    """(samples, what they are, why there are none) the task is judged on, from ``data`` (``converters.calibration``
    samples): with ``held_back`` > 0 the calibration samples the SNR guard held back (every 5th, at most that
    many; the first ``MEASURE_SAMPLES`` when there are fewer than 5), else the first ``limit`` (``what`` says
    whose). A source read once (an iterator) cannot be read again: no samples, and why."""
    from converters.calibration import CalibrationData
    from converters.quantize.calibrate import MEASURE_SAMPLES

    if data is None:
        return [], "no", "no data to judge it on (give --calib or --eval)"
    if isinstance(data, CalibrationData) and not data.reiterable:
        return [], "no", "the calibration data was an iterator, read once (give --eval / eval_data to judge it)"
    source = data.relabeled(None) if isinstance(data, CalibrationData) else data
    if not held_back:
        out = []
        for sample in source:
            out.append(sample)
            if len(out) >= limit:
                break
        return out, what, None
    held, first = [], []
    for k, sample in enumerate(source):
        if k % 5 == 4 and len(held) < held_back:
            held.append(sample)
        elif len(first) < MEASURE_SAMPLES:
            first.append(sample)
        if len(held) >= held_back:
            break
    return (held, "held-back", None) if held else (first, "calibration", None)


def goal_met(outputs, min_snr: float, record: dict | None = None) -> bool:
    """The guard's one verdict, for whoever decides "goal met" (the widening search among them): a judged task's
    (``judge_task``), else every output (and joined part) at ``min_snr`` dB or above (``outputs``: the guard's
    per-output entries with ``worst_snr_db``)."""
    if record is not None and record.get("judged"):
        return bool(record["met"])
    return all(o["worst_snr_db"] >= min_snr for o in outputs or [])


def apply_task_verdict(guard: dict, record: dict | None) -> dict:
    """Make a judged task's verdict the guard's: ``guard["task"]`` = the record, ``guard["snr_met"]`` = whether
    every output met the SNR goal (the guard's own verdict), ``guard["met"]`` = the task's when it was judged,
    ``guard["judged_by"]`` = "task" or "snr". Returns the guard."""
    guard["snr_met"] = bool(guard.get("snr_met", guard.get("met")))
    if record is None:
        guard["judged_by"] = "snr"
        return guard
    guard["task"] = record
    guard["judged_by"] = "task" if record.get("judged") else "snr"
    guard["met"] = bool(record["met"]) if record.get("judged") else guard["snr_met"]
    return guard


def task_shortfall(record: dict) -> str:
    """The line that says by how much the task misses its goal (for the refusal and the lossy note)."""
    from converters.report import task_text

    goal = next(iter((record.get("goal") or {}).items()), (None, None))
    flag = GOAL_FLAGS.get(goal[0], "")
    return (f"task {record['task']}: {task_text(record)} on {record['samples']} {record['data']} sample(s): "
            f"below its goal ({flag})")
