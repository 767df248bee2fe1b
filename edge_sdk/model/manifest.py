"""The package manifest: a JSON document the converter embeds as a TFLite metadata entry.

TFLite models carry named metadata entries (``Model.metadata``: a name and a buffer index). LiteRT and TFLM
only look at the entries they know ("min_runtime_version", "TFLITE_METADATA", ...) and skip the rest, so an
entry named ``edge_sdk.manifest`` travels with the model without changing how any runtime runs it.

The manifest says how to feed the model and what it was made from::

    {
      "format": 1,
      "converter": {"name": "edge-sdk", "version": "0.1.0"},
      "source": {"path": "net.onnx", "sha256": "...", "format": "onnx"},
      "preprocess": {"size": [28, 28], "resize": "center-crop", "mean": [...], "std": [...],
                     "channels": "RGB", "layout": "NCHW", "value_range": [0, 1]},   # Preprocess.to_dict()
      "labels": ["cat", "dog"],
      "task": "detection",                       # what the outputs mean (TASKS; aliases in TASK_ALIASES)
      "detection": {"format": "boxes", "outputs": {"boxes": "boxes", "scores": "scores"}},   # Detector options
      "target": "stm32f746-disco",
      "quantization": {"mode": "int8", "method": "minmax", "io": "int8", "exclude": []},
      "calibration": {"samples": 100, ...},
      "accuracy": {...}
    }

Every key is optional for a reader; ``write_manifest`` only requires a JSON-serializable dict.

The task (``manifest_task``): "classification" (class scores), "detection" (boxes and scores; "detection" holds
``edge_sdk.tasks.pipeline.Detector``'s options, and a "detection" entry alone says the task), "segmentation" (a
per-pixel class or probability map; "segmentation": {"output": name, "threshold": 0.5} may say which output and
where a one-channel map's foreground starts) or "raw" (tensors, no meaning known). The converter's accuracy guard judges
the task it names (``converters.evaluate.task_spec``), and ``edge run`` decodes it.
"""

from __future__ import annotations

import json

from edge_sdk.errors import ModelError
from edge_sdk.model.types import Buffer, Metadata, Model

MANIFEST_NAME = "edge_sdk.manifest"
MANIFEST_FORMAT = 1
TASKS = ("classification", "detection", "segmentation", "recognition", "raw")
# the words a manifest or a user may say for a task (``edge run``'s "classify" / "detect" among them)
TASK_ALIASES = {"classification": "classification", "classify": "classification",
                "image_classification": "classification", "audio_classification": "classification",
                "detection": "detection", "detect": "detection", "object_detection": "detection",
                "segmentation": "segmentation", "segment": "segmentation", "semantic_segmentation": "segmentation",
                "recognition": "recognition", "text_recognition": "recognition", "ctc": "recognition", "raw": "raw"}


def task_name(task, what: str = "task") -> str | None:
    """One of ``TASKS`` for a task word (None stays None); ModelError naming ``what`` for an unknown word."""
    if task is None:
        return None
    name = TASK_ALIASES.get(str(task).strip().lower())
    if name is None:
        raise ModelError(f"{what}: unknown task {task!r} (one of {', '.join(TASKS)})")
    return name


def manifest_task(manifest: dict | None) -> str | None:
    """The task a manifest says (its "task", else "detection" when it has detection options), or None."""
    if not manifest:
        return None
    if manifest.get("task") is not None:
        return task_name(manifest["task"], f"manifest {MANIFEST_NAME!r}")
    return "detection" if manifest.get("detection") else None


