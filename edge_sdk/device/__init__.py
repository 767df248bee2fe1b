"""Links to devices, and nothing else: how bytes reach a board and come back.

    from edge_sdk.device.serial_link import SerialLink      # the framed protocol over any pyserial URL
    with SerialLink("socket://127.0.0.1:PORT") as link:
        link.hello()

What lives here: ``serial_link`` (the host side of docs/serial-protocol.md), ``transports`` (faulty:// and
other pyserial URL handlers), ``ssh`` (a Linux board over the system OpenSSH client), ``qemu_board`` (the
QEMU board's processes and the state file that lists them), ``emulator`` (the device side of the protocol in
Python, over our interpreter) and ``generation`` (the GENERATE command's payloads and its device side).

May import: the standard library, numpy, pyserial, edge_sdk.errors / log / resources / timeouts,
edge_sdk.model, edge_sdk.runtime, edge_sdk.targets.registry, edge_sdk.tasks.generate. Nothing from tools,
the CLI or converters.
"""
