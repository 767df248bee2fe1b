"""Running a model: the interpreter, the arena plan, the op table, the kernels, delegates and the C binding.

    from edge_sdk.runtime.interpreter import Interpreter   # also edge_sdk.Interpreter
    interp = Interpreter(model_path="m.tflite"); interp.allocate_tensors(); interp.invoke()

What lives here: ``interpreter`` (prepare validates, eval runs blind), ``planner`` (which arena plan a model gets
and why: layer, in place, patch stage; the auto rule), ``arena`` (the one plan: offset, size,
first and last use per tensor), ``op_table`` (one row per op), ``kernels/`` (the Python kernels, one
``prepare_<op>`` each), ``delegates/`` (partitions handed to LiteRT, an external .so, NNAPI plans) and
``backend_c`` (the C runtime in firmware_c/ through ctypes).

May import: the standard library, numpy, edge_sdk.errors / log / resources / timeouts, edge_sdk.model.
Nothing from targets, device, tasks, tools, the CLI or converters.
"""
