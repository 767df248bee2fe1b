"""Input pre-processing for image models: one description, used by calibration, the manifest and the runtime.

    p = Preprocess(size=(96, 96), resize="center-crop", channels="RGB", layout="NHWC",
                   value_range=(0.0, 1.0), mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
    x = p.apply(PIL.Image.open("cat.jpg"))         # float32 (1, 96, 96, 3), ready to feed the model
    p.to_dict() / Preprocess.from_dict(d)          # what the metadata manifest records

The steps, in order: convert the image to the channel order's mode (RGB, BGR via RGB, or grayscale "L"),
resize to ``size`` (width, height) with ``resize`` = "stretch" (ignore aspect), "center-crop" (scale the
short side to fit, crop the middle) or "letterbox" (scale the long side to fit, pad with ``pad_value``),
map pixel values 0..255 linearly onto ``value_range``, then subtract ``mean`` and divide by ``std``
(per channel, in the channel order given), and lay out as NHWC or NCHW with a batch axis of one.
``dtype`` "float32" gives the float tensor; "uint8" / "int8" keep raw 0..255 pixels (int8: minus 128),
for models whose int8 input takes pixels directly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from edge_sdk.errors import ModelError

RESIZE_MODES = ("stretch", "center-crop", "letterbox")
CHANNEL_ORDERS = ("RGB", "BGR", "GRAY")
LAYOUTS = ("NHWC", "NCHW")
DTYPES = ("float32", "uint8", "int8")


def _floats(value, what: str) -> tuple[float, ...]:
    if isinstance(value, (int, float, np.floating, np.integer)):
        return (float(value),)
    try:
        return tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise ModelError(f"preprocess: {what} must be a number or a list of numbers, not {value!r}") from None


@dataclass
class Preprocess:
    size: tuple[int, int] | None = None  # (width, height); None keeps the image's own size
    resize: str = "stretch"
    channels: str = "RGB"
    layout: str = "NHWC"
    value_range: tuple[float, float] = (0.0, 1.0)
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)
    dtype: str = "float32"
    pad_value: int = 0  # letterbox padding, in 0..255 pixel units
    extra: dict = field(default_factory=dict)  # free-form notes the manifest carries along

    def __post_init__(self):
        if self.size is not None:
            if isinstance(self.size, (int, np.integer)):
                self.size = (int(self.size), int(self.size))
            self.size = tuple(int(v) for v in self.size)
            if len(self.size) != 2 or min(self.size) <= 0:
                raise ModelError(f"preprocess: size must be (width, height) > 0, not {self.size}")
        self.channels = str(self.channels).upper()
        if self.channels in ("GRAYSCALE", "L"):
            self.channels = "GRAY"
        self.layout = str(self.layout).upper()
        self.resize = str(self.resize).lower().replace("_", "-")
        for name, value, allowed in (("resize", self.resize, RESIZE_MODES), ("channels", self.channels, CHANNEL_ORDERS),
                                     ("layout", self.layout, LAYOUTS), ("dtype", self.dtype, DTYPES)):
            if value not in allowed:
                raise ModelError(f"preprocess: {name} must be one of {', '.join(allowed)}, not {value!r}")
        self.value_range = _floats(self.value_range, "value_range")
        if len(self.value_range) != 2:
            raise ModelError(f"preprocess: value_range must be (low, high), not {self.value_range}")
        self.mean = _floats(self.mean, "mean")
        self.std = _floats(self.std, "std")
        n = self.num_channels
        for name, v in (("mean", self.mean), ("std", self.std)):
            if len(v) not in (1, n):
                raise ModelError(f"preprocess: {name} has {len(v)} values; {self.channels} has {n} channels")
        if any(s == 0 for s in self.std):
            raise ModelError("preprocess: std must not be zero")

    @property
    def num_channels(self) -> int:
        return 1 if self.channels == "GRAY" else 3

    def to_dict(self) -> dict:
        d = asdict(self)
        d["size"] = list(self.size) if self.size is not None else None
        for k in ("value_range", "mean", "std"):
            d[k] = list(d[k])
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Preprocess":
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    # ------------------------------------------------------------------ the pipeline
    def _resized(self, image):
        from PIL import Image

        if self.size is None:
            return image
        w, h = self.size
        iw, ih = image.size
        if self.resize == "stretch" or (iw, ih) == (w, h):
            return image.resize((w, h), Image.BILINEAR)
        if self.resize == "center-crop":
            k = max(w / iw, h / ih)
            sw, sh = max(w, round(iw * k)), max(h, round(ih * k))
            scaled = image.resize((sw, sh), Image.BILINEAR)
            left, top = (sw - w) // 2, (sh - h) // 2
            return scaled.crop((left, top, left + w, top + h))
        k = min(w / iw, h / ih)  # letterbox
        sw, sh = max(1, round(iw * k)), max(1, round(ih * k))
        scaled = image.resize((sw, sh), Image.BILINEAR)
        fill = self.pad_value if image.mode == "L" else (self.pad_value,) * 3
        canvas = Image.new(image.mode, (w, h), fill)
        canvas.paste(scaled, ((w - sw) // 2, (h - sh) // 2))
        return canvas

    def pixels(self, image) -> np.ndarray:
        """The resized image as uint8 (H, W, C) in this channel order."""
        from PIL import Image

        if not isinstance(image, Image.Image):
            raise ModelError(f"preprocess: expected a PIL image, not {type(image).__name__}")
        image = image.convert("L" if self.channels == "GRAY" else "RGB")
        a = np.asarray(self._resized(image), dtype=np.uint8)
        if a.ndim == 2:
            a = a[:, :, None]
        if self.channels == "BGR":
            a = a[:, :, ::-1]
        return a

    def apply(self, image) -> np.ndarray:
        """A PIL image (or a path to one) -> the model's input tensor with a batch axis of one."""
        from PIL import Image

        if not isinstance(image, Image.Image):
            with Image.open(image) as im:
                im.load()
                return self.apply(im)
        a = self.pixels(image)
        if self.dtype == "uint8":
            x = a
        elif self.dtype == "int8":
            x = (a.astype(np.int16) - 128).astype(np.int8)
        else:
            lo, hi = self.value_range
            x = a.astype(np.float32) * np.float32((hi - lo) / 255.0) + np.float32(lo)
            x = (x - np.asarray(self.mean, np.float32)) / np.asarray(self.std, np.float32)
            x = x.astype(np.float32)
        if self.layout == "NCHW":
            x = np.transpose(x, (2, 0, 1))
        return np.ascontiguousarray(x[None])
