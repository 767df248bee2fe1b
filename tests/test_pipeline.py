"""Pipelines (edge_sdk.tasks.pipeline) and `edge run`: images, detection decode + NMS, WAV audio."""

from __future__ import annotations

import json
import wave

import numpy as np
import pytest
from PIL import Image

from edge_sdk import ModelError
from edge_sdk.runtime.interpreter import Interpreter
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.manifest import write_manifest
from edge_sdk.model.writer import write_model
from edge_sdk.tasks.pipeline import (
    AudioClassifier,
    Detection,
    Detector,
    ImageClassifier,
    decode_boxes,
    nms,
    read_wav,
    ssd_anchors,
)
from tests.conftest import shared_model

COLOURS = ["red", "green", "blue", "dark"]
IN_SCALE, IN_ZP = 1 / 255, -128


def classifier_model(softmax: bool = False, manifest: dict | None = None, size: int = 4) -> bytes:
    """int8: (1, size, size, 3) pixels/255 -> channel means -> 4 logits (red, green, blue, dark) [-> softmax]."""
    g = GraphBuilder()
    x = g.input("image", (1, size, size, 3), "INT8", scale=IN_SCALE, zero_point=IN_ZP)
    axes = g.constant("axes", np.array([1, 2], np.int32))
    m = g.tensor("mean", (1, 3), "INT8", scale=IN_SCALE, zero_point=IN_ZP)
    g.op("MEAN", [x, axes], [m], keep_dims=False)
    w_scale = 1 / 127
    w = g.constant("w", np.array([[127, -64, -64], [-64, 127, -64], [-64, -64, 127], [-100, -100, -100]], np.int8),
                   scale=w_scale, zero_point=0)
    b = g.constant("b", np.array([0, 0, 0, round(0.5 / (IN_SCALE * w_scale))], np.int32),
                   scale=IN_SCALE * w_scale, zero_point=0)
    logits = g.tensor("logits", (1, 4), "INT8", scale=0.02, zero_point=0)
    g.op("FULLY_CONNECTED", [m, w, b], [logits])
    out = logits
    if softmax:
        out = g.tensor("probs", (1, 4), "INT8", scale=1 / 256, zero_point=-128)
        g.op("SOFTMAX", [logits], [out], beta=1.0)
    g.output(out)
    model = g.build()
    if manifest is not None:
        write_manifest(model, manifest)
    return write_model(model)


MANIFEST = {"labels": COLOURS, "preprocess": {"size": [4, 4], "channels": "RGB", "value_range": [0, 1]}}


def solid(colour, size=(10, 8)) -> Image.Image:
    return Image.new("RGB", size, colour)


@pytest.fixture
def images(tmp_path):
    paths = {}
    for name, colour, fmt in (("red", (250, 5, 5), "PNG"), ("green", (5, 250, 5), "JPEG"), ("blue", (5, 5, 250), "BMP"),
                              ("dark", (0, 0, 0), "PNG")):
        p = tmp_path / f"{name}.{fmt.lower()}"
        solid(colour, (12, 9)).save(p, fmt)
        paths[name] = p
    return paths


def expected_scores(model: bytes, image: Image.Image, softmax_out: bool) -> np.ndarray:
    """The procedure by hand: stretch to 4x4, q = pixel - 128, run, dequantize, softmax (logit model)."""
    it = Interpreter(model_content=model)
    it.allocate_tensors()
    px = np.asarray(image.convert("RGB").resize((4, 4), Image.BILINEAR), np.int16)
    it.set_tensor(it.get_input_details()[0]["index"], (px - 128).astype(np.int8)[None])
    it.invoke()
    d = it.get_output_details()[0]
    q = it.get_tensor(d["index"]).reshape(-1).astype(np.float64)
    y = (q - d["quantization"][1]) * d["quantization"][0]
    if softmax_out:
        return y
    e = np.exp(y - y.max())
    return e / e.sum()


@pytest.mark.parametrize("softmax_out", [False, True])
def test_classifier_from_manifest(images, softmax_out):
    model = classifier_model(softmax_out, MANIFEST)
    clf = ImageClassifier(model)
    for name, path in images.items():
        preds = clf.predict(path, top_k=4)
        assert preds[0].label == name, (name, preds)
        want = expected_scores(model, Image.open(path), softmax_out)
        got = {p.label: p.score for p in preds}
        np.testing.assert_allclose([got[c] for c in COLOURS], want, rtol=1e-5, atol=1e-6)
        assert [p.score for p in preds] == sorted((p.score for p in preds), reverse=True)
    # probabilities are kept as they are (no second softmax): they sum to ~1 exactly as the model gives them
    assert abs(sum(p.score for p in clf.predict(images["red"], top_k=4)) - 1) < 0.03


