"""The C runtime's error messages name a custom op by its custom_code ("SignalWindow"), never as "CUSTOM code
32": a refusal in prepare, and the error record read back through CInterpreter."""

from __future__ import annotations

import numpy as np

from edge_sdk.errors import ModelError
from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model, refusal_on
from tests.test_c_signal import opts, window_model

pytestmark = needs_c_runtime


def test_a_refused_custom_op_is_named_by_its_custom_code():
    err = str(refusal_on("c", window_model(opts(shfit=3)), ModelError))  # prepare: 'shift' is missing
    assert "node 0 (SignalWindow v1)" in err and "'shift' is missing" in err, err
    assert "CUSTOM" not in err and "code 32" not in err, err
    err = str(refusal_on("c", op_model("SignalEnergy", [T((8,), "INT16")], [T((4,), "UINT32")],
                                       custom_options=opts(start_index=0)), ModelError))
    assert "(SignalEnergy v1)" in err and "CUSTOM" not in err, err


def test_a_builtin_op_keeps_its_name_and_code():
    bad = op_model("GATHER", [T((10, 4), "FLOAT32"), T((2,), "INT32", data=np.asarray([1, 10], np.int32))],
                   [T((2, 4), "FLOAT32")], options={"axis": 0, "batch_dims": 0})
    err = str(refusal_on("c", bad, ModelError))
    assert "node 0 (GATHER code 36 v1)" in err, err
