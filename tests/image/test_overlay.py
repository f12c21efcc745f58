"""image/overlay.py and the client environment of image/install.py: each arch's copy
of the shared root takes every write (an overlay mount where the kernel allows it,
cp -a where it does not) and leaves the shared root as it was, nothing stays mounted
or on disk once the block ends; apt reads no configuration of this machine; fsync is
skipped where libeatmydata is installed, beside libfaketime's clock."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gfxpack.image.install import NO_SYNC_LIBRARIES, own_apt_config, without_syncs
from gfxpack.image.layers import snapshot
from gfxpack.image.overlay import Removals, writable_copy


def shared_root(where: Path) -> Path:
    root = where / "shared"
    (root / "etc").mkdir(parents=True)
    (root / "etc/ld.so.conf").write_text("/opt/rocm/lib\n")
    (root / "opt/rocm/lib").mkdir(parents=True)
    (root / "opt/rocm/lib/libhost.so").write_bytes(b"\x7fELF" * 64)
    os.symlink("libhost.so", root / "opt/rocm/lib/libhost.so.1")
    return root


def mounts_under(path: Path) -> list[str]:
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        return [line for line in mounts if str(path) in line.split()[1]]


# A comma in the copy's directory is one overlay's options cannot carry: cp -a then.
@pytest.mark.parametrize("name", ["arch", "arch,copied"], ids=["overlay-or-copy", "copy"])
def test_the_copy_takes_every_write_and_the_shared_root_keeps_its_files(tmp_path, name):
    if os.geteuid() != 0:
        pytest.skip("an overlay mount needs root, as gfxpack image does")
    shared = shared_root(tmp_path)
    before = snapshot(shared)
    contents = {p: (shared / p.lstrip("/")).read_bytes() for p in ("/etc/ld.so.conf",)}
    removals = Removals()
    where = tmp_path / name
    with writable_copy(shared, where, removals) as root:
        mounted = bool(mounts_under(where))
        assert snapshot(root) == before  # the same entries, modes, owners and times
        with open(root / "etc/ld.so.conf", "a", encoding="utf-8") as conf:
            conf.write("/opt/rocm/lib/gfx942\n")  # a script appending in place
        (root / "opt/rocm/lib/libhost.so.1").unlink()
        (root / "opt/rocm/lib/gfx942").mkdir()
        (root / "opt/rocm/lib/gfx942/kernels.co").write_bytes(b"device")
        assert (root / "etc/ld.so.conf").read_text().endswith("gfx942\n")
        assert not os.path.lexists(root / "opt/rocm/lib/libhost.so.1")
    removals.wait()
    assert snapshot(shared) == before
    assert (shared / "etc/ld.so.conf").read_bytes() == contents["/etc/ld.so.conf"]
    assert not where.exists()
    assert mounts_under(tmp_path) == []
    with open("/proc/filesystems", encoding="utf-8") as kernel:
        overlays = "overlay" in kernel.read().split()
    assert mounted == (overlays and "," not in name)


def test_an_error_in_the_block_still_unmounts_and_removes(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("an overlay mount needs root, as gfxpack image does")
    shared = shared_root(tmp_path)
    removals = Removals()
    with pytest.raises(RuntimeError), writable_copy(shared, tmp_path / "arch", removals) as root:
        (root / "new").write_text("x")
        raise RuntimeError("the install failed")
    removals.wait()
    assert mounts_under(tmp_path) == []
    assert not (tmp_path / "arch").exists()
    assert not (shared / "new").exists()


def test_apt_reads_none_of_this_machines_configuration(tmp_path):
    if shutil.which("apt-config") is None:
        pytest.skip("apt-config not installed (apt)")
    config = own_apt_config(tmp_path)
    # A hook as /etc/apt/apt.conf.d holds them (debconf's) in a directory apt reads
    # as this machine's: apt reads it, and the image's configuration keeps it out.
    hooks = tmp_path / "machine.conf.d"
    hooks.mkdir()
    (hooks / "70debconf").write_text('DPkg::Pre-Install-Pkgs {"dpkg-preconfigure --apt";};\n')
    (tmp_path / "machine.conf").write_text(f'Dir::Etc::parts "{hooks}";\n')
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    dumps = [
        subprocess.run(
            ["apt-config", "dump"],
            env={**env, "APT_CONFIG": str(path)}, capture_output=True, text=True, check=True,
        ).stdout
        for path in (tmp_path / "machine.conf", config)
    ]  # fmt: skip
    machine, ours = dumps
    assert "dpkg-preconfigure" in machine
    assert f'Dir::Etc::parts "{tmp_path / "apt.conf.d"}";' in ours
    assert list((tmp_path / "apt.conf.d").iterdir()) == [tmp_path / "apt.conf.d/empty.conf"]
    # Nor does any hook of this machine's own /etc/apt.
    assert not [line for line in ours.splitlines() if "Invoke" in line or "Pre-Install" in line]


def test_fsync_is_skipped_beside_the_frozen_clock_where_libeatmydata_is():
    library = next((p for p in NO_SYNC_LIBRARIES if os.path.exists(p)), None)
    clock = {"LD_PRELOAD": "/usr/lib/faketime/libfaketime.so.1", "FAKETIME": "2023-11-14"}
    env = without_syncs(clock)
    if library is None:
        assert env == clock
        pytest.skip("libeatmydata not installed (apt-get install eatmydata)")
    assert env == {**clock, "LD_PRELOAD": f"/usr/lib/faketime/libfaketime.so.1 {library}"}
    assert without_syncs({}) == {"LD_PRELOAD": library}
    # Preloaded, fsync still succeeds for a program (it returns at once).
    done = subprocess.run(
        ["python3", "-c", "import os; f = os.open('/dev/null', os.O_WRONLY); os.fsync(f)"],
        env={"PATH": os.environ.get("PATH", os.defpath), "LD_PRELOAD": library},
        capture_output=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
