"""Every timeout and retry count edge-sdk waits with, named once (seconds unless said otherwise).

Library functions take these as their defaults and the CLI's flags default to the same names, so a value is
changed here and nowhere else. Standard library only, no imports: any room may use it.
"""

# ----------------------------------------------------------------------------------------------- serial link
# One command's wait for its answer before the first retransmission (the wait doubles per retransmission, up
# to max(this, SERIAL_MAX_INTERVAL)). `edge profile --timeout` defaults to it too (it said 1 s while the
# library said 0.5 s for no stated reason: one value now, 0.5 s).
SERIAL_ANSWER_TIMEOUT = 0.5
# The longest wait between two retransmissions of one command.
SERIAL_MAX_INTERVAL = 2.0
# Retransmissions of one command (same seq; the device answers a duplicate from its cache) before giving up.
SERIAL_RETRIES = 6
# How long pyserial's read() blocks at most; SerialLink polls with it (keeps the link responsive).
SERIAL_POLL = 0.01
# An INVOKE the device acknowledged: how long its answer may take (one inference on a slow board).
INVOKE_TIMEOUT = 60.0
# `edge profile` / `edge generate --device`: one INVOKE may hold several runs (or a whole generated step).
DEVICE_RUN_TIMEOUT = 120.0

# ----------------------------------------------------------------------------------------------- QEMU board
# qemu-system-arm started: how long until its UART's TCP port accepts a connection.
QEMU_START_TIMEOUT = 10.0
# One attempt to connect to that port while waiting for it.
QEMU_PORT_PROBE = 0.2
# Checking that a recorded board still runs the expected model (HELLO): answer wait, and retransmissions.
BOARD_VERIFY_TIMEOUT = 2.0
BOARD_VERIFY_RETRIES = 3

# ----------------------------------------------------------------------------------------------- SSH / deploy
# ssh's ConnectTimeout (`edge deploy --connect-timeout`, bench, status).
SSH_CONNECT_TIMEOUT = 10
# One ssh command on the device (unless the caller gives its own).
SSH_COMMAND_TIMEOUT = 60
# Local helper programs around ssh (ssh -G / -V, ssh-keygen) and ssh-keyscan.
SSH_TOOL_TIMEOUT = 10
# Copying a file to the device: this much, plus one second per MB (at least 1 MB/s).
SSH_UPLOAD_BASE_TIMEOUT = 60
# Probing the device (Python, arch, glibc, manifest): the connection's timeout plus this.
DEPLOY_PROBE_EXTRA = 60
# Creating the device's venv and pip-installing the runtime into it.
DEPLOY_INSTALL_TIMEOUT = 1800
# Building the C backend on the device.
DEPLOY_C_BUILD_TIMEOUT = 600
# Reading the device's manifest (`edge deploy --status`).
DEPLOY_STATUS_TIMEOUT = 120
# Building the edge-sdk wheel here (pip wheel --no-deps).
WHEEL_BUILD_TIMEOUT = 300
# Downloading the dependency wheels for an offline device (pip download).
WHEEL_DOWNLOAD_TIMEOUT = 600
# `edge bench` on a device: the whole benchmark run.
BENCH_TIMEOUT = 600
# Opening the ssh control master: the connection's timeout plus this (authentication, a slow shell).
SSH_MASTER_EXTRA = 30

# ----------------------------------------------------------------------------------------------- emulator
# DeviceEmulator.stop(): how long to wait for its serving thread to end.
EMULATOR_STOP_TIMEOUT = 5.0

# ----------------------------------------------------------------------------------------------- edge serve
# How long one HTTP request may wait for its result (then 504).
SERVE_REQUEST_TIMEOUT = 30.0
# A client socket's read timeout (a slow or silent client is dropped).
SERVE_SOCKET_TIMEOUT = 10.0
# Server.stop(): how long queued requests may take to finish.
SERVE_STOP_TIMEOUT = 10.0
