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
    outputs = r.run(fit_samples(x, r.input_shape))
    if reference is not None:
        rr = runner(reference)
        ref_outputs = rr.run(fit_samples(x, rr.input_shape))
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
