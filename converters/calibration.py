"""Calibration data: whatever the user has -> samples the quantizer runs through the float model.

    data = calibration_data("images/", inputs=[((1, 96, 96, 3), "float32")],
                            preprocess=Preprocess(size=(96, 96), resize="center-crop"), limit=100, shuffle=True)
    for sample in data:          # a list with one numpy array per model input, each of the input's shape
        ...
    len(data)                    # the sample count, when the source says it up front

Sources:

- a folder of images (png, jpg, bmp, gif, ppm/pgm, webp, tiff): decoded with Pillow and pre-processed by a
  ``edge_sdk.tasks.preprocess.Preprocess`` (given, or derived from the model's input shape: NHWC when the last
  axis is 1 or 3, else NCHW; grayscale for one channel; values 0..1). Single-input models only.
- a ``.npy`` file or an array: either one sample (the input's shape, with or without its batch axis of one)
  or a batch along axis 0, values exactly as the model takes them. A ``uint8`` array for a float image
  input holds 0..255 pictures ([N, H, W, C] or [H, W, C], or channels first as the input is): each is
  pre-processed like an image file of a folder (resized, scaled to 0..1, mean/std), one at a time as
  the samples are read (an array source's samples are otherwise views of the array, not copies).
- every value must be finite: a NaN or inf is refused, naming the file and the sample index.
- a ``.npz`` file: one array per input (named as the model's inputs, else in order), each a batch or a sample.
- a folder of ``.npy`` / ``.npz`` files: each file as above (a batch or one sample).
- any Python iterable (or a function returning one, as TFLite's representative_dataset): each item an array
  (single-input models), a list/tuple of arrays (one per input) or a dict by input name.

``limit`` keeps the first N samples (after shuffling); ``shuffle`` permutes files / batch rows with ``seed``
(a plain iterable is read into memory to shuffle it). Iterating reports progress through ``edge_sdk.log``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

from edge_sdk import log
from edge_sdk.errors import ModelError
from edge_sdk.tasks.preprocess import Preprocess

IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".ppm", ".pgm", ".pbm", ".webp", ".tif", ".tiff"}
ARRAY_EXTENSIONS = {".npy", ".npz"}

InputSpec = tuple[tuple[int, ...], "np.dtype | str"]


def _spec_list(inputs) -> list[tuple[tuple[int, ...], np.dtype, str]]:
    """Normalise input specs: (shape, dtype[, name]) tuples, or a Model (its first subgraph's inputs)."""
    from edge_sdk.model.types import Model

    if inputs is None:
        return []
    if isinstance(inputs, Model):
        sg = inputs.subgraphs[0]
        return [(tuple(sg.tensors[t].shape), np.dtype(sg.tensors[t].dtype), sg.tensors[t].name) for t in sg.inputs]
    out = []
    for k, spec in enumerate(inputs):
        shape, dtype = spec[0], spec[1]
        name = spec[2] if len(spec) > 2 else f"input_{k}"
        out.append((tuple(int(d) for d in shape), np.dtype(dtype), name))
    return out


class CalibrationData:
    """An iterable of samples (each a list of numpy arrays, one per model input), re-iterable when the
    source allows it (files, arrays, lists); ``len()`` when the count is known up front."""

    def __init__(self, chunks: list[Callable[[], list[list[np.ndarray]]]] | None, stream: Iterable | None,
                 specs, limit: int | None, label: str, counts: list[int] | None = None, prepared: bool = False):
        self._prepared = prepared  # the stream holds finished samples
        self._chunks = chunks  # callables, each giving the samples of one file / batch
        self._counts = counts  # samples per chunk when known without loading
        self._stream = stream
        self._specs = specs
        self._limit = limit
        self.label = label

    @property
    def reiterable(self) -> bool:
        """Whether iterating again gives the same samples (files, arrays, lists; not a one-shot iterator):
        the quantizer then reads held-back samples again instead of keeping them in memory."""
        return self._chunks is not None or isinstance(self._stream, (list, tuple))

    def relabeled(self, label: str | None) -> "CalibrationData":
        """The same samples with another progress label (None: no progress bar, the caller shows its own)."""
        other = copy.copy(self)
        other.label = label
        return other

    def __len__(self) -> int:
        n = self.known_length()
        if n is None:
            raise TypeError("this calibration source does not know its length before it is read")
        return n

    def known_length(self) -> int | None:
        if self._counts is not None:
            n = sum(self._counts)
        elif self._prepared and hasattr(self._stream, "__len__"):
            n = len(self._stream)
        else:
            return None
        return n if self._limit is None else min(n, self._limit)

    def _raw(self) -> Iterator[list[np.ndarray]]:
        if self._chunks is not None:
            for chunk in self._chunks:
                yield from chunk()
        else:
            for k, item in enumerate(self._stream):
                if self._prepared:
                    yield item
                else:
                    yield from _item_samples(item, self._specs, f"item {k}")

    def __iter__(self) -> Iterator[list[np.ndarray]]:
        if self.label is None:  # no progress bar (the caller shows its own)
            for n, sample in enumerate(self._raw()):
                if self._limit is not None and n >= self._limit:
                    break
                yield sample
            return
        total = self.known_length()
        if total is None:  # a guess for the bar only: items of a plain iterable may be batches
            total = len(self._stream) if hasattr(self._stream, "__len__") else (self._limit or 1)
            total = total if self._limit is None else min(total, self._limit)
        with log.progress(total, self.label) as bar:
            for n, sample in enumerate(self._raw()):
                if self._limit is not None and n >= self._limit:
                    break
                yield sample
                bar.advance()


# ---------------------------------------------------------------------------------------------- conversion
def _fit(array, spec, where: str) -> np.ndarray:
    """One sample for one input: the input's shape (a missing batch axis of one is added) and dtype."""
    a = np.asarray(array)
    if spec is None:
        return a
    shape, dtype, name = spec
    if a.dtype.kind not in "biuf":
        raise ModelError(f"calibration {where}: input '{name}' got {a.dtype} values, not numbers")
    if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
        bad = int(np.size(a) - np.count_nonzero(np.isfinite(a)))
        raise ModelError(f"calibration {where}: input '{name}' has {bad} non-finite value(s) (NaN or inf); "
                         "calibration samples must be finite")
    if tuple(a.shape) != shape:
        if len(shape) and shape[0] == 1 and tuple(a.shape) == shape[1:]:
            a = a[None]
        else:
            raise ModelError(f"calibration {where}: input '{name}' needs shape {shape}, got {tuple(a.shape)}")
    a = a.astype(dtype, copy=False)
    return np.ascontiguousarray(a).reshape(a.shape)  # ascontiguousarray makes a scalar (rank 0) one of shape (1,)


def _is_batch(a: np.ndarray, spec) -> bool:
    if spec is None:
        return a.ndim >= 1
    shape = spec[0]
    if tuple(a.shape) == shape or tuple(a.shape) == shape[1:] and len(shape) and shape[0] == 1:
        return False
    return (a.ndim == len(shape) and tuple(a.shape[1:]) == shape[1:]) or tuple(a.shape[1:]) == shape


def _split_batch(arrays: list[np.ndarray], specs, where: str) -> list[list[np.ndarray]]:
    """Arrays for every input, each one sample or a batch along axis 0 -> samples."""
    if specs and len(arrays) != len(specs):
        raise ModelError(f"calibration {where}: {len(arrays)} arrays for a model with {len(specs)} inputs")
    per = [spec for spec in specs] if specs else [None] * len(arrays)
    batched = [_is_batch(np.asarray(a), s) for a, s in zip(arrays, per)]
    if not any(batched):
        return [[_fit(a, s, where) for a, s in zip(arrays, per)]]
    sizes = {len(a) for a, b in zip(arrays, batched) if b}
    if len(sizes) != 1:
        raise ModelError(f"calibration {where}: batch sizes differ between inputs ({sorted(sizes)})")
    n = sizes.pop()
    out = []
    for i in range(n):
        sample = []
        for a, s, b in zip(arrays, per, batched):
            row = np.asarray(a)[i] if b else a
            sample.append(_fit(row, s, f"{where} sample {i}"))
        out.append(sample)
    return out


def _item_samples(item, specs, where: str) -> list[list[np.ndarray]]:
    if isinstance(item, dict):
        if not specs:
            arrays = list(item.values())
        else:
            missing = [s[2] for s in specs if s[2] not in item]
            if missing:
                raise ModelError(f"calibration {where}: no value for input(s) {', '.join(missing)}")
            arrays = [item[s[2]] for s in specs]
    elif isinstance(item, (list, tuple)) and (len(specs) > 1 or (item and not np.isscalar(item[0])
                                                                  and np.asarray(item[0]).ndim > 0
                                                                  and len(specs) == len(item))):
        arrays = list(item)
    else:
        arrays = [item]
    return _split_batch([np.asarray(a) for a in arrays], specs, where)


def _uint8_images(a: np.ndarray, specs, preprocess: Preprocess | None, where: str) -> list | None:
    """A uint8 array of 0..255 pictures for a one-input float image model -> one function per picture giving
    its input tensor (batch axis of one), pre-processed as image files are, when called (so calibration holds
    one pre-processed picture at a time); None when ``a`` is not that."""
    if a.dtype != np.uint8 or len(specs) != 1:
        return None
    shape, dtype, _ = specs[0]
    if np.dtype(dtype).kind != "f" or len(shape) != 4:
        return None
    pp = preprocess or _default_preprocess(specs)
    c = pp.num_channels
    if a.ndim == 3:
        a = a[None]
    if a.ndim != 4:
        return None
    if a.shape[-1] != c and a.shape[1] == c:
        a = np.transpose(a, (0, 2, 3, 1))  # channels first -> HWC pictures
    if a.shape[-1] != c:
        raise ModelError(f"calibration {where}: uint8 images of shape {tuple(a.shape[1:])} do not have the input's "
                         f"{c} channel(s) (give [N, H, W, {c}] or [N, {c}, H, W])")
    from PIL import Image

    def one(img):
        return lambda: pp.apply(Image.fromarray(img[..., 0] if c == 1 else img))

    return [one(img) for img in a]


def _load_array_file(path: Path, specs, preprocess: Preprocess | None = None) -> list[list[np.ndarray]]:
    where = f"file {path}"
    try:
        if path.suffix.lower() == ".npy":
            arrays = [np.load(path, allow_pickle=False)]
        else:
            with np.load(path, allow_pickle=False) as z:
                names = list(z.files)
                if specs and all(s[2] in names for s in specs):
                    arrays = [z[s[2]] for s in specs]
                else:
                    arrays = [z[n] for n in names]
    except (OSError, ValueError) as exc:
        raise ModelError(f"calibration {where}: cannot read it ({exc})") from None
    if len(arrays) == 1:
        images = _uint8_images(arrays[0], specs, preprocess, where)
        if images is not None:
            log.info(f"calibration {where}: {len(images)} uint8 image(s), pre-processed like image files")
            return [[_fit(x(), specs[0], f"{where} sample {i}")] for i, x in enumerate(images)]
    return _split_batch(arrays, specs, where)


def _default_preprocess(specs) -> Preprocess:
    if len(specs) != 1:
        raise ModelError(f"calibration images: a folder of images feeds a single-input model, not {len(specs)} inputs")
    shape = specs[0][0]
    if len(shape) != 4:
        raise ModelError(f"calibration images: the model input has shape {shape}, not an image batch (4 axes)")
    if shape[3] in (1, 3):
        layout, (h, w, c) = "NHWC", shape[1:]
    elif shape[1] in (1, 3):
        layout, (c, h, w) = "NCHW", shape[1:]
    else:
        raise ModelError(f"calibration images: cannot tell the channel axis of input shape {shape}; pass a Preprocess")
    return Preprocess(size=(w, h), channels="GRAY" if c == 1 else "RGB", layout=layout)


def _image_loader(path: Path, preprocess: Preprocess, specs):
    def load():
        try:
            x = preprocess.apply(path)
        except OSError as exc:
            raise ModelError(f"calibration image {path}: cannot decode it ({exc})") from None
        return [[_fit(x, specs[0] if specs else None, f"image {path}")]]

    return load


def calibration_data(source, inputs=None, preprocess: Preprocess | None = None, limit: int | None = None,
                     shuffle: bool = False, seed: int = 0, label: str = "calibrating",
                     where: str = "array") -> CalibrationData:
    """Samples from ``source`` (see the module docstring) for a model with ``inputs``: a Model, or a list of
    ``(shape, dtype[, name])`` per input (None: arrays are taken as they come). ``where`` names an array source
    in messages (e.g. the file it was read from)."""
    if isinstance(source, CalibrationData):
        return source
    specs = _spec_list(inputs)
    if limit is not None and (not isinstance(limit, (int, np.integer)) or limit <= 0):
        raise ModelError(f"calibration: limit must be a positive int, not {limit!r}")
    rng = np.random.default_rng(seed)
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise ModelError(f"calibration: {path} does not exist")
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS | ARRAY_EXTENSIONS)
            images = [p for p in files if p.suffix.lower() in IMAGE_EXTENSIONS]
            arrays = [p for p in files if p.suffix.lower() in ARRAY_EXTENSIONS]
            if not files:
                raise ModelError(f"calibration: {path} holds no images or .npy/.npz files")
            if images and arrays:
                raise ModelError(f"calibration: {path} mixes images and array files; use one kind")
            if shuffle:
                files = [files[i] for i in rng.permutation(len(files))]
            if images:
                pp = preprocess or _default_preprocess(specs)
                return CalibrationData([_image_loader(p, pp, specs) for p in files], None, specs, limit, label,
                                       counts=[1] * len(files))
            return CalibrationData([(lambda p=p: _load_array_file(p, specs, preprocess)) for p in files], None, specs,
                                   limit, label)
        if path.suffix.lower() in ARRAY_EXTENSIONS:
            samples = _load_array_file(path, specs, preprocess)
            return _from_list(samples, specs, limit, label, shuffle, rng)
        if path.suffix.lower() in IMAGE_EXTENSIONS:
            pp = preprocess or _default_preprocess(specs)
            return CalibrationData([_image_loader(path, pp, specs)], None, specs, limit, label, counts=[1])
        raise ModelError(f"calibration: {path} is neither a folder, an image, nor a .npy/.npz file")
    if isinstance(source, np.ndarray):
        images = _uint8_images(source, specs, preprocess, where)
        if images is not None:  # pre-processed one at a time, as they are read
            if shuffle:
                images = [images[i] for i in rng.permutation(len(images))]
            chunks = [(lambda f=f, i=i: [[_fit(f(), specs[0], f"{where} sample {i}")]]) for i, f in enumerate(images)]
            return CalibrationData(chunks, None, specs, limit, label, counts=[1] * len(chunks))
        else:
            samples = _split_batch([source], specs, where)
        return _from_list(samples, specs, limit, label, shuffle, rng)
    if callable(source) and not hasattr(source, "__iter__"):
        source = source()
    if not isinstance(source, Iterable):
        raise ModelError(f"calibration: cannot read samples from a {type(source).__name__}")
    if shuffle:
        samples = [s for k, item in enumerate(source) for s in _item_samples(item, specs, f"item {k}")]
        return _from_list(samples, specs, limit, label, True, rng)
    return CalibrationData(None, source, specs, limit, label)


def _from_list(samples, specs, limit, label, shuffle, rng) -> CalibrationData:
    if shuffle:
        samples = [samples[i] for i in rng.permutation(len(samples))]
    return CalibrationData(None, samples, specs, limit, label, prepared=True)
