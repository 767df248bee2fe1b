"""The registry of what edge-sdk can build for and flash with, as data: boards, flash methods, install hints.

Device profiles (edge_sdk.targets.profiles) name these; `edge flash` (edge_sdk.tools.flash) and the QEMU board
(edge_sdk.device.qemu_board) act on them. Adding a board: its folder under firmware_c/boards/ and its name here.
"""

from __future__ import annotations

from typing import Any

# firmware_c/boards/<name>/: the boards the C firmware has a port for
BOARD_LIST = ("qemu-mps2-an386", "qemu-mps2-an500", "stm32f746-disco", "stm32h743", "nrf52840-dk", "rp2040-pico")
ARM_PACKAGES = "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi"
QEMU_PACKAGE = "apt-get install qemu-system-arm"
INSTALL_HINTS = {
    "openocd": "apt-get install openocd",
    "pyocd": "pip install pyocd",
    "picotool": "apt-get install picotool (or build it from github.com/raspberrypi/picotool)",
    "esptool": "pip install esptool",
    "st-flash": "apt-get install stlink-tools",
    "qemu-system-arm": QEMU_PACKAGE,
}

# flash method -> its settings (key -> spec)
FLASH_METHODS: dict[str, dict[str, Any]] = {
    "qemu": {"binary": "str", "machine": "str", "cpu": "str", "icount_shift": "int", "extra_args": "list[str]"},
    "openocd": {"interface": "str", "target": "str", "config": "list[str]", "adapter_speed_khz": "int",
                "address": "int"},
    "pyocd": {"target": "str", "frequency_hz": "int", "address": "int"},
    "st-flash": {"address": "int", "reset": "bool", "format": "str"},
    "picotool": {"reboot": "bool", "format": "str"},
    "esptool": {"chip": "str", "baud": "int", "address": "int", "flash_mode": "str", "flash_freq": "str",
                "flash_size": "str", "before": "str", "after": "str"},
    "ssh": {"host": "str", "user": "str", "port": "int", "python": "str", "workdir": "str"},
    "adb": {"workdir": "str", "serial": "str"},
    "local": {"python": "str"},
}

# the flash methods that write firmware to a microcontroller (the others deploy to Linux/Android devices)
FIRMWARE_FLASH_METHODS = ("qemu", "openocd", "pyocd", "picotool", "esptool", "st-flash")
