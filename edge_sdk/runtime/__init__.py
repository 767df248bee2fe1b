"""Running a model: the interpreter, the arena plan, the op table, the kernels, delegates and the C binding.

    from edge_sdk.runtime.interpreter import Interpreter   # also edge_sdk.Interpreter
    interp = Interpreter(model_path="m.tflite"); interp.allocate_tensors(); interp.invoke()

What lives here: ``interpreter`` (prepare validates, eval runs blind), ``planner`` (which arena plan a model gets
and why: layer, in place, patch stage; the auto rule), ``arena`` (the one plan: offset, size,
first and last use per tensor), ``op_table`` (one row per op), ``kernels/`` (the Python kernels, one
``prepare_<op>`` each), ``delegates/`` (partitions handed to LiteRT, an external .so, NNAPI plans),
``c_build`` (building the C runtime in firmware_c/ for this machine), ``c_interpreter`` (the C runtime through
ctypes: ``Interpreter(..., backend="c")``), ``c_loaded`` (the model bytes every path hands the C runtime:
legacy UINT8 presented, shapes declared, shape arithmetic made constants), ``c_status`` (its status names),
``shape_arithmetic`` (values known from input shapes) and ``uint8`` (legacy UINT8 models as int8).

May import: the standard library, numpy, edge_sdk.errors / log / resources / timeouts, edge_sdk.model.
Nothing from targets, device, tasks, tools, the CLI or converters.
"""

# Interpreter(..., backend="c") finds its class registered: imported with the package, so whoever imports
# edge_sdk.runtime.interpreter can construct it (the subclass imports the interpreter; the reverse would be a cycle).
from edge_sdk.runtime import c_interpreter  # noqa: E402,F401
