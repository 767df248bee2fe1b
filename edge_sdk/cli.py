"""`edge`: a thin command line over the library.

Each command is a typed library function; this module only parses arguments, calls it, prints its result
(text, or JSON with --json) and maps our error types to exit codes — in one place, ``EXIT_CODES``.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import json
import sys

from edge_sdk import log
from edge_sdk import timeouts as T
from edge_sdk import errors
from edge_sdk.errors import BuildError, DeviceError, ModelError, UsageError
from edge_sdk.runtime.planner import MEMORY_PLANS  # documented there; a cheap import (no numpy)

# Exit statuses, --json error kinds and their documentation live in one place: edge_sdk.errors (ERRORS). The
# names below are that table, kept here for the commands and the tests that read them from the CLI.
EXIT_CODES = errors.EXIT_CODES
EXIT_STATUS_HELP = errors.exit_status_help()


# ------------------------------------------------------------------ argument types (bad values exit 2, naming the flag)
def _int_at_least(lo: int, what: str = "an integer"):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what} >= {lo}, not {text!r}") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"must be >= {lo}, not {v}")
        return v

    parse.__name__ = f"int>={lo}"
    return parse


def _port(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a TCP port 0..65535, not {text!r}") from None
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is 0..65535 (0: any free one), not {v}")
    return v


def _float_above(lo: float, inclusive: bool = False):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
        if v != v or v in (float("inf"), float("-inf")) or (v < lo if inclusive else v <= lo):
            raise argparse.ArgumentTypeError(f"must be {'>=' if inclusive else '>'} {lo:g}, not {text}")
        return v

    parse.__name__ = "number"
    return parse


def _probability(text: str) -> float:
    v = _float_above(0.0)(text)
    if v > 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], not {text}")
    return v


_positive = _int_at_least(1)
_non_negative = _int_at_least(0)
_seconds = _float_above(0.0)


def _shape_arg(text: str) -> tuple[str | None, tuple[int, ...]]:
    """--input-shape NAME:D0,D1,... or D0,D1,... (x also separates dims)."""
    name, sep, dims = text.rpartition(":")
    try:
        shape = tuple(int(d) for d in dims.replace("x", ",").split(",") if d.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME:D0,D1,... (or D0,D1,... for a one-input model), not {text!r}") from None
    if not shape or any(d < 1 for d in shape):
        raise argparse.ArgumentTypeError(f"dims must be positive integers, not {text!r}")
    return (name if sep else None), shape


def _input_shapes(items) -> dict | tuple | None:
    """The repeated --input-shape values: {name: shape}, or one bare shape (a one-input model)."""
    if not items:
        return None
    bare = [shape for name, shape in items if name is None]
    if bare:
        if len(items) > 1:
            raise UsageError("--input-shape: a bare shape (no NAME:) only for a model with one input, given once")
        return bare[0]
    shapes = {}
    for name, shape in items:
        if name in shapes:
            raise UsageError(f"--input-shape: input '{name}' given twice")
        shapes[name] = shape
    return shapes


def _input_shape_option(p) -> None:
    """--input-shape NAME:D0,D1,... (repeatable): the one definition `edge convert` and the commands that run, measure
    or plan a model (inspect, run, bench, serve, check, flash, profile, export, deploy with --host / --hosts /
    --inventory) share; parsed by _shape_arg and _input_shapes, applied by the library
    (edge_sdk.model.input_shapes)."""
    p.add_argument("--input-shape", action="append", type=_shape_arg, metavar="NAME:D0,D1,...",
                   help="the shape of an input with dynamic (-1 or symbolic) dims in its shape signature; "
                   "repeatable; a bare "
                   "D0,D1,... for a one-input model (default: the model's static shape; a -1 dim without it is an "
                   "error naming the input)")


def _value_arg(text: str) -> tuple[str, str]:
    """--input-value NAME=VALUE: VALUE a number or comma-separated numbers (true / false for a BOOL input). The
    text goes to the importer as it is, which gives it the input's declared element type."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE (a number or comma-separated numbers), not {text!r}")
    for part in value.split(","):
        part = part.strip()
        if part.lower() in ("true", "false"):
            continue
        try:
            number = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name}: expected a number or comma-separated numbers, not {value!r}") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"{name}: expected a finite number, not {part!r}")
    return name, value


def _input_values(items) -> dict | None:
    """The repeated --input-value values: {input name: value text}; a name given twice is a usage error."""
    if not items:
        return None
    values = {}
    for name, value in items:
        if name in values:
            raise UsageError(f"--input-value: input '{name}' given twice")
        values[name] = value
    return values


def _detection_options(args) -> dict | None:
    outputs = {k: (int(v) if v.isdigit() else v) for k, v in (("boxes", args.boxes), ("scores", args.scores)) if v}
    if args.scores and not args.boxes:
        raise UsageError("--scores needs --boxes too (the output holding the boxes)")
    return {"outputs": outputs} if outputs else None




def _memory_option(p, default=None, when: str = "") -> None:
    """--memory layer|inplace|min: the one definition `edge check`, `flash`, `profile`, `export` and `convert
    --target` share (edge_sdk.runtime.planner.MEMORY_PLANS; default None: auto, the layer plan unless it does
    not fit the profile's RAM budget, then the in-place plan, then the least-RAM plan)."""
    p.add_argument("--memory", choices=MEMORY_PLANS, default=default,
                   help=f"{when}the arena plan: layer (layer by layer), inplace (in-place ops, +0 MACs) or min (least "
                        "RAM: in place plus patch-based execution of a stage, extra MACs); "
                        + (f"default {default}" if default else
                           "default: layer, else inplace, else min, the first that fits the profile's RAM budget"))


def _backend_option(p, litert: bool = False) -> None:
    """--backend auto|python|c (bench: and litert) for `edge run`, `edge bench`, `edge serve`."""
    choices = ["auto", "python", "c"] + (["litert"] if litert else [])
    p.add_argument("--backend", default="auto", choices=choices,
                   help="the runtime: auto (default: on Linux the C runtime when it runs the model, else the Python "
                        "interpreter; the output says which and why), python, c" +
                        (", litert (LiteRT with its XNNPACK delegate)" if litert else ""))


