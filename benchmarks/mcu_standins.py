"""Our own int8 stand-in models for the MCU comparison (issue 25; section 7 of benchmarks/c_runtime.py with
--mcu-zoo): model families the zoo (benchmarks/zoo.py, image networks through our converter) does not cover --
recurrent (LSTM, SVDF), 1-D temporal convolution, attention, element-wise-heavy networks -- written by our own
writer at several sizes, so that the kernels are measured against TFLM + CMSIS-NN (benchmarks/tflm_cmsis.py) on
more than ../shared's few models of each kind.

A family is a function returning its models' paths, registered with @family("a title"); c_runtime.py's section 7
shows one table per family. Each model is built once and cached under the zoo's cache folder by a hash of its
family function's source and its name (an edit of that function rebuilds its models, no other), written
atomically.

    python benchmarks/mcu_standins.py            # build every family, print the paths
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

FAMILIES: dict[str, Callable[[], list[Path]]] = {}  # title: function -> model paths


def family(title: str):
    """Register a family function under the title its section-7 table carries."""

    def register(fn: Callable[[], list[Path]]):
        FAMILIES[title] = fn
        return fn

    return register


def cached(name: str, builder: Callable, build: Callable[[], bytes]) -> Path:
    """The model ``name`` of family function ``builder``: built by ``build()`` when its cache file is missing.
    The key is the builder's source and the name, so an edit of one family rebuilds that family only."""
    import zoo

    key = hashlib.sha256(inspect.getsource(builder).encode() + name.encode()).hexdigest()[:16]
    path = zoo.cache_folder() / f"{name}_{key}.tflite"
    if not path.is_file():
        data = build()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path


def main() -> int:
    for title, fn in FAMILIES.items():
        print(title)
        for p in fn():
            print(f"   {p}")
    return 0


# ---------------------------------------------------------------------------------------------- families
# (each family below in its own section; keep the sections apart)


if __name__ == "__main__":
    raise SystemExit(main())
