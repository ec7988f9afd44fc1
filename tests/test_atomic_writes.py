"""Disk full and kill at any point lose nothing (issue 13, defect 7): every l1scale writer
goes through ``l1scale._atomic``; a full disk raises DiskFullError naming the file and leaves
the previous file intact; a writer killed in the middle leaves nothing at the target that
loads wrongly, and its temporary is collected by the next write of the same target."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from l1scale import _atomic
from l1scale.checkpoint import Checkpoint
from l1scale.data import dump_svmlight, load_svmlight
from l1scale.exceptions import DiskFullError
from l1scale.model_io import load_model, save_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and rlimits")


def _env():
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}


def _temporaries(directory):
    return sorted(f for f in os.listdir(directory) if f.endswith(".tmp"))


# ----------------------------------------------------------------------------- the writers, by kind

_RAMP = np.arange(50_000) / 7.0  # hardly compressible: the zip stays large


def _write_model(path, version):
    save_model(path, coef=float(version) + _RAMP, intercept=float(version))


def _read_model(path):
    coef, intercept, _ = load_model(path)
    np.testing.assert_array_equal(coef, intercept + _RAMP)
    return intercept


def _write_checkpoint(path, version):
    Checkpoint(path, {"run": 1}).save({"w": np.full(50_000, float(version)), "version": float(version)})


def _read_checkpoint(path):
    state = Checkpoint(path, {"run": 1}).load()
    assert (state.array("w", (50_000,)) == state.scalar("version")).all()
    return state.scalar("version")


def _write_svmlight(path, version):
    X = np.full((2_000, 5), float(version))
    dump_svmlight(X, np.ones(2_000), path)


def _read_svmlight(path):
    X = load_svmlight(path)[0]
    X = X.toarray()
    assert X.shape == (2_000, 5) and (X[0, 0] == X).all()
    return X[0, 0]


KINDS = {
    "model": (_write_model, _read_model),
    "checkpoint": (_write_checkpoint, _read_checkpoint),
    "svmlight": (_write_svmlight, _read_svmlight),
}


# ----------------------------------------------------------------------------- full disk


class _FullDisk:
    """os.fdopen patched: the files it opens refuse writes past ``room`` bytes with ENOSPC."""

    def __init__(self, room):
        self.room = room

    def __call__(self, fd, *args, **kw):
        f = _real_fdopen(fd, *args, **kw)
        room = self.room

        class Full:
            def __init__(self):
                self.written = 0

            def write(self, data):
                if self.written + len(data) > room:
                    raise OSError(errno.ENOSPC, "No space left on device")
                self.written += len(data)
                return f.write(data)

            def __getattr__(self, name):
                return getattr(f, name)

        return Full()


_real_fdopen = os.fdopen


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("room", [0, 100, 5_000])
def test_full_disk_raises_disk_full_error_and_keeps_the_previous_file(tmp_path, monkeypatch, kind, room):
    write, read = KINDS[kind]
    path = str(tmp_path / f"target.{kind}")
    write(path, 1)
    monkeypatch.setattr(os, "fdopen", _FullDisk(room))
    with pytest.raises(DiskFullError) as info:
        write(path, 2)
    monkeypatch.undo()
    message = str(info.value)
    assert path in message and "no space left" in message.lower()
    assert info.value.errno == errno.ENOSPC and isinstance(info.value, OSError)
    assert read(path) == 1.0  # the previous file, intact
    assert _temporaries(tmp_path) == []


def test_fsync_failing_with_enospc(tmp_path, monkeypatch):
    """Some file systems (NFS, thin provisioning) report a full disk only at fsync."""
    path = str(tmp_path / "m")
    _write_model(path, 1)

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(DiskFullError, match="no space left"):
        _write_model(path, 2)
    monkeypatch.undo()
    assert _read_model(path) == 1.0 and _temporaries(tmp_path) == []


def test_numpy_short_write_message_becomes_disk_full_error(tmp_path):
    """NumPy's tofile on a full disk says only "686828 requested and 25584 written": the helper
    the chunk-cache writer calls makes it a DiskFullError naming the file."""
    target = str(tmp_path / "cache" / "chunk-000000.data.npy")
    err = _atomic.disk_full_error(target, OSError("686828 requested and 25584 written"))
    assert isinstance(err, DiskFullError)
    assert target in str(err) and "no space left" in str(err) and "686828 requested" in str(err)
    with pytest.raises(DiskFullError, match="no space left"), _atomic.translate_write_errors(target):
        raise OSError(errno.ENOSPC, "No space left on device")
    other = PermissionError(errno.EACCES, "Permission denied")
    assert _atomic.disk_full_error(target, other) is other  # not a space problem: unchanged


@posix_only
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_file_size_limit(tmp_path, kind):
    """A real kernel refusal: ``ulimit -f`` (RLIMIT_FSIZE, what ``prlimit --fsize`` sets) makes a
    write past the limit fail with EFBIG (Python ignores SIGXFSZ)."""
    path = str(tmp_path / f"target.{kind}")
    KINDS[kind][0](path, 1)
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {ROOT!r})
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        from test_atomic_writes import KINDS
        from l1scale.exceptions import DiskFullError
        try:
            KINDS[{kind!r}][0]({path!r}, 2)
        except DiskFullError as e:
            print("DiskFullError:", e)
    """)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    out = subprocess.run(
        [sys.executable, "-c", script],
        env=_env(),
        cwd=ROOT,
        preexec_fn=limit,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "DiskFullError:" in out.stdout and path in out.stdout and "file-size limit" in out.stdout
    assert KINDS[kind][1](path) == 1.0
    assert _temporaries(tmp_path) == []


# ----------------------------------------------------------------------------- kills


_WRITER = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, sys.argv[4])
    from test_atomic_writes import KINDS
    kind, path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    write = KINDS[kind][0]
    if mode == "before-rename":  # the temporary complete, the rename not made: the worst moment
        real = os.replace
        def stall(src, dst):
            print("ready", flush=True)
            time.sleep(600)
        os.replace = stall
        write(path, 2)
    else:  # write versions 2, 3, ... as fast as it can until killed
        print("ready", flush=True)
        v = 2
        while True:
            write(path, v)
            v += 1
