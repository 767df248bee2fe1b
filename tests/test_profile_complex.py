"""`edge profile` on a model with a complex output (RFFT2D's COMPLEX64, issue 23 point 4): the serial link carries
it (serial_link.WIRE_TYPES) and the comparison holds its real and imaginary parts to the float tolerance. Before,
the host refused the board's output record ("tensor type TYPE_8 has no numpy form")."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.tools.profile import compare_outputs
from tests.oprunner import T, op_model
from tests.test_profile import needs_qemu, state  # noqa: F401 (a fixture: the board state, boards stopped after)


def _rfft_model() -> bytes:
    return op_model("RFFT2D", [T((2, 8), "FLOAT32"), T((2,), "INT32", data=np.array([2, 8], np.int32))],
                    [T((2, 5), "COMPLEX64")])


def test_complex_outputs_compare_part_by_part():
    from edge_sdk.model import read_model

    model = read_model(_rfft_model())
    h = (np.arange(10) + 1j * np.arange(10, 20)).astype(np.complex64).reshape(2, 5)
    floats: list = []
    assert compare_outputs([h.copy()], [h], model, floats) == [] and floats[0]["bit_exact"]
    d = h.copy()
    d[1, 2] += np.complex64(1e-6j)  # within 1e-5 x max(1, |values|)
    floats = []
    assert compare_outputs([d], [h], model, floats) == [] and floats[0]["within"] and not floats[0]["bit_exact"]
    d[0, 4] += np.complex64(1.0)  # a real part off by far more
    bad = compare_outputs([d], [h], model, [])
    assert len(bad) == 1 and bad[0]["differ"] == 1 and bad[0]["first_index"] == [0, 4, 0], bad


@pytest.mark.slow
@needs_qemu
def test_rfft2d_complex_output_validates_on_the_board(state, tmp_path):  # noqa: F811
    from edge_sdk.tools.profile import profile_model

    path = tmp_path / "rfft.tflite"
    path.write_bytes(_rfft_model())
    np.save(tmp_path / "in.npy", np.random.default_rng(4).standard_normal((2, 8)).astype(np.float32))
    r = profile_model(path, "qemu-mps2-an386", runs=1, inputs=str(tmp_path / "in.npy"), build_dir=tmp_path / "fw")
    assert r["validated"] is True and r["mismatches"] == [], r["mismatches"]
    assert len(r["float_outputs"]) == 1 and r["float_outputs"][0]["within"], r["float_outputs"]
