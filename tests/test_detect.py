"""gfxpack detect on copies of real machines' KFD topology (tests/fixtures/kfd)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gfxpack.amdgpu import gfx_target_version
from gfxpack.cli import cli
from gfxpack.detect import (
    HSA_CAP_SRAM_EDCSUPPORTED,
    NODES,
    DetectError,
    detect,
    read_properties,
)

FIXTURES = Path(__file__).parent / "fixtures" / "kfd"  # README.md: which machine, where from


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["detect", *args])


def decoded(version: int) -> str:
    """gfx_target_version MMmmss as the kernel writes it: gfx<major><minor hex><stepping hex>."""
    return f"gfx{version // 10000}{version // 100 % 100:x}{version % 100:x}"


@pytest.mark.parametrize(
    ("machine", "nodes", "target_id"),
    [
        # One MI300X in CPX mode (8 partitions, one node each); nodes 0 and 1 are the CPUs.
        ("mi300x-cpx", list(range(2, 10)), "gfx942:sramecc+"),
        # Eight MI210 cards; nodes 0 and 1 are the CPUs.
        ("mi210", list(range(2, 10)), "gfx90a:sramecc+"),
        # Assembled, not copied (README.md): a Radeon RX 7900 XTX and a Phoenix APU.
        ("rx7900xtx-assembled", [1], "gfx1100"),
        ("phoenix-apu-assembled", [1], "gfx1103"),
    ],
)
def test_each_machine_names_its_gpus(machine: str, nodes: list[int], target_id: str) -> None:
    gpus = detect(FIXTURES / machine)
    assert [gpu.node for gpu in gpus] == nodes  # the CPU nodes (simd_count 0) are skipped
    assert {gpu.target_id for gpu in gpus} == {target_id}
    for gpu in gpus:
        properties = read_properties(FIXTURES / machine / NODES / str(gpu.node) / "properties")
        version = properties["gfx_target_version"]
        assert gpu.gfx_target_version == version == gfx_target_version(gpu.processor or "")
        assert gpu.processor == decoded(version)
        assert gpu.device_id == properties["device_id"]
        # sramecc+ exactly when the node's capability word has HSA_CAP_SRAM_EDCSUPPORTED.
        sramecc = properties["capability"] & HSA_CAP_SRAM_EDCSUPPORTED
        assert gpu.target_id == decoded(version) + (":sramecc+" if sramecc else "")


def machines_in(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if (p / NODES).is_dir()) if root.is_dir() else []


def test_every_captured_machine_is_named_from_its_own_numbers() -> None:
    """Every machine under tests/fixtures/kfd, and under ../shared/fixtures/kfd where
    real captures can be dropped in as they come (``cat /sys/class/kfd/kfd/topology/
    nodes/*/properties`` of a machine, one file per node), is read without a rule of its
    own: each GPU node's target id follows from its gfx_target_version and capability."""
    from tests.conftest import SHARED

    machines = machines_in(FIXTURES) + machines_in(SHARED / "fixtures" / "kfd")
    assert len(machines) >= 5
    for machine in machines:
        nodes = sorted(int(p.name) for p in (machine / NODES).iterdir())
        gpu_nodes = [
            n for n in nodes
            if read_properties(machine / NODES / str(n) / "properties").get("simd_count", 0)
        ]  # fmt: skip
        if not gpu_nodes:
            with pytest.raises(DetectError, match="no AMD GPU found"):
                detect(machine)
            continue
        gpus = detect(machine)
        assert [gpu.node for gpu in gpus] == gpu_nodes, machine
        for gpu in gpus:
            properties = read_properties(machine / NODES / str(gpu.node) / "properties")
            sramecc = properties.get("capability", 0) & HSA_CAP_SRAM_EDCSUPPORTED
            expected = decoded(properties["gfx_target_version"]) + (":sramecc+" if sramecc else "")
            assert gpu.target_id == expected, machine


def test_xnack_is_left_open() -> None:
    """No property says xnack: the capability bits (kfd_sysfs.h) have none, and the mode is
    chosen per process (HSA_XNACK). gfx90a and gfx942 both support xnack, so their target ids
    leave it open, which matches code built for either xnack setting."""
    for machine in ("mi300x-cpx", "mi210"):
        assert all("xnack" not in str(gpu.target_id) for gpu in detect(FIXTURES / machine))


@pytest.mark.parametrize(("version", "processor"), [(110000, "gfx1100"), (110003, "gfx1103")])
def test_radeon_targets_decode(version: int, processor: str, tmp_path: Path) -> None:
    """No public copy of a Radeon RX 7900 (gfx1100) or Phoenix APU (gfx1103) node was found
    (fixtures/kfd/README.md), so these two lines stand in: they are all detect reads."""
    node = tmp_path / NODES / "1"
    node.mkdir(parents=True)
    (node / "properties").write_text(f"simd_count 192\ngfx_target_version {version}\n")
    [gpu] = detect(tmp_path)
    assert gpu.processor == gpu.target_id == processor == decoded(version)


def test_the_printed_commands_install_one_arch() -> None:
    result = run("--sysfs", str(FIXTURES / "mi300x-cpx"), "--package", "jax-rocm7-pjrt")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "node 2: gfx942 (target id gfx942:sramecc+, gfx_target_version 90402)"
    assert len([line for line in lines if line.startswith("node ")]) == 8
    assert "  pip:  pip install 'jax-rocm7-pjrt[device-gfx942]'" in lines
    assert "  apt:  sudo apt install amdrocm-core8.2-gfx942" in lines
    assert "  dnf:  sudo dnf install amdrocm-core8.2-gfx942" in lines


def test_json_and_the_rocm_version() -> None:
    result = run("--sysfs", str(FIXTURES / "mi210"), "--json", "--rocm-version", "8.3.0")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["processors"] == ["gfx90a"]
    assert document["gpus"][0]["device_id"] == 0x740F  # Instinct MI210
    assert document["pip"] == "pip install 'PACKAGE[device-gfx90a]'"
    assert document["apt"] == "sudo apt install amdrocm-core8.3-gfx90a"


def test_several_processors_are_listed_in_processor_order(tmp_path: Path) -> None:
    """Two kinds of GPU in one machine: both processors, each once, gfx90a first."""
    nodes = tmp_path / NODES
    for number, machine, node in ((0, "mi210", 0), (1, "mi300x-cpx", 2), (2, "mi210", 2)):
        (nodes / str(number)).mkdir(parents=True)
        source = FIXTURES / machine / NODES / str(node) / "properties"
        (nodes / str(number) / "properties").write_bytes(source.read_bytes())
    result = run("--sysfs", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "  pip:  pip install 'PACKAGE[device-gfx90a]' 'PACKAGE[device-gfx942]'" in (
        result.output.splitlines()
    )


@pytest.mark.parametrize("root", ["cpu-only", "missing"])
def test_no_gpu(root: str, tmp_path: Path) -> None:
    where = FIXTURES / root if root != "missing" else tmp_path / "missing"
    result = run("--sysfs", str(where))
    assert result.exit_code == 1
    assert result.output.startswith("error: no AMD GPU found")
    assert len(result.output.splitlines()) == 1


def test_an_unknown_processor_is_named_not_guessed(tmp_path: Path) -> None:
    node = tmp_path / NODES / "1"
    node.mkdir(parents=True)
    (node / "properties").write_text(
        "cpu_cores_count 0\nsimd_count 64\ngfx_target_version 990000\n"
    )
    result = run("--sysfs", str(tmp_path))
    assert result.exit_code == 1
    assert "node 1: gfx_target_version 990000 is no processor gfxpack knows" in result.output


def test_a_hostile_properties_file_is_one_error(tmp_path: Path) -> None:
    """Not a properties file, too long, or a FIFO: one error naming it, no hang."""
    node = tmp_path / NODES / "1"
    node.mkdir(parents=True)
    properties = node / "properties"
    properties.write_text("simd_count 64\ngfx_target_version $(reboot)\n")
    result = run("--sysfs", str(tmp_path))
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"error: {properties}:2: 'gfx_target_version $(reboot)' is not a 'name number' line "
        "of a KFD node's properties"
    ]
    properties.write_text("simd_count 64\n" * 10000)
    result = run("--sysfs", str(tmp_path))
    assert result.exit_code == 1
    assert "longer than 65536 bytes" in result.output
    properties.unlink()
    os.mkfifo(properties)
    result = run("--sysfs", str(tmp_path))
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"error: {properties}: cannot read: not a regular file (a FIFO)"
    ]


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--package", "x\ny", "--package 'x\\ny': expected a Python distribution name"),
        ("--rocm-version", "eight", "ROCm version 'eight': expected at least two numeric"),
    ],
)
def test_a_bad_option_is_one_error(option: str, value: str, message: str) -> None:
    result = run("--sysfs", str(FIXTURES / "mi300x-cpx"), option, value)
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert line.startswith(f"error: {message}")
