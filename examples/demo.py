"""`make demo`: the main job end to end on the embedded default (the QEMU Cortex-M4 board, qemu-mps2-an386).

    .venv/bin/python examples/demo.py [--out out/demo] [--target qemu-mps2-an386] [--runs 10] [--validate 40]
                                      [--no-device]

1. convert   the bundled trained digits CNN (examples/digits/digits_cnn.onnx) to int8 for the target,
             calibrated on the training split of scikit-learn's digits (converters.convert)
2. check     will it run there: ops, arena vs RAM, model vs flash (edge check)
3. flash     build the serial-protocol firmware for exactly this model and start the QEMU board (edge flash)
4. profile   run it over the serial link: per-op table, trace JSON, CSV and plot (edge profile)
5. validate  the device's outputs on held-out digits against the host interpreter, bit for bit
6. host      the same model in our interpreter beside TensorFlow Lite Micro and LiteRT (agreement, speed)
7. accuracy  float (ONNX) vs int8 on the held-out split: top-1, ECE, NLL, reliability diagram
             (converters.evaluate)

Everything is written under --out; the board is stopped at the end, also when a step fails or the demo is
interrupted. Without qemu-system-arm / the Arm toolchain the device steps are skipped with the apt-get line
that installs them, and the host steps still run. Exit status: 0 when every step that ran passed.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import signal
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from edge_sdk import log
from edge_sdk.errors import DeviceError, ModelError

DIGITS = ROOT / "examples" / "digits"
ONNX_MODEL = DIGITS / "digits_cnn.onnx"
LABELS = DIGITS / "labels.txt"
TARGET = "qemu-mps2-an386"
DEVICE_PACKAGES = "qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi"
CALIBRATION_SAMPLES = 300


def load_digits_split():
    """The same seeded train/test split examples/digits/train.py trained on."""
    spec = importlib.util.spec_from_file_location("digits_train", DIGITS / "train.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, mod.load_split()


def rel(path) -> str:
    p = Path(path).resolve()
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def missing_device_tools() -> list[str]:
    return [t for t in ("qemu-system-arm", "arm-none-eabi-gcc", "make") if shutil.which(t) is None]


class Demo:
    def __init__(self, out: Path, target: str, runs: int, validate: int, device: bool):
        self.out, self.target, self.runs, self.n_validate, self.device = out, target, runs, validate, device
        self.files: list[Path] = []
        self.results: list[tuple[str, str]] = []  # (step, "ok" / "skipped: ..." / "FAILED: ...")
        self.board: str | None = None

    # ------------------------------------------------------------------------------------------ helpers
    def wrote(self, path) -> Path:
        path = Path(path)
        if path not in self.files:
            self.files.append(path)
        return path

    def step(self, name: str, fn, *args) -> bool:
        """Run one step; expected failures (ModelError, DeviceError, a missing tool) become a line, not a
        traceback. Returns whether it passed."""
        t0 = time.perf_counter()
        try:
            ok = fn(*args)
        except (ModelError, DeviceError, OSError) as exc:
            print(f"\n{name}: FAILED: {exc}")
            self.results.append((name, f"FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"))
            return False
        if isinstance(ok, str):  # a skip reason
            status, passed = f"skipped: {ok}", True
        elif ok is False:
            status, passed = "FAILED (see above)", False
        else:
            status, passed = "ok", True
        self.results.append((name, f"{status} ({time.perf_counter() - t0:.1f} s)"))
        print()
        return passed

    # ------------------------------------------------------------------------------------------ steps
    def prepare_data(self):
        log.stage("data: scikit-learn's bundled 8x8 digits, the split examples/digits/train.py trained on")
        self.train_mod, (x_train, y_train, x_test, y_test) = load_digits_split()
        self.x_test, self.y_test = x_test, y_test
        data = self.out / "data"
        data.mkdir(parents=True, exist_ok=True)
        np.save(self.wrote(data / "calibration.npy"), x_train[:CALIBRATION_SAMPLES])
        np.savez(self.wrote(data / "test.npz"), x=x_test, y=y_test)
        print(f"train {len(y_train)} images, held-out test {len(y_test)} images (8x8 gray, NCHW, pixel/16)")
        print(f"calibration: the first {CALIBRATION_SAMPLES} training images -> {rel(data / 'calibration.npy')}")

    def convert(self):
        from converters import convert
        from converters.report import format_conversion

        log.stage(f"1. convert {rel(ONNX_MODEL)} to int8 for {self.target}")
        result = convert(str(ONNX_MODEL), target=self.target, quantize="int8",
                         calibration=str(self.out / "data" / "calibration.npy"), labels=str(LABELS),
                         preprocess=self.train_mod.PREPROCESS)
        self.model_path = self.wrote(result.save(self.out / "digits_int8.tflite"))
        print(format_conversion(result.report).rstrip())
        print(f"wrote {rel(self.model_path)} ({self.model_path.stat().st_size} bytes)")

    def check(self):
        from edge_sdk.targets.check import check_model, format_check

        log.stage(f"2. edge check {rel(self.model_path)} --target {self.target}")
        result = check_model(str(self.model_path), self.target)
        print(format_check(result).rstrip())
        return result.verdict in ("runs", "partial")

    def flash(self):
        from edge_sdk.tools import flash as fl

        log.stage(f"3. edge flash {rel(self.model_path)} --target {self.target}")
        result = fl.flash(self.model_path, self.target, build_dir=self.out / "firmware")
        self.board = result.port
        self.wrote(result.elf)
        print(fl.format_flash(result).rstrip())

    def profile(self):
        from edge_sdk.tools import profile as pr
        from edge_sdk.tasks.pipeline import quantize

        log.stage(f"4. edge profile {rel(self.model_path)} --target {self.target} --runs {self.runs}")
        detail = self.host_details()[0]
        x = quantize(self.x_test[0].reshape(detail["shape"]), detail)  # a real digit, not random bytes
        inputs = self.wrote(self.out / "data" / "profile_input.npy")
        np.save(inputs, x)
        report = pr.profile_model(self.model_path, self.target, port=self.board, runs=self.runs, inputs=inputs)
        print(pr.format_profile(report).rstrip())
        pr.write_trace(report, self.wrote(self.out / "profile_trace.json"))
        pr.write_csv(report, self.wrote(self.out / "profile_ops.csv"))
        pr.write_plot(report, self.wrote(self.out / "profile_ops.png"))
        print(f"trace (open in https://ui.perfetto.dev or chrome://tracing): {rel(self.out / 'profile_trace.json')}")
        print(f"per-op CSV: {rel(self.out / 'profile_ops.csv')}; plot: {rel(self.out / 'profile_ops.png')}")
        return bool(report["validated"])

    def validate(self):
        from edge_sdk.device.serial_link import SerialLink

        n = min(self.n_validate, len(self.y_test))
        log.stage(f"5. validate: {n} held-out digits on the device vs the host interpreter, bit for bit")
        xs = self.quantized_test(n)
        host = self.host_outputs(xs)
        same, device_correct, first_bad = 0, 0, None
        with SerialLink(self.board, timeout=1.0, invoke_timeout=60.0) as link:
            link.hello()
            link.expect_model(self.model_path.read_bytes())
            with log.progress(n, "device inferences") as bar:
                for i, x in enumerate(xs):
                    link.set_input(0, x)
                    link.invoke(1)
                    y = link.get_output(0)
                    if np.array_equal(y, host[i]):
                        same += 1
                    elif first_bad is None:
                        first_bad = (i, y.ravel()[:10].tolist(), host[i].ravel()[:10].tolist())
                    device_correct += int(np.argmax(y) == self.y_test[i])
                    bar.advance()
        print(f"device outputs identical to the host's: {same} of {n} images "
              f"({'bit-exact' if same == n else 'MISMATCH'})")
        print(f"device top-1 on these {n} images: {100 * device_correct / n:.1f}%")
        if first_bad is not None:
            i, d, h = first_bad
            print(f"first difference: image {i}: device {d} host {h}")
        return same == n

    def host(self):
        log.stage("6. host: our interpreter next to TensorFlow Lite Micro and LiteRT on the whole test split")
        xs = self.quantized_test(len(self.y_test))
        self.host_outputs(xs[:1])  # warm-up outside the timing
        t0 = time.perf_counter()
        ours = self.host_outputs(xs)
        ours_ms = (time.perf_counter() - t0) * 1e3 / len(xs)
        ours_top1 = float(np.mean(ours.reshape(len(xs), -1).argmax(1) == self.y_test))
        print(f"ours      top-1 {100 * ours_top1:.2f}%  {ours_ms * 1e3:7.1f} us/inference "
              f"(arena {self.arena_bytes()} bytes)")
        ok = True
        peers = 0
        try:
            from tflite_micro.python.tflite_micro import runtime

            tflm = runtime.Interpreter.from_bytes(self.model_path.read_bytes(), arena_size=1 << 16)
            outs = []
            for x in xs:
                tflm.set_input(x, 0)
                tflm.invoke()
                outs.append(tflm.get_output(0).copy())
            tflm_out = np.stack(outs)
            exact = int(np.sum([np.array_equal(a, b) for a, b in zip(ours, tflm_out)]))
            print(f"TFLM      bit-exact with ours on {exact} of {len(xs)} images "
                  f"(TFLM is the reference for int8 arithmetic)")
            ok &= exact == len(xs)
            peers += 1
        except ImportError:
            print("TFLM      not installed (pip install tflite-micro): skipped")
        try:
            from ai_edge_litert.interpreter import Interpreter as LiteRT

            lite = LiteRT(model_content=self.model_path.read_bytes(), num_threads=1)
            lite.allocate_tensors()
            li, lo = lite.get_input_details()[0]["index"], lite.get_output_details()[0]["index"]
            lite.set_tensor(li, xs[0])
            lite.invoke()  # warm-up (delegate set-up) outside the timing
            outs = []
            t0 = time.perf_counter()
            for x in xs:
                lite.set_tensor(li, x)
                lite.invoke()
                outs.append(lite.get_tensor(lo).copy())
            lite_ms = (time.perf_counter() - t0) * 1e3 / len(xs)
            lite_out = np.stack(outs)
            diff = np.abs(lite_out.astype(np.int32) - ours.astype(np.int32))
            agree = float(np.mean(lite_out.reshape(len(xs), -1).argmax(1) == ours.reshape(len(xs), -1).argmax(1)))
            print(f"LiteRT    {lite_ms * 1e3:7.1f} us/inference; same top-1 class as ours on {100 * agree:.2f}% of "
                  f"images; outputs equal on {100 * np.mean(diff == 0):.2f}% of values, max |diff| {diff.max()} "
                  f"int8 step(s)")
            print("          (LiteRT's optimized int8 kernels may round differently from TFLM by one step)")
            ok &= agree >= 0.99 and diff.max() <= 1
            peers += 1
        except ImportError:
            print("LiteRT    not installed (pip install ai-edge-litert): skipped")
        return ok if peers else "no peer runtime installed"

    def accuracy(self):
        from converters.evaluate import evaluate
        from converters.report import format_evaluation

        log.stage("7. accuracy: float (ONNX) vs int8 on the held-out split, with calibration (ECE)")
        plot = self.wrote(self.out / "reliability.png")
        report = evaluate(str(self.model_path), str(self.out / "data" / "test.npz"), reference=str(ONNX_MODEL),
                          plot=plot)
        m, r = report["model"], report["reference"]
        print(f"{'':10s} {'top-1':>8s} {'ECE':>8s} {'NLL':>8s}")
        print(f"{'float':10s} {100 * r['top1']:7.2f}% {r['ece']:8.4f} {r['nll']:8.4f}   (ONNX Runtime, the source)")
        print(f"{'int8':10s} {100 * m['top1']:7.2f}% {m['ece']:8.4f} {m['nll']:8.4f}   (our interpreter)")
        print(format_evaluation(report).rstrip().splitlines()[2])
        print(f"reliability diagram: {rel(plot)}")
        return report["accuracy_drop"] <= 0.02

    # ------------------------------------------------------------------------------------------ shared
    def host_details(self):
        from edge_sdk import Interpreter

        if not hasattr(self, "_host"):
            self._host = Interpreter(model_path=str(self.model_path))
            self._host.allocate_tensors()
        return self._host.get_input_details()

    def arena_bytes(self) -> int:
        self.host_details()
        return int(self._host.arena_size)

    def quantized_test(self, n: int) -> np.ndarray:
        from edge_sdk.tasks.pipeline import quantize

        detail = self.host_details()[0]
        return np.stack([quantize(x.reshape(detail["shape"]), detail) for x in self.x_test[:n]])

    def host_outputs(self, xs: np.ndarray) -> np.ndarray:
        it = self._host
        i_in, i_out = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
        outs = []
        for x in xs:
            it.set_tensor(i_in, x)
            it.invoke()
            outs.append(it.get_tensor(i_out).copy())
        return np.stack(outs)

    def stop_board(self):
        if self.board is None:
            return
        from edge_sdk.device import qemu_board as qb

        try:
            stopped = qb.stop_board(self.board)
            print(f"stopped the QEMU board {self.board}" + ("" if stopped else " (it had already exited)"))
        except (DeviceError, OSError) as exc:
            print(f"could not stop the QEMU board {self.board}: {exc} (try: edge board stop --all)")
        self.board = None

    # ------------------------------------------------------------------------------------------ main
    def run(self) -> int:
        t_start = time.perf_counter()
        self.out.mkdir(parents=True, exist_ok=True)
        print(f"edge-sdk demo: the digits CNN onto {self.target}, everything written under {rel(self.out)}/\n")
        try:
            self.prepare_data()
            print()
            converted = self.step("convert", self.convert)
            if not converted:
                return self.summary(t_start)
            self.step("check", self.check)
            missing = missing_device_tools() if self.device else []
            if not self.device:
                reason = "--no-device"
            elif missing:
                reason = f"{', '.join(missing)} not found"
                print(f"device steps skipped: {reason}. Install the QEMU board and the Cortex-M toolchain with:\n"
                      f"    sudo apt-get install {DEVICE_PACKAGES}\n"
                      f"(or run `make system-deps` as root), then run `make demo` again.\n")
            else:
                reason = None
            if reason is None and self.step("flash", self.flash):
                self.step("profile", self.profile)
                self.step("validate", self.validate)
            elif reason is not None:
                for name in ("flash", "profile", "validate"):
                    self.results.append((name, f"skipped: {reason}"))
            else:
                for name in ("profile", "validate"):
                    self.results.append((name, "skipped: the board did not start"))
            self.step("host", self.host)
            self.step("accuracy", self.accuracy)
        finally:
            self.stop_board()
        return self.summary(t_start)

    def summary(self, t_start: float) -> int:
        log.stage("summary")
        width = max(len(name) for name, _ in self.results) if self.results else 8
        for name, status in self.results:
            print(f"  {name:{width}s}  {status}")
        print(f"\nfiles written ({len(self.files)}):")
        for f in self.files:
            size = f.stat().st_size if f.exists() else 0
            print(f"  {rel(f):48s} {size:>9,} bytes")
        failed = [n for n, s in self.results if s.startswith("FAILED")]
        print(f"\ndemo {'passed' if not failed else 'FAILED at ' + ', '.join(failed)} "
              f"in {time.perf_counter() - t_start:.1f} s")
        return 1 if failed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "out" / "demo"), help="output folder (default out/demo)")
    parser.add_argument("--target", default=TARGET, help=f"a QEMU/microcontroller profile (default {TARGET})")
    parser.add_argument("--runs", type=int, default=10, help="profiled inferences on the device (default 10)")
    parser.add_argument("--validate", type=int, default=40, help="held-out images checked on the device (default 40)")
    parser.add_argument("--no-device", action="store_true", help="skip flash / profile / validate")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.validate < 1:
        parser.error("--runs and --validate must be at least 1")
    # one stream in order: stages and results interleave as they happen, also when piped to a file
    log.configure(0, stream=sys.stdout)

    def on_signal(signum, frame):  # SIGTERM / SIGHUP: unwind through the finally that stops the board
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    demo = Demo(Path(args.out), args.target, args.runs, args.validate, not args.no_device)
    try:
        return demo.run()
    except KeyboardInterrupt:
        print("\ninterrupted (the board was stopped)")
        return 130


if __name__ == "__main__":
    sys.exit(main())
