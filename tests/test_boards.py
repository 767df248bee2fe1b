"""Board support (firmware_c/boards): the self-test image under QEMU mps2-an386, and every board compiled.

Under QEMU the self-test's UART is reached as the serial link will be (pyserial `socket://`); its tick count
for a fixed busy loop must be non-zero and identical across two runs (SysTick with `-icount shift=0`).
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOARDS = ROOT / "firmware_c" / "boards"
INSTALL = "apt-get install qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi"

pytestmark = pytest.mark.slow

# board -> the CPU its board.mk names (and the -mcpu the fragment must hand out for it)
BOARD_CPUS = {
    "qemu-mps2-an386": "cortex-m4",
    "qemu-mps2-an500": "cortex-m7",
    "stm32f746-disco": "cortex-m7",
    "stm32h743": "cortex-m7",
    "nrf52840-dk": "cortex-m4",
    "rp2040-pico": "cortex-m0plus",
}

BANNER = re.compile(
    rb"edge-sdk board selftest: qemu-mps2-an386\r\n"
    rb"cpu_hz=25000000 timer=systick ticks \(emulated\) timer_hz=25000000 source=systick\r\n"
    rb"startup: data=ok bss=ok fpu=ok\r\n"
    rb"loop: iterations=(\d+) ticks=(\d+)\r\n"
    rb"echo: ready\r\n")


def _need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (Debian: {INSTALL})")


def _make(*args: str, build_dir: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run(["make", "-C", str(BOARDS), f"BUILD_DIR={build_dir}", *args],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"make {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def selftest_elf(tmp_path_factory) -> Path:
    _need("arm-none-eabi-gcc", "make")
    build = tmp_path_factory.mktemp("boards")
    _make("BOARD=qemu-mps2-an386", "selftest", build_dir=build)
    elf = build / "qemu-mps2-an386" / "selftest.elf"
    assert elf.is_file()
    return elf


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Qemu:
    """qemu-system-arm running an image with UART0 on a TCP server port; always killed on exit."""

    def __init__(self, elf: Path, semihosting: bool = False):
        self.port = _free_port()
        cmd = ["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none",
               "-kernel", str(elf), "-icount", "shift=0",
               "-serial", f"tcp:127.0.0.1:{self.port},server=on,wait=on"]
        if semihosting:
            cmd += ["-semihosting-config", "enable=on,target=native"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.link = None

    def __enter__(self):
        import serial

        deadline = time.monotonic() + 10
        while True:  # QEMU listens a moment after it starts; it runs the guest once we connect
            try:
                self.link = serial.serial_for_url(f"socket://127.0.0.1:{self.port}", timeout=10)
                self.link.write(b"\n")  # the self-test waits for a start byte (see selftest.c)
                return self
            except serial.SerialException:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"QEMU did not listen on port {self.port}: "
                                         f"{self.proc.stderr.read().decode(errors='replace')}") from None
                time.sleep(0.05)

    def read_until(self, end: bytes) -> bytes:
        got = self.link.read_until(end)
        assert got.endswith(end), f"timed out waiting for {end!r}; got {got!r}"
        return got

    def wait(self, timeout: float = 10) -> int:
        return self.proc.wait(timeout=timeout)

    def __exit__(self, *exc):
        if self.link is not None:
            self.link.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()


def _banner(q: Qemu) -> tuple[int, int]:
    text = q.read_until(b"echo: ready\r\n")
    m = BANNER.fullmatch(text)
    assert m, f"unexpected banner: {text!r}"
    return int(m.group(1)), int(m.group(2))


def test_selftest_under_qemu(selftest_elf):
    _need("qemu-system-arm")
    payload = bytes(range(0x20, 0x7F)) + bytes([0x00, 0x0A, 0x0D, 0x80, 0xFF])
    ticks = []
    with Qemu(selftest_elf) as q:
        iterations, t = _banner(q)
        ticks.append(t)
        q.link.write(payload)
        assert q.link.read(len(payload)) == payload  # every byte value echoes, 8-bit clean
        q.link.write(b"\x04")
        q.read_until(b"bye\r\n")
    # Second run, with semihosting so the firmware's exit code reaches QEMU's status.
    with Qemu(selftest_elf, semihosting=True) as q:
        _, t = _banner(q)
        ticks.append(t)
        q.link.write(b"xyz\x05")
        assert q.read_until(b"bye\r\n") == b"xyzbye\r\n"
        assert q.wait() == 3
    assert iterations == 100000
    assert ticks[0] > 0, "SysTick did not count"
    assert ticks[0] == ticks[1], f"tick counts differ between runs with -icount shift=0: {ticks}"
    # One tick = 40 instructions at shift=0 and 25 MHz: a loop of 2-4 instructions per iteration.
    assert iterations * 2 // 40 <= ticks[0] <= iterations * 4 // 40 + 1, ticks


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process so far (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads a process's CPU time from /proc")
def test_idle_board_sleeps(selftest_elf):
    """Waiting on its UART the firmware sleeps (WFI until the RX interrupt), so an idle board costs the host no
    CPU: a busy poll under -icount held a core at 36-84% measured here. The echo afterwards shows a byte still
    wakes it, at once."""
    _need("qemu-system-arm")
    with Qemu(selftest_elf) as q:
        _banner(q)
        time.sleep(0.5)  # let QEMU settle after the banner (its output path is not idle work)
        before, t0 = _cpu_seconds(q.proc.pid), time.monotonic()
        time.sleep(3.0)
        used = (_cpu_seconds(q.proc.pid) - before) / (time.monotonic() - t0)
        assert used < 0.10, f"an idle board used {used:.0%} of a host core (the UART wait must sleep)"
        # Each byte wakes it at once (its RX interrupt): woken only by the SysTick wrap (every 2^24 ticks, 0.67 s
        # of virtual time that follows real time while asleep) eight round trips would take ~2.7 s.
        t0 = time.monotonic()
        for byte in b"wake up!":
            q.link.write(bytes([byte]))
            assert q.link.read(1) == bytes([byte])
        assert time.monotonic() - t0 < 1.5, f"8 echoes took {time.monotonic() - t0:.2f} s"
        q.link.write(b"\x04")
        q.read_until(b"bye\r\n")


def test_fault_is_reported(selftest_elf):
    _need("qemu-system-arm")
    with Qemu(selftest_elf, semihosting=True) as q:
        _banner(q)
        q.link.write(b"\x06")  # the self-test runs an undefined instruction
        line = q.read_until(b"\r\n") + q.read_until(b"\r\n")
        assert re.search(rb"FAULT HardFault pc=0x[0-9a-f]{8} cfsr=0x00010000 ", line), line  # UNDEFINSTR
        assert q.wait() == 139


def test_every_board_builds(tmp_path):
    """Every board's self-test compiles -Werror clean and links for its CPU (stubs: compile and link only)."""
    _need("arm-none-eabi-gcc", "make")
    _make("all-boards", build_dir=tmp_path)
    for board, cpu in BOARD_CPUS.items():
        elf = tmp_path / board / "selftest.elf"
        assert elf.is_file(), board
        attrs = subprocess.run(["arm-none-eabi-readelf", "-A", str(elf)], capture_output=True, text=True,
                               check=True).stdout
        arch = {"cortex-m0plus": "v6S-M", "cortex-m4": "v7E-M", "cortex-m7": "v7E-M"}[cpu]
        assert f"Tag_CPU_arch: {arch}" in attrs, (board, attrs)
        assert ("Tag_ABI_VFP_args: VFP registers" in attrs) == (cpu != "cortex-m0plus"), board


