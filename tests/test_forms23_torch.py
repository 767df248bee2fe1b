"""Graphs laid out as PyTorch's LiteRT converter (ai-edge-torch) writes them (issue 23), built with our writer:

- a decoder block with a KV cache and two signatures, "prefill" (T = 4, subgraph 0) and "decode" (T = 1,
  subgraph 1), each with its inputs in its own subgraph order (not the signature's sorted names): GATHER of an
  embedding table by int64 token ids, CAST int64 <-> int32, layer norm by MEAN keep_dims + RSQRT, RMS norm by SUM
  keep_dims, RESHAPE by a shape *tensor* with no new_shape option, TRANSPOSE to heads, DYNAMIC_UPDATE_SLICE writing
  k / v into the cache at [0, pos[0], 0, 0] (int64 start), BATCH_MATMUL with adj_y and with adj_x, both broadcasting
  one kv head over four query heads (rank 4), a SELECT_V2 causal mask (bool (1,1,T,TMAX), scalar -1e9), SOFTMAX,
  GELU (tanh approximation and exact);
- a conv net on an NCHW input with TRANSPOSE -> CONV_2D -> TRANSPOSE around every conv, GELU, MEAN over H, W.

Both runtimes against LiteRT's reference kernels (float within 1e-4 of each output's range), through the
signature runners and the plain invoke (subgraph 0, LiteRT's input order); then `edge bench` on random inputs (the
token ids index the embedding table: int32 / int64 inputs are drawn in [0, 99] as LiteRT's benchmark_model does)
and `edge run` / `edge check` on the block.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.cli import main
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.types import SignatureDef
from edge_sdk.model.writer import write_model
from tests.oprunner import peer_outputs, run_on

D, HEADS, HEAD_DIM, TMAX = 16, 4, 4, 8  # model width, query heads, head size, cache length (one kv head)


class _Graph:
    """GraphBuilder shorthands: fresh tensor names, constants, one-output ops."""

    def __init__(self, g: GraphBuilder):
        self.g, self.n = g, 0

    def tensor(self, shape, type="FLOAT32") -> int:
        self.n += 1
        return self.g.tensor(f"{self.g.name}/t{self.n}", shape, type)

    def const(self, data) -> int:
        self.n += 1
        return self.g.constant(f"{self.g.name}/c{self.n}", np.asarray(data))

    def op(self, name, inputs, shape, type="FLOAT32", **options) -> int:
        y = self.tensor(shape, type)
        self.g.op(name, inputs, [y], **options)
        return y

    def reshape(self, x, shape) -> int:
        """RESHAPE by a shape tensor, with no builtin options (ai-edge-torch writes none)."""
        y = self.op("RESHAPE", [x, self.const(np.array(shape, np.int32))], shape, self.g.tensors[x].type)
        self.g.operators[-1].options_type, self.g.operators[-1].options = None, {}
        return y

    def transpose(self, x, perm) -> int:
        shape = [self.g.tensors[x].shape[p] for p in perm]
        return self.op("TRANSPOSE", [x, self.const(np.array(perm, np.int32))], shape, self.g.tensors[x].type)

    def linear(self, x, w) -> int:
        """x (..., k) @ w.T, w (n, k): FULLY_CONNECTED keeping x's leading dims."""
        shape = list(self.g.tensors[x].shape[:-1]) + [w.shape[0]]
        return self.op("FULLY_CONNECTED", [x, self.const(w), -1], shape, keep_num_dims=True)