def jsonable(value):
    """Plain JSON types from numpy scalars/arrays, tuples and paths (so callers can pass what they have)."""
    import numpy as np

    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def encode_manifest(manifest: dict) -> bytes:
    """The manifest as the UTF-8 JSON bytes stored in the metadata buffer."""
    if not isinstance(manifest, dict):
        raise ModelError(f"manifest must be a dict, not {type(manifest).__name__}")
    doc = {"format": MANIFEST_FORMAT, **jsonable(manifest)}
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def write_manifest(model: Model, manifest: dict, name: str = MANIFEST_NAME) -> Model:
    """Embed ``manifest`` in ``model`` (in place; returned for chaining), replacing an earlier one.

    The JSON goes into a new buffer at the end of ``model.buffers``; an earlier manifest's buffer is emptied
    (buffers are shared by index, so it is not removed).
    """
    data = encode_manifest(manifest)
    kept = []
    for m in model.metadata:
        if m.name == name:
            if 0 < m.buffer < len(model.buffers):
                model.buffers[m.buffer] = Buffer()
        else:
            kept.append(m)
    if not model.buffers:
        model.buffers.append(Buffer())  # buffer 0 stays the empty buffer
    model.buffers.append(Buffer(data))
    kept.append(Metadata(name=name, buffer=len(model.buffers) - 1))
    model.metadata = kept
    return model


def read_manifest(model, name: str = MANIFEST_NAME) -> dict | None:
    """The manifest embedded in ``model`` (a ``Model``, a path or .tflite bytes), or None when it has none.

    A manifest entry whose bytes are not a JSON object raises ModelError naming the entry.
    """
    if not isinstance(model, Model):
        from edge_sdk.model import read_model

        model = read_model(model)
    data = model.metadata_bytes(name)
    if data is None:
        return None
    try:
        doc = json.loads(data.rstrip(b"\x00").decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"metadata entry {name!r}: not a JSON manifest ({exc})") from None
    if not isinstance(doc, dict):
        raise ModelError(f"metadata entry {name!r}: the manifest is a JSON {type(doc).__name__}, not an object")
    return doc


def summarize_manifest(manifest: dict) -> list[str]:
    """A few human-readable lines (for ``edge inspect``): what the package is and how to feed it."""
    lines = []
    conv = manifest.get("converter") or {}
    src = manifest.get("source") or {}
    if conv or src:
        sha = (src.get("sha256") or "")[:12]
        lines.append(f"made by {conv.get('name', '?')} {conv.get('version', '?')} from "
                     f"{src.get('path') or src.get('format') or '?'}" + (f" (sha256 {sha}…)" if sha else ""))
    pre = manifest.get("preprocess")
    if pre:
        parts = []
        if pre.get("size"):
            parts.append("size " + "x".join(str(s) for s in pre["size"]))
        for key in ("resize", "channels", "layout", "dtype"):
            if pre.get(key):
                parts.append(f"{key} {pre[key]}")
        if pre.get("value_range") is not None:
            parts.append(f"range {pre['value_range']}")
        if pre.get("mean") is not None:
            parts.append(f"mean {pre['mean']}")
        if pre.get("std") is not None:
            parts.append(f"std {pre['std']}")
        lines.append("input: " + ", ".join(parts))
    labels = manifest.get("labels")
    if labels:
        shown = ", ".join(str(x) for x in labels[:5]) + (", …" if len(labels) > 5 else "")
        lines.append(f"labels: {len(labels)} ({shown})")
    if manifest.get("task"):
        lines.append(f"task: {manifest['task']}")
    if manifest.get("target"):
        lines.append(f"target: {manifest['target']}")
    q = manifest.get("quantization")
    if q:
        keys = ["mode"] + sorted(k for k in q if k != "mode")
        lines.append("quantization: " + ", ".join(f"{k} {q[k]}" for k in keys if q.get(k) not in (None, [], "")))
    cal = manifest.get("calibration")
    if cal:
        lines.append("calibration: " + ", ".join(f"{k} {v}" for k, v in cal.items() if not isinstance(v, (dict, list))))
    acc = manifest.get("accuracy")
    if acc:
        parts = []
        for key, label in (("model", "model"), ("reference", "float")):
            m = acc.get(key)
            if isinstance(m, dict) and m.get("top1") is not None:
                parts.append(f"{label} top-1 {100 * m['top1']:.2f}% ECE {m.get('ece', float('nan')):.4f}")
        if acc.get("agreement") is not None:
            parts.append(f"argmax agreement {100 * acc['agreement']:.2f}%")
        if parts:
            lines.append("accuracy: " + "; ".join(parts))
    return lines