def test_fragment_for_an_including_makefile(tmp_path):
    """What the core Makefile sees when it includes board.mk: absolute existing sources and the CPU's flags."""
    _need("make")
    mk = tmp_path / "Makefile"
    mk.write_text(f"include {BOARDS}/board.mk\n"
                  "show:\n"
                  "\t@echo 'CPU=$(CPU)'\n\t@echo 'CPU_CFLAGS=$(CPU_CFLAGS)'\n\t@echo 'SRCS=$(BOARD_SRCS)'\n"
                  "\t@echo 'LDS=$(BOARD_LDSCRIPT)'\n\t@echo 'CFLAGS=$(BOARD_CFLAGS)'\n"
                  "\t@echo 'LDFLAGS=$(BOARD_LDFLAGS)'\n")
    flags = {"cortex-m0plus": "-mcpu=cortex-m0plus -mthumb -mfloat-abi=soft",
             "cortex-m4": "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16",
             "cortex-m7": "-mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16"}
    for board, cpu in BOARD_CPUS.items():
        out = subprocess.run(["make", "-s", "-C", str(tmp_path), f"BOARD={board}", "show"],
                             capture_output=True, text=True, check=True).stdout
        vals = dict(line.split("=", 1) for line in out.splitlines())
        assert vals["CPU"] == cpu and vals["CPU_CFLAGS"] == flags[cpu], (board, vals)
        srcs = vals["SRCS"].split()
        assert srcs and all(Path(s).is_absolute() and Path(s).is_file() for s in srcs), srcs
        assert Path(vals["LDS"]).is_file()
        assert f"-I{BOARDS}" in vals["CFLAGS"].split() and vals["CFLAGS"].startswith(flags[cpu])
        assert f"-T{vals['LDS']}" in vals["LDFLAGS"].split()
    # CPU= overrides the board's CPU (compile-only experiments); unknown names are refused by name.
    out = subprocess.run(["make", "-s", "-C", str(tmp_path), "BOARD=qemu-mps2-an386", "CPU=cortex-m7", "show"],
                         capture_output=True, text=True, check=True).stdout
    assert "CPU_CFLAGS=" + flags["cortex-m7"] in out.splitlines()
    for bad, word in (("BOARD=nope", "unknown BOARD 'nope'"), ("CPU=cortex-m33", "unknown CPU 'cortex-m33'"),
                      ("BOARD=esp32-s3", "xtensa-esp32s3-elf-gcc")):
        proc = subprocess.run(["make", "-s", "-C", str(tmp_path), bad, "show"], capture_output=True, text=True,
                              check=False)
        assert proc.returncode != 0 and word in proc.stderr, (bad, proc.stderr)


