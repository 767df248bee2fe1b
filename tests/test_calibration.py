"""Calibration sources -> samples (one array per model input, of the input's shape), and Preprocess."""

import numpy as np
import pytest
from PIL import Image

from converters.calibration import calibration_data
from edge_sdk import ModelError
from edge_sdk.tasks.preprocess import Preprocess

ONE = [((1, 4, 4, 3), "float32", "x")]
TWO = [((1, 3), "float32", "a"), ((1, 2), "float32", "b")]


def _all(data):
    return [[np.array(a) for a in s] for s in data]


def test_array_batch_sample_and_missing_batch_axis(rng):
    batch = rng.standard_normal((5, 4, 4, 3)).astype(np.float32)
    got = _all(calibration_data(batch, ONE))
    assert len(got) == 5 and all(s[0].shape == (1, 4, 4, 3) for s in got)
    np.testing.assert_array_equal(got[2][0][0], batch[2])
    # one sample, with or without its batch axis; a full-shaped batch (N, 1, 4, 4, 3)
    assert len(_all(calibration_data(batch[:1], ONE))) == 1
    assert _all(calibration_data(batch[0], ONE))[0][0].shape == (1, 4, 4, 3)
    assert len(_all(calibration_data(batch[:, None], ONE))) == 5
    # dtype follows the model input
    assert _all(calibration_data(batch.astype(np.float64), ONE))[0][0].dtype == np.float32
    with pytest.raises(ModelError, match="needs shape"):
        _all(calibration_data(np.zeros((2, 5, 5, 3)), ONE))


def test_npy_npz_and_folder(tmp_path, rng):
    a = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal((4, 2)).astype(np.float32)
    np.savez(tmp_path / "two.npz", b=b, a=a)  # matched by input name, not order
    got = _all(calibration_data(tmp_path / "two.npz", TWO))
    assert len(got) == 4
    np.testing.assert_array_equal(got[1][0], a[1:2])
    np.testing.assert_array_equal(got[1][1], b[1:2])
    folder = tmp_path / "npy"
    folder.mkdir()
    for i in range(3):
        np.save(folder / f"s{i}.npy", rng.standard_normal((1, 4, 4, 3)).astype(np.float32))
    np.save(folder / "batch.npy", rng.standard_normal((2, 4, 4, 3)).astype(np.float32))
    assert len(_all(calibration_data(folder, ONE))) == 5
    assert len(_all(calibration_data(folder, ONE, limit=2))) == 2
    with pytest.raises(ModelError, match="does not exist"):
        calibration_data(tmp_path / "missing", ONE)


def test_iterables_lists_dicts_generators(rng):
    items = [[rng.standard_normal((1, 3)), rng.standard_normal((1, 2))] for _ in range(3)]
    assert len(_all(calibration_data(items, TWO))) == 3
    dicts = [{"a": i[0], "b": i[1]} for i in items]
    got = _all(calibration_data(dicts, TWO))
    np.testing.assert_array_equal(got[2][1], items[2][1].astype(np.float32))

    def representative_dataset():
        for i in items:
            yield i

    data = calibration_data(representative_dataset, TWO, limit=2)
    assert len(_all(data)) == 2
    with pytest.raises(ModelError, match="no value for input"):
        _all(calibration_data([{"a": items[0][0]}], TWO))
    with pytest.raises(ModelError, match="2 inputs"):
        _all(calibration_data([[items[0][0]]], TWO))


def test_seeded_shuffle_and_limit(rng):
    batch = np.arange(20, dtype=np.float32).reshape(20, 1, 1) * np.ones((1, 1, 3), np.float32)
    spec = [((1, 1, 3), "float32")]
    plain = [s[0][0, 0, 0] for s in calibration_data(batch, spec)]
    assert plain == list(range(20))
    s1 = [s[0][0, 0, 0] for s in calibration_data(batch, spec, shuffle=True, seed=3, limit=8)]
    s2 = [s[0][0, 0, 0] for s in calibration_data(batch, spec, shuffle=True, seed=3, limit=8)]
    s3 = [s[0][0, 0, 0] for s in calibration_data(batch, spec, shuffle=True, seed=4, limit=8)]
    assert s1 == s2 and s1 != s3 and len(s1) == 8 and s1 != plain[:8]
    assert len(calibration_data(batch, spec, limit=8)) == 8
    with pytest.raises(ModelError, match="limit"):
        calibration_data(batch, spec, limit=0)


