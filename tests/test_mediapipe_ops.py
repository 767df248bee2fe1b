"""MediaPipe's custom ops (Convolution2DTransposeBias, TransformTensorBilinear / TransformTensor,
TransformLandmarks, Landmarks2TransformMatrix) on the runtime grid (tests/conftest.py ``runtime``): the Python
kernels (edge_sdk/runtime/kernels/mediapipe.py) and the C kernels (firmware_c/src/kernels/mediapipe_*.c) each match
an independent float64 rendering of MediaPipe's definitions, the C case agrees with the Python interpreter (bit for
bit where both follow MediaPipe's float steps, else within 1e-6), Convolution2DTransposeBias matches LiteRT's
XNNPACK delegate (the one peer that runs it), and bad options are refused by name in both."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from flatbuffers import flexbuffers  # test-only: an encoder independent of our readers

from edge_sdk.errors import ModelError
from tests.oprunner import T, assert_same, check_on, op_model, peer_outputs, run_on


RNG = np.random.default_rng(1603)


def flex(**kw) -> bytes:
    b = flexbuffers.Builder()
    with b.Map():
        for k, v in kw.items():
            b.Key(k)
            if isinstance(v, list):
                b.TypedVectorFromElements(v)
            elif isinstance(v, float):
                b.Float(v)
            elif isinstance(v, str):
                b.String(v)
            else:
                b.Int(v)
    return bytes(b.Finish())


def both(runtime, model, feeds, exact=True, rtol=1e-6, atol=1e-6):
    """``runtime``'s first output; on the C runtime equal to the Python interpreter's (within rtol / atol unless
    ``exact``)."""
    tol = (0.0, 0.0) if exact else (rtol, atol)
    return check_on(runtime, model, feeds, peer=[], c_equals_python=True, python_tol=tol)[0]


# ------------------------------------------------------------------------------ Convolution2DTransposeBias


def tcb_reference(x, w, b, padding, sw, sh):
    n, h, wd, cin = x.shape
    cout, kh, kw, _ = w.shape
    ph = max(0, kh - (h - 1) % sh - 1) if padding == 1 else 0
    pw = max(0, kw - (wd - 1) % sw - 1) if padding == 1 else 0
    oh, ow = sh * (h - 1) + kh - ph, sw * (wd - 1) + kw - pw
    out = np.tile(b.astype(np.float64), (n, oh, ow, 1))
    for iy in range(h):
        for ix in range(wd):
            for fy in range(kh):
                for fx in range(kw):
                    oy, ox = iy * sh - ph // 2 + fy, ix * sw - pw // 2 + fx
                    if 0 <= oy < oh and 0 <= ox < ow:
                        out[:, oy, ox, :] += x[:, iy, ix, :].astype(np.float64) @ w[:, fy, fx, :].T.astype(np.float64)
    return out


def tcb_model(xs, ws, padding, sw, sh, out_shape=None, rng=RNG):
    x = T(xs, "FLOAT32")
    w = T(ws, "FLOAT32", data=rng.standard_normal(ws).astype(np.float32))
    b = T((ws[0],), "FLOAT32", data=rng.standard_normal(ws[0]).astype(np.float32))
    y = T(out_shape or (1,), "FLOAT32")
    opts = struct.pack("<iii", padding, sw, sh)
    return op_model("Convolution2DTransposeBias", [x, w, b], [y], custom_options=opts), w.data, b.data


@pytest.mark.parametrize("xs,ws,padding,stride", [
    ((1, 5, 6, 3), (4, 3, 3, 3), 1, (2, 2)),
    ((1, 4, 4, 8), (6, 4, 4, 8), 1, (2, 2)),   # MediaPipe's 4x4 / stride 2 upsampler
    ((2, 3, 5, 2), (3, 2, 3, 2), 2, (1, 2)),
    ((1, 7, 3, 4), (5, 3, 2, 4), 2, (3, 1)),
])
def test_transpose_conv_bias(xs, ws, padding, stride, runtime):
    sw, sh = stride
    model, w, b = tcb_model(xs, ws, padding, sw, sh)
    x = RNG.standard_normal(xs).astype(np.float32)
    ours = both(runtime, model, [x], exact=False, rtol=1e-5, atol=1e-5)
    ref = tcb_reference(x, w, b, padding, sw, sh)
    assert ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)


def test_transpose_conv_bias_vs_litert_xnnpack(runtime):
    rng = np.random.default_rng(1604)  # the same case on both runtimes: LiteRT runs once
    xs, ws = (1, 6, 6, 8), (4, 4, 4, 8)
    model, _, _ = tcb_model(xs, ws, 1, 2, 2, out_shape=(1, 12, 12, 4), rng=rng)
    x = rng.standard_normal(xs).astype(np.float32)
    theirs = peer_outputs(model, [x], "litert_opt", isolate=True)
    assert_same(run_on(runtime, model, [x]), theirs, rtol=1e-5, atol=1e-5, what=f"{runtime} vs LiteRT XNNPACK")


def test_transpose_conv_bias_refusals(runtime):
    model, _, _ = tcb_model((1, 3, 3, 2), (2, 3, 3, 2), 0, 1, 1)
    with pytest.raises(ModelError, match="SAME"):
        run_on(runtime, model, [np.zeros((1, 3, 3, 2), np.float32)])
    x, w, b = T((1, 3, 3, 2), "FLOAT32"), T((2, 3, 3, 2), "FLOAT32", data=np.zeros((2, 3, 3, 2))), \
        T((2,), "FLOAT32", data=np.zeros(2))
    short = op_model("Convolution2DTransposeBias", [x, w, b], [T((1,), "FLOAT32")], custom_options=b"\x01\0\0\0")
    with pytest.raises(ModelError, match="12"):
        run_on(runtime, short, [np.zeros((1, 3, 3, 2), np.float32)])


# ------------------------------------------------------------------------------ TransformTensorBilinear


def ttb_reference(a, m, out_h, out_w, v2):
    """MediaPipe's TransformTensorBilinear in float64 (corner correction included for v2)."""
    _, ih, iw, ch = a.shape
    r0, r1 = m.reshape(-1)[:4].astype(np.float64), m.reshape(-1)[4:8].astype(np.float64)
    if v2:
        r0[3] += r0[0] * 0.5 + r0[1] * 0.5 - 0.5
        r1[3] += r1[0] * 0.5 + r1[1] * 0.5 - 0.5
    out = np.zeros((1, out_h, out_w, ch))
    for oy in range(out_h):
        for ox in range(out_w):
            tx, ty = r0[0] * ox + r0[1] * oy + r0[3], r1[0] * ox + r1[1] * oy + r1[3]
            if tx < 0 or tx > iw - 1 or ty < 0 or ty > ih - 1:
                continue
            x0, y0 = math.floor(tx), math.floor(ty)

            def rd(r, c):
                return a[0, r, c, :] if r < ih and c < iw else np.zeros(ch)

            rc, lc = tx - x0, ty - y0
            up = (1 - rc) * rd(y0, x0) + rc * rd(y0, x0 + 1)
            lo = (1 - rc) * rd(y0 + 1, x0) + rc * rd(y0 + 1, x0 + 1)
            out[0, oy, ox] = lc * lo + (1 - lc) * up
    return out


