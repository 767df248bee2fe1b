"""Links to devices. ``edge_sdk.device.ssh``: a Linux board (Raspberry Pi) over the system OpenSSH client.
Other links (serial) live in their own modules here; import the one you need."""
