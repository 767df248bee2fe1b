"""`edge deploy --inventory` through Ansible on a loopback fleet (one real sshd per host, tests/sshd.py): waves,
a host that fails its health check stops the rollout there and is rolled back, the hosts after it keep their
old model, a rollout run again resumes (the hosts already done are skipped), `edge fleet status` reads each host;
without Ansible the flags exit 2 naming the install line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from edge_sdk.cli import main
from tests.sshd import SSHLab, _descendants, ssh_cache  # noqa: F401  (fixtures)
from tests.test_deploy import ROOT, device_base, edge, sha, tiny_model

pytest.importorskip("ansible_runner", reason="Ansible is not installed (pip install 'edge-sdk[fleet]')")

# A device whose runtime computes wrong results: its PYTHONPATH's sitecustomize adds 1 to every tensor read
# from the interpreter (a broken kernel, as far as the health check can tell: the model loads and runs).
BROKEN_RUNTIME = '''
import importlib.abc, importlib.util, sys
class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "edge_sdk.runtime.interpreter":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            get = module.Interpreter.get_tensor
            module.Interpreter.get_tensor = lambda self, i, *a, **k: get(self, i, *a, **k) + 1
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, _Hook())
'''


def seed(d, model: Path) -> None:
    """The host runs ``model`` already (as a deploy leaves it: models/NAME and the manifest naming it)."""
    base = device_base(d)
    (base / "models").mkdir(parents=True)
    final = base / "models" / "model.tflite"
    final.write_bytes(model.read_bytes())
    (base / "manifest.json").write_text(json.dumps({"model": {"name": "model.tflite", "path": str(final),
                                                              "sha256": sha(model), "size": model.stat().st_size}}))


# ----------------------------------------------------------------------------- a fleet on 127.0.0.2-127.0.0.6
# The BROKEN_RUNTIME hook switched on per host: it breaks the runtime of a device whose $HOME holds this file.
BROKEN_MARKER = "broken-runtime"
SWITCHABLE_RUNTIME = ("import os\nif os.path.exists(os.path.join(os.environ.get('HOME', '/nonexistent'), "
                      f"{BROKEN_MARKER!r})):\n"
                      + "".join(f"    {line}\n" for line in BROKEN_RUNTIME.strip().splitlines()))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, ssh_cache):
    """Five hosts, one sshd each on 127.0.0.2 ... 127.0.0.6 (pi2 ... pi6), shared by every rollout test of this
    module (each test `reset`s them; the runtime venv a deploy installs stays, so a host installs it once per run:
    the installs are most of these tests' time); a host's runtime breaks while its $HOME holds BROKEN_MARKER."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDGE_TEST_CACHE", str(ssh_cache))
        the_lab = SSHLab(tmp_path_factory.mktemp("fleet") / "lab")
        hooks = the_lab.root / "device-hooks"
        hooks.mkdir()
        (hooks / "sitecustomize.py").write_text(SWITCHABLE_RUNTIME)
        the_lab.device_pythonpath = f"{hooks}:{the_lab.device_pythonpath}"
        try:
            hosts = [the_lab.start(f"pi{i}", address=f"127.0.0.{i}") for i in range(2, 7)]
            for key in ("EDGE_SSH_CONFIG", "XDG_CACHE_HOME"):
                mp.setenv(key, the_lab.env[key])
            yield the_lab, hosts
        finally:
            the_lab.stop_all()


def reset(hosts, model: Path) -> None:
    """Every host runs ``model``, healthy, with no rollback point (its runtime venv, if any, kept)."""
    for d in hosts:
        base = device_base(d)
        for name in ("models", "rollback", ".rollback.part"):
            shutil.rmtree(base / name, ignore_errors=True)
        for name in ("manifest.json", "health.json"):
            (base / name).unlink(missing_ok=True)
        (d.home / BROKEN_MARKER).unlink(missing_ok=True)
        seed(d, model)
        (base / "health.json").write_text(json.dumps({"ok": True, "sha256": sha(model), "time": "before",
                                                      "error": None}))