def ttb_model(in_shape, out_hw, version, name="TransformTensorBilinear", options=None):
    x, m = T(in_shape, "FLOAT32"), T((1, 4, 4), "FLOAT32")
    y = T((1, *out_hw, in_shape[3]), "FLOAT32")
    if options is None:
        options = flex(output_height=out_hw[0], output_width=out_hw[1]) if version == 2 else \
            flex(mode="bilinear", output_size=list(out_hw))
    return op_model(name, [x, m], [y], custom_options=options, version=version)


def _affine(sx, sy, angle, tx, ty):
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[sx * c, -sy * s, 0, tx], [sx * s, sy * c, 0, ty], [0, 0, 1, 0], [0, 0, 0, 1]],
                    np.float32).reshape(1, 4, 4)


@pytest.mark.parametrize("version,name", [(2, "TransformTensorBilinear"), (1, "TransformTensor"),
                                          (1, "TransformTensorBilinear")])
@pytest.mark.parametrize("matrix", [_affine(1, 1, 0, 0, 0), _affine(0.7, 1.3, 0.4, 2.5, -1.0),
                                    _affine(2.1, 2.1, -1.1, 9.0, 3.0), _affine(0.5, 0.5, 0.0, 0.25, 0.75)])
def test_transform_tensor_bilinear(version, name, matrix, runtime):
    in_shape, out_hw = (1, 9, 11, 3), (7, 8)
    model = ttb_model(in_shape, out_hw, version, name)
    a = RNG.standard_normal(in_shape).astype(np.float32)
    ours = both(runtime, model, [a, matrix])  # bit for bit
    ref = ttb_reference(a, matrix, *out_hw, v2=version == 2)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)