def block_weights(vocab: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    return dict(embedding=w(vocab, D), wq=w(D, D), wk=w(HEAD_DIM, D), wv=w(HEAD_DIM, D), wo=w(D, D),
                w_up=w(4 * D, D), w_down=w(D, 4 * D), w_logits=w(vocab, D),
                gamma=(1 + 0.1 * rng.standard_normal(D)).astype(np.float32),
                beta=(0.1 * rng.standard_normal(D)).astype(np.float32),
                rms_gamma=(1 + 0.1 * rng.standard_normal(D)).astype(np.float32))


def decoder_block(g: GraphBuilder, w: dict, T: int, approximate: bool, input_order: list[str]) -> SignatureDef:
    """One decoder step over T tokens at positions input_pos (T,), writing the cache; its SignatureDef."""
    b = _Graph(g)
    k_cache = g.tensor("kv_cache_k", (1, TMAX, 1, HEAD_DIM))
    v_cache = g.tensor("kv_cache_v", (1, TMAX, 1, HEAD_DIM))
    named = dict(kv_cache_k=k_cache, kv_cache_v=v_cache, input_pos=g.tensor("input_pos", (T,), "INT64"),
                 tokens=g.tensor("tokens", (1, T), "INT64"))
    g.inputs.extend(named[k] for k in input_order)
    x = b.op("GATHER", [b.const(w["embedding"]), named["tokens"]], (1, T, D), axis=0)
    pos = b.op("CAST", [named["input_pos"]], (T,), "INT32")
    # layer norm: (x - mean) * rsqrt(var + eps) * gamma + beta, means by MEAN keep_dims over the last axis
    last = b.const(np.array([-1], np.int32))
    centered = b.op("SUB", [x, b.op("MEAN", [x, last], (1, T, 1), keep_dims=True)], (1, T, D))
    var = b.op("MEAN", [b.op("MUL", [centered, centered], (1, T, D)), last], (1, T, 1), keep_dims=True)
    inv = b.op("RSQRT", [b.op("ADD", [var, b.const(np.float32(1e-5))], (1, T, 1))], (1, T, 1))
    h = b.op("MUL", [b.op("MUL", [centered, inv], (1, T, D)), b.const(w["gamma"])], (1, T, D))
    h = b.op("ADD", [h, b.const(w["beta"])], (1, T, D))
    q = b.transpose(b.reshape(b.linear(h, w["wq"]), (1, T, HEADS, HEAD_DIM)), [0, 2, 1, 3])  # (1, H, T, dh)
    k = b.reshape(b.linear(h, w["wk"]), (1, T, 1, HEAD_DIM))
    v = b.reshape(b.linear(h, w["wv"]), (1, T, 1, HEAD_DIM))
    # the cache write at [0, pos[0], 0, 0]: pos[0] by GATHER, back to int64 by CAST, joined by CONCATENATION
    first = b.op("CAST", [b.op("GATHER", [pos, b.const(np.array([0], np.int64))], (1,), "INT32", axis=0)], (1,),
                 "INT64")
    start = b.op("CONCATENATION", [b.const(np.array([0], np.int64)), first, b.const(np.array([0, 0], np.int64))],
                 (4,), "INT64", axis=0)
    k_new = b.op("DYNAMIC_UPDATE_SLICE", [k_cache, k, start], (1, TMAX, 1, HEAD_DIM))
    v_new = b.op("DYNAMIC_UPDATE_SLICE", [v_cache, v, start], (1, TMAX, 1, HEAD_DIM))
    keys, values = b.transpose(k_new, [0, 2, 1, 3]), b.transpose(v_new, [0, 2, 1, 3])  # (1, 1, TMAX, dh)
    scores = b.op("BATCH_MATMUL", [q, keys], (1, HEADS, T, TMAX), adj_y=True)  # one kv head broadcast over H
    scores = b.op("MUL", [scores, b.const(np.float32(HEAD_DIM ** -0.5))], (1, HEADS, T, TMAX))
    seen = b.op("LESS_EQUAL", [b.const(np.arange(TMAX, dtype=np.int32).reshape(1, 1, 1, TMAX)),
                               b.reshape(pos, (1, 1, T, 1))], (1, 1, T, TMAX), "BOOL")
    scores = b.op("SELECT_V2", [seen, scores, b.const(np.float32(-1e9))], (1, HEADS, T, TMAX))
    probs_t = b.transpose(b.op("SOFTMAX", [scores], (1, HEADS, T, TMAX), beta=1.0), [0, 1, 3, 2])
    out_t = b.op("BATCH_MATMUL", [values, probs_t], (1, HEADS, HEAD_DIM, T), adj_x=True)  # (V^T P^T): (1,H,dh,T)
    attended = b.reshape(b.transpose(out_t, [0, 3, 1, 2]), (1, T, D))
    x = b.op("ADD", [x, b.linear(attended, w["wo"])], (1, T, D))
    # RMS norm by SUM keep_dims, then the GELU MLP
    sq = b.op("SUM", [b.op("MUL", [x, x], (1, T, D)), b.const(np.array([2], np.int32))], (1, T, 1), keep_dims=True)
    ms = b.op("ADD", [b.op("MUL", [sq, b.const(np.float32(1 / D))], (1, T, 1)), b.const(np.float32(1e-6))], (1, T, 1))
    h = b.op("MUL", [b.op("MUL", [x, b.op("RSQRT", [ms], (1, T, 1))], (1, T, D)), b.const(w["rms_gamma"])], (1, T, D))
    up = b.op("GELU", [b.linear(h, w["w_up"])], (1, T, 4 * D), approximate=approximate)
    x = b.op("ADD", [x, b.linear(up, w["w_down"])], (1, T, D))
    logits = b.linear(x, w["w_logits"])
    g.output(logits, k_new, v_new)
    return SignatureDef(g.name, g.index, named, {"logits": logits, "kv_cache_k": k_new, "kv_cache_v": v_new})


def decoder_model(vocab: int = 40, approximate: bool = True, seed: int = 0, prefill: int = 4) -> bytes:
    w = block_weights(vocab, seed)
    g = GraphBuilder("prefill")
    sigs = [decoder_block(g, w, prefill, approximate, ["tokens", "input_pos", "kv_cache_k", "kv_cache_v"])]
    decode = g.subgraph("decode")
    sigs.append(decoder_block(decode, w, 1, approximate, ["kv_cache_v", "input_pos", "kv_cache_k", "tokens"]))
    model = g.build()
    model.signature_defs = sigs
    return write_model(model)


def signature_feeds(vocab: int, seed: int, prefill: int = 4) -> dict:
    rng = np.random.default_rng(seed)

    def cache():
        return rng.standard_normal((1, TMAX, 1, HEAD_DIM)).astype(np.float32)

    return {"prefill": dict(tokens=rng.integers(0, vocab, (1, prefill)), input_pos=np.arange(prefill),
                            kv_cache_k=cache(), kv_cache_v=cache()),
            "decode": dict(tokens=rng.integers(0, vocab, (1, 1)), input_pos=np.array([prefill + 1]),
                           kv_cache_k=cache(), kv_cache_v=cache())}


def close(ours: dict | list, theirs: dict | list, what: str) -> None:
    pairs = ours.items() if isinstance(ours, dict) else enumerate(ours)
    for key, a in pairs:
        b = theirs[key]
        assert a.shape == b.shape and a.dtype == b.dtype, f"{what} {key}: {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-4 * max(float(np.ptp(b)), 1e-30), err_msg=f"{what} {key}")


def litert_signatures(model: bytes, feeds: dict) -> dict:
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

    lite = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF, num_threads=1)
    return {key: lite.get_signature_runner(key)(**f) for key, f in feeds.items()}