def test_classifier_inputs_and_explicit_options(images):
    bare = classifier_model(False)  # no manifest
    clf = ImageClassifier(bare, labels=COLOURS, preprocess={"value_range": [0, 1]})
    with_manifest = ImageClassifier(classifier_model(False, MANIFEST))
    for path in images.values():
        assert clf.predict(path) == with_manifest.predict(path)
    pil = solid((250, 5, 5))
    arr = np.asarray(pil)
    assert clf.predict(pil)[0].label == clf.predict(arr)[0].label == "red"
    gray = np.full((6, 6), 3, np.uint8)  # one channel arrays are converted to RGB
    assert clf.predict(gray)[0].label == "dark"
    tensor = np.full((1, 4, 4, 3), -128, np.int8)
    tensor[..., 2] = 120
    assert clf.predict(tensor)[0].label == "blue"
    assert len(clf.predict(pil, top_k=2)) == 2
    # without labels: class indices
    assert ImageClassifier(bare).predict(pil)[0].label in {"0", "1", "2", "3"}


def test_classifier_errors(tmp_path):
    clf = ImageClassifier(classifier_model(False, MANIFEST))
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG not really")
    with pytest.raises(ModelError, match=r"broken\.png: cannot read the image"):
        clf.predict(bad)
    with pytest.raises(ModelError, match="2 channels"):
        clf.predict(np.zeros((5, 5, 2), np.uint8))
    with pytest.raises(FileNotFoundError):
        clf.predict(tmp_path / "missing.jpg")
    with pytest.raises(ModelError, match="3 labels for 4 classes"):
        ImageClassifier(classifier_model(False), labels=["a", "b", "c"])
    with pytest.raises(ModelError, match="GRAY"):
        ImageClassifier(classifier_model(False), preprocess={"channels": "GRAY"})
    with pytest.raises(ModelError, match="shape"):
        clf.predict(np.zeros((1, 5, 5, 3), np.float32))


# ------------------------------------------------------------------------------------------ detection


def detector_model(encodings: np.ndarray, logits: np.ndarray, manifest: dict | None = None) -> bytes:
    """A float "detector" whose outputs are the given constants (plus 0 * the image mean, so they are computed)."""
    g = GraphBuilder()
    x = g.input("image", (1, 8, 8, 3), "FLOAT32")
    axes = g.constant("axes", np.array([1, 2, 3], np.int32))
    m = g.tensor("mean", (1,), "FLOAT32")
    g.op("MEAN", [x, axes], [m], keep_dims=False)
    zero = g.constant("zero", np.zeros(1, np.float32))
    z = g.tensor("z", (1,), "FLOAT32")
    g.op("MUL", [m, zero], [z])
    outs = []
    for name, value in (("raw_boxes", encodings), ("raw_scores", logits)):
        c = g.constant(name + "_const", value.astype(np.float32)[None])
        o = g.tensor(name, (1,) + value.shape, "FLOAT32")
        g.op("ADD", [c, z], [o])
        outs.append(o)
    g.output(*outs)
    model = g.build()
    if manifest is not None:
        write_manifest(model, manifest)
    return write_model(model)


def slow_decode(enc, anchors, scales=(10, 10, 5, 5)):
    out = []
    for (ty, tx, th, tw), (ay, ax, ah, aw) in zip(enc.tolist(), anchors.tolist()):
        yc, xc = ty / scales[0] * ah + ay, tx / scales[1] * aw + ax
        h, w = np.exp(th / scales[2]) * ah, np.exp(tw / scales[3]) * aw
        out.append([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2])
    return np.array(out)


def slow_nms(boxes, scores, classes, iou_thr, score_thr, max_det, class_aware=True):
    def iou(a, b):
        ih = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
        iw = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
        inter = ih * iw
        union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
        return inter / union if union > 0 else 0.0

    order = sorted((i for i in range(len(scores)) if scores[i] >= score_thr), key=lambda i: (-scores[i], i))
    keep = []
    for i in order:
        if len(keep) == max_det:
            break
        if all(iou(boxes[i], boxes[k]) <= iou_thr or (class_aware and classes[i] != classes[k]) for k in keep):
            keep.append(i)
    return keep