""")


def _kill_writer(kind, path, mode, delay):
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, kind, path, mode, os.path.dirname(__file__)],
        env=_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL


@posix_only
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kill_before_rename_leaves_the_old_file_and_a_collected_temporary(tmp_path, kind):
    write, read = KINDS[kind]
    path = str(tmp_path / f"target.{kind}")
    write(path, 1)
    _kill_writer(kind, path, "before-rename", 0.0)
    assert read(path) == 1.0  # the target is the old file, whole
    left = _temporaries(tmp_path)
    assert len(left) == 1 and left[0].startswith(f".target.{kind}.")  # hidden, never read
    write(path, 3)  # the next write of the same target collects it (its writer is dead)
    assert read(path) == 3.0
    assert _temporaries(tmp_path) == []


@posix_only
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kills_at_random_moments_never_leave_a_bad_target(tmp_path, kind):
    write, read = KINDS[kind]
    path = str(tmp_path / f"target.{kind}")
    write(path, 1)
    rng = np.random.default_rng(0)
    for delay in rng.uniform(0.0, 0.4, size=6):
        _kill_writer(kind, path, "loop", float(delay))
        assert read(path) >= 1.0  # whichever version was renamed last, complete
    write(path, 1000)
    assert read(path) == 1000.0 and _temporaries(tmp_path) == []


# ----------------------------------------------------------------------------- which temporaries are collected


@posix_only
def test_only_stale_temporaries_are_collected(tmp_path):
    target = tmp_path / "model.bin"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        host = _atomic._HOST
        names = {
            "dead": f".model.bin.{dead.pid}-{host}.0123456789ab.tmp",
            "live": f".model.bin.{live.pid}-{host}.0123456789ab.tmp",
            "other_host": f".model.bin.{dead.pid}-ffffff.0123456789ab.tmp",
            "old_style_young": ".model.bin.k2j3h4.tmp",
            "old_style_old": ".model.bin.a8f7e6.tmp",
            "other_target": f".model.binx.{dead.pid}-{host}.0123456789ab.tmp",
            "not_hidden": "model.bin.tmp",
        }
        for name in names.values():
            (tmp_path / name).write_bytes(b"x")
        old = time.time() - _atomic.STALE_SECONDS - 60
        os.utime(tmp_path / names["old_style_old"], (old, old))
        removed = {os.path.basename(p) for p in _atomic.collect_stale_temporaries(target)}
        assert removed == {names["dead"], names["old_style_old"]}
        left = set(os.listdir(tmp_path))
        assert {names[k] for k in ("live", "other_host", "old_style_young", "other_target", "not_hidden")} <= left
    finally:
        live.kill()
        live.wait()


def test_failed_write_removes_its_temporary(tmp_path):
    path = tmp_path / "out.bin"
    with pytest.raises(RuntimeError), _atomic.atomic_file(path) as f:
        f.write(b"partial")
        raise RuntimeError("boom")
    assert not path.exists() and _temporaries(tmp_path) == []


def test_text_and_compressed_modes(tmp_path):
    with _atomic.atomic_file(tmp_path / "a.txt", text=True) as f:
        f.write("héllo\n")
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "héllo\n"
    import gzip

    with _atomic.atomic_file(tmp_path / "a.txt.gz", text=True, compress=True) as f:
        f.write("zipped\n")
    with gzip.open(tmp_path / "a.txt.gz", "rt") as f:
        assert f.read() == "zipped\n"
    assert _temporaries(tmp_path) == []


_SMALL_FS = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[2])
    import numpy as np
    from test_atomic_writes import KINDS
    from l1scale.exceptions import DiskFullError
    from l1scale.model_io import save_model
    root = sys.argv[1]
    for kind, (write, read) in sorted(KINDS.items()):
        path = os.path.join(root, "target." + kind)
        write(path, 1)
        ballast = os.path.join(root, "ballast")
        with open(ballast, "wb", buffering=0) as f:  # fill the file system up
            try:
                while True:
                    f.write(b"x" * 4096)
            except OSError:
                pass
        os.truncate(ballast, max(0, os.path.getsize(ballast) - 8192))
        try:
            write(path, 2)
        except DiskFullError as e:
            assert path in str(e) and "no space left" in str(e), str(e)
        else:
            raise AssertionError(kind + ": no DiskFullError")
        assert read(path) == 1.0, kind
        assert not [f for f in os.listdir(root) if f.endswith(".tmp")], os.listdir(root)
        os.unlink(ballast)
        write(path, 3)  # room again: the write succeeds
        assert read(path) == 3.0
        print("ok", kind)
""")


@posix_only
def test_a_real_full_file_system(tmp_path):
    """A real ENOSPC: a 1 MiB tmpfs mounted in a private user and mount namespace
    (``unshare -rm``, no privileges needed where user namespaces are enabled), filled up."""
    import shutil

    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    mnt = tmp_path / "small"
    mnt.mkdir()
    shell = (
        f"mount -t tmpfs -o size=1m tmpfs {mnt} || exit 77; "
        f"exec {sys.executable} -c '{_SMALL_FS}' {mnt} {os.path.dirname(os.path.abspath(__file__))}"
    )
    out = subprocess.run(
        ["unshare", "-rm", "sh", "-c", shell],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if out.returncode == 77 or (out.returncode != 0 and "unshare" in out.stderr):
        pytest.skip(f"cannot mount a tmpfs here: {out.stderr.strip()}")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.split() == ["ok", "checkpoint", "ok", "model", "ok", "svmlight"]
