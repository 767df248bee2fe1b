"""`edge deploy` against real sshd processes on 127.0.0.1 (tests/sshd.py: throw-away keys, one $HOME per
"device", the fast-install trick documented there). The unit tests at the top need no sshd."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.tools.deploy import build_wheel, deploy, read_hosts, status
from edge_sdk.device.ssh import SSHTarget, remote_command
from edge_sdk.errors import DeviceError
from tests.oprunner import T, op_model
from tests.sshd import lab, ssh_cache  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parent.parent


def tiny_model(path: Path, scale: float = 1.0) -> Path:
    """A float ADD of an input and a constant (the constant makes two models differ by content)."""
    c = T((1, 4), "FLOAT32", data=np.arange(4, dtype=np.float32) * scale)
    path.write_bytes(op_model("ADD", [T((1, 4), "FLOAT32"), c], [T((1, 4), "FLOAT32")]))
    return path


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def edge(*argv, lab=None, timeout=300) -> subprocess.CompletedProcess:
    """The real `edge` command in a child process (with the lab's ssh config). The timeout only stops a hung
    command: a deploy takes ~25 s on a quiet machine (interpreter start, venv + pip install on a fresh device),
    several times that on a loaded one."""
    env = dict(lab.env if lab else os.environ)
    return subprocess.run([sys.executable, "-m", "edge_sdk.cli", *map(str, argv)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT, check=False)


def device_base(d) -> Path:
    return d.home / ".edge-sdk"


def run_on_device(lab, d, model_path: str, x) -> np.ndarray:
    """Run a model with the device's deployed runtime (over plain ssh) and return its first output."""
    script = ("import sys, json, numpy as np; from edge_sdk import Interpreter; it = Interpreter(model_path=sys.argv[1]);"
              " it.allocate_tensors(); it.set_tensor(it.get_input_details()[0]['index'], np.array(json.loads(sys.argv[2]),"
              " np.float32)); it.invoke(); print(json.dumps(it.get_tensor(it.get_output_details()[0]['index']).tolist()))")
    cmd = remote_command(f"{device_base(d)}/venv/bin/python", "-c", script, model_path, json.dumps(x.tolist()))
    r = lab.ssh(d, cmd)
    assert r.returncode == 0, r.stderr
    return np.array(json.loads(r.stdout), np.float32)


# ----------------------------------------------------------------------------------------------- no sshd needed
def test_parse_targets():
    assert SSHTarget.parse("pi@raspberrypi.local:2222") == SSHTarget("raspberrypi.local", "pi", 2222)
    assert SSHTarget.parse("mypi") == SSHTarget("mypi")
    assert SSHTarget.parse("root@[fe80::1]:22") == SSHTarget("fe80::1", "root", 22)
    assert str(SSHTarget.parse("pi@host:22")) == "pi@host:22"
    for bad in ("", "pi@", "host:abc", "-oProxyCommand=x", "a b", "host:70000"):
        with pytest.raises(DeviceError):
            SSHTarget.parse(bad)


def test_read_hosts_plain_and_ansible(tmp_path):
    plain = tmp_path / "hosts.txt"
    plain.write_text("# fleet\npi@10.0.0.1\n\npi@10.0.0.2:2222  # the second\nalias-three\n")
    assert [str(t) for t in read_hosts(plain)] == ["pi@10.0.0.1", "pi@10.0.0.2:2222", "alias-three"]
    ini = tmp_path / "hosts.ini"
    ini.write_text("[pis]\nkitchen ansible_host=10.0.0.5 ansible_port=2200 ansible_user=pi\n"
                   "garage ansible_host=10.0.0.6\n; comment\n[others]\nplainhost\n")
    targets = read_hosts(ini)
    assert [(t.label, t.host, t.user, t.port) for t in targets] == [
        ("kitchen", "10.0.0.5", "pi", 2200), ("garage", "10.0.0.6", None, None), ("plainhost", "plainhost", None, None)]
    bad = tmp_path / "bad.ini"
    bad.write_text("[g]\nbox ansible_port\n")
    with pytest.raises(DeviceError, match="bad.ini:2"):
        read_hosts(bad)


def test_remote_command_quotes_every_word(tmp_path):
    words = ["printf", "%s|", "it's", 'a "b"', "$(touch x)", "; rm -rf y", "`id`", "\\n"]
    out = subprocess.run(["sh", "-c", remote_command(*words)], capture_output=True, text=True, cwd=tmp_path,
                         timeout=10, check=False).stdout
    assert out == "|".join(words[2:]) + "|"
    assert not (tmp_path / "x").exists()


def test_deploy_refuses_a_non_model(tmp_path):
    junk = tmp_path / "junk.tflite"
    junk.write_bytes(b"not a model at all")
    from edge_sdk.errors import ModelError

    with pytest.raises(ModelError, match="TFL3"):
        deploy(junk, "nobody@127.0.0.1:1")


# ----------------------------------------------------------------------------------------------- loopback devices
@pytest.mark.slow
def test_deploy_status_redeploy(lab, tmp_path):
    d = lab.start("pi1")
    model = tiny_model(tmp_path / "model.tflite")
    r = edge("deploy", model, "--host", "pi1", lab=lab, timeout=900)  # builds the C backend on the device
    assert r.returncode == 0, r.stderr
    assert "deployed model.tflite to pi1" in r.stdout
    base = device_base(d)
    manifest = json.loads((base / "manifest.json").read_text())
    assert manifest["model"]["sha256"] == sha(model) and manifest["model"]["size"] == model.stat().st_size
    assert sha(base / "models" / "model.tflite") == sha(model)
    assert manifest["edge_sdk_version"] and manifest["runtime"]["venv"] == str(base / "venv")
    assert (base / "venv").is_symlink() and (base / "venv").resolve() == Path(manifest["runtime"]["venv_dir"])
    # the C backend was built on the device when it has a compiler (optional: a note otherwise)
    c = manifest["c_backend"]
    if shutil.which("cc") and shutil.which("make"):  # the loopback device is this machine: it must build
        assert c["built"] is True and Path(c["library"]).is_file(), c
    else:
        assert c["built"] is False and c["note"], c
    # the deployed runtime runs the deployed model
    x = np.array([[1, 2, 3, 4]], np.float32)
    np.testing.assert_allclose(run_on_device(lab, d, manifest["model"]["path"], x), x + np.arange(4))

    r = edge("deploy", "--status", "--host", "pi1", "--json", lab=lab)
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["model"] == manifest["model"] and st["model_ok"] and st["runtime_ok"]
    r = edge("deploy", "--status", "--host", "pi1", lab=lab)
    assert "model.tflite" in r.stdout and "BROKEN" not in r.stdout and "MISSING" not in r.stdout

    # a second model: the manifest names it; with the same wheel the runtime is reused (other edits to the
    # source tree would make a new wheel, hence a new venv: pin one here)
    wheel = build_wheel()
    first = deploy(model, "pi1", build_c=False, wheel=wheel)
    model2 = tiny_model(tmp_path / "model.tflite", scale=10.0)
    venv_dir = Path(first.manifest["runtime"]["venv_dir"])
    built = (venv_dir / "pyvenv.cfg").stat().st_mtime_ns
    result = deploy(model2, "pi1", build_c=False, wheel=wheel)
    assert result.ok and result.manifest["runtime"]["venv_dir"] == str(venv_dir)
    assert (venv_dir / "pyvenv.cfg").stat().st_mtime_ns == built  # reused, not built again (no timing: CI is loaded)
    assert json.loads((base / "manifest.json").read_text())["model"]["sha256"] == sha(model2)
    np.testing.assert_allclose(run_on_device(lab, d, str(base / "models" / "model.tflite"), x), x + 10 * np.arange(4))


@pytest.mark.slow
def test_interrupted_deploy_keeps_the_previous_model(lab, tmp_path):
    d = lab.start("pi1")
    model = tiny_model(tmp_path / "model.tflite")
    assert deploy(model, "pi1", build_c=False).ok
    base = device_base(d)
    before = (base / "manifest.json").read_bytes()
    venv_before = os.readlink(base / "venv")

    # a huge "model" with the same name: a valid header, then 1 GiB of zeros (a sparse file)
    big = tmp_path / "big" / "model.tflite"
    big.parent.mkdir()
    with open(big, "wb") as f:
        f.write(model.read_bytes()[:8])
        f.truncate(1 << 30)
    proc = subprocess.Popen([sys.executable, "-m", "edge_sdk.cli", "deploy", str(big), "--host", "pi1",
                             "--no-c-backend"], env=lab.env, cwd=ROOT, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        part = None
        while time.monotonic() < deadline and part is None:
            parts = [p for p in (base / "models").glob(".*.part") if p.stat().st_size > 1 << 20]
            part = parts[0] if parts else None
            time.sleep(0.01)
        assert part is not None, "the copy never started"
        os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its ssh, mid-copy
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    assert (base / "manifest.json").read_bytes() == before
    assert sha(base / "models" / "model.tflite") == sha(model)
    assert os.readlink(base / "venv") == venv_before
    st = status("pi1")
    assert st["model_ok"] and st["runtime_ok"]
    x = np.array([[1, 2, 3, 4]], np.float32)
    np.testing.assert_allclose(run_on_device(lab, d, str(base / "models" / "model.tflite"), x), x + np.arange(4))

    # a copy that outlives its timeout is also abandoned cleanly; the next deploy clears the leftovers
    with pytest.raises(DeviceError, match="timed out"):
        deploy(big, "pi1", build_c=False, copy_timeout=0.5)
    assert (base / "manifest.json").read_bytes() == before
    assert deploy(model, "pi1", build_c=False).ok
    assert not list((base / "models").glob(".*.part"))


def test_unknown_host_key_is_refused_with_its_fingerprint(lab, tmp_path):
    d = lab.start("pi1", trust=False)
    known = lab.known_hosts.read_text()
    with pytest.raises(DeviceError) as info:
        status("pi1")
    message = str(info.value)
    assert "not in known_hosts" in message and d.fingerprint() in message and "--accept-new-host-key" in message
    assert lab.known_hosts.read_text() == known  # nothing recorded
    r = edge("deploy", "--status", "--host", "pi1", lab=lab)
    assert r.returncode == 4 and d.fingerprint() in r.stderr

    # --accept-new-host-key records a key never seen before
    r = edge("deploy", "--status", "--host", "pi1", "--accept-new-host-key", lab=lab)
    assert r.returncode == 0, r.stderr
    assert "nothing deployed" in r.stdout
    assert lab.known_hosts.read_text() != known
    status("pi1")  # now known: no flag needed


def test_changed_host_key_is_refused_even_with_accept_new(lab, tmp_path):
    d = lab.add("pi1", trust=False)
    impostor = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(impostor)], check=True, timeout=30)
    lab.trust(d, key=impostor)  # known_hosts holds a different key for this host:port
    lab.launch(d)
    for accept in (False, True):
        with pytest.raises(DeviceError) as info:
            status("pi1", accept_new_host_key=accept)
        assert "CHANGED" in str(info.value) and d.fingerprint() in str(info.value)


