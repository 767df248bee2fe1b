"""The jobs the `edge` commands do, as typed library functions the CLI wraps (one module per command).

    from edge_sdk.tools.flash import flash          # edge flash: build firmware for a model and a board, flash it
    from edge_sdk.tools.profile import profile      # edge profile: per-op timing from a device over serial
    from edge_sdk.tools.bench import bench          # edge bench: latency here or on a Pi over SSH
    from edge_sdk.tools.deploy import deploy        # edge deploy: model + runtime onto a Linux board over SSH

Also ``inspection`` (edge inspect), ``serve`` (edge serve), ``generate`` (edge generate on a device),
``op_report`` (the per-op table, trace, CSV and plot shared by profile and bench) and ``docs`` (the README's
generated tables). Library code here raises edge_sdk.errors types and never prints or exits.

May import: everything in edge_sdk except the CLI; never converters (only the CLI does).
"""