def test_transform_tensor_identity_copies_and_outside_is_zero(runtime):
    a = RNG.standard_normal((1, 5, 6, 2)).astype(np.float32)
    out = both(runtime, ttb_model((1, 5, 6, 2), (5, 6), 1, "TransformTensor"), [a, _affine(1, 1, 0, 0, 0)])
    np.testing.assert_array_equal(out, a)
    far = both(runtime, ttb_model((1, 5, 6, 2), (3, 3), 2), [a, _affine(1, 1, 0, 100, 100)])
    np.testing.assert_array_equal(far, np.zeros((1, 3, 3, 2), np.float32))


def test_transform_tensor_refusals(runtime):
    bad_mode = ttb_model((1, 4, 4, 1), (2, 2), 1, "TransformTensor", options=flex(mode="nearest"))
    wrong_size = ttb_model((1, 4, 4, 1), (2, 2), 2, options=flex(output_height=3, output_width=2))
    feeds = [np.zeros((1, 4, 4, 1), np.float32), np.zeros((1, 4, 4), np.float32)]
    with pytest.raises(ModelError, match="bilinear"):
        run_on(runtime, bad_mode, feeds)
    with pytest.raises(ModelError, match="output_height"):
        run_on(runtime, wrong_size, feeds)


# ------------------------------------------------------------------------------ TransformLandmarks


@pytest.mark.parametrize("version,shape,options,dims,scale", [
    (2, (1, 21, 3), None, 3, 1.0),
    (2, (1, 9, 2), None, 2, 1.0),
    (1, (1, 2, 3, 6), flex(dimensions=3, scale=2.0), 3, 2.0),
    (1, (1, 1, 1, 8), flex(dimensions=2, scale=0.5), 2, 0.5),
    (1, (1, 1, 1, 9), None, 3, 1.0),  # MediaPipe's defaults
])
def test_transform_landmarks(version, shape, options, dims, scale, runtime):
    x, m, y = T(shape, "FLOAT32"), T((1, 4, 4), "FLOAT32"), T(shape, "FLOAT32")
    model = op_model("TransformLandmarks", [x, m], [y], custom_options=options, version=version)
    pts = RNG.standard_normal(shape).astype(np.float32) * 50
    mat = _affine(1.5, 0.8, 0.6, 12.0, -7.0)
    ours = both(runtime, model, [pts, mat])
    p = pts.reshape(-1, dims).astype(np.float64)
    t = mat.reshape(-1).astype(np.float64)
    ref = p.copy()
    ref[:, 0] = t[0] * p[:, 0] + t[1] * p[:, 1] + t[3] * scale
    ref[:, 1] = t[4] * p[:, 0] + t[5] * p[:, 1] + t[7] * scale
    np.testing.assert_allclose(ours.reshape(-1, dims), ref, rtol=1e-5, atol=1e-4)


def test_transform_landmarks_refusals(runtime):
    x, m, y = T((1, 1, 1, 6), "FLOAT32"), T((1, 4, 4), "FLOAT32"), T((1, 1, 1, 6), "FLOAT32")
    feeds = [np.zeros((1, 1, 1, 6), np.float32), np.zeros((1, 4, 4), np.float32)]
    for opts, why in ((flex(dimensions=4), "dimensions"), (flex(dimensions=3, scale=0.0), "scale")):
        model = op_model("TransformLandmarks", [x, m], [y], custom_options=opts, version=1)
        with pytest.raises(ModelError, match=why):
            run_on(runtime, model, feeds)


# ------------------------------------------------------------------------------ Landmarks2TransformMatrix


def l2t_model(shape, options, version):
    return op_model("Landmarks2TransformMatrix", [T(shape, "FLOAT32")], [T((1, 4, 4), "FLOAT32")],
                    custom_options=options, version=version)


V2_OPTS = dict(subset_idxs=[0, 1, 2, 3, 4], left_rotation_idx=5, right_rotation_idx=6,
               target_rotation_radians=0.0, output_height=256, output_width=192, scale_x=1.5, scale_y=1.25)