@pytest.mark.parametrize("approximate,vocab", [(True, 40), (False, 257)])
def test_decoder_signatures_match_litert(runtime, approximate, vocab):
    model = decoder_model(vocab, approximate, seed=vocab)
    feeds = signature_feeds(vocab, seed=vocab + 1)
    theirs = litert_signatures(model, feeds)
    interp = Interpreter(model_content=model, backend=runtime)
    assert interp.get_signature_list() == {k: {"inputs": ["input_pos", "kv_cache_k", "kv_cache_v", "tokens"],
                                               "outputs": ["kv_cache_k", "kv_cache_v", "logits"]} for k in feeds}
    for key, f in feeds.items():
        close(interp.get_signature_runner(key)(**f), theirs[key], f"{runtime} {key} vs litert")
    # the plain invoke runs subgraph 0 (prefill) with its inputs in its own order, as LiteRT lists them
    order = ["tokens", "input_pos", "kv_cache_k", "kv_cache_v"]
    assert [d["name"] for d in interp.get_input_details()] == order
    plain = [feeds["prefill"][k] for k in order]
    close(run_on(runtime, model, plain), peer_outputs(model, plain, "litert"), f"{runtime} invoke vs litert")


def nchw_conv_model(size: int, approximate: bool, seed: int) -> bytes:
    """x (1, 3, size, size) NCHW; per conv: TRANSPOSE to NHWC, CONV_2D, TRANSPOSE back, GELU; MEAN over H, W; FC."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder("main")
    b = _Graph(g)
    h = g.input("x", (1, 3, size, size))
    for cout, stride in [(8, 2), (12, 1)]:
        cin = g.tensors[h].shape[1]
        nhwc = b.transpose(h, [0, 2, 3, 1])
        side = -(-g.tensors[nhwc].shape[1] // stride)
        kernel = (rng.standard_normal((cout, 3, 3, cin)) / np.sqrt(9 * cin)).astype(np.float32)
        y = b.op("CONV_2D", [nhwc, b.const(kernel), b.const((0.1 * rng.standard_normal(cout)).astype(np.float32))],
                 (1, side, side, cout), padding="SAME", stride_w=stride, stride_h=stride)
        h = b.transpose(y, [0, 3, 1, 2])
        h = b.op("GELU", [h], g.tensors[h].shape, approximate=approximate)
    pooled = b.op("MEAN", [h, b.const(np.array([2, 3], np.int32))], (1, 12), keep_dims=False)
    g.output(b.linear(pooled, (rng.standard_normal((5, 12)) / np.sqrt(12)).astype(np.float32)))
    return write_model(g.build())


@pytest.mark.parametrize("size,approximate", [(12, False), (15, True)])
def test_nchw_conv_matches_litert(runtime, size, approximate):
    model = nchw_conv_model(size, approximate, seed=size)
    x = [np.random.default_rng(size).standard_normal((1, 3, size, size)).astype(np.float32)]
    close(run_on(runtime, model, x), peer_outputs(model, x, "litert"), f"{runtime} vs litert")


def test_bench_draws_token_ids_an_embedding_takes(tmp_path, capsys):
    # full-range random int64 token ids made GATHER refuse the run ("a position is outside [0, params.shape[axis])")
    model = tmp_path / "decoder.tflite"
    model.write_bytes(decoder_model(vocab=100))
    for backend in ("python", "c"):
        assert main(["bench", str(model), "--backend", backend, "--runs", "2", "--warmup", "1"]) == 0, backend
    assert "random (seed 0)" in capsys.readouterr().out


def test_run_and_check_the_decoder(tmp_path, capsys):
    model = tmp_path / "decoder.tflite"
    model.write_bytes(decoder_model(vocab=40))
    feeds = signature_feeds(40, seed=7)["prefill"]
    np.savez(tmp_path / "x.npz", **feeds)
    assert main(["run", str(model), str(tmp_path / "x.npz"), "--json"]) == 0  # the .npz by input name
    printed = json.loads(capsys.readouterr().out)[0]["outputs"]
    order = ["tokens", "input_pos", "kv_cache_k", "kv_cache_v"]
    theirs = peer_outputs(model.read_bytes(), [feeds[k] for k in order], "litert")
    close([np.array(o["values"], np.float32) for o in printed], theirs, "edge run vs litert")
    assert main(["check", str(model), "--target", "raspberry-pi-4"]) == 0
    assert "RUNS" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
                    reason="needs QEMU and the Arm GCC toolchain (qemu-system-arm gcc-arm-none-eabi)")
def test_decoder_validates_on_the_qemu_board(state, tmp_path, capsys):
    # edge profile's random token ids (int64 in [0, 99]) index a 128-row embedding on the board; its prefill
    # subgraph (and the decode one it carries) run on the Cortex-M4 within the printed float tolerance
    model = tmp_path / "decoder.tflite"
    model.write_bytes(decoder_model(vocab=128))
    assert main(["profile", str(model), "--target", "qemu-mps2-an386", "--runs", "1", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["validated"] is True and r["mismatches"] == [], r.get("mismatches")
    assert len(r["float_outputs"]) == 3 and all(f["within"] for f in r["float_outputs"])


def test_run_prints_a_feature_output_not_a_top_k(tmp_path, capsys):
    # an attention block's output (1, HEADS, T, HEAD_DIM) is no vector of class scores: edge run on a .npy printed a
    # top-5 of its flattened values as "classes"; it prints the output (LiteRT's values), as for an .npz
    rng = np.random.default_rng(2)
    g = GraphBuilder("main")
    b = _Graph(g)
    x = g.input("x", (1, 5, D))
    heads = b.transpose(b.reshape(x, (1, 5, HEADS, HEAD_DIM)), [0, 2, 1, 3])
    scores = b.op("SOFTMAX", [b.op("BATCH_MATMUL", [heads, heads], (1, HEADS, 5, 5), adj_y=True)], (1, HEADS, 5, 5),
                  beta=1.0)
    g.output(b.op("BATCH_MATMUL", [scores, heads], (1, HEADS, 5, HEAD_DIM)))
    model = tmp_path / "attention.tflite"
    model.write_bytes(write_model(g.build()))
    feed = rng.standard_normal((1, 5, D)).astype(np.float32)
    np.save(tmp_path / "x.npy", feed)
    assert main(["run", str(model), str(tmp_path / "x.npy"), "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert "predictions" not in result, result
    (row,) = result["outputs"]
    assert row["shape"] == [1, HEADS, 5, HEAD_DIM]
    close([np.array(row["values"], np.float32)], peer_outputs(model.read_bytes(), [feed], "litert"), "edge run")


def test_check_the_decoder_on_a_microcontroller():
    from edge_sdk.targets.check import RUNS, check_model

    r = check_model(decoder_model(vocab=128), "stm32f746-disco", stack=False)
    assert r.verdict == RUNS, r.problems


def test_run_prints_an_image_models_raw_candidates(tmp_path, capsys):
    # a YOLO-style export: one output (1, 4 + classes, candidates), no post-process op; on an image edge run printed
    # a top-5 of its flattened values as classes
    from PIL import Image

    rng = np.random.default_rng(3)
    g = GraphBuilder("main")
    b = _Graph(g)
    x = g.input("images", (1, 3, 16, 16))
    nhwc = b.transpose(x, [0, 2, 3, 1])
    kernel = (rng.standard_normal((9, 4, 4, 3)) * 0.2).astype(np.float32)
    y = b.op("CONV_2D", [nhwc, b.const(kernel), b.const(np.zeros(9, np.float32))], (1, 4, 4, 9), padding="VALID",
             stride_w=4, stride_h=4)
    g.output(b.transpose(b.reshape(y, (1, 16, 9)), [0, 2, 1]))  # (1, 9, 16): 4 box values + 5 classes, 16 cells
    model = tmp_path / "yolo_like.tflite"
    model.write_bytes(write_model(g.build()))
    photo = tmp_path / "photo.png"
    Image.fromarray((rng.random((16, 16, 3)) * 255).astype(np.uint8)).save(photo)
    assert main(["run", str(model), str(photo), "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert "predictions" not in result and result["outputs"][0]["shape"] == [1, 9, 16], result.keys()