def _image(path, w, h, color_left, color_right, mode="RGB"):
    a = np.zeros((h, w, 3), np.uint8)
    a[:, : w // 2] = color_left
    a[:, w // 2 :] = color_right
    Image.fromarray(a).convert(mode).save(path)


def test_image_folder_with_default_and_given_preprocess(tmp_path):
    for i in range(3):
        _image(tmp_path / f"im{i}.png", 16, 8, (255, 0, 0), (0, 0, 255))
    # derived from the input shape: NHWC 4x4 RGB in 0..1
    got = _all(calibration_data(tmp_path, ONE))
    assert len(got) == 3 and got[0][0].shape == (1, 4, 4, 3)
    np.testing.assert_allclose(got[0][0][0, 0, 0], [1, 0, 0], atol=0.02)
    np.testing.assert_allclose(got[0][0][0, 0, -1], [0, 0, 1], atol=0.02)
    # NCHW, BGR, mean/std normalisation
    pp = Preprocess(size=(4, 4), channels="BGR", layout="NCHW", mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))
    got = _all(calibration_data(tmp_path, [((1, 3, 4, 4), "float32")], preprocess=pp))
    x = got[0][0]
    assert x.shape == (1, 3, 4, 4)
    np.testing.assert_allclose(x[0, :, 0, 0], [-1, -1, 1], atol=0.02)  # red in BGR order, in [-1, 1]
    # grayscale NCHW input derived from shape
    got = _all(calibration_data(tmp_path, [((1, 1, 4, 4), "float32")]))
    assert got[0][0].shape == (1, 1, 4, 4)


def test_preprocess_resize_modes(tmp_path):
    path = tmp_path / "wide.png"
    _image(path, 40, 10, (255, 255, 255), (0, 0, 0))  # left half white, right half black
    stretch = Preprocess(size=(8, 8), resize="stretch", channels="GRAY").apply(path)
    crop = Preprocess(size=(8, 8), resize="center-crop", channels="GRAY").apply(path)
    box = Preprocess(size=(8, 8), resize="letterbox", channels="GRAY", pad_value=128).apply(path)
    assert stretch.shape == crop.shape == box.shape == (1, 8, 8, 1)
    assert stretch[0, 4, 0, 0] > 0.9 and stretch[0, 4, 7, 0] < 0.1  # whole width kept
    # center-crop keeps the middle 10x10 of the 40x10 image: half white, half black around the centre
    assert crop[0, 4, 1, 0] > 0.9 and crop[0, 4, 6, 0] < 0.1
    # letterbox: 8x2 image in the middle rows, pad rows at 128/255
    np.testing.assert_allclose(box[0, 0, :, 0], 128 / 255, atol=1e-6)
    assert box[0, 4, 0, 0] > 0.9 and box[0, 4, 7, 0] < 0.1
    raw = Preprocess(size=(8, 8), channels="GRAY", dtype="int8").apply(path)
    assert raw.dtype == np.int8 and raw.max() == 127 and raw.min() == -128


def test_preprocess_round_trip_and_validation():
    p = Preprocess(size=(32, 24), resize="letterbox", channels="bgr", layout="nchw", value_range=(-1, 1),
                   mean=(0.1, 0.2, 0.3), std=0.5)
    d = p.to_dict()
    assert d["size"] == [32, 24] and d["channels"] == "BGR" and d["layout"] == "NCHW"
    assert Preprocess.from_dict(d) == p
    for bad in ({"resize": "zoom"}, {"channels": "CMYK"}, {"layout": "HWC"}, {"std": 0},
                {"mean": (1, 2)}, {"size": (0, 4)}):
        with pytest.raises(ModelError):
            Preprocess(**bad)
