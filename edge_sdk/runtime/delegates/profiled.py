"""Delegates planned from device profiles: ``nnapi`` and ``edgetpu``.

Which nodes they take comes from the device profile's accelerator section
(``edge_sdk.targets.profiles.load_profile(name).supports(node, backend=...)``), so the partition report
(``Interpreter.partitions()``) works on any machine. Executing needs the device:

* ``edgetpu`` runs its partitions through the ``external`` path with ``libedgetpu.so.1`` (options such as
  ``{"device": "usb"}``). Note that libedgetpu's delegate only claims ``edgetpu-custom-op`` nodes, i.e. models
  compiled by ``edgetpu_compiler``: on an uncompiled model LiteRT's CPU kernels run the partition.
* ``nnapi`` runs only on Android, through an NNAPI external delegate library given as ``library=...``.

Where the device is missing, ``allocate_tensors`` raises ``DeviceError`` naming what is missing (the library,
the device, or the OS); ``partitions()`` still works, since planning never needs the device.
"""

from __future__ import annotations

import os
import sys

from edge_sdk.runtime.delegates.base import Delegate, Run
from edge_sdk.runtime.delegates.litert import ExternalDelegate
from edge_sdk.errors import DeviceError, ModelError, ProfileError
from edge_sdk.runtime.kernels.node import Node
from edge_sdk.model.types import Model


class ProfileDelegate(Delegate):
    """A delegate whose node list comes from a device profile and which executes through an external
    delegate library. ``profile``: an ``edge_sdk.targets.profiles.Profile``, a profile name for
    ``load_profile``, or any object with ``supports(node, backend=...)``.

    From the profile's ``[delegates.<backend>]`` section (when it has one) come the defaults for ``library``,
    ``max_partitions`` and the delegate options named in ``option_keys``; arguments override them.
    """

    profile_name = ""
    backend = ""
    default_library = ""
    option_keys: tuple[str, ...] = ()

    def __init__(self, profile=None, library: str | None = None, options: dict | None = None,
                 name: str | None = None, backend: str | None = None, max_partitions: int | None = None):
        self.name = name or type(self).name
        self.backend = backend or type(self).backend
        self._profile = profile if profile is not None else type(self).profile_name
        self._library = library
        self._options = None if options is None else dict(options)
        self._max_partitions = max_partitions
        self._executor: ExternalDelegate | None = None

    def _section(self):
        """The profile's Backend for this delegate, or None (a stand-in profile without sections)."""
        get = getattr(self.profile, "backend", None)
        if get is None:
            return None
        try:
            return get(self.backend)
        except (KeyError, ModelError, ProfileError):
            return None

    @property
    def library(self) -> str:
        if self._library is not None:
            return self._library
        section = self._section()
        return getattr(section, "library", None) or self.default_library

    @property
    def options(self) -> dict:
        if self._options is not None:
            return self._options
        section_options = getattr(self._section(), "options", None) or {}
        return {k: str(v) for k, v in section_options.items() if k in self.option_keys}

    @property
    def max_partitions(self) -> int | None:
        if self._max_partitions is not None:
            return self._max_partitions
        return getattr(self._section(), "max_partitions", None)

    @property
    def profile(self):
        if isinstance(self._profile, str):
            try:
                from edge_sdk.targets.profiles import load_profile
            except ImportError as exc:
                raise ModelError(f"{self.name} delegate: device profiles are not available ({exc})") from None
            self._profile = load_profile(self._profile)
        return self._profile

    def supports(self, node: Node) -> tuple[bool, str]:
        ok, reason = self.profile.supports(node, backend=self.backend)
        return bool(ok), str(reason)

    def executor(self) -> ExternalDelegate:
        if self._executor is None:
            self._executor = ExternalDelegate(self.library, self.options, name=self.name, device_hint=self.device_hint())
        return self._executor

    def device_hint(self) -> str:
        return ""

    def check_available(self) -> None:
        if not self.library:
            raise DeviceError(f"{self.name} delegate: no delegate library given (library=...)")
        self.executor().check_available()

    def prepare_partition(self, model: Model, subgraph: int, node_indices, inputs, outputs, nodes) -> Run:
        return self.executor().prepare_partition(model, subgraph, node_indices, inputs, outputs, nodes)


class EdgeTpuDelegate(ProfileDelegate):
    """Coral Edge TPU: planned from the ``coral-edgetpu-usb`` profile, executed with ``libedgetpu.so.1``."""

    name = "edgetpu"
    backend = "edgetpu"
    profile_name = "coral-edgetpu-usb"
    default_library = "libedgetpu.so.1"
    option_keys = ("device",)

    def device_hint(self) -> str:
        return "is a Coral Edge TPU connected, and is the user allowed to open it?"

    def check_available(self) -> None:
        try:
            super().check_available()
        except DeviceError as exc:
            raise DeviceError(
                f"{exc} — the Edge TPU runtime (libedgetpu1-std) and a Coral device are needed to execute; "
                "Interpreter.partitions() still gives the plan"
            ) from None


def on_android() -> bool:
    return hasattr(sys, "getandroidapilevel") or "ANDROID_ROOT" in os.environ


class NnapiDelegate(ProfileDelegate):
    """Android NNAPI: planned from the ``android-nnapi`` profile; executes only on Android, through an NNAPI
    external delegate library (``library=...``)."""

    name = "nnapi"
    backend = "nnapi"
    profile_name = "android-nnapi"
    default_library = ""

    def check_available(self) -> None:
        if not on_android():
            raise DeviceError(
                f"{self.name} delegate: NNAPI exists only on Android (this is {sys.platform}); "
                "Interpreter.partitions() still gives the plan"
            )
        if not self.library:
            raise DeviceError(
                f"{self.name} delegate: executing needs an NNAPI external delegate library (library=...)"
            )
        super().check_available()