def test_landmarks_matrix_v2_axis_aligned_box(runtime):
    # rotation landmarks on a horizontal line, target 0: no rotation; the crop is the subset's bounding box
    pts = np.zeros((1, 8, 3), np.float32)
    pts[0, :5, :2] = [[10, 20], [50, 20], [10, 80], [50, 80], [30, 50]]
    pts[0, 5, :2], pts[0, 6, :2] = [0, 0], [1, 0]
    out = both(runtime, l2t_model((1, 8, 3), flex(**V2_OPTS), 2), [pts], exact=False)
    w, h, cx, cy = 40.0, 60.0, 30.0, 50.0
    sx, sy = 1.5 * w / 192, 1.25 * h / 256
    want = np.array([[sx, 0, 0, cx - sx * 96], [0, sy, 0, cy - sy * 128], [0, 0, 1, 0], [0, 0, 0, 1]], np.float32)
    np.testing.assert_allclose(out[0], want, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("target", [0.0, math.pi / 2, -0.7])
def test_landmarks_matrix_v2_random(target, runtime):
    pts = (RNG.standard_normal((1, 12, 3)) * 60 + 100).astype(np.float32)
    opts = dict(V2_OPTS, subset_idxs=[0, 3, 7, 9, 11], target_rotation_radians=target)
    out = both(runtime, l2t_model((1, 12, 3), flex(**opts), 2), [pts], exact=False)
    # the matrix maps the output crop's centre to the subset's rotated-box centre, and is a rotation * scale
    centre = out[0] @ np.array([96.0, 128.0, 0.0, 1.0])
    r = target - math.atan2(pts[0, 6, 1] - pts[0, 5, 1], pts[0, 6, 0] - pts[0, 5, 0])
    sub = pts[0, [0, 3, 7, 9, 11], :2].astype(np.float64)
    rot = sub @ np.array([[math.cos(r), math.sin(r)], [-math.sin(r), math.cos(r)]])
    mid = (rot.max(0) + rot.min(0)) / 2
    back = np.array([[math.cos(-r), math.sin(-r)], [-math.sin(-r), math.cos(-r)]])
    np.testing.assert_allclose(centre[:2], mid @ back, rtol=1e-5, atol=1e-3)


V1_OPTS = dict(input_hw=[480, 640], output_hw=[256, 256], dimensions=3, landmarks_range=256,
               bbox_size_multiplier=1.5, left_rotation_idx=0, right_rotation_idx=1, subset=[0, 1, 2, 3, 4])


def test_landmarks_matrix_v1(runtime):
    pts = (RNG.standard_normal((1, 1, 1, 30)) * 40 + 128).astype(np.float32)
    out = both(runtime, l2t_model((1, 1, 1, 30), flex(**V1_OPTS), 1), [pts], exact=False)
    assert out.shape == (1, 4, 4)
    np.testing.assert_array_equal(out[0, 3], [0, 0, 0, 1])
    np.testing.assert_array_equal(out[0, :2, 2], [0, 0])
    # an axis-aligned pair (no rotation) gives a pure scale + shift
    flat = np.zeros((1, 1, 1, 30), np.float32)
    flat.reshape(-1, 3)[:5, :2] = [[100, 100], [200, 100], [100, 180], [200, 180], [150, 140]]
    out = both(runtime, l2t_model((1, 1, 1, 30), flex(**V1_OPTS), 1), [flat], exact=False)
    bx, by = 100 * 1.5 / 256, 80 * 1.5 / 256
    assert abs(out[0, 0, 1]) < 1e-6 and abs(out[0, 1, 0]) < 1e-6
    np.testing.assert_allclose(out[0, 0, 0], 319.5 * bx * 2 / 255, rtol=1e-5)
    np.testing.assert_allclose(out[0, 1, 1], 239.5 * by * 2 / 255, rtol=1e-5)


def test_landmarks_matrix_refusals(runtime):
    feeds = [np.zeros((1, 8, 3), np.float32)]
    for opts, why in ((dict(V2_OPTS, subset_idxs=[0, 9]), "outside"), (dict(V2_OPTS, scale_x=0.0), "scale_x"),
                      (dict(V2_OPTS, output_width=0), "output_width")):
        model = l2t_model((1, 8, 3), flex(**opts), 2)
        with pytest.raises(ModelError, match=why):
            run_on(runtime, model, feeds)