def fleet_inventory(path: Path, hosts) -> Path:
    path.write_text("[pis]\n" + "".join(f"{d.alias} ansible_host={d.address} ansible_port={d.port} "
                                         "ansible_user=root\n" for d in hosts))
    return path


def two_models(tmp_path) -> tuple[Path, Path]:
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    return (tiny_model(tmp_path / "old" / "model.tflite"),
            tiny_model(tmp_path / "new" / "model.tflite", scale=3.0))


def running(d) -> str | None:
    """The sha256 the host's manifest names (None: none readable)."""
    try:
        return json.loads((device_base(d) / "manifest.json").read_text())["model"]["sha256"]
    except (OSError, ValueError, KeyError):
        return None


def installed_runtimes(hosts) -> dict:
    """Each host's complete runtime venvs: {(alias, venv name): (inode, mtime) of its completion mark} (a venv
    installed again is removed and rebuilt: a new mark)."""
    found = {}
    for d in hosts:
        for mark in (device_base(d) / "venvs").glob("*/.edge-sdk-complete"):
            st = mark.stat()
            found[(d.alias, mark.parent.name)] = (st.st_ino, st.st_mtime_ns)
    return found


def assert_runtimes_reused(before: dict, hosts) -> None:
    """A runtime venv a host had before a rollout of the same wheel is reused, not installed again."""
    after = installed_runtimes(hosts)
    assert {k: after.get(k) for k in before} == before, "a host's runtime venv was installed again"


def fleet_status(lab, inventory) -> dict:
    r = edge("fleet", "status", "--inventory", inventory, "--json", lab=lab)
    assert r.returncode == 0, r.stderr
    return {x["host"]: x for x in json.loads(r.stdout)}


@pytest.mark.slow
def test_rollout_stops_at_an_unhealthy_host_rolls_it_back_and_resumes(fleet, tmp_path):
    """Waves 1, 1, rest over four hosts of the fleet (inventory names kitchen, garage, attic, shed); garage's
    runtime is broken: the rollout stops there, garage is rolled back, attic and shed keep the old model; repaired,
    the rollout run again resumes (kitchen current) and converges; `edge fleet status` reads each host."""
    lab, hosts = fleet
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = tiny_model(tmp_path / "old" / "model.tflite")
    new = tiny_model(tmp_path / "new" / "model.tflite", scale=2.0)
    first, bad, *rest = hosts[:4]
    names = dict(zip(hosts[:4], ("kitchen", "garage", "attic", "shed")))
    four = [first, bad, *rest]
    reset(four, old)
    (bad.home / BROKEN_MARKER).touch()
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[pis]\n" + "".join(
        f"{names[d]} ansible_host={d.address} ansible_port={d.port} ansible_user=root\n" for d in four)
        + "\n[pis:vars]\nedge_site=lab\n")
    args = ["deploy", new, "--inventory", inventory, "--wave", "1", "--wave", "1", "--wave", "100%",
            "--max-fail", "0%", "--no-c-backend", "--json"]
    try:
        r = edge(*args, lab=lab, timeout=600)
    finally:
        (bad.home / BROKEN_MARKER).unlink(missing_ok=True)  # the broken host repaired (its runtime fixed)
    assert r.returncode == 4, r.stderr
    assert isinstance(json.loads(r.stdout), list), r.stdout  # one report per host, not an error object
    reports = {x["host"]: x for x in json.loads(r.stdout)}
    assert reports["kitchen"]["status"] == "ok" and reports["kitchen"]["health"]["ok"]
    assert reports["garage"]["status"] == "rolled back"
    assert reports["garage"]["health"]["ok"] is False and "differ" in reports["garage"]["health"]["error"]
    assert reports["garage"]["rolled_back_to"] == sha(old)
    assert reports["attic"]["status"] == reports["shed"]["status"] == "not reached"
    assert sha(device_base(first) / "models" / "model.tflite") == sha(new)
    for d in (bad, *rest):  # the failed host rolled back, the later waves never touched
        assert sha(device_base(d) / "models" / "model.tflite") == sha(old)
        assert json.loads((device_base(d) / "manifest.json").read_text())["model"]["sha256"] == sha(old)

    # the broken host repaired: the rollout run again resumes; kitchen is already current, and garage reuses the
    # runtime venv the first run installed (same wheel)
    runtimes = installed_runtimes(four)
    assert any(alias == bad.alias for alias, _ in runtimes)  # garage got its runtime before it failed
    r = edge(*args, lab=lab, timeout=600)
    assert_runtimes_reused(runtimes, four)
    assert r.returncode == 0, r.stdout + r.stderr
    reports = {x["host"]: x for x in json.loads(r.stdout)}
    assert reports["kitchen"]["status"] == "current"
    assert all(reports[names[d]]["status"] == "ok" for d in (bad, *rest))
    for d in four:
        assert sha(device_base(d) / "models" / "model.tflite") == sha(new)

    r = edge("fleet", "status", "--inventory", inventory, "--json", lab=lab)
    assert r.returncode == 0, r.stderr
    status = {x["host"]: x for x in json.loads(r.stdout)}
    assert set(status) == {names[d] for d in four}
    for x in status.values():
        assert x["model_sha256"] == sha(new) and x["model_ok"] and x["runtime_ok"] and x["runtime"]
        assert x["health"]["ok"] and x["health"]["sha256"] == sha(new)