@pytest.mark.parametrize("cpu,dsp,fp", [("cortex-m0plus", False, False), ("cortex-m4", True, True),
                                        ("cortex-m7", True, True)])
def test_cpu_flag_sets(cpu, dsp, fp):
    """The cpu/<name>.mk flags give the compiler the features the kernels test for (__ARM_FEATURE_DSP, __ARM_FP)."""
    _need("arm-none-eabi-gcc")
    text = (ROOT / "firmware_c" / "cpu" / f"{cpu}.mk").read_text()
    flags = re.search(r"^CPU_CFLAGS\s*:?=\s*(.+)$", text, re.MULTILINE).group(1).split()
    macros = subprocess.run(["arm-none-eabi-gcc", *flags, "-dM", "-E", "-x", "c", "/dev/null"],
                            capture_output=True, text=True, check=True).stdout
    assert ("__ARM_FEATURE_DSP 1" in macros) == dsp
    assert ("#define __ARM_FP " in macros) == fp


RUNTIME_MAIN = r"""
#include <stdint.h>
#include <string.h>
#include "edge.h"
#include "board.h"
#include "model_data.h"
static edge_interp_t interp;
static uint8_t arena[64 * 1024] BOARD_LARGE_BSS;
static edge_trace_entry_t trace[16];
int main(void)
{
    edge_timer_t timer = { board_timer_now_cb, 0, 0 };
    char buf[128];
    uint32_t k;
    int i;
    board_init();
    (void)board_uart_getc(); /* the host's start byte (see selftest.c) */
    board_timer_restart();
    timer.units = board_timer_units();
    if (edge_init(&interp, model, sizeof model, arena, sizeof arena) != EDGE_OK) {
        board_print(edge_error_message(&interp, buf, sizeof buf));
        return 1;
    }
    edge_set_timer(&interp, &timer, trace, 16);
    for (i = -128; i < 128; i += 51) {
        int8_t x = (int8_t)i;
        memcpy(edge_input(&interp, 0)->data, &x, 1);
        if (edge_invoke(&interp) != EDGE_OK) {
            return 2;
        }
        board_print("out=");
        board_print_u32(*(const uint8_t *)edge_output(&interp, 0)->data);
        board_print(" ticks:");
        for (k = 0; k < interp.trace_count && k < 16u; ++k) {
            board_print(" ");
            board_print_u32(trace[k].ticks);
        }
        board_print("\r\n");
    }
    board_print("done\r\n");
    return 0;
}
"""


def test_runtime_links_with_the_fragment_and_runs_under_qemu(tmp_path):
    """The core runtime + board.mk + a main: hello_world_int8 under QEMU equals TFLM, per-op ticks repeat."""
    from tests.conftest import shared_model

    _need("arm-none-eabi-gcc", "make", "qemu-system-arm")
    core = ROOT / "firmware_c"
    data = shared_model("tflite-micro/hello_world_int8.tflite").read_bytes()
    (tmp_path / "model_data.h").write_text(
        f"static const unsigned char model[{len(data)}] __attribute__((aligned(16))) = "
        f"{{{','.join(map(str, data))}}};\n")
    (tmp_path / "main.c").write_text(RUNTIME_MAIN)
    subprocess.run(["python3", str(core / "tools" / "gen_ops.py"), str(tmp_path / "edge_ops_generated.c")],
                   check=True, capture_output=True, cwd=core)
    (tmp_path / "Makefile").write_text(
        f"include {BOARDS}/board.mk\n"
        f"SRCS := {core}/src/edge.c $(wildcard {core}/src/kernels/*.c) edge_ops_generated.c main.c $(BOARD_SRCS)\n"
        "fw.elf: $(SRCS)\n"
        f"\t$(BOARD_CC) -std=c99 -Wall -Wextra -Werror -Os $(BOARD_CFLAGS) -I{core}/include -I{core}/src "
        "$(SRCS) $(BOARD_LDFLAGS) -o $@\n")
    build = subprocess.run(["make", "-C", str(tmp_path)], capture_output=True, text=True, timeout=300, check=False)
    assert build.returncode == 0, build.stdout + build.stderr
    runs = []
    for _ in range(2):
        with Qemu(tmp_path / "fw.elf", semihosting=True) as q:
            runs.append(q.read_until(b"done\r\n").decode())
            assert q.wait() == 0
    assert runs[0] == runs[1], runs  # outputs and per-op ticks repeat exactly under -icount
    lines = runs[0].splitlines()[:-1]
    import numpy as np

    from tests.peers import run_tflm

    want = [int(run_tflm(data, [np.array([[i]], dtype=np.int8)])[0].ravel()[0]) & 0xFF
            for i in range(-128, 128, 51)]
    got = [int(re.match(r"out=(\d+) ticks:", line).group(1)) for line in lines]
    assert got == want
    ticks = [list(map(int, line.split("ticks:")[1].split())) for line in lines]
    assert all(len(t) == 3 and all(v > 0 for v in t) for t in ticks), ticks  # three FULLY_CONNECTED ops