def random_boxes(rng, n):
    c = rng.uniform(0.2, 0.8, (n, 2))
    hw = rng.uniform(0.05, 0.4, (n, 2))
    return np.concatenate([c - hw / 2, c + hw / 2], axis=1)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("class_aware", [True, False])
def test_nms_matches_slow_reference(seed, class_aware):
    rng = np.random.default_rng(seed)
    n = 60
    boxes = random_boxes(rng, n)
    boxes[n // 2:] = boxes[: n // 2] + rng.normal(0, 0.01, (n // 2, 4))  # many near-duplicates
    scores = rng.uniform(0, 1, n).round(2)  # ties happen
    classes = rng.integers(0, 3, n)
    got = nms(boxes, scores, classes, 0.45, 0.3, 7, class_aware).tolist()
    assert got == slow_nms(boxes, scores, classes, 0.45, 0.3, 7, class_aware)
    assert len(got) == 7  # the limit is reached on this data, so it is exercised


def test_ssd_anchor_generator():
    blazeface = {"num_layers": 4, "min_scale": 0.1484375, "max_scale": 0.75, "input_size_height": 128, "input_size_width": 128,
                     "anchor_offset_x": 0.5, "anchor_offset_y": 0.5, "strides": [8, 16, 16, 16], "aspect_ratios": [1.0],
                     "fixed_anchor_size": True}
    a = ssd_anchors(blazeface)
    assert a.shape == (896, 4)
    np.testing.assert_allclose(a[0], [0.5 / 16, 0.5 / 16, 1, 1])
    np.testing.assert_allclose(a[1], a[0])  # two anchors per cell in the first layer
    np.testing.assert_allclose(a[2], [0.5 / 16, 1.5 / 16, 1, 1])
    np.testing.assert_allclose(a[512], [0.5 / 8, 0.5 / 8, 1, 1])
    assert len({tuple(r) for r in a[512:518].tolist()}) == 1  # six anchors per cell in the stride-16 group
    ssd = ssd_anchors({"num_layers": 2, "min_scale": 0.2, "max_scale": 0.9, "input_size_height": 32, "input_size_width": 32,
                           "strides": [16, 32], "aspect_ratios": [1.0, 2.0]})
    # layer 0: 2x2 cells x (2 ratios + interpolated) ; layer 1: 1 cell x 3
    assert ssd.shape == (4 * 3 + 3, 4)
    np.testing.assert_allclose(ssd[1, 2:], [0.2 / np.sqrt(2), 0.2 * np.sqrt(2)], rtol=1e-6)
    np.testing.assert_allclose(ssd[2, 2:], [np.sqrt(0.2 * 0.9)] * 2, rtol=1e-6)
    np.testing.assert_allclose(ssd[14, 2:], [np.sqrt(0.9 * 1.0)] * 2, rtol=1e-6)  # the last layer interpolates with 1
    with pytest.raises(ModelError, match="missing key 'strides'"):
        ssd_anchors({"num_layers": 1, "min_scale": 0.1, "max_scale": 0.2, "input_size_height": 8, "input_size_width": 8})


def test_detector_decode_and_nms_against_reference():
    rng = np.random.default_rng(3)
    n, c = 40, 3
    anchors = np.concatenate([rng.uniform(0.2, 0.8, (n, 2)), rng.uniform(0.1, 0.3, (n, 2))], axis=1)
    enc = rng.normal(0, 1, (n, 4))
    enc[n // 2:] = enc[: n // 2] + rng.normal(0, 0.05, (n // 2, 4))
    anchors[n // 2:] = anchors[: n // 2]
    logits = rng.normal(0, 2, (n, c + 1))
    manifest = {"labels": ["cat", "dog", "bird"], "task": "detection",
                "detection": {"anchors": anchors.tolist(), "background_class": True, "score_threshold": 0.6,
                              "iou_threshold": 0.4, "max_detections": 10}}
    det = Detector(detector_model(enc, logits, manifest))
    got = det.detect(solid((10, 20, 30), (16, 8)))
    boxes = slow_decode(enc, anchors.astype(np.float32))
    probs = 1 / (1 + np.exp(-logits[:, 1:]))
    cls = probs.argmax(1)
    best = probs.max(1)
    keep = slow_nms(boxes, best, cls, 0.4, 0.6, 10)
    assert len(got) == len(keep) > 2
    for d, k in zip(got, keep):
        assert isinstance(d, Detection)
        assert d.label == ["cat", "dog", "bird"][cls[k]] and d.class_id == cls[k] + 1
        assert d.score == pytest.approx(best[k], rel=1e-5)
        ymin, xmin, ymax, xmax = np.clip(boxes[k], 0, 1)
        np.testing.assert_allclose(d.box, (xmin, ymin, xmax, ymax), atol=1e-5)
        # stretch: pixels are the normalized box times the original 16x8 image
        np.testing.assert_allclose(d.box_pixels, (xmin * 16, ymin * 8, xmax * 16, ymax * 8), atol=1e-3)


def test_detector_blazeface_style_linear_xywh():
    anchors = np.array([[0.5, 0.25, 1, 1], [0.5, 0.75, 1, 1]], np.float32)  # fixed-size anchors, MediaPipe style
    # x, y, w, h offsets in input pixels (scale 128) + two keypoint values that must be ignored
    enc = np.array([[0, 0, 32, 64, 9, 9], [12.8, -12.8, 64, 32, 9, 9]], np.float32)
    logits = np.array([[3.0], [-3.0]], np.float32)
    det = Detector(detector_model(enc, logits), labels=["face"], anchors=anchors.tolist(), box_order="xywh",
                   box_encoding="linear", scales=[128, 128, 128, 128], score_threshold=0.5)
    (d,) = det.detect(np.zeros((8, 8, 3), np.uint8))
    assert d.label == "face" and d.score == pytest.approx(1 / (1 + np.exp(-3)))
    np.testing.assert_allclose(d.box, (0.25 - 0.125, 0.5 - 0.25, 0.25 + 0.125, 0.5 + 0.25), atol=1e-6)
    np.testing.assert_allclose(decode_boxes(enc, anchors, [128] * 4, "xywh", "linear")[1],
                               [0.4 - 0.125, 0.85 - 0.25, 0.4 + 0.125, 0.85 + 0.25], atol=1e-6)


def test_detector_errors():
    enc, logits = np.zeros((3, 4)), np.zeros((3, 2))
    with pytest.raises(ModelError, match="2 anchors for 3 boxes"):
        Detector(detector_model(enc, logits), anchors=[[0.5, 0.5, 1, 1]] * 2)
    with pytest.raises(ModelError, match="unknown option"):
        Detector(detector_model(enc, logits), iou=0.3)


# ------------------------------------------------------------------------------------------ real models


PD = "tflite-micro/testdata/person_detection/"


def test_person_detect_pipeline():
    model = shared_model("tflite-micro/person_detect.tflite")
    clf = ImageClassifier(model, labels=["no_person", "person"])
    # no metadata: the int8 input takes pixels over its whole range (q = pixel - 128, as TFLM's examples feed it)
    no_person = clf.predict(shared_model(PD + "no_person.bmp"), top_k=2)
    assert no_person[0].label == "no_person"
    # person.bmp holds int8 values (pixel - 128) in its bytes (TFLM's test memcpy's them): undo that to get
    # the photo, then the ordinary pipeline
    raw = np.asarray(Image.open(shared_model(PD + "person.bmp")))
    photo = Image.fromarray((raw.view(np.int8).astype(np.int16) + 128).astype(np.uint8), "L")
    person = clf.predict(photo, top_k=2)
    assert person[0].label == "person"
    assert dict(person)["person"] > dict(no_person)["person"]
    # and the file itself, as TFLM's test feeds it: the bytes as the int8 tensor
    assert clf.predict(raw.view(np.int8)[..., None])[0].label == "person"


MS = "tflite-micro/testdata/micro_speech/"
SPEECH_LABELS = ["silence", "unknown", "yes", "no"]


def test_micro_speech_wav_pipeline():
    model = shared_model("tflite-micro/micro_speech_quantized.tflite")
    frontend = shared_model("tflite-micro/audio_preprocessor_int8.tflite")
    kws = AudioClassifier(model, labels=SPEECH_LABELS, frontend=frontend, frame_step=320)
    assert kws.frames == 49 and kws.window_samples == 48 * 320 + 480
    assert kws.predict(shared_model(MS + "yes_1000ms.wav"))[0].label == "yes"
    assert kws.predict(shared_model(MS + "no_1000ms.wav"))[0].label == "no"
    samples, rate = read_wav(shared_model(MS + "yes_1000ms.wav"))
    assert rate == 16000 and samples.dtype == np.int16 and samples.size == 16000
    # two seconds: two windows (yes, then the same yes again), averaged
    windows = kws.predict_windows((np.concatenate([samples, samples]), 16000), top_k=1)
    assert [round(t, 2) for t, _ in windows] == [0.0, 0.98] and windows[0][1][0].label == "yes"


def write_wav(path, samples: np.ndarray, rate=16000, width=2, channels=1):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(samples.tobytes())


def waveform_model(n=160) -> bytes:
    """float (1, n) samples -> [mean(x), -mean(x)] logits: loud-positive vs loud-negative."""
    g = GraphBuilder()
    x = g.input("audio", (1, n), "FLOAT32")
    w = g.constant("w", np.stack([np.full(n, 1 / n), np.full(n, -1 / n)]).astype(np.float32) * 50)
    y = g.tensor("y", (1, 2), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    g.output(y)
    model = g.build()
    write_manifest(model, {"labels": ["up", "down"], "audio": {"sample_rate": 8000}})
    return write_model(model)


def test_audio_waveform_model_and_wav_errors(tmp_path):
    clf = AudioClassifier(waveform_model())
    up = np.full(400, 8000, np.int16)
    write_wav(tmp_path / "up.wav", up, 8000)
    write_wav(tmp_path / "stereo.wav", np.stack([-up, -up], 1), 8000, channels=2)
    assert clf.predict(tmp_path / "up.wav")[0].label == "up"
    assert clf.predict(tmp_path / "stereo.wav")[0].label == "down"
    assert len(clf.predict_windows(tmp_path / "up.wav")) == 3  # 400 samples in windows of 160 (last padded)
    write_wav(tmp_path / "fast.wav", up, 16000)
    with pytest.raises(ModelError, match=r"fast\.wav: 16000 Hz audio but the model takes 8000 Hz; resample"):
        clf.predict(tmp_path / "fast.wav")
    write_wav(tmp_path / "eight.wav", np.zeros(100, np.uint8), 8000, width=1)
    with pytest.raises(ModelError, match=r"eight\.wav: 8-bit samples; only 16-bit PCM"):
        clf.predict(tmp_path / "eight.wav")
    (tmp_path / "junk.wav").write_bytes(b"RIFFjunk")
    with pytest.raises(ModelError, match=r"junk\.wav: cannot read the WAV"):
        clf.predict(tmp_path / "junk.wav")


# ------------------------------------------------------------------------------------------ edge run


def test_edge_run_text_and_json(tmp_path, images, capsys):
    from edge_sdk.cli import main

    model = tmp_path / "colours.tflite"
    model.write_bytes(classifier_model(False, MANIFEST))
    assert main(["run", str(model), str(images["red"]), str(images["blue"]), "--top-k", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    # which runtime ran it comes first (edge_sdk.tools.run_backend; tests/test_run_backend.py)
    assert out.pop(0).startswith(("runtime: c (", "runtime: python ("))
    # the logit model's scores are a softmax edge run applied, and it says so under each input
    assert out[0] == f"{images['red']}:" and out[1].split()[0] == "red" and len(out) == 8
    assert out[3] == out[7] == "  (scores: softmax of the model's outputs)"
    assert out[4] == f"{images['blue']}:" and out[5].split()[0] == "blue"
    assert main(["run", str(model), str(images["green"]), "--json", "--top-k", "3"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc[0]["input"] == str(images["green"]) and len(doc[0]["predictions"]) == 3
    assert doc[0]["predictions"][0]["label"] == "green" and 0 < doc[0]["predictions"][0]["score"] <= 1
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"nope")
    assert main(["run", str(model), str(bad)]) == 3
    assert "bad.jpg: cannot read the image" in capsys.readouterr().err


def test_edge_run_detector_json(tmp_path, capsys):
    from edge_sdk.cli import main

    enc = np.zeros((2, 4), np.float32)
    logits = np.array([[4.0], [-4.0]], np.float32)
    manifest = {"labels": ["thing"], "detection": {"anchors": [[0.5, 0.5, 0.2, 0.4], [0.2, 0.2, 0.1, 0.1]]}}
    model = tmp_path / "det.tflite"
    model.write_bytes(detector_model(enc, logits, manifest))
    img = tmp_path / "x.png"
    solid((1, 2, 3), (20, 10)).save(img)
    assert main(["run", str(model), str(img), "--json"]) == 0
    (r,) = json.loads(capsys.readouterr().out)
    (d,) = r["detections"]
    assert d["label"] == "thing" and d["box"] == pytest.approx([0.3, 0.4, 0.7, 0.6])
    assert d["box_pixels"] == pytest.approx([6, 4, 14, 6], abs=0.01)