@pytest.mark.slow
def test_a_failed_wave_is_rolled_back_whole_and_the_later_waves_keep_their_model(fleet, tmp_path):
    """Waves 1, 2, rest over pi2..pi6; pi4 (second wave, with pi3) fails its health check: the rollout stops
    there, pi3 and pi4 both return to the old model (and its last health check), pi5 and pi6 are never touched,
    pi2 keeps the new one; `edge fleet status` shows it; one report per host."""
    lab, hosts = fleet
    old, new = two_models(tmp_path)
    reset(hosts, old)
    pi2, pi3, pi4, pi5, pi6 = hosts
    (pi4.home / BROKEN_MARKER).touch()
    inventory = fleet_inventory(tmp_path / "hosts.ini", hosts)
    manifests = {d.alias: (device_base(d) / "manifest.json").read_bytes() for d in hosts}
    runtimes = installed_runtimes(hosts)
    r = edge("deploy", new, "--inventory", inventory, "--wave", "1", "--wave", "2", "--wave", "100%",
             "--max-fail", "0%", "--no-c-backend", "--json", lab=lab, timeout=900)
    (pi4.home / BROKEN_MARKER).unlink()
    assert r.returncode == 4, r.stdout + r.stderr
    reports = {x["host"]: x for x in json.loads(r.stdout)}
    assert set(reports) == {d.alias for d in hosts}
    assert reports["pi2"]["status"] == "ok" and reports["pi2"]["health"]["ok"]
    assert reports["pi3"]["health"]["ok"]  # pi3 passed its own check, and was undone with its wave
    assert reports["pi4"]["health"]["ok"] is False and "differ" in reports["pi4"]["health"]["error"]
    for name in ("pi3", "pi4"):
        assert reports[name]["status"] == "rolled back" and reports[name]["rolled_back_to"] == sha(old)
    assert reports["pi5"]["status"] == reports["pi6"]["status"] == "not reached"
    assert_runtimes_reused(runtimes, hosts)

    status = fleet_status(lab, inventory)
    assert status["pi2"]["model_sha256"] == sha(new) and status["pi2"]["health"]["sha256"] == sha(new)
    for d in (pi3, pi4, pi5, pi6):  # the whole failed wave back on the old model, the later waves never moved
        x = status[d.alias]
        assert x["model_sha256"] == sha(old) and x["model_ok"], x
        assert x["health"] == {"ok": True, "sha256": sha(old), "time": "before", "error": None}  # restored too
        assert sha(device_base(d) / "models" / "model.tflite") == sha(old)
        assert (device_base(d) / "manifest.json").read_bytes() == manifests[d.alias]  # the manifest, as it was