@pytest.mark.slow
def test_model_paths_with_spaces_and_quotes(lab, tmp_path):
    d = lab.start("pi1")
    folder = tmp_path / "my models (v2)"
    folder.mkdir()
    marker = f"pwned-{os.getpid()}"
    name = f"""it's a "model" $(touch {marker}) ;`touch {marker}`.tflite"""
    model = tiny_model(folder / name)
    r = edge("deploy", model, "--host", "pi1", "--no-c-backend", "--target", "raspberry-pi-4", lab=lab)
    assert r.returncode == 0, r.stderr
    if os.uname().machine != "aarch64":  # the profile is checked against the device: a warning, not a failure
        assert "note: profile raspberry-pi-4 is for aarch64" in r.stdout
    remote = device_base(d) / "models" / name
    assert remote.is_file() and sha(remote) == sha(model)
    assert json.loads((device_base(d) / "manifest.json").read_text())["model"]["path"] == str(remote)
    r = edge("bench", model, "--host", "pi1", "--runs", "3", "--warmup", "1", "--json", lab=lab)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["device_model_path"] == str(remote)
    for where in (Path("/root"), d.home, ROOT, tmp_path, device_base(d), device_base(d) / "models"):
        assert not (where / marker).exists()


@pytest.mark.slow
def test_fleet_with_one_host_down(lab, tmp_path):
    up1, up2 = lab.start("kitchen"), lab.start("garage")
    down = lab.add("attic")  # trusted, but no sshd listens on its port
    model = tiny_model(tmp_path / "model.tflite")
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[pis]\n" + "".join(
        f"{d.alias} ansible_host=127.0.0.1 ansible_port={d.port} ansible_user=root\n" for d in (up1, down, up2)))
    t0 = time.monotonic()
    r = edge("deploy", model, "--hosts", inventory, "--no-c-backend", "--connect-timeout", "3", lab=lab)
    elapsed = time.monotonic() - t0
    assert r.returncode == 4, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines() if line.split()}
    assert " ok " in rows["kitchen"] and " ok " in rows["garage"]
    assert "FAILED" in rows["attic"] and "Connection refused" in rows["attic"]
    assert "2 of 3 hosts deployed, 1 failed" in r.stdout
    for d in (up1, up2):
        assert sha(device_base(d) / "models" / "model.tflite") == sha(model)
    assert not (down.home / ".edge-sdk").exists()
    assert elapsed < 60
    # the plain format and the JSON output
    plain = tmp_path / "hosts.txt"
    plain.write_text(f"# two of them\n{up1.spec}\n{down.spec}\n")
    r = edge("deploy", model, "--hosts", plain, "--no-c-backend", "--json", "--connect-timeout", "3", lab=lab)
    assert r.returncode == 4
    results = json.loads(r.stdout)
    assert [x["ok"] for x in results] == [True, False] and results[1]["error"]


@pytest.mark.slow
def test_offline_deploy_ships_the_dependency_wheels(lab, tmp_path):
    import socket

    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
    except OSError:
        pytest.skip("offline deploy downloads the device's dependency wheels here first: PyPI is not reachable")
    d = lab.start("pi1")
    model = tiny_model(tmp_path / "model.tflite")
    result = deploy(model, "pi1", offline=True, build_c=False)
    assert result.ok and result.manifest["runtime"]["offline"]
    shipped = {p.name.split("-")[0].lower() for p in (device_base(d) / "wheels").glob("*.whl")}
    assert {"numpy", "flatbuffers", "pillow", "pyserial"} <= shipped
