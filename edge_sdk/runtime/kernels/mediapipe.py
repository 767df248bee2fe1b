"""MediaPipe's custom ops (mediapipe/util/tflite/operations/), float32, as MediaPipe's CPU kernels define them.

- ``Convolution2DTransposeBias``: TRANSPOSE_CONV with a bias and no output-shape input: inputs x [N, H, W, Cin],
  weights [Cout, kh, kw, Cin], bias [Cout]; custom options are TfLiteTransposeConvParams' raw bytes (int32
  padding 1 SAME / 2 VALID, stride_width, stride_height). Output height stride * (H - 1) + kh - pad_total
  (SAME: pad_total = max(0, kh - (H - 1) % stride - 1), VALID: 0), the first pad_total // 2 rows cut off.
- ``TransformTensorBilinear`` (v1 "TransformTensor": no corner correction; v2: align-corners correction of the
  matrix): output pixel (x, y) samples the input bilinearly at the first two rows of the 4x4 matrix applied to
  (x, y, 0, 1); outside [0, W-1] x [0, H-1] it is 0. The float32 / float64 mix of MediaPipe's code is kept
  (products of float32, blends of double rounded to float32), so the C kernel matches bit for bit.
- ``TransformLandmarks``: landmarks (x, y[, z]) mapped by the matrix's first two rows (x, y; z kept); v1 input
  [1, H, W, C] with FlexBuffer options dimensions / scale (the translation scaled), v2 input [1, N, D]
  (dimensions = D, scale 1).
- ``Landmarks2TransformMatrix``: the 4x4 matrix of the rotated crop around a subset of landmarks (v1: options
  input_hw, output_hw, dimensions, landmarks_range, bbox_size_multiplier, left/right_rotation_idx, subset;
  v2: subset_idxs, left/right_rotation_idx, target_rotation_radians, output_height/width, scale_x/y),
  computed in double and rounded to float32 once (MediaPipe computes in float: within a few ulps).

No peer runs the last three (LiteRT's built-in kernels lack them); the first is also run by LiteRT's XNNPACK
delegate. Our C runtime has the same kernels (firmware_c/src/kernels/mediapipe_*.c).
"""

from __future__ import annotations

import math
import struct

import numpy as np

from edge_sdk.runtime.kernels.flexbuffers import FlexBufferError, read_map
from edge_sdk.runtime.kernels.node import Eval, Node

_F = np.float32


def _float_io(node: Node, n_inputs: int):
    node.expect_counts(n_inputs, 1)
    for i in range(n_inputs):
        node.expect_types(node.input(i), ("FLOAT32",), f"input {i}")
    node.expect_types(node.outputs[0], ("FLOAT32",), "output")


def _flex(node: Node) -> dict:
    if not node.custom_options:
        raise node.error("custom options (a FlexBuffers map) are missing")
    try:
        return read_map(node.custom_options)
    except FlexBufferError as exc:
        raise node.error(f"custom options: {exc}") from None


def _int(node: Node, opts: dict, key: str, default: int | None = None) -> int:
    if key not in opts:
        if default is not None:
            return default
        raise node.error(f"custom option '{key}' is missing")
    v = opts[key]
    if isinstance(v, bool):
        v = int(v)
    if not isinstance(v, int) or not -(1 << 31) <= v < (1 << 31):
        raise node.error(f"custom option '{key}' must be an int32, is {v!r}")
    return v


