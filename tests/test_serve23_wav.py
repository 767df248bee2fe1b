"""edge serve takes a WAV body (Content-Type: audio/wav) for a model of raw samples: each request at its own length
where the signature says -1 (as `edge run` / `edge bench` take a WAV), the model's outputs == LiteRT reference
on the clip; the rate from --sample-rate or the manifest; 400s naming what does not fit. And a [-1, C] input served
without batching runs each request at its rows."""

from __future__ import annotations

import numpy as np

from edge_sdk.tools.serve import Server
from tests.test_pipeline import write_wav
from tests.test_rest27_first_hour import energy_model, litert_logits
from tests.test_serve import request


def wav_bytes(tmp_path, samples: np.ndarray, rate: int) -> bytes:
    write_wav(tmp_path / "clip.wav", samples, rate)
    return (tmp_path / "clip.wav").read_bytes()


def post_wav(server, body: bytes, ctype: str = "audio/wav"):
    return request(server, "POST", "/predict", body, {"Content-Type": ctype})


def test_serve_runs_each_wav_at_its_length(tmp_path):
    model = energy_model(tmp_path / "any_length.tflite", rate=8000)
    rng = np.random.default_rng(3)
    with Server(model, port=0) as srv:
        for n, ctype in ((50, "audio/wav"), (1234, "audio/x-wav"), (50, "audio/wave")):
            samples = rng.integers(-12000, 12000, n).astype(np.int16)
            status, doc, _ = post_wav(srv, wav_bytes(tmp_path, samples, 8000), ctype)
            assert status == 200, doc
            np.testing.assert_allclose(doc["outputs"][0], litert_logits(model, samples).tolist(), rtol=1e-6,
                                       atol=1e-6)


def test_serve_wav_refusals(tmp_path):
    bare = energy_model(tmp_path / "bare.tflite")
    clip = wav_bytes(tmp_path, np.full(300, 4000, np.int16), 8000)
    with Server(bare, port=0) as srv:  # no rate known
        status, doc, _ = post_wav(srv, clip)
        assert status == 400 and "--sample-rate HZ" in doc["error"], doc
    with Server(bare, port=0, sample_rate=16000) as srv:
        status, doc, _ = post_wav(srv, clip)
        assert status == 400 and "8000 Hz audio but" in doc["error"] and "bare.tflite takes 16000 Hz" in doc["error"], doc
        status, doc, _ = post_wav(srv, b"RIFF0000WAVEnot a wav")
        assert status == 400 and doc["error"].startswith("the WAV body"), doc
    with Server(bare, port=0, sample_rate=8000) as srv:
        assert post_wav(srv, clip)[0] == 200
    from tests.test_serve import fc_model

    with Server(fc_model(), port=0, sample_rate=8000) as srv:  # [1, 4]: a fixed length, 300 samples do not fit
        status, doc, _ = post_wav(srv, clip)
        assert status == 400 and "300 samples" in doc["error"] and "takes 4" in doc["error"], doc


def test_serve_runs_a_minus_one_leading_input_at_each_requests_rows():
    """[-1, C] served without batching: a [T, C] request runs at [T, C] (LiteRT resized to it), a [C] one at [1, C];
    with --max-batch > 1 the leading axis stays the batch axis."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from edge_sdk.model import read_model, write_model
    from tests.test_serve import fc_model

    model = read_model(fc_model())
    sg = model.subgraphs[0]
    sg.tensors[sg.inputs[0]].shape_signature, sg.tensors[sg.outputs[0]].shape_signature = (-1, 4), (-1, 3)
    content = write_model(model)
    rng = np.random.default_rng(9)
    with Server(content, port=0) as srv:
        assert srv.dynamic == {"x": (-1, 4)}
        for rows in (3, 1, 7):
            x = rng.standard_normal((rows, 4)).astype(np.float32)
            status, doc, _ = request(srv, "POST", "/predict", {"inputs": x.tolist()})
            assert status == 200, doc
            it = Interpreter(model_content=content, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
            it.resize_tensor_input(0, x.shape, strict=True)
            it.allocate_tensors()
            it.set_tensor(it.get_input_details()[0]["index"], x)
            it.invoke()
            np.testing.assert_allclose(doc["outputs"][0], it.get_tensor(it.get_output_details()[0]["index"]),
                                       rtol=1e-6, atol=1e-6)
        status, doc, _ = request(srv, "POST", "/predict", {"inputs": [1.0, 2.0, 3.0, 4.0]})
        assert status == 200 and np.shape(doc["outputs"][0]) == (1, 3), doc
    with Server(content, port=0, max_batch=4) as srv:
        assert srv.dynamic == {} and srv.max_batch == 4
