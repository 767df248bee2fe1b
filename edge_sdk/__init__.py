"""edge-sdk: take a trained neural network onto a device."""

from edge_sdk.errors import (
    ArenaTooSmallError,
    ConversionError,
    DeviceError,
    EdgeError,
    ModelError,
    UnsupportedOpError,
)

__version__ = "0.1.0"

__all__ = [
    "ArenaTooSmallError",
    "ConversionError",
    "DeviceError",
    "EdgeError",
    "Interpreter",
    "ModelError",
    "UnsupportedOpError",
    "__version__",
]


def __getattr__(name):
    # The interpreter pulls in the kernels: import it only when asked for.
    if name == "Interpreter":
        from edge_sdk.runtime.interpreter import Interpreter

        return Interpreter
    raise AttributeError(f"module 'edge_sdk' has no attribute {name!r}")