def _print_json(obj) -> None:
    """A command's --json output: the object, indented, and a final newline. A NaN or inf float is written as null:
    json.dump's bare NaN is not JSON (jq, JavaScript and strict parsers refuse the whole document)."""
    json.dump(_finite_or_null(obj), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def _finite_or_null(obj):
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite_or_null(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite_or_null(v) for v in obj]
    return obj


# ------------------------------------------------------------------ files first, then settings (issue 27 point 4)
# What each command's files claim to be, checked in this order before any setting (a --target, --quantize,
# --memory ...) and before any work: a picture given as the model is named as that, never as "int8 quantization
# needs calibration data". (label in messages, argument attribute, claim); a list attribute (run's INPUTs) is
# checked file by file.
_MODEL = ("MODEL", "model", "tflite")
COMMAND_FILES: dict[str, list[tuple[str, str, str]]] = {
    "inspect": [_MODEL],
    "convert": [("SRC", "src", "source"), ("--calib", "calib", "calibration"), ("--eval", "eval", "evaluation"),
                ("--labels", "labels", "labels")],
    "evaluate": [("MODEL", "model", "source"), ("--data", "data", "labelled"), ("--reference", "reference", "source"),
                 ("--labels", "labels", "labels")],
    "check": [_MODEL],
    "deploy": [_MODEL, ("--hosts", "hosts", "hosts"), ("--inventory", "inventory", "inventory")],
    "fleet": [("--inventory", "inventory", "inventory")],
    "bench": [_MODEL, ("--inputs", "inputs", "arrays")],
    "bench --matrix": [("MODEL", "model", "source"), ("--calib", "calib", "calibration")],
    "generate": [_MODEL],
    "run": [_MODEL, ("INPUT", "inputs", "input"), ("--labels", "labels", "labels"),
            ("--frontend", "frontend", "tflite")],
    "serve": [_MODEL, ("--labels", "labels", "labels")],
    "flash": [_MODEL],
    "export": [_MODEL],
    "profile": [_MODEL, ("--inputs", "inputs", "arrays")],
}
FILE_CLAIMS = {  # what the messages call each claim
    "tflite": "a TFLite model",
    "source": "an ONNX or TFLite model",
    "calibration": "calibration data (a folder of images, an image, .npy or .npz)",
    "evaluation": "evaluation data (a folder of class folders, or .npz with x and y)",
    "labelled": "evaluation data (a folder of class folders, or .npz with x and y)",  # y required: edge evaluate
    "labels": "a labels file (UTF-8 text, one label per line)",
    "hosts": "a hosts file (UTF-8 text: user@host[:port] per line, or an Ansible INI inventory)",
    "inventory": "an Ansible INI inventory (UTF-8 text)",
    "input": "an image (JPEG/PNG/BMP), a .wav, a .npy array or an .npz of every input",
    "arrays": "input data (.npy, .npz, or a WAV for a model of raw samples)",
}
# First bytes -> what a file is, to say what was given instead (a PNG given as the model).
_MAGIC = ((b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"BM", "a BMP image"),
          (b"GIF8", "a GIF image"), (b"\x93NUMPY", "a .npy array"), (b"PK\x03\x04", "a zip archive (.npz?)"),
          (b"RIFF", "a RIFF file (WAV?)"), (b"%PDF", "a PDF document"))


def _what_it_is(path) -> str:
    """What a file looks like by its first bytes ("a PNG image", "a TFLite model", "text", "unknown bytes")."""
    with open(path, "rb") as f:
        head = f.read(512)
    if head[4:8] == b"TFL3":
        return "a TFLite model"
    found = next((what for magic, what in _MAGIC if head.startswith(magic)), None)
    if found:
        return found
    if not head:
        return "empty"
    try:
        head.decode("utf-8")
        return "text"
    except UnicodeDecodeError:
        return "unknown bytes"


def _not_a(path, label: str, claim: str, why: str = "") -> errors.DataError:
    """The one line for a file that is not what its argument claims: ModelError for models, DataError else."""
    is_model = claim in ("tflite", "source")
    kind = ModelError if is_model else errors.DataError
    detail = f": {why}" if why else f": it is {_what_it_is(path)}"
    return kind(f"{label} {path}: not {FILE_CLAIMS[claim]}{detail}")


def _check_npy(path, label: str, claim: str) -> None:
    """A .npy: its header read (memory-mapped: no data copied), numbers in it, not Python objects."""
    import numpy as np

    with open(path, "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            raise _not_a(path, label, claim, f"not a .npy array: it is {_what_it_is(path)}")
    try:
        np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        reason = " ".join(str(exc).split())
        if "pickle" in reason:
            raise _not_a(path, label, claim, "a .npy of Python objects, not numbers") from None
        raise _not_a(path, label, claim, f"not a .npy array: {reason[:120]}") from None


def nonfinite_said(path) -> str | None:
    """Where a .npy / .npz holds NaN or inf: "N of M value(s) ... first in sample K" (per array of an .npz, the
    first such array), or None when every float value is finite. Read sample by sample from a memory map (a .npy
    of gigabytes is scanned in slices of ~4 M values); an .npz's arrays are loaded one at a time."""
    import numpy as np

    from edge_sdk.tasks.pipeline import nonfinite_in

    if str(path).lower().endswith(".npz"):
        with np.load(path, allow_pickle=False) as archive:
            for key in archive.files:
                said = nonfinite_in(archive[key])
                if said:
                    return f"array '{key}': {said}"
        return None
    return nonfinite_in(np.load(path, mmap_mode="r", allow_pickle=False))


def _refuse_nonfinite_arrays(path, label: str, claim: str) -> None:
    """Data with NaN or inf (calibration, evaluation, bench / profile inputs): refused naming the file, the array
    and the first sample, before any setting is judged (a NaN sample turns calibration ranges and accuracy figures
    into NaN, or a model's input into confident-looking garbage)."""
    try:
        said = nonfinite_said(path)
    except (ValueError, OSError, EOFError) as exc:  # object arrays, a damaged member: not numbers
        raise _not_a(path, label, claim, " ".join(str(exc).split())[:160]) from None
    if said:
        raise errors.DataError(f"{label} {path}: {said}; refused: data must be finite numbers")


def _check_evaluation_npz(path, label: str) -> None:
    """Evaluation data as a .npz: x (the samples) and y (one integer class id per sample), else one line naming
    the flag and the file (it was said after the model ran, as "MODEL m: 359 predictions but 5 labels")."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            files = list(data.files)
            missing = [k for k in ("x", "y") if k not in files]
            y = None if missing else np.asarray(data["y"]).reshape(-1)
        x_shape = None if missing else _npz_member_shape(path, "x")  # from its header: x may be gigabytes
    except (ValueError, OSError, EOFError) as exc:
        raise _not_a(path, label, "labelled", " ".join(str(exc).split())[:160]) from None
    if missing:
        raise _not_a(path, label, "labelled", f"no array {' or '.join(missing)} (it has {', '.join(files) or 'none'})")
    x_count = x_shape[0] if x_shape else 1
    if y.shape[0] != x_count:
        raise _not_a(path, label, "labelled", f"{x_count} samples in x but {y.shape[0]} labels in y")
    if y.dtype.kind not in "iu" and not (y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y % 1 == 0)):
        raise _not_a(path, label, "labelled", f"y holds {y.dtype.name} values, not integer class ids")


def _npz_member_shape(path, key: str) -> tuple[int, ...]:
    """The shape of array ``key`` of an .npz, read from its .npy header (the data stays in the archive)."""
    import zipfile

    from numpy.lib import format as npy

    with zipfile.ZipFile(path) as archive, archive.open(f"{key}.npy") as f:
        version = npy.read_magic(f)
        header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
        return tuple(header(f)[0])


def _check_reads(path, label: str, claim: str) -> None:
    """A .tflite source read and verified (edge_sdk.model.read_model: every offset within the file), so that a
    truncated one is named as the file it is before any setting is judged."""
    from pathlib import Path

    from edge_sdk.model import read_model

    with open(path, "rb") as f:
        head = f.read(8)
    if head[4:8] != b"TFL3":
        raise _not_a(path, label, claim, f"it is {_what_it_is(path)}")
    try:
        model = read_model(Path(path).read_bytes())
    except ModelError as exc:
        raise _not_a(path, label, claim, f"a damaged or truncated TFLite file ({exc})") from None
    from edge_sdk.tools.run_backend import refuse_nan_weights

    refuse_nan_weights(model, path, label)


def _check_file_claim(path: str, label: str, claim: str) -> None:
    """One existing file (or folder) against its claim; raises ModelError / DataError naming it."""
    import zipfile
    from pathlib import Path

    p = Path(path)
    suffix = p.suffix.lower()
    if claim in ("calibration", "evaluation", "labelled") and p.is_dir():
        return  # a folder of images / class folders: read (and checked) by the converter
    if p.is_dir():
        raise IsADirectoryError(21, f"{label}: is a directory", str(p))
    if claim == "tflite":
        with open(p, "rb") as f:
            head = f.read(8)
        if head[4:8] != b"TFL3":
            hint = "; an ONNX model? convert it first: edge convert" if suffix == ".onnx" else ""
            raise _not_a(p, label, claim, f"it is {_what_it_is(p)}{hint}")
        return
    if claim == "source":
        from converters import source_format

        kind = source_format(p)
        if kind is None or p.stat().st_size == 0:
            raise _not_a(p, label, claim)
        if kind == "tflite":  # a truncated or damaged model: said now, not after convert() judged the settings
            _check_reads(p, label, claim)
        return
    if claim in ("labels", "hosts", "inventory"):  # text: a picture given as the list is named as that
        try:
            p.read_bytes()[: 1 << 16].decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < (1 << 16) - 4:  # not a character cut at the 64 KiB boundary
                raise _not_a(p, label, claim) from None
        return
    if suffix == ".npy" and claim in ("calibration", "input", "arrays"):
        _check_npy(p, label, claim)
    elif suffix == ".npz" and claim in ("calibration", "evaluation", "labelled", "arrays", "input"):
        if not zipfile.is_zipfile(p):
            raise _not_a(p, label, claim, f"not a .npz (zip) archive: it is {_what_it_is(p)}")
        if claim == "labelled":
            _check_evaluation_npz(p, label)
    elif claim == "labelled":  # neither a folder nor a .npz: named now, not after the model ran
        raise _not_a(p, label, claim)
    elif suffix in (".wav", ".wave") and claim in ("input", "arrays"):
        with open(p, "rb") as f:
            head = f.read(12)
        if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            raise _not_a(p, label, claim, f"not a WAV file: it is {_what_it_is(p)}")
    elif claim == "input" or (claim == "calibration" and suffix not in (".npy", ".npz")):
        from edge_sdk.tasks.pipeline import IMAGE_SUFFIXES

        if claim == "calibration" and suffix not in IMAGE_SUFFIXES:
            return  # the converter names what it takes
        import warnings

        from PIL import Image, UnidentifiedImageError

        try:
            with warnings.catch_warnings():  # a huge image: pipeline.load_image refuses it in one line, later
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                with Image.open(p):  # the header only: pixels are decoded when the image is used
                    pass
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
            if suffix in IMAGE_SUFFIXES:  # named an image: the reader's words (as pipeline.load_image says them)
                reason = " ".join(str(exc).split())[:200]
                raise errors.DataError(f"{label} {p}: cannot read the image ({reason}; it is {_what_it_is(p)})"
                                       ) from None
            raise _not_a(p, label, claim) from None
    elif claim == "arrays":
        raise _not_a(p, label, claim, f"a {suffix or 'suffix-less'} file")


def _check_files(args) -> None:
    """Every file a command names exists, then is what it claims (COMMAND_FILES), in argument order."""
    from pathlib import Path

    listed = []
    command = "bench --matrix" if args.command == "bench" and getattr(args, "matrix", False) else args.command
    if command == "bench":  # `edge bench MODEL x.npz`, as `edge run` takes it: said before MODEL x.npz is judged
        arrays = [m for m in args.model[1:] if str(m).lower().endswith((".npy", ".npz"))]
        if arrays:
            raise UsageError(f"{arrays[0]}: input data goes with --inputs (edge bench MODEL --inputs {arrays[0]})")
    for label, attr, claim in COMMAND_FILES.get(command, []):
        value = getattr(args, attr, None)
        for path in (value if isinstance(value, list) else [value]):
            if path is not None:
                listed.append((str(path), label, claim))
    for path, label, _ in listed:
        if not Path(path).exists():
            raise FileNotFoundError(2, f"{label}: no such file or directory", path)
    for path, label, claim in listed:
        _check_file_claim(path, label, claim)


def _check_data_values(args) -> None:
    """After the files and the settings, before any work: the arrays of calibration / evaluation data and of
    --inputs hold finite numbers (`edge run` INPUTs: _cmd_run, which --allow-nonfinite lets through)."""
    command = "bench --matrix" if args.command == "bench" and getattr(args, "matrix", False) else args.command
    for label, attr, claim in COMMAND_FILES.get(command, []):
        path = getattr(args, attr, None)
        if claim in ("calibration", "evaluation", "labelled", "arrays") and isinstance(path, str) \
                and path.lower().endswith((".npy", ".npz")):
            _refuse_nonfinite_arrays(path, label, claim)


def _closest(name: str, known: list[str]) -> str | None:
    """The known name closest to a mistyped one, or None: difflib's ratio against each whole name and against its
    first len(name) characters (a board's suffix, "stm32f746-disco", must not hide "stm32f747" -> stm32f746)."""
    import difflib

    def score(candidate: str) -> float:
        return max(difflib.SequenceMatcher(None, name, candidate).ratio(),
                   difflib.SequenceMatcher(None, name, candidate[: len(name)]).ratio())

    best = max(known, key=score, default=None)
    return best if best is not None and score(best) >= 0.6 else None


def _check_targets(args) -> None:
    """--target names a profile that exists (else exit 2 with the closest name: "did you mean"), and `edge flash`
    a microcontroller: both argument misuse, found before any work."""
    target = getattr(args, "target", None)
    if not isinstance(target, str) or target.endswith(".toml") or "/" in target:
        return  # a profile file: load_profile reads (and judges) it
    from edge_sdk.targets.profiles import list_profiles, load_profile

    if target not in list_profiles(include_abstract=True):
        known = list_profiles()
        closest = _closest(target, known)
        hint = f" (did you mean {closest}?)" if closest else ""
        raise UsageError(f"--target: unknown profile '{target}'{hint}; profiles: {', '.join(known)}")
    if args.command == "flash":
        from edge_sdk.targets.registry import FIRMWARE_FLASH_METHODS

        profile = load_profile(target)
        method = profile.flash.get("method")
        if method not in FIRMWARE_FLASH_METHODS:
            linux = " (use `edge deploy` for Linux boards)" if method == "ssh" else ""
            raise UsageError(f"--target {target}: flashes with {method!r}; `edge flash` builds firmware for "
                             f"microcontrollers{linux}")


def _cmd_inspect(args) -> int:
    from edge_sdk.tools.inspection import format_inspection, inspect_model

    report = inspect_model(args.model, input_shapes=_input_shapes(args.input_shape))
    if args.json:
        _print_json(report)
    else:
        sys.stdout.write(format_inspection(report))
    return 0


_exit_code = errors.exit_code


BUILD_PREFIX = "cannot build the C runtime: "


def _build_error_line(exc: BuildError) -> str:
    """A BuildError as one line (its message may carry the build's output): the first line, and when there is
    more, the compiler's first "error:" line (the cause; make's closing "Error 1" only repeats that it failed),
    else the last line of the output."""
    lines = [" ".join(line.split()) for line in str(exc).splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return type(exc).__name__
    head = lines[0][len(BUILD_PREFIX):] if lines[0].startswith(BUILD_PREFIX) else lines[0]
    output = lines[1:]
    if output:
        cause = next((line for line in output if "error:" in line.lower()), output[-1])
        head = f"{head} {cause}"
    return head[:500]


def _cmd_convert(args) -> int:
    from converters import convert
    from converters.report import format_conversion
    from edge_sdk.errors import ConversionError

    target = _check_convert_args(args)  # the loaded Profile (or None): convert() takes it as it is
    preprocess = None
    if args.mean is not None or args.std is not None:
        preprocess = {k: v for k, v in (("mean", args.mean), ("std", args.std)) if v is not None}
    try:
        with _on_ray(args):
            result = convert(args.src, target=target, quantize=args.quantize or "int8", calibration=args.calib,
                             calib_method=args.calib_method, io=args.io, labels=args.labels, preprocess=preprocess,
                             exclude=tuple(int(e) if e.isdigit() else e for e in args.exclude or ()), nhwc_io=args.nhwc_io,
                             eval_data=args.eval, precision=args.precision, min_snr=args.min_snr,
                             allow_lossy=args.allow_lossy, input_shapes=_input_shapes(args.input_shape),
                             input_values=_input_values(args.input_value), memory=args.memory,
                             stateful=args.stateful, task=args.task, boxes=args.boxes, scores=args.scores,
                             min_top1=args.min_top1, min_detections=args.min_detections, min_map_iou=args.min_map_iou,
                             equalize=not args.no_equalize, bias_correction=not args.no_bias_correction,
                             keep_int8=args.quantize == "int8")
    except (ConversionError, UsageError) as exc:  # a missing --calib is found only once the source is read
        if not args.json:
            raise
        _print_json({"error": str(exc).splitlines()[0], "kind": errors.error_kind(exc), "exit": _exit_code(exc),
                     "problems": getattr(exc, "problems", []), "written": None})
        sys.stderr.write(f"edge convert: error: {exc}\n")
        return _exit_code(exc)
    result.write(args.output)  # the bytes convert() made (and its check measured): one serialisation
    if args.json:
        _print_json({**result.report, "written": args.output})
    else:
        sys.stdout.write(format_conversion(result.report))
        sys.stdout.write(f"wrote {args.output} ({len(result.tflite)} bytes)\n")
    return 0


def _check_convert_args(args):
    """Everything `edge convert` can check before minutes of work: paths exist, the output folder exists and is
    writable, the target profile loads (returned, so that convert() does not load it again; None without
    --target)."""
    import os
    from pathlib import Path

    for flag, path in (("SRC", args.src), ("--calib", args.calib), ("--labels", args.labels), ("--eval", args.eval)):
        if path is not None and not Path(path).exists():
            raise FileNotFoundError(2, f"{flag}: no such file or directory", str(path))
    out = Path(args.output)
    folder = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise UsageError(f"-o/--output {out} is a folder; give the .tflite file to write")
    if out.exists() and Path(args.src).exists() and os.path.samefile(out, args.src):
        raise UsageError(f"-o/--output {out} is the source model; give another file to write")
    if out.suffix.lower() == ".onnx":  # a TFLite flatbuffer under an ONNX name: the arguments swapped, most likely
        raise UsageError(f"-o/--output {out}: edge convert writes a .tflite model; give a .tflite file to write")
    if not folder.is_dir():
        raise UsageError(f"-o/--output {out}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"-o/--output {out}: the folder {folder} is not writable")
    profile = None
    if args.target:
        from edge_sdk.targets.profiles import load_profile

        profile = load_profile(args.target)  # ProfileError (exit 7) names the unknown profile and the known ones
    if args.input_shape:
        _input_shapes(args.input_shape)
    _input_values(args.input_value)  # a name given twice: exit 2 before any work
    if args.memory is not None and not args.target:
        raise UsageError("--memory chooses the arena plan of the --target check: give --target PROFILE too")
    _check_data_values(args)  # NaN in --calib / --eval: after the settings, before minutes of work
    return profile


def _ray_flags(p, what: str) -> None:
    p.add_argument("--ray", nargs="?", const="", metavar="ADDRESS",
                   help=f"{what} on Ray, one model per worker: on the cluster at ADDRESS (auto, ray://host:10001), "
                        "or on a Ray started here (pip install 'edge-sdk[ray]')")
    p.add_argument("--ray-workers", type=int, metavar="N", help="Ray workers (default: the cluster's CPUs)")


def _on_ray(args):
    """The Ray pool of --ray for the command's duration (edge_sdk.tasks.scale_ray), or nothing without it."""
    if getattr(args, "ray", None) is None:
        return contextlib.nullcontext()
    from edge_sdk.tasks import scale_ray

    if args.ray_workers is not None and args.ray_workers < 1:
        raise errors.UsageError(f"--ray-workers {args.ray_workers}: give 1 or more")
    return scale_ray.cluster(args.ray or None, args.ray_workers)


def _cmd_evaluate(args) -> int:
    from converters.evaluate import evaluate
    from converters.report import format_evaluation

    with _on_ray(args):
        report = evaluate(args.model, args.data, reference=args.reference, labels=args.labels, plot=args.plot)
    if args.json:
        _print_json(report)
    else:
        sys.stdout.write(format_evaluation(report))
    return 0


def _cmd_targets(args) -> int:
    from edge_sdk.targets.profiles import list_profiles, load_profile

    rows = [load_profile(name).summary() for name in list_profiles()]
    if args.json:
        _print_json(rows)
        return 0
    head = ("name", "kind", "arch", "cpu", "MHz", "arena RAM", "model flash", "delegates")

    def size(n: int) -> str:
        return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n / 1024:g} KiB"

    table = [head] + [
        (r["name"], r["kind"], r["arch"], r["cpu"], str(r["clock_hz"] // 1_000_000) if r["clock_hz"] else "-",
         size(r["ram_arena_bytes"]), size(r["flash_model_bytes"]),
         ", ".join(f"{d}*" if d == r["preferred_backend"] else d for d in r["delegates"]) or "-")
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        sys.stdout.write("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")
    sys.stdout.write("(* = the preferred backend; the rest fall back to the CPU)\n")
    return 0


# `edge check` exits 0 when the model runs (or runs partly on a delegate), CHECK_FAILS_EXIT when it cannot run
# on the target; errors reading the model or the profile keep their EXIT_CODES.
CHECK_FAILS_EXIT = 1


def _cmd_check(args) -> int:
    from edge_sdk.targets.check import FAILS, check_model, format_check

    from edge_sdk.targets.profiles import load_profile

    profile = load_profile(args.target)
    if args.link and profile.runtime != "c":  # argument misuse: exit 2 before any work
        raise UsageError(f"--link builds microcontroller firmware; {profile.name} runs the Python interpreter (no "
                         "firmware to link)")
    input_shapes = _input_shapes(args.input_shape)
    result = check_model(args.model, profile, memory=args.memory, input_shapes=input_shapes)
    if args.link:
        from edge_sdk.model.input_shapes import shaped_model_path
        from edge_sdk.tools.flash import firmware_size

        result.apply_link(firmware_size(shaped_model_path(args.model, input_shapes), profile))
    if args.json:
        _print_json(result.to_dict())
    else:
        sys.stdout.write(format_check(result))
    return CHECK_FAILS_EXIT if result.verdict == FAILS else 0


def _threads_arg(text: str) -> int:
    """--threads: an integer >= 1 (argparse reports anything else as argument misuse, exit 2)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, not {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, not {n}")
    return n


def _model_bytes(path: str) -> bytes:
    """A model file's bytes (FileNotFoundError / IsADirectoryError: exit 6, naming it)."""
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(21, "Is a directory", str(p))
    return p.read_bytes()


def _cmd_run(args) -> int:
    from edge_sdk.tasks.pipeline import check_labels_file, format_results, run_inputs
    from edge_sdk.tools.run_backend import choose_runtime, warn_nan_weights
    from pathlib import Path

    for p in args.inputs:  # every file is there before the model is even read (and the C runtime tried)
        if not Path(p).is_file():
            raise FileNotFoundError(2, "No such file" if not Path(p).exists() else "Not a file", p)
    check_labels_file(args.labels)
    if not args.allow_nonfinite:  # NaN in: refused before the model is read (with the flag run_inputs warns)
        import numpy as np

        from edge_sdk.tasks.pipeline import refuse_nonfinite

        for p in args.inputs:
            if p.lower().endswith(".npy"):
                refuse_nonfinite(np.load(p, mmap_mode="r", allow_pickle=False), p)
    from edge_sdk.model.input_shapes import shaped_model_path

    rows, text, warned = [], [], False
    for input_shapes, files in _run_shapes(args):
        model = shaped_model_path(args.model, input_shapes)  # UsageError before the runtime is chosen
        content = _model_bytes(model)
        if not warned:
            warn_nan_weights(content, args.model)  # a NaN weight named before any result (issue 27)
            warned = True
        choice = choose_runtime(content, args.backend, num_threads=args.threads)
        results = run_inputs(model, files, top_k=args.top_k, task=args.task, labels=args.labels,
                             frontend=args.frontend, detection=_detection_options(args), num_threads=args.threads,
                             backend=choice.name, allow_nonfinite=args.allow_nonfinite, sample_rate=args.sample_rate,
                             name=args.model)
        if not args.allow_nonfinite:  # with the flag, run_inputs has already warned that such scores mean nothing
            _warn_nonfinite_scores(results, args.model)
        else:
            _note_nonfinite_inputs(results)
        rows += [{**r, **choice.to_dict()} for r in results]
        text.append(choice.line() + "\n" + format_results(results))
    if args.json:
        _print_json(rows)
    else:
        sys.stdout.write("".join(text))
    return 0


def _run_shapes(args) -> list[tuple[object, list[str]]]:
    """[(the input shapes to run at, the INPUT files run at them)], in argument order: --input-shape for every
    file; and when the model has an input whose size only a file can give (a -1 beyond the batch axis that
    --input-shape leaves open) and every INPUT is a .npy / .npz, each file's array shapes fix it as --input-shape
    would (edge_sdk.tools.bench.input_shapes_from, `edge bench --inputs`'s rule); consecutive files of the same
    shapes share one model. A file that cannot be the model's input is a UsageError naming it and the input."""
    given = _input_shapes(args.input_shape)
    groups = (_shapes_from_files(args.model, list(args.inputs), given, check_given=True)
              or _shapes_from_wavs(args, given))
    # the inputs a file sized: no "ran at its stored size" note for them (_placeholder_note)
    args.sized_by_files = {name for shapes, _ in groups or [] if isinstance(shapes, dict) for name in shapes}
    return groups or [(given, list(args.inputs))]


def _shapes_from_wavs(args, given) -> list[tuple[object, list[str]]] | None:
    """_run_shapes' groups for WAV INPUTs to a model of raw samples of any length ([-1, -1]): each file's length
    at the model's rate (pipeline.raw_audio_shapes), consecutive files of one length sharing a model; None
    without such files or model, or when --input-shape / --frontend already say the shape."""
    from pathlib import Path

    from edge_sdk.model import read_model
    from edge_sdk.tasks.pipeline import AUDIO_SUFFIXES, raw_audio_shapes

    files = list(args.inputs)
    if given is not None or args.frontend or not files or not all(p.lower().endswith(AUDIO_SUFFIXES) for p in files):
        return None
    shapes = raw_audio_shapes(read_model(_model_bytes(args.model)), files, args.sample_rate, Path(args.model).name)
    if shapes is None:
        return None
    groups: list[tuple[object, list[str]]] = []
    for p, shape in zip(files, shapes):
        if groups and groups[-1][0] == shape:
            groups[-1][1].append(p)
        else:
            groups.append((shape, [p]))
    return groups


def _shapes_from_files(model_path, files: list[str], given,
                       check_given: bool = False) -> list[tuple[object, list[str]]] | None:
    """_run_shapes' groups, or None when the files give no shape (one is not a .npy / .npz, --input-shape is a
    bare shape or sets every dynamic input, the model has none): `edge run` INPUTs, `edge profile --inputs`.
    ``check_given``: each .npy / .npz must fit the shapes --input-shape gives too (`edge run`, whose runtime would
    otherwise refuse the array later with a model error; `edge profile` checks its file itself)."""
    from edge_sdk.model import read_model
    from edge_sdk.model.input_shapes import dynamic_inputs
    from edge_sdk.tools.bench import input_shapes_from, read_input_file

    if not files or not all(str(p).lower().endswith((".npy", ".npz")) for p in files):
        return None
    model = read_model(_model_bytes(model_path))
    if check_given and given is not None:  # a file contradicting --input-shape: one line naming both, exit 2
        for p in files:
            input_shapes_from(p, model, read_input_file(p, model, model_path), given)
    if not isinstance(given, (dict, type(None))) or not [
            name for name in _sized_by_files(model, dynamic_inputs) if name not in (given or {})]:
        return None
    groups: list[tuple[object, list[str]]] = []
    for p in files:
        shapes = input_shapes_from(p, model, read_input_file(p, model, model_path), given)
        if groups and groups[-1][0] == shapes:
            groups[-1][1].append(p)
        else:
            groups.append((shapes, [p]))
    return groups


def _sized_by_files(model, dynamic_inputs) -> list[str]:
    """The inputs whose size a .npy / .npz gives `edge run`: the dynamic ones (a -1 beyond the batch axis) and the
    rank-2 ones with a leading -1 ([-1, C]: frames x features, or a batch; either way the array's rows are what
    LiteRT would be resized to and run once at)."""
    from edge_sdk.model.input_shapes import judged_shapes

    return [name for name, _, _ in dynamic_inputs(model)] + [
        i["name"] for i in judged_shapes(model) if len(i["signature"]) == 2 and i["signature"][0] < 0 <= i["signature"][1]]


def _note_nonfinite_inputs(results) -> None:
    """--allow-nonfinite: each result of a .npy / .npz holding NaN or inf carries ``warnings`` saying so (the --json
    a script reads, as stderr's warning line tells a person): its scores mean nothing."""
    for r in results:
        path = str(r.get("input"))
        said = nonfinite_said(path) if path.lower().endswith((".npy", ".npz")) else None
        if said:
            r["warnings"] = [f"{path}: {said}; run anyway (--allow-nonfinite): its scores mean nothing"]


def _warn_nonfinite_scores(results, model) -> None:
    """A model that computes NaN (a NaN weight, an overflow) printed "nan" scores as if they were an answer: one
    warning line per input names it (the --json scores are null)."""
    import math

    for r in results:
        scores = [p.get("score") for p in r.get("predictions") or () if isinstance(p, dict)]
        bad = sum(1 for v in scores if isinstance(v, float) and not math.isfinite(v))
        if bad:
            log.warning(f"{r.get('input')}" + (f" row {r['row']}" if "row" in r else "") + f": {bad} of {len(scores)} score(s) are NaN or inf: MODEL {model} computes "
                        "non-finite outputs for it (a NaN weight, or an overflow); they are no answer")


def _cmd_serve(args) -> int:
    from edge_sdk.tools.serve import serve

    detection = _detection_options(args)

    def ready(server):
        sys.stdout.write(f"serving {server.name} on {server.url} (max batch {server.max_batch}, "
                         f"{server.instances} instance(s))\n")
        sys.stdout.write(server.runtime.line() + "\n")  # the batching note (if any) went to stderr, once (serve.py)
        for name, sig in server.dynamic.items():  # no --input-shape for it: every request brings its own size
            sys.stdout.write(f"input '{name}' {list(sig)}: each request runs at its own shape\n")
        sys.stdout.flush()

    # Ctrl-C / SIGTERM: serve() drains and stops the server, then main() exits 130 / 143 like every command.
    serve(args.model, port=args.port, host=args.host, ready=ready, max_batch=args.max_batch,
          max_wait_ms=args.max_wait_ms, instances=args.instances, max_queue=args.max_queue, labels=args.labels,
          task=args.task, detection=detection, num_threads=args.threads, backend=args.backend,
          input_shapes=_input_shapes(args.input_shape), sample_rate=args.sample_rate)
    return 0


def _cmd_rollout(args) -> int:
    from edge_sdk.tools import fleet

    if not args.model or args.host or args.hosts or args.status:
        raise UsageError("edge deploy --inventory FILE takes a MODEL and no --host / --hosts / --status "
                         "(edge fleet status --inventory FILE reads the hosts)")
    reports = fleet.rollout(args.model, args.inventory, waves=args.wave, max_fail=args.max_fail,
                            remote_dir=args.remote_dir, build_c=not args.no_c_backend,
                            input_shapes=_input_shapes(args.input_shape))
    if args.json:
        _print_json(reports)
    else:
        sys.stdout.write(fleet.format_reports(reports))
    return 0 if all(r["status"] in ("ok", "current") for r in reports) else _exit_code(DeviceError())


def _cmd_fleet(args) -> int:
    from edge_sdk.tools import fleet

    fleet.require_ansible()  # the same extra as the rollout: its absence is said before any host is read
    reports = fleet.fleet_status(args.inventory, remote_dir=args.remote_dir)
    if args.json:
        _print_json(reports)
    else:
        sys.stdout.write(fleet.format_reports(reports))
    return _exit_code(DeviceError()) if any("error" in r for r in reports) else 0


def _cmd_deploy(args) -> int:
    from edge_sdk.tools import deploy as d

    if args.inventory:
        return _cmd_rollout(args)
    if args.wave or args.max_fail != "0%":
        raise UsageError("--wave and --max-fail go with --inventory FILE")
    conn = dict(identity=args.identity, accept_new_host_key=args.accept_new_host_key, remote_dir=args.remote_dir,
                python=args.python, connect_timeout=args.connect_timeout)
    if args.ship_c_library and args.no_c_backend:
        raise UsageError("--ship-c-library and --no-c-backend contradict each other: give one")
    if args.host and args.hosts or not (args.host or args.hosts or args.target):
        raise UsageError("give one of --host USER@HOST[:PORT] and --hosts FILE (or a --target whose [flash] names a host)")
    hosts = d.read_hosts(args.hosts) if args.hosts else [args.host]  # None: the profile's host
    if args.status:
        reports = []
        for h in hosts:
            try:
                reports.append(d.status(h, target=args.target, **conn))
            except DeviceError as exc:
                if not args.hosts:
                    raise
                reports.append({"host": getattr(h, "label", h), "error": str(exc)})
        if args.json:
            _print_json(reports if args.hosts else reports[0])
        else:
            for h, r in zip(hosts, reports, strict=True):
                label = getattr(h, "label", h) or args.target
                sys.stdout.write(f"{label}: error: {r['error']}\n" if r and "error" in r else d.format_status(r, label))
        return _exit_code(DeviceError()) if any(r and "error" in r for r in reports) else 0
    if not args.model:
        raise UsageError("edge deploy needs a MODEL (or --status)")
    kwargs = dict(target=args.target, offline=args.offline, system_site_packages=args.system_site_packages,
                  build_c=not args.no_c_backend, ship_c="always" if args.ship_c_library else "auto",
                  input_shapes=_input_shapes(args.input_shape), **conn)
    if args.hosts:
        results = d.deploy_fleet(args.model, hosts, max_workers=args.jobs, **kwargs)
    else:
        results = [d.deploy(args.model, args.host, **kwargs)]
    if args.json:
        out = [r.to_dict() for r in results]
        _print_json(out if args.hosts else out[0])
    elif args.hosts:
        sys.stdout.write(d.format_results(results))
    else:
        r = results[0]
        m = r.manifest["model"]
        sys.stdout.write(f"deployed {m['name']} to {r.target.label}:{m['path']} (sha256 {m['sha256'][:12]}, "
                         f"runtime {r.manifest['runtime']['venv']}, {r.seconds:.1f} s)\n")
        rc = r.manifest.get("runtime_choice") or {}
        if rc:
            sys.stdout.write(f"runtime: {rc.get('runtime')} ({rc.get('runtime_reason')})\n")
        for note in r.notes:
            sys.stdout.write(f"note: {note}\n")
    return 0 if all(r.ok for r in results) else _exit_code(DeviceError())


def _cmd_bench(args) -> int:
    from edge_sdk.tools.bench import bench, format_bench

    if args.matrix:
        return _bench_matrix(args)
    if len(args.model) > 1 or args.matrix_target or args.precision or args.calib or args.ray is not None:
        raise UsageError("several models, --target, --precision, --calib and --ray belong to --matrix")
    report = bench(args.model[0], args.host, runs=args.runs, warmup=args.warmup, threads=args.threads,
                   backend=args.backend, identity=args.identity, accept_new_host_key=args.accept_new_host_key,
                   remote_dir=args.remote_dir, profile_runs=args.profile_runs, trace=args.trace, csv=args.csv,
                   plot=args.plot, input_shapes=_input_shapes(args.input_shape), inputs=args.inputs,
                   sample_rate=args.sample_rate)
    if args.json:
        _print_json(report)
    else:
        sys.stdout.write(format_bench(report))
    return 0


def _bench_matrix(args) -> int:
    """`edge bench --matrix`: models x targets x precisions on this machine (edge_sdk.tools.bench_matrix)."""
    from converters import convert
    from edge_sdk.tools.bench_matrix import bench_matrix, format_matrix

    if (args.host or args.trace or args.csv or args.plot or args.input_shape or args.threads or args.backend != "auto"
            or args.inputs):
        raise UsageError("--matrix benchmarks here with each target's runtime: --host, --backend, --threads, "
                         "--input-shape, --inputs and --trace/--csv/--plot are for one model")
    if args.ray_workers is not None and args.ray is None:
        raise UsageError("--ray-workers goes with --ray")
    with _on_ray(args):
        report = bench_matrix(args.model, args.matrix_target, args.precision, convert=convert,
                              calibration=args.calib, runs=args.runs, warmup=args.warmup,
                              profile_runs=args.profile_runs)
    if args.json:
        _print_json(report)
    else:
        sys.stdout.write(format_matrix(report))
    return 0


def _cmd_flash(args) -> int:
    from edge_sdk.tools.flash import flash, format_flash

    result = flash(args.model, args.target, port=args.port, build_dir=args.build_dir, memory=args.memory,
                   input_shapes=_input_shapes(args.input_shape))
    try:
        if args.json:
            _print_json(result.to_dict())
        else:
            sys.stdout.write(format_flash(result))
        sys.stdout.flush()
    except KeyboardInterrupt:  # the user never saw the board's URL: it does not stay behind either
        if result.method == "qemu" and not result.reused and result.port:
            from edge_sdk.device.qemu_board import stop_board

            stop_board(result.port)
        raise
    return 0


def _cmd_export(args) -> int:
    from edge_sdk.tools.export import export, format_export

    result = export(args.model, args.target, args.format, args.output, memory=args.memory,
                    input_shapes=_input_shapes(args.input_shape))
    if args.json:
        _print_json(result.to_dict())
    else:
        sys.stdout.write(format_export(result))
    return 0


def _cmd_board(args) -> int:
    from edge_sdk.device.qemu_board import describe_owner, is_mine, list_boards, stop_board

    if args.action == "stop":
        stopped = stop_board(args.url, all=args.all, scope="everyone" if args.everyone else "checkout")
        if args.json:
            _print_json([b["url"] for b in stopped])
        else:
            for b in stopped:
                sys.stdout.write(f"stopped {b['url']} (pid {b['pid']})\n")
            if args.all and not stopped:
                sys.stdout.write("no running boards of yours" + ("" if args.everyone else
                                 " (edge board list shows every owner's; --everyone stops them too)") + "\n")
        return 0
    boards = list_boards()
    if args.json:
        _print_json([{**b, "mine": is_mine(b)} for b in boards])
    else:
        for b in boards:
            sys.stdout.write(f"{b['url']}  {b['profile']}  pid {b['pid']}  {b.get('model', '')}  "
                             f"owner: {describe_owner(b)}\n")
        if not boards:
            sys.stdout.write("no running boards\n")
    return 0


def _cmd_profile(args) -> int:
    from edge_sdk.tools.profile import format_profile, profile_model, public, write_csv, write_plot, write_trace

    input_shapes = _input_shapes(args.input_shape)
    if args.inputs:  # a dynamic input's size from the --inputs file, as `edge run` / `edge bench --inputs` take it
        input_shapes = (_shapes_from_files(args.model, [args.inputs], input_shapes) or [(input_shapes, [])])[0][0]
    report = profile_model(args.model, args.target, port=args.port, runs=args.runs, inputs=args.inputs,
                           seed=args.seed, timeout=args.timeout, retries=args.retries, build_dir=args.build_dir,
                           memory=args.memory, input_shapes=input_shapes)
    for path, write in ((args.trace, write_trace), (args.csv, write_csv), (args.plot, write_plot)):
        if path:
            write(report, path)
    if args.json:
        _print_json(public(report))
    else:
        sys.stdout.write(format_profile(report))
    return 0 if report["validated"] else 1


def _cmd_generate(args) -> int:
    from edge_sdk.tasks.generate import Generator, format_stats

    sampling = args.temperature is not None or args.top_k is not None or args.top_p is not None
    if args.greedy and sampling:
        raise UsageError("--greedy cannot be combined with --temperature/--top-k/--top-p")
    on_device = args.target is not None or args.port is not None
    if on_device and sampling:
        raise UsageError("generation on a device (--target/--port) is greedy only")
    gen = None if on_device else Generator(args.model, backend=args.backend, num_threads=args.threads)

    def stream(piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    if not args.json:
        stream(args.prompt)
    if on_device:  # the GENERATE command: prefill and decode run on the board, the cache stays there
        from edge_sdk.tools.generate import generate_on_device

        result = generate_on_device(args.model, args.target, args.port, args.prompt, args.max_tokens,
                                    on_text=None if args.json else stream)
    else:
        result = gen.generate(args.prompt, max_tokens=args.max_tokens, greedy=not sampling,
                              temperature=1.0 if args.temperature is None else args.temperature, top_k=args.top_k,
                              top_p=args.top_p, seed=args.seed, on_text=None if args.json else stream)
    if args.json:
        _print_json(result)
    else:
        sys.stdout.write("\n")
        sys.stderr.write(format_stats(result))
    return 0


DEFAULT_FLASH_TARGET = "qemu-mps2-an386"

CALIBRATION_DATA_HELP = """\
calibration data (--calib):
  a folder   images (JPEG/PNG/BMP): resized to the input, pixels scaled to 0..1, then --mean/--std
  .npy       samples along axis 0, each shaped like the input ([N, H, W, C] or [N, C, H, W], either
             layout for an image input; [N, ...] otherwise) -- float32 values exactly as the model
             takes them (already pre-processed), or uint8 0..255 pictures ([N, H, W, C] or
             [N, C, H, W]), which are pre-processed like a folder of images
  .npz       one array per input, by input name (x for a one-input model), as for .npy
evaluation data (--eval):
  a folder   one sub-folder of images per class (named as the labels), pre-processed as above
  .npz       x: float32 samples as for --calib .npy (already pre-processed); y: integer class ids [N]
every value must be finite: NaN or inf is refused, naming the file and the sample index
"""

SERVE_HTTP_HELP = """\
HTTP requests:
  POST /predict  Content-Type: application/json
      {"inputs": [[...]]}                    nested lists shaped like the (one) input, batch axis optional
      {"inputs": {"NAME": [[...]], ...}}     by input name, for models with several inputs
      {"image": "<base64 JPEG/PNG>"}         image models: the manifest's pre-processing is applied
      optional: "raw": true (values are the tensor's own integers), "top_k": K
      answer: {"outputs": [...dequantized...], "predictions": [{"label", "score"}] | "detections": [...]}
  POST /predict  Content-Type: audio/wav   a 16-bit PCM WAV for a model of raw samples ([-1], [1, -1]: its
      length; [1, N]: N samples) at the model's rate (--sample-rate or the manifest)
  POST /predict  Content-Type: application/octet-stream, X-Shape: 1,96,96,1, X-Dtype: int8
      the tensor's bytes (little-endian, C order); Accept: application/octet-stream for raw output 0
  GET /health    status, inputs, outputs, batching (and why not)
  GET /metrics   requests, responses by status (503s of --max-queue and of too many connections
                 included), batch sizes, latency p50/p90/p99 in ms
  bad requests get 4xx with {"error": reason}; overload 503 with Retry-After
"""


# --json on the command line: argparse's usage errors are a JSON object on stdout too (set by main per call).
_JSON_ERRORS: contextvars.ContextVar[bool] = contextvars.ContextVar("edge_json_errors", default=False)


class _Parser(argparse.ArgumentParser):
    """argparse's parser (its subcommands' parsers are of this class too) whose usage errors, with --json on the
    command line, are also ``{"error", "kind": "usage", "exit": 2}`` on stdout; the line and exit 2 stay
    argparse's."""

    def error(self, message):
        if _JSON_ERRORS.get():
            _print_json({"error": message, "kind": errors.error_kind(UsageError()), "exit": 2})
            sys.stdout.flush()
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="edge", description="edge-sdk: take a trained network onto a device.",
                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_STATUS_HELP)
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more detail on stderr (-vv: debug)")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("inspect", help="ops, tensors, quantization, MACs and the arena plan of a .tflite model")
    p.add_argument("model", help="path to a .tflite file")
    _input_shape_option(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_inspect)

    def fraction(text: str) -> float:  # a task goal: exit 2 naming the flag when it is not in [0, 1]
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0.0 <= value <= 1.0:
            raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1], not {text!r}")
        return value

    guard_help = """
The accuracy guard (every lossy mode: int8, int16x8, fp16, dynamic): the converted model runs beside the float
one on held-back calibration samples (fp16 / dynamic: the first calibration samples, else the --eval data) and
each output's SNR is measured (--min-snr). When the model says what it is, its task is judged too (on the
--eval data when given, else on those samples) and decides:
  classification  top-1 agreement with the float model >= --min-top1 (0.99); top-5 shown
  detection       float detections kept >= --min-detections (0.9): a converted detection of the same class,
                  IoU >= 0.5, score within 0.05; extra detections <= 10% of the float ones
  segmentation    map IoU >= --min-map-iou (0.9)
The task is known from --boxes/--scores, --task, a .tflite source's manifest, a TFLite_Detection_PostProcess
op, a SOFTMAX output or one score per --labels entry. A model whose task is kept is written even when an
output's SNR is low (the report says both); one whose task is not kept is refused unless --allow-lossy.
"""
    p = sub.add_parser(
        "convert", help="convert an ONNX or float .tflite model to an int8/fp16 TFLite package",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=CALIBRATION_DATA_HELP + guard_help)
    p.add_argument("src", help="the source model (.onnx or float .tflite)")
    p.add_argument("-o", "--output", required=True, help="the .tflite to write (only when conversion succeeds)")
    p.add_argument("--target", help="device profile to check against before writing (default: none)")
    _memory_option(p, when="with --target: the check's ")
    p.add_argument("--quantize", choices=["int8", "fp16", "dynamic", "int16x8", "none"],
                   help="quantization (default int8; on a float-first --target, the Linux boards, an int8 model "
                   "estimated slower than its float source from the op table's speed facts is not written, the "
                   "float model is, and the report says so; --quantize int8 given explicitly writes the int8 model "
                   "anyway, with a note)")
    p.add_argument("--calib", help="calibration data: a folder of images, .npy or .npz (see below; needed for "
                   "int8 and int16x8, unless a quantized ONNX (QDQ) source gives every activation range; fp16 and "
                   "dynamic: the accuracy guard measures on it)")
    p.add_argument("--calib-method", default="minmax",
                   choices=["minmax", "percentile", "mse", "auto", "least-error"], metavar="METHOD",
                   help="minmax, percentile, mse, auto or least-error: how activation ranges are taken from the "
                   "calibration data (default minmax; auto: builds "
                   "the model with each and keeps min/max unless another set measures 0.5 dB better; the report and "
                   "the manifest name the one kept; least-error: each tensor's range by the error it causes in the "
                   "ops that read it)")
    p.add_argument("--no-equalize", action="store_true",
                   help="int8 / int16x8: no cross-layer equalization of conv -> conv pairs (on by default; the "
                   "report lists the pairs it equalized)")
    p.add_argument("--no-bias-correction", action="store_true",
                   help="int8: keep each layer's bias as it is (by default the mean shift its rounded weights cause "
                   "on the calibration data is taken off; the report lists the layers)")
    _input_shape_option(p)
    p.add_argument("--input-value", action="append", type=_value_arg, metavar="NAME=VALUE",
                   help="pin an ONNX input to a constant (VALUE: a number or comma-separated numbers); it leaves the "
                   "model's inputs and what depends on it folds (an If on a sample-rate input keeps one branch); "
                   "repeatable")
    p.add_argument("--io", default="int8", choices=["int8", "float32"],
                   help="model input/output type in int modes (default int8)")
    p.add_argument("--labels", help="labels file, one per line")
    p.add_argument("--mean", type=float, nargs="+", help="input mean per channel (after scaling pixels to 0..1)")
    p.add_argument("--std", type=float, nargs="+", help="input std per channel")
    p.add_argument("--nhwc-io", action="store_true", help="channels-last model input/output")
    p.add_argument("--exclude", action="append", metavar="NODE", help="keep this op (index or output tensor name) in float; repeatable")
    p.add_argument("--eval", metavar="DATA", help="evaluation data (.npz with x, y or a folder of class folders)")
    p.add_argument("--precision", default="auto", choices=["auto", "int8"],
                   help="auto (default): widen the ops that lose the most accuracy to float32 until every output "
                        "meets --min-snr; int8: keep every op integer")
    p.add_argument("--min-snr", type=_float_above(0.0, inclusive=True), default=30.0, metavar="DB",
                   help="accuracy guard: each output's SNR against the float model on held-back calibration "
                        "samples, in dB (>= 0; default 30)")
    p.add_argument("--allow-lossy", action="store_true",
                   help="write the model even when an output stays below --min-snr (the report says so)")
    # the task the guard judges (converters.evaluate.task_spec); its metric decides, the SNR is shown beside it
    p.add_argument("--task", choices=["classification", "detection", "segmentation", "recognition", "raw"],
                   help="what the outputs mean (default: the .tflite source's manifest, a TFLite_Detection_PostProcess "
                        "op, a SOFTMAX output or one score per --labels entry; else raw: SNR only)")
    p.add_argument("--boxes", metavar="OUTPUT", help="detector: the output (name or index) holding the boxes; the "
                   "same as --scores for YOLO-style rows (cx, cy, w, h, class scores...)")
    p.add_argument("--scores", metavar="OUTPUT", help="detector: the output (name or index) holding the class scores")
    p.add_argument("--min-top1", type=fraction, default=0.99, metavar="FRACTION",
                   help="classification: top-1 agreement with the float model the guard requires (default 0.99)")
    p.add_argument("--min-detections", type=fraction, default=0.9, metavar="FRACTION",
                   help="detection: float detections kept (same class, IoU >= 0.5, score within 0.05), extra ones "
                        "at most 1 - FRACTION of them (default 0.9)")
    p.add_argument("--min-map-iou", type=fraction, default=0.9, metavar="FRACTION",
                   help="segmentation: IoU of the converted model's map with the float one's (default 0.9)")
    p.add_argument("--stateful", action="store_true",
                   help="keep a streaming model's recurrent state on the device: each state input/output pair "
                        "becomes a resource variable (zero at start; reset_all_variables() resets it)")
    p.add_argument("--json", action="store_true", help="print the conversion report as JSON")
    _ray_flags(p, "calibration runs")
    p.set_defaults(func=_cmd_convert)

    p = sub.add_parser("evaluate", help="accuracy, calibration (ECE, NLL) and agreement with a float reference",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=CALIBRATION_DATA_HELP)
    p.add_argument("model", help="the model to evaluate (.tflite, or .onnx)")
    p.add_argument("--data", required=True, help=".npz with x and y, or a folder of class-named image folders")
    p.add_argument("--reference", help="the float source model to compare against (.onnx or .tflite)")
    p.add_argument("--labels", help="labels file, one per line (default: the model's manifest)")
    p.add_argument("--plot", help="write a reliability-diagram PNG here")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    _ray_flags(p, "the model runs")
    p.set_defaults(func=_cmd_evaluate)

    p = sub.add_parser("targets", help="list the device profiles (device_profiles/*.toml)")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=_cmd_targets)

    p = sub.add_parser(
        "check", help="will a model run on a device? ops, constraints, arena vs RAM, model vs flash, partitions",
        description="Exit status: 0 when the verdict is 'runs' or 'partial', 1 when it is 'fails' "
        "(3: the model cannot be read, 7: the profile is malformed or unknown).")
    p.add_argument("model", help="path to a .tflite file")
    p.add_argument("--target", required=True, help="a profile name (see `edge targets`) or a path to a .toml")
    _memory_option(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    _input_shape_option(p)
    p.add_argument("--link", action="store_true",
                   help="C targets: also build and link the firmware (arm-none-eabi-gcc) for its real flash and RAM")
    p.set_defaults(func=_cmd_check)

    def ssh_options(p, host_help: str) -> None:
        p.add_argument("--host", help=host_help)
        p.add_argument("--identity", metavar="KEY", help="private key file for ssh (default: ssh's own choice)")
        p.add_argument("--accept-new-host-key", action="store_true",
                       help="record the host key of a device never seen before (a changed key is still refused)")
        p.add_argument("--remote-dir", default="~/.edge-sdk", help="edge-sdk's folder on the device")
        p.add_argument("--json", action="store_true", help="print the result as JSON")

    def detection_outputs(p) -> None:
        """Which outputs of a detector hold what (edge run, edge serve): by output name or index."""
        p.add_argument("--boxes", metavar="OUTPUT", help="detection: the output (name or index) holding the boxes "
                       "(makes the model a detector; default: the rank-3 output whose last axis is 4)")
        p.add_argument("--scores", metavar="OUTPUT", help="detection: the output (name or index) holding the class "
                       "scores (default: the other one of two outputs)")

    def op_table_outputs(p) -> None:
        """The per-op report's files (edge bench, edge profile)."""
        p.add_argument("--trace", metavar="OUT.json", help="write a Chrome/Perfetto trace (one event per op per run)")
        p.add_argument("--csv", metavar="OUT.csv", help="write the per-op table as CSV")
        p.add_argument("--plot", metavar="OUT.png", help="write a bar chart of the per-op times (PNG)")

    p = sub.add_parser("deploy", help="install the runtime and a model on a Linux board (Raspberry Pi) over SSH",
                       description="Exit status: 0 when every host was deployed, 4 when any failed.")
    p.add_argument("model", nargs="?", help="the .tflite to deploy (not needed with --status)")
    ssh_options(p, "USER@HOST[:PORT] or a Host alias from ~/.ssh/config")
    p.add_argument("--hosts", metavar="FILE", help="a fleet: user@host[:port] per line, or an Ansible INI inventory")
    p.add_argument("--target", help="the device's profile (checks arch and size; default host/user from [flash])")
    p.add_argument("--offline", action="store_true", help="ship the dependency wheels too (no index on the device)")
    p.add_argument("--status", action="store_true", help="print what is deployed (the device's manifest)")
    p.add_argument("--python", help="the device's Python (default: the profile's, else python3)")
    p.add_argument("--system-site-packages", action="store_true", help="let the device venv see system packages")
    p.add_argument("--no-c-backend", action="store_true", help="no C backend on the device (neither built nor shipped)")
    p.add_argument("--ship-c-library", action="store_true",
                   help="build the C library here for the device's CPU (cross-compiled for aarch64 / armv7l) and "
                        "ship it, even when the device has a compiler (default: only when it has none)")
    _input_shape_option(p)
    p.add_argument("--jobs", type=_positive, default=8, help="hosts deployed at once with --hosts (default 8)")
    p.add_argument("--inventory", metavar="FILE",
                   help="roll out through Ansible (pip install 'edge-sdk[fleet]'): an INI inventory; the shipped "
                        "playbook deploys in --wave steps, health-checks each host and rolls a failed wave back")
    p.add_argument("--wave", action="append", metavar="N|P%",
                   help="with --inventory: hosts per wave, repeatable (--wave 1 --wave 10%% --wave 100%%; Ansible's "
                        "serial; default one wave of 100%%)")
    p.add_argument("--max-fail", default="0%", metavar="P%",
                   help="with --inventory: the rollout stops when a wave's failed hosts pass this share (default 0%%)")
    p.add_argument("--connect-timeout", type=_seconds, default=T.SSH_CONNECT_TIMEOUT,
                   help=f"ssh ConnectTimeout in seconds (default {T.SSH_CONNECT_TIMEOUT:g})")
    p.set_defaults(func=_cmd_deploy)

    p = sub.add_parser("fleet", help="what each host of an Ansible inventory runs (model sha256, runtime, health)")
    p.add_argument("action", choices=["status"], help="status: read each host's manifest and last health check")
    p.add_argument("--inventory", required=True, metavar="FILE", help="an Ansible INI inventory")
    p.add_argument("--remote-dir", default="~/.edge-sdk", help="the folder on the hosts (default ~/.edge-sdk)")
    p.add_argument("--json", action="store_true", help="print one report per host as JSON")
    p.set_defaults(func=_cmd_fleet)

    p = sub.add_parser("bench", help="latency percentiles, per-op profile and memory, here or on a device over SSH")
    p.add_argument("model", nargs="+", help="path to a .tflite file (--matrix: one or more .tflite / .onnx)")
    ssh_options(p, "run on this device (USER@HOST[:PORT] or alias; needs `edge deploy` first); default: here")
    p.add_argument("--runs", type=_positive, default=50, help="timed inferences (default 50)")
    p.add_argument("--warmup", type=_non_negative, default=5, help="untimed inferences first (default 5)")
    p.add_argument("--threads", type=_threads_arg,
                   help="interpreter threads (litert; c: its conv / depthwise / FC fast paths)")
    _backend_option(p, litert=True)
    _input_shape_option(p)
    p.add_argument("--profile-runs", type=_positive, help="inferences with every op timed (default: runs, at most 20)")
    p.add_argument("--inputs", metavar="DATA",
                   help="input data as edge run takes it: .npy (one input) or .npz of every input keyed by input "
                        "name or arg_0, arg_1..; its shapes fix dynamic input sizes (default: seeded random); a "
                        "WAV for a model of raw samples ([-1], [1, -1]: the file's length)")
    p.add_argument("--sample-rate", type=_positive, metavar="HZ",
                   help="--inputs WAV: the rate of a model of raw samples with no 'audio' manifest entry "
                        "(default: the manifest's)")
    op_table_outputs(p)
    p.add_argument("--matrix", action="store_true",
                   help="every model x --target x --precision here: each converted once (cached), each cell edge "
                        "bench's figures with the target's runtime and the target's fit; a table, or --json")
    p.add_argument("--target", dest="matrix_target", action="append", metavar="PROFILE",
                   help="--matrix: a device profile (repeatable; default host-linux)")
    p.add_argument("--precision", action="append", choices=["int8", "int16x8", "fp16", "float"],
                   help="--matrix: a conversion (repeatable; default int8; float: a .tflite source as it is)")
    p.add_argument("--calib", help="--matrix: calibration data for the conversions (as edge convert --calib)")
    _ray_flags(p, "--matrix: the conversions and cells run")
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("generate", help="generate text with a KV-cache language model (prefill/decode signatures)")
    p.add_argument("model", help="a .tflite with prefill/decode signatures and edge_generate metadata")
    p.add_argument("--prompt", default="", help="the text to continue (default: start a new text)")
    p.add_argument("--max-tokens", type=_non_negative, default=64, help="tokens to generate at most (default 64)")
    p.add_argument("--greedy", action="store_true", help="always the most likely token (the default)")
    p.add_argument("--temperature", type=_float_above(0.0), help="sample at this temperature (> 0; turns sampling on)")
    p.add_argument("--top-k", type=_positive, help="sample from the k most likely tokens")
    p.add_argument("--top-p", type=_probability, help="sample from the smallest set reaching this probability (0..1]")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--backend", default="python", choices=["python", "c", "litert"], help="(default python)")
    p.add_argument("--threads", type=_positive, help="interpreter threads")
    p.add_argument("--target", help="generate on this device profile's board (flashes it; reuses a running QEMU)")
    p.add_argument("--port", help="generate on the board at this serial port / socket:// URL (already flashed)")
    p.add_argument("--json", action="store_true", help="print text, tokens, speeds and cache sizes as JSON")
    p.set_defaults(func=_cmd_generate)

    p = sub.add_parser("run", help="run a model on image/WAV/.npy files: top-k labels and scores, or detections")
    p.add_argument("model", help="path to a .tflite file")
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="image (JPEG/PNG/BMP), .wav or .npy files; or .npz files, one array per model input keyed "
                        "by input tensor name or arg_0, arg_1.. in signature order (any model, also one with "
                        "several inputs: each output is printed)")
    _input_shape_option(p)
    p.add_argument("--top-k", type=_positive, default=5, help="labels to show per input (>= 1; default 5)")
    p.add_argument("--task", choices=["classify", "detect", "audio"], help="override the manifest / the guess")
    p.add_argument("--sample-rate", type=_positive, metavar="HZ",
                   help="audio: the rate of a model that takes raw samples and has no 'audio' manifest entry "
                        "(makes a WAV input audio for it; default: the manifest's). An input of any length "
                        "([-1, -1]) takes each WAV's length")
    p.add_argument("--allow-nonfinite", action="store_true",
                   help="run a .npy input holding NaN or inf (with a warning naming it; default: refused)")
    p.add_argument("--labels", help="labels file, one per line (default: the model's manifest)")
    p.add_argument("--frontend", help="audio feature model run per frame before the model (e.g. a preprocessor)")
    detection_outputs(p)
    p.add_argument("--threads", type=_threads_arg, help="interpreter threads (default 1)")
    _backend_option(p)
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("serve", help="serve a model over HTTP: JSON/raw tensors, dynamic batching, /health, /metrics",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=SERVE_HTTP_HELP)
    p.add_argument("model", help="path to a .tflite file")
    p.add_argument("--port", type=_port, default=8000, help="port (0: any free one; default 8000)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--max-batch", type=_positive, default=1,
                   help="requests run as one batch at most (default 1; a model whose batch axis cannot be resized "
                   "serves one at a time, and says why at start-up)")
    _input_shape_option(p)
    p.add_argument("--max-wait-ms", type=_float_above(0.0, inclusive=True), default=2.0,
                   help="how long a request waits for a batch (default 2)")
    p.add_argument("--instances", type=_positive, default=1, help="interpreter instances in worker threads (default 1)")
    p.add_argument("--max-queue", type=_positive, default=256, help="queued requests before 503 (default 256)")
    p.add_argument("--labels", help="labels file, one per line (default: the model's manifest)")
    p.add_argument("--task", choices=["classify", "detect"], help="override the manifest / the guess")
    detection_outputs(p)
    p.add_argument("--sample-rate", type=_positive, metavar="HZ",
                   help="audio/wav requests: the rate of a model of raw samples with no 'audio' manifest entry "
                        "(default: the manifest's)")
    p.add_argument("--threads", type=_threads_arg, help="threads of each interpreter instance (default 1)")
    _backend_option(p)
    p.set_defaults(func=_cmd_serve)

    p = sub.add_parser("flash", help="build the serial-protocol firmware for a model and flash it (QEMU or a board)")
    p.add_argument("model", help="path to a .tflite file")
    p.add_argument("--target", default=DEFAULT_FLASH_TARGET,
                   help=f"a microcontroller profile (default {DEFAULT_FLASH_TARGET}, the QEMU board)")
    p.add_argument("--port", help="QEMU: socket://127.0.0.1:PORT to listen on; silicon: the board's serial port")
    _input_shape_option(p)
    p.add_argument("--build-dir", help="where the firmware is built (default: firmware/ in the cache folder: "
                   "$EDGE_CACHE_DIR, else $XDG_CACHE_HOME/edge-sdk, else ~/.cache/edge-sdk)")
    _memory_option(p)
    p.add_argument("--json", action="store_true", help="print port, elf, text/data/bss/arena bytes as JSON")
    p.set_defaults(func=_cmd_flash)

    p = sub.add_parser("export", help="write the C runtime + one model as a folder for your own firmware "
                                      "(cmake, make, zephyr, arduino)")
    p.add_argument("model", help="path to a .tflite file")
    p.add_argument("--target", required=True, help="a device profile (host-linux, qemu-mps2-an386, a board ...)")
    p.add_argument("--format", required=True, choices=("cmake", "make", "zephyr", "arduino"),
                   help="cmake: CMakeLists.txt (+ toolchain file); make: a Makefile; zephyr: a module; "
                        "arduino: a library")
    _input_shape_option(p)
    p.add_argument("-o", "--output", required=True, help="the folder to write (new, or empty)")
    _memory_option(p, default="layer")
    p.add_argument("--json", action="store_true", help="print the export's summary (files, arena, inputs, outputs) as JSON")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("board", help="the QEMU boards `edge flash` started: list (with owners), stop yours",
                       description="A board belongs to whoever started it (user, checkout, process). stop --all "
                       "stops your boards: this user's and checkout's, except those a still-running job (a "
                       "benchmark, a test run) started; --everyone reaches every board in the list.")
    p.add_argument("action", choices=["list", "stop"])
    p.add_argument("url", nargs="?", help="stop: the board's socket:// URL (or port)")
    p.add_argument("--all", action="store_true", help="stop: every running board of yours")
    p.add_argument("--everyone", action="store_true",
                   help="stop: other owners' boards too (another checkout's, a running job's, unowned records)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_cmd_board)

    p = sub.add_parser("profile", help="run a model on a device: per-op times, arena, outputs checked vs the host",
                       description="Exit status: 0 when the device's outputs equal the host's (integer outputs bit "
                       "for bit, float outputs within a tolerance printed with the result), 1 when they differ, 4 on "
                       "a device or link error.")
    p.add_argument("model", help="path to a .tflite file")
    p.add_argument("--target", required=True, help="the device's profile (qemu-mps2-an386: flashes QEMU if needed)")
    p.add_argument("--port", help="pyserial URL of the device (/dev/ttyACM0, socket://..., rfc2217://, faulty://...)")
    p.add_argument("--runs", type=_positive, default=10, help="inferences (default 10)")
    p.add_argument("--inputs", metavar="DATA", help="input data: .npy (one input) or .npz (default: seeded random)")
    _input_shape_option(p)
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--timeout", type=_seconds, default=T.SERIAL_ANSWER_TIMEOUT,
                   help=f"seconds to wait for each answer (default {T.SERIAL_ANSWER_TIMEOUT:g})")
    p.add_argument("--retries", type=_non_negative, default=T.SERIAL_RETRIES,
                   help=f"retransmissions before giving up (default {T.SERIAL_RETRIES})")
    p.add_argument("--build-dir", help="firmware build folder when it flashes")
    _memory_option(p, when="when it flashes: ")
    op_table_outputs(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_profile)
    return parser


class Interrupted(KeyboardInterrupt):
    """A signal (SIGINT, SIGTERM) as a KeyboardInterrupt: the same clean-up everywhere; ``signum`` gives the exit
    status (128 + signum: 130 for Ctrl-C, 143 for SIGTERM)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _interrupts_as_keyboard_interrupt():
    """Ctrl-C and SIGTERM raise KeyboardInterrupt (``Interrupted``: the same clean-up, boards stopped, servers
    drained), but never inside a finalizer (``__del__``), where Python would print "Exception ignored" and drop it:
    there the signal is sent again 50 ms later. Returns the function that puts the previous handlers back (a no-op
    off the main thread); its ``signals`` list holds the numbers of the signals acted on, so that a clean-up that
    raised a KeyboardInterrupt of its own still exits with the signal's status."""
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        def no_op():
            return None

        no_op.signals = []
        return no_op

    lock = threading.RLock()  # re-entrant: the handler may run on the main thread while restore() holds it
    state = {"active": True, "timer": None}
    received: list[int] = []

    def resend(signum):
        with lock:  # never after restore(): a late signal would meet the default handler at exit
            if state["active"] and state["timer"] is not None:
                state["timer"] = None
                os.kill(os.getpid(), signum)

    def on_signal(signum, frame):
        f = frame
        while f is not None:
            if f.f_code.co_name == "__del__":
                with lock:
                    if state["timer"] is None:
                        state["timer"] = threading.Timer(0.05, resend, (signum,))
                        state["timer"].daemon = True
                        state["timer"].start()
                return
            f = f.f_back
        with lock:  # this one is acted on: no re-send may follow it
            if state["timer"] is not None:
                state["timer"].cancel()
                state["timer"] = None
        received.append(signum)
        raise Interrupted(signum)

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore():
        with lock:
            state["active"] = False
            if state["timer"] is not None:
                state["timer"].cancel()
        for sig, handler in old.items():
            signal.signal(sig, handler)

    restore.signals = received
    return restore


def _report_error(command: str | None, message: str, kind: str, code: int, as_json: bool) -> int:
    """An error as the user and a script see it: one line on stderr (``edge CMD: error: ...``) and, with --json,
    ``{"error", "kind", "exit"}`` on stdout. Returns the exit status."""
    where = f"edge {command}" if command else "edge"
    sys.stderr.write(f"{where}: {message}\n")
    if as_json:
        text = message[len("error: "):] if message.startswith("error: ") else message
        _print_json({"error": text, "kind": kind, "exit": code})
        sys.stdout.flush()
    return code


def _interrupted(exc: BaseException, signals: list[int], command: str | None, as_json: bool) -> int:
    """Ctrl-C: 130, SIGTERM: 143 (128 + the signal's number, the shell's convention)."""
    import signal

    signum = getattr(exc, "signum", None) or (signals[0] if signals else signal.SIGINT)
    code = errors.EXIT_SIGTERM if signum == signal.SIGTERM else errors.EXIT_SIGINT
    message = "interrupted" if code == errors.EXIT_SIGINT else "interrupted (SIGTERM)"
    sys.stderr.write(message + "\n")
    if as_json:
        _print_json({"error": message, "kind": errors.INTERRUPTED_KIND, "exit": code})
    return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    json_token = _JSON_ERRORS.set("--json" in argv)  # argparse's own usage errors become JSON too
    try:
        return _main(argv)
    finally:
        _JSON_ERRORS.reset(json_token)


def _naming_the_model(args, exc, message: str) -> str:
    """A ModelError of the reader says where in the file ("Model: field 'operator_codes' at byte 48 ..."), not which
    file: the line names the command's model when the message does not already."""
    from pathlib import Path

    label, path = next(((lab, getattr(args, attr)) for lab, attr in (("MODEL", "model"), ("SRC", "src"))
                        if isinstance(getattr(args, attr, None), str)), (None, None))
    if not isinstance(exc, ModelError) or path is None or Path(path).name in message:
        return message
    if _names_another_file(args, label, message, isinstance(exc, errors.DataError)):
        return message  # another file's fault ("--calib c.npy: ...", "INPUT x.txt: ..."): not the model's
    return f"{label} {path}: {message}"


def _names_another_file(args, model_label: str, message: str, data_error: bool) -> bool:
    """The message starts with the label of another file the command reads ("INPUT x.png: ...", "--calib c.npy:
    ...", "--frontend f.png: ...": COMMAND_FILES) or, for a DataError, one of its INPUT paths: it names the file at
    fault, and "MODEL m:" before it would blame the wrong one."""
    labels = [label for label, _, _ in COMMAND_FILES.get(args.command, []) if label != model_label]
    if any(message.startswith(f"{label} ") for label in labels):
        return True
    inputs = getattr(args, "inputs", None)
    files = [str(f) for f in (inputs if isinstance(inputs, list) else [])]
    return data_error and any(message.startswith(f"{f}:") or message.startswith(f"{f}[") for f in files)


def _placeholder_note(args, exc) -> str:
    """A model error met while an input with a leading -1 ran at its stored size (a batch by the convention of
    input_shapes): the note naming it and --input-shape (an audio input [-1, 1] is samples, not a batch)."""
    path = getattr(args, "model", None)
    if isinstance(path, list) and len(path) == 1:  # edge bench MODEL [MODEL ...]
        path = path[0]
    if not isinstance(exc, ModelError) or isinstance(exc, errors.DataError) or not isinstance(path, str) \
            or not path.lower().endswith(".tflite"):  # a data file's fault (a NaN, a WAV's rate): not the shape's
        return ""
    try:
        from edge_sdk.model import read_model
        from edge_sdk.model.input_shapes import batch_placeholder_note

        given = _input_shapes(getattr(args, "input_shape", None))
        if given is None or isinstance(given, dict):  # with the inputs a file sized (edge run's _run_shapes)
            given = {**dict.fromkeys(getattr(args, "sized_by_files", ())), **(given or {})} or None
        return batch_placeholder_note(read_model(_model_bytes(path)), given)
    except Exception:  # noqa: BLE001 - the note is a courtesy: the error itself is what is reported
        return ""


def _main(argv: list[str]) -> int:
    as_json = _JSON_ERRORS.get()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt as exc:  # Ctrl-C while starting up: the same one line as later
        return _interrupted(exc, [], None, as_json)
    if args.version:
        from edge_sdk import __version__

        print(f"edge-sdk {__version__}")
        return 0
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    as_json = bool(getattr(args, "json", False))
    log.configure(args.verbose)
    restore = _interrupts_as_keyboard_interrupt()
    try:
        _check_files(args)  # files exist and are what they claim, then settings (issue 27 point 4)
        _check_targets(args)
        if args.command != "convert":  # convert checks its output folder and settings first (_check_convert_args)
            _check_data_values(args)
        return args.func(args)
    except KeyboardInterrupt as exc:
        return _interrupted(exc, restore.signals, args.command, as_json)
    except BrokenPipeError:
        return 0
    except BuildError as exc:  # one line, whatever the build printed
        return _report_error(args.command, f"{BUILD_PREFIX}{_build_error_line(exc)}", errors.error_kind(exc),
                             _exit_code(exc), as_json)
    except tuple(t for t, _ in EXIT_CODES) as exc:
        message = str(exc)
        if isinstance(exc, OSError) and exc.filename:
            message = f"{exc.strerror}: {exc.filename}"
        message = _naming_the_model(args, exc, message) + _placeholder_note(args, exc)
        return _report_error(args.command, f"error: {message}", errors.error_kind(exc), _exit_code(exc), as_json)
    except Exception as exc:  # noqa: BLE001 - a bug of ours: one line, the traceback only with -vv
        if args.verbose >= 2:
            import traceback

            traceback.print_exc()
        reason = " ".join(str(exc).split())[:500]
        return _report_error(args.command, f"internal error: {type(exc).__name__}: {reason} (please report it; "
                             "-vv shows the traceback)", "internal", errors.EXIT_INTERNAL, as_json)
    finally:
        restore()
        # The handler holds this call's sys.stderr: after an in-process call (tests, notebooks) library
        # logging must not keep writing to that stream.
        log.reset()


if __name__ == "__main__":
    sys.exit(main())
