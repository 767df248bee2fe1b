"""What a device can run: device profiles (device_profiles/*.toml), `edge check`, and the registry of boards and
flash methods.

    from edge_sdk.targets.profiles import load_profile
    from edge_sdk.targets.check import check_model
    report = check_model("m.tflite", load_profile("qemu-mps2-an386"))

What lives here: ``profiles`` (profiles as data: load, inherit, validate), ``check`` (will this model run
there, and in how much memory), ``registry`` (boards of firmware_c/boards, flash methods, install hints),
``c_check`` (the C runtime's loader, prepare and planner built as a target and run once), ``c_footprint`` (the
C runtime's code bytes and stack on a target, from its compiler) and ``size_table`` (the code-size table).

May import: the standard library, numpy, edge_sdk.errors / log / resources / timeouts, edge_sdk.model,
edge_sdk.runtime. Nothing from device, tasks, tools, the CLI or converters.
"""
