"""Names (spec packaging.md section 6), versions and prefixes."""

from __future__ import annotations

import pytest

from gfxpack.formats import DEB, RPM
from gfxpack.plan.naming import (
    InvalidName,
    Naming,
    arch_suffix,
    check_release,
    install_prefix,
    version_xy,
)


@pytest.mark.parametrize(
    ("version", "xy"),
    [("8.2.0", "8.2"), ("8.2", "8.2"), ("7.14.0~dev20260625", "7.14"), ("10.1.0~rc1", "10.1")],
)
def test_version_xy(version, xy):
    assert version_xy(version) == xy


@pytest.mark.parametrize("version", ["8", "v8.2", "8.x", "", "8.2-1", ".2"])
def test_bad_version(version):
    with pytest.raises(InvalidName, match="expected at least two numeric dot fields"):
        version_xy(version)


@pytest.mark.parametrize("release", ["1", "12345", "1.el9", "0~pre1"])
def test_release(release):
    assert check_release(release) == release


@pytest.mark.parametrize("release", ["", "1-2", "a b"])
def test_bad_release(release):
    with pytest.raises(InvalidName, match="no '-'"):
        check_release(release)


@pytest.mark.parametrize(
    ("target", "suffix"),
    [
        ("gfx942", "gfx942"),
        ("gfx942:xnack+", "gfx942"),
        ("gfx94X-dcgpu", "gfx94x"),
        ("gfx1250-strict", "gfx1250"),
        ("gfx90a:sramecc+:xnack-", "gfx90a"),
    ],
)
def test_arch_suffix(target, suffix):
    assert arch_suffix(target) == suffix


@pytest.mark.parametrize("target", ["942", "gfx", "sm_90", "gfx942 ", "gfx942/x"])
def test_bad_target(target):
    with pytest.raises(InvalidName, match="expected a GPU architecture"):
        arch_suffix(target)


def test_names_per_format():
    n = Naming("8.2")
    assert n.host("amdrocm-blas", DEB) == "amdrocm-blas-host8.2"
    assert n.versioned("amdrocm-blas", DEB, "gfx942") == "amdrocm-blas8.2-gfx942"
    assert n.versioned("amdrocm-blas-devel", DEB) == "amdrocm-blas-dev8.2"
    assert n.versioned("amdrocm-blas-devel", RPM) == "amdrocm-blas-devel8.2"
    assert n.versioned("amdrocm-core-devel", DEB, "gfx1100") == "amdrocm-core-dev8.2-gfx1100"
    assert n.non_versioned("amdrocm-blas-devel", DEB) == "amdrocm-blas-dev"
    assert n.non_versioned("amdrocm-blas", RPM, "gfx94x") == "amdrocm-blas-gfx94x"


def test_asan_names():
    n = Naming("7.15", asan=True)
    assert n.versioned("amdrocm-core", RPM) == "amdrocm-core-asan7.15"
    assert n.host("amdrocm-fft", DEB) == "amdrocm-fft-host-asan7.15"
    assert n.versioned("amdrocm-fft", DEB, "gfx1100") == "amdrocm-fft-asan7.15-gfx1100"
    assert n.non_versioned("amdrocm-fft", DEB) == "amdrocm-fft-asan"
    assert n.versioned("amdrocm-fft-devel", DEB) == "amdrocm-fft-dev-asan7.15"


@pytest.mark.parametrize(
    ("given", "asan", "prefix"),
    [
        (None, False, "/opt/rocm/core-8.2"),
        ("/opt/rocm/core", False, "/opt/rocm/core-8.2"),
        ("/opt/rocm/core/", True, "/opt/rocm/core-asan-8.2"),
        ("/usr/local/rocm", False, "/usr/local/rocm"),
    ],
)
def test_install_prefix(given, asan, prefix):
    assert install_prefix(given, "8.2", asan) == prefix