def _float(node: Node, opts: dict, key: str) -> float:
    if key not in opts:
        raise node.error(f"custom option '{key}' is missing")
    v = opts[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise node.error(f"custom option '{key}' must be a number, is {v!r}")
    return float(np.float32(v))  # MediaPipe reads them AsFloat


def _ints(node: Node, opts: dict, key: str) -> list[int]:
    v = opts.get(key)
    if not isinstance(v, list) or not all(isinstance(e, int) and not isinstance(e, bool) for e in v):
        raise node.error(f"custom option '{key}' must be a vector of integers")
    return [int(e) for e in v]


def _pairs(values: list[int]) -> list[tuple[int, int]]:
    """MediaPipe's subset parsing: consecutive pairs, an odd last element paired with itself."""
    pairs = [(values[2 * i], values[2 * i + 1]) for i in range(len(values) // 2)]
    if len(values) % 2:
        pairs.append((values[-1], values[-1]))
    return pairs


# ------------------------------------------------------------------------------ Convolution2DTransposeBias


def transpose_conv_bias_params(node: Node) -> tuple[int, int, int]:
    raw = node.custom_options or b""
    if len(raw) < 12:
        raise node.error(f"custom options hold {len(raw)} bytes; TfLiteTransposeConvParams needs 12 "
                         "(padding, stride_width, stride_height)")
    padding, sw, sh = struct.unpack_from("<iii", raw, 0)
    if padding not in (1, 2):
        raise node.error(f"padding {padding} must be 1 (SAME) or 2 (VALID)")
    if sw <= 0 or sh <= 0:
        raise node.error(f"strides {sh}x{sw} must be positive")
    return padding, sw, sh


def prepare_transpose_conv_bias(node: Node) -> Eval:
    _float_io(node, 3)
    x, w, b = node.input(0), node.input(1), node.input(2)
    node.expect(len(x.shape) == 4 and len(w.shape) == 4 and len(b.shape) == 1,
                f"input {x.shape}, weights {w.shape}, bias {b.shape} must be 4-D, 4-D, 1-D")
    n, h, wd, cin = x.shape
    cout, kh, kw, wcin = w.shape
    node.expect(wcin == cin, f"weights' input channels {wcin} differ from the input's {cin}")
    node.expect(b.shape[0] == cout, f"bias has {b.shape[0]} values for {cout} output channels")
    padding, sw, sh = transpose_conv_bias_params(node)
    node.expect(h > 0 and wd > 0 and kh > 0 and kw > 0, "empty input or filter")
    ph = max(0, kh - (h - 1) % sh - 1) if padding == 1 else 0
    pw = max(0, kw - (wd - 1) % sw - 1) if padding == 1 else 0
    oh, ow = sh * (h - 1) + kh - ph, sw * (wd - 1) + kw - pw
    node.set_output_shape(0, (n, oh, ow, cout))
    top, left = ph // 2, pw // 2
    const_w = None if w.data is None else np.asarray(w.data, _F)
    const_b = None if b.data is None else np.asarray(b.data, _F)

    def run(inputs, outputs):
        a = inputs[0]
        weights = const_w if const_w is not None else inputs[1]
        bias = const_b if const_b is not None else inputs[2]
        # full (uncropped) output, then the crop: every input pixel scatters a kh x kw x Cout patch
        full = np.zeros((n, sh * (h - 1) + kh, sw * (wd - 1) + kw, cout), _F)
        for fy in range(kh):
            for fx in range(kw):
                contrib = a @ weights[:, fy, fx, :].T  # [n, h, wd, cout]
                full[:, fy:fy + sh * (h - 1) + 1:sh, fx:fx + sw * (wd - 1) + 1:sw, :] += contrib
        outputs[0][...] = full[:, top:top + oh, left:left + ow, :] + bias

    return run


def macs_transpose_conv_bias(node: Node) -> int:
    n, h, w, cin = node.inputs[0].shape
    cout, kh, kw, _ = node.inputs[1].shape
    return int(n * h * w * cin * kh * kw * cout)


# ------------------------------------------------------------------------------ TransformTensorBilinear


def prepare_transform_tensor_bilinear(node: Node) -> Eval:
    _float_io(node, 2)
    x, m, y = node.input(0), node.input(1), node.outputs[0]
    node.expect(len(x.shape) == 4 and x.shape[0] == 1, f"input must be [1, H, W, C], is {x.shape}")
    node.expect(m.size >= 8, f"matrix '{m.name}' holds {m.size} values; a 4x4 matrix is needed")
    opts = _flex(node) if node.custom_options else {}
    node.expect(len(y.shape) == 4 and y.shape[0] == 1 and y.shape[3] == x.shape[3],
                f"output must be [1, height, width, {x.shape[3]}], is declared {y.shape}")
    out_h, out_w = y.shape[1], y.shape[2]
    if node.version == 1:
        if "mode" in opts and opts["mode"] != "bilinear":
            raise node.unsupported(f"mode {opts['mode']!r}: only bilinear interpolation")
        if "output_size" in opts:
            size = _ints(node, opts, "output_size")
            node.expect(size[:2] == [out_h, out_w], f"output_size {size} differs from the output shape {y.shape}")
    else:
        for key, want in (("output_height", out_h), ("output_width", out_w)):
            if key in opts:
                node.expect(_int(node, opts, key) == want, f"{key} {opts[key]} differs from the output shape {y.shape}")
    node.set_output_shape(0, (1, out_h, out_w, x.shape[3]))
    in_h, in_w = x.shape[1], x.shape[2]
    v2 = node.version >= 2
    gx = np.arange(out_w, dtype=_F).reshape(1, out_w)
    gy = np.arange(out_h, dtype=_F).reshape(out_h, 1)

    def run(inputs, outputs):
        a = inputs[0][0]
        t = inputs[1].reshape(-1)[:8].astype(_F)
        xr, yr = t[0:4].copy(), t[4:8].copy()
        if v2:  # x_transform[3] += x0 * 0.5 + x1 * 0.5 - 0.5, in double
            xr[3] = _F(np.float64(xr[3]) + (np.float64(xr[0]) * 0.5 + np.float64(xr[1]) * 0.5 - 0.5))
            yr[3] = _F(np.float64(yr[3]) + (np.float64(yr[0]) * 0.5 + np.float64(yr[1]) * 0.5 - 0.5))
        with np.errstate(all="ignore"):
            tx = ((xr[0] * gx + xr[1] * gy) + xr[2] * _F(0)) + xr[3] * _F(1)
            ty = ((yr[0] * gx + yr[1] * gy) + yr[2] * _F(0)) + yr[3] * _F(1)
            inside = (tx >= 0) & (tx <= _F(in_w - 1)) & (ty >= 0) & (ty <= _F(in_h - 1))  # NaN: outside
            fx, fy = np.floor(np.where(inside, tx, 0)), np.floor(np.where(inside, ty, 0))
            x0, y0 = fx.astype(np.int64), fy.astype(np.int64)
            x1, y1 = x0 + 1, y0 + 1

            def read(r, c):
                ok = inside & (r < in_h) & (c < in_w)
                v = a[np.minimum(r, in_h - 1), np.minimum(c, in_w - 1), :]
                return np.where(ok[..., None], v, _F(0))

            q11, q21, q12, q22 = read(y0, x0), read(y0, x1), read(y1, x0), read(y1, x1)
            rc = (np.where(inside, tx, 0) - fx)[..., None].astype(_F)
            lc = (np.where(inside, ty, 0) - fy)[..., None].astype(_F)
            upper = ((1.0 - rc.astype(np.float64)) * q11 + (rc * q21).astype(np.float64)).astype(_F)
            lower = ((1.0 - rc.astype(np.float64)) * q12 + (rc * q22).astype(np.float64)).astype(_F)
            res = ((lc * lower).astype(np.float64) + (1.0 - lc.astype(np.float64)) * upper).astype(_F)
        outputs[0][0] = np.where(inside[..., None], res, _F(0))

    return run


# ------------------------------------------------------------------------------ TransformLandmarks


def prepare_transform_landmarks(node: Node) -> Eval:
    _float_io(node, 2)
    x, m = node.input(0), node.input(1)
    node.expect(m.size >= 8, f"matrix '{m.name}' holds {m.size} values; a 4x4 matrix is needed")
    if node.version == 1:
        node.expect(len(x.shape) == 4 and x.shape[0] == 1, f"input must be [1, H, W, C], is {x.shape}")
        opts = _flex(node) if node.custom_options else {}
        dims = _int(node, opts, "dimensions", 3)  # MediaPipe's defaults: dimensions 3, scale 1
        scale = _float(node, opts, "scale") if "scale" in opts else 1.0
        node.expect(scale != 0, "custom option 'scale' must be non-zero")
    else:
        node.expect(len(x.shape) == 3 and x.shape[0] == 1, f"input must be [1, N, D], is {x.shape}")
        dims, scale = x.shape[2], 1.0
    node.expect(dims in (2, 3), f"dimensions {dims} must be 2 or 3")
    node.expect(x.shape[-1] % dims == 0, f"last dimension {x.shape[-1]} is not a multiple of dimensions {dims}")
    node.set_output_shape(0, x.shape)
    s = _F(scale)

    def run(inputs, outputs):
        t = inputs[1].reshape(-1)[:8].astype(_F)
        lv = inputs[0].reshape(-1, dims)
        out = outputs[0].reshape(-1, dims)
        px, py = lv[:, 0], lv[:, 1]
        with np.errstate(all="ignore"):
            out[:, 0] = ((t[0] * px + t[1] * py) + t[2] * _F(0)) + (t[3] * s) * _F(1)
            out[:, 1] = ((t[4] * px + t[5] * py) + t[6] * _F(0)) + (t[7] * s) * _F(1)
        if dims == 3:
            out[:, 2] = lv[:, 2]

    return run


# ------------------------------------------------------------------------------ Landmarks2TransformMatrix


def _mat3(*v) -> np.ndarray:
    return np.array(v, np.float64).reshape(3, 3)


def _mat4(*v) -> np.ndarray:
    return np.array(v, np.float64).reshape(4, 4)


def _mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Matrix product summed k = 0, 1, ... in order (as the C kernel and MediaPipe's Mat3/Mat4)."""
    n = a.shape[0]
    out = np.zeros((n, n), np.float64)
    for r in range(n):
        for c in range(n):
            s = 0.0
            for k in range(n):
                s += float(a[r, k]) * float(b[k, c])
            out[r, c] = s
    return out


def landmarks_matrix_v1(p: np.ndarray, o: dict) -> np.ndarray:
    """The v1 matrix from landmarks p [N, 3] (float64) and parsed options."""
    lx, ly = p[o["left"], 0], p[o["left"], 1]
    rx, ry = p[o["right"], 0], p[o["right"], 1]
    with np.errstate(all="ignore"):
        alpha = -math.atan(float(np.divide(np.float64(ry - ly), np.float64(rx - lx))))  # IEEE: x/0 is +-inf
    ca, sa = math.cos(alpha), math.sin(alpha)
    mx, my, nx, ny = -100000.0, -100000.0, 100000.0, 100000.0
    for pair in o["subset"]:
        for idx in pair:
            x, y = float(p[idx, 0]), float(p[idx, 1])
            u, v = x * ca - y * sa, x * sa + y * ca
            mx, my, nx, ny = max(mx, u), max(my, v), min(nx, u), min(ny, v)
    rng = float(o["landmarks_range"])
    bx, by = (mx - nx) * o["bbox_size_multiplier"], (my - ny) * o["bbox_size_multiplier"]
    scale = _mat3(bx / rng, 0, 0, 0, by / rng, 0, 0, 0, 1)
    cx, cy = (mx + nx) / 2.0, (my + ny) / 2.0
    cm, sm = math.cos(-alpha), math.sin(-alpha)
    rmx, rmy = cx * cm - cy * sm, cx * sm + cy * cm
    rot = _mat3(cm, -sm, rmx / rng * 2.0 - 1.0, sm, cm, rmy / rng * 2.0 - 1.0, 0, 0, 1)
    (ih, iw), (oh, ow) = o["input_hw"], o["output_hw"]
    with np.errstate(all="ignore"):
        rel = _mat3(np.float64(2.0) / (ow - 1.0), 0, -1, 0, np.float64(2.0) / (oh - 1.0), -1, 0, 0, 1)
    absm = _mat3((iw - 1.0) / 2.0, 0, (iw - 1.0) / 2.0, 0, (ih - 1.0) / 2.0, (ih - 1.0) / 2.0, 0, 0, 1)
    itm = _mm(_mm(_mm(absm, rot), scale), rel)
    return np.array([itm[0, 0], itm[0, 1], 0, itm[0, 2], itm[1, 0], itm[1, 1], 0, itm[1, 2],
                     itm[2, 0], itm[2, 1], itm[2, 2], 0, 0, 0, 0, 1], np.float64)


def landmarks_matrix_v2(p: np.ndarray, o: dict) -> np.ndarray:
    lx, ly = p[o["left"], 0], p[o["left"], 1]
    rx, ry = p[o["right"], 0], p[o["right"], 1]
    r = o["target_rotation_radians"] - math.atan2(float(ry - ly), float(rx - lx))
    cr, sr = math.cos(r), math.sin(r)
    pts = [(float(p[i, 0]), float(p[i, 1])) for pair in o["subset"] for i in pair]
    rot = [(cr * x - sr * y, sr * x + cr * y) for x, y in pts]
    mx, my = max(u for u, _ in rot), max(v for _, v in rot)
    nx, ny = min(u for u, _ in rot), min(v for _, v in rot)
    cw, chh = mx - nx, my - ny
    ux, uy = (nx + mx) / 2.0, (ny + my) / 2.0
    ci, si = math.cos(-r), math.sin(-r)
    cx, cy = ci * ux - si * uy, si * ux + ci * uy
    ow, oh = float(o["output_width"]), float(o["output_height"])
    t = _mat4(1, 0, 0, cx, 0, 1, 0, cy, 0, 0, 1, 0, 0, 0, 0, 1)
    t = _mm(t, _mat4(ci, -si, 0, 0, si, ci, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1))
    t = _mm(t, _mat4(o["scale_x"] * cw / ow, 0, 0, 0, 0, o["scale_y"] * chh / oh, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1))
    t = _mm(t, _mat4(1, 0, 0, -(ow / 2.0), 0, 1, 0, -(oh / 2.0), 0, 0, 1, 0, 0, 0, 0, 1))
    return t.reshape(-1)


def prepare_landmarks_to_transform_matrix(node: Node) -> Eval:
    _float_io(node, 1)
    x = node.input(0)
    opts = _flex(node)
    o: dict = {"left": _int(node, opts, "left_rotation_idx"), "right": _int(node, opts, "right_rotation_idx")}
    if node.version == 1:
        node.expect(len(x.shape) == 4 and tuple(x.shape[:3]) == (1, 1, 1),
                    f"input must be [1, 1, 1, 3 * landmarks], is {x.shape}")
        o["subset"] = _pairs(_ints(node, opts, "subset"))
        o["input_hw"] = _ints(node, opts, "input_hw")[:2]
        o["output_hw"] = _ints(node, opts, "output_hw")[:2]
        node.expect(len(o["input_hw"]) == 2 and len(o["output_hw"]) == 2, "input_hw and output_hw need 2 values")
        node.expect(_int(node, opts, "dimensions") == 3, "dimensions must be 3")
        o["landmarks_range"] = _int(node, opts, "landmarks_range")
        o["bbox_size_multiplier"] = _float(node, opts, "bbox_size_multiplier")
        node.expect(o["bbox_size_multiplier"] != 0, "bbox_size_multiplier must be non-zero")
        node.expect(min(o["input_hw"]) > 0 and min(o["output_hw"]) > 0, "input_hw and output_hw must be positive")
        node.expect(o["landmarks_range"] > 0, "landmarks_range must be positive")
        compute = landmarks_matrix_v1
    else:
        node.expect(len(x.shape) == 3 and x.shape[0] == 1 and x.shape[2] == 3,
                    f"input must be [1, landmarks, 3], is {x.shape}")
        o["subset"] = _pairs(_ints(node, opts, "subset_idxs"))
        o["target_rotation_radians"] = _float(node, opts, "target_rotation_radians")
        o["output_height"] = _int(node, opts, "output_height")
        o["output_width"] = _int(node, opts, "output_width")
        o["scale_x"], o["scale_y"] = _float(node, opts, "scale_x"), _float(node, opts, "scale_y")
        node.expect(o["output_height"] > 0 and o["output_width"] > 0, "output_height and output_width must be positive")
        node.expect(o["scale_x"] > 0 and o["scale_y"] > 0, "scale_x and scale_y must be positive")
        compute = landmarks_matrix_v2
    node.expect(len(o["subset"]) > 0, "the landmark subset is empty")
    count = x.size // 3
    for idx in [o["left"], o["right"]] + [i for pair in o["subset"] for i in pair]:
        node.expect(0 <= idx < count, f"landmark index {idx} outside the input's {count} landmarks")
    node.set_output_shape(0, (1, 4, 4))

    def run(inputs, outputs):
        p = inputs[0].reshape(-1, 3).astype(np.float64)
        with np.errstate(all="ignore"):
            outputs[0].reshape(-1)[...] = compute(p, o).astype(_F)

    return run