def _kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL the controller and every process it started (its Ansible, the steps, their ssh), as a controller
    machine that loses power: nothing gets to clean up."""
    tree = [proc.pid, *reversed(_descendants(proc.pid))]  # collected first: orphans cannot be found later
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=30)


@pytest.mark.slow
def test_a_rollout_killed_mid_wave_resumes_and_converges(fleet, tmp_path):
    """The controller SIGKILLed as the first host of a wave of 3 switches: no host is left half-switched (its
    manifest names the model file it holds), the rerun resumes (the hosts done are current, the rollback points
    still hold the old model) and every host ends on the new model, healthy."""
    lab, hosts = fleet
    old, new = two_models(tmp_path)
    reset(hosts, old)
    inventory = fleet_inventory(tmp_path / "hosts.ini", hosts)
    args = ["deploy", new, "--inventory", inventory, "--wave", "3", "--wave", "100%", "--max-fail", "0%",
            "--no-c-backend", "--json"]
    # the killed controller cannot remove its work folder: it goes in one the test removes (short: ssh's
    # ControlPath sockets live there, and a socket path has at most 108 bytes)
    scratch = Path(tempfile.mkdtemp(prefix="edge-kill-"))
    output = tmp_path / "killed-controller.out"
    with open(output, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "edge_sdk.cli", *map(str, args)], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT, env={**lab.env, "TMPDIR": str(scratch)})
    try:
        deadline = time.monotonic() + 600
        while not any(running(d) == sha(new) for d in hosts):
            assert proc.poll() is None, f"the rollout ended before any host switched: {output.read_text()}"
            assert time.monotonic() < deadline, "no host switched within 600 s"
            time.sleep(0.02)
    finally:
        _kill_tree(proc)
        shutil.rmtree(scratch, ignore_errors=True)
    switched = [d.alias for d in hosts if running(d) == sha(new)]
    healthy = [d.alias for d in hosts if json.loads((device_base(d) / "health.json").read_text()).get("sha256")
               == sha(new)]
    assert switched and set(healthy) < {d.alias for d in hosts[:3]}  # mid-wave: the first wave not done
    for d in hosts:  # every host wholly on one model: the manifest names the bytes it holds
        assert running(d) in (sha(old), sha(new))
        assert sha(device_base(d) / "models" / "model.tflite") == running(d), d.alias

    r = edge(*args, lab=lab, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    reports = {x["host"]: x for x in json.loads(r.stdout)}
    assert all(reports[d.alias]["status"] in ("ok", "current") for d in hosts), reports
    for name in switched:  # a host switched before the kill: the rollback point of the killed run kept
        assert reports[name]["resumed"] and reports[name]["before"] == sha(old)
    status = fleet_status(lab, inventory)
    for d in hosts:
        x = status[d.alias]
        assert x["model_sha256"] == sha(new) and x["model_ok"] and x["runtime_ok"], x
        assert x["health"]["ok"] and x["health"]["sha256"] == sha(new)
        # the rollback point is the model the host ran before this rollout, not a half-done one
        assert sha(device_base(d) / "rollback" / "model") == sha(old), d.alias


def test_waves_and_threshold_are_checked():
    from edge_sdk.errors import UsageError
    from edge_sdk.tools.fleet import parse_percent, parse_waves

    assert parse_waves(["1", "10%", "100%"]) == [1, "10%", "100%"]
    assert parse_waves([]) == ["100%"]
    for bad in ("0", "x", "150%", "-1"):
        with pytest.raises(UsageError):
            parse_waves([bad])
    assert parse_percent("5%") == 5
    with pytest.raises(UsageError):
        parse_percent("101%")


def test_without_ansible_the_flags_exit_2_with_the_install_line(tmp_path, capsys, monkeypatch):
    model = tiny_model(tmp_path / "model.tflite")
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[pis]\npi1 ansible_host=127.0.0.1\n")
    monkeypatch.setitem(sys.modules, "ansible_runner", None)  # `import ansible_runner` raises ImportError
    assert main(["deploy", str(model), "--inventory", str(inventory)]) == 2
    err = capsys.readouterr().err
    assert "pip install 'edge-sdk[fleet]'" in err and "Traceback" not in err
    assert main(["fleet", "status", "--inventory", str(inventory)]) == 2
    assert "pip install 'edge-sdk[fleet]'" in capsys.readouterr().err
