"""gfxpack detect on copies of real machines' KFD topology (tests/fixtures/kfd)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gfxpack.amdgpu import gfx_target_version
from gfxpack.cli import cli
from gfxpack.detect import NODES, detect

FIXTURES = Path(__file__).parent / "fixtures" / "kfd"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["detect", *args])


@pytest.mark.parametrize(
    ("machine", "nodes", "target_id"),
    [
        ("mi300x", list(range(1, 9)), "gfx942:sramecc+"),
        ("rx7900xtx", [1], "gfx1100"),
        ("phoenix-apu", [1], "gfx1103"),
        ("mi250x", [1, 2], "gfx90a:sramecc+"),
    ],
)
def test_each_machine_names_its_gpus(machine: str, nodes: list[int], target_id: str) -> None:
    gpus = detect(FIXTURES / machine)
    processor = target_id.split(":")[0]
    assert [gpu.node for gpu in gpus] == nodes  # node 0, the CPU, is skipped
    assert {gpu.processor for gpu in gpus} == {processor}
    assert {gpu.target_id for gpu in gpus} == {target_id}
    assert {gpu.gfx_target_version for gpu in gpus} == {gfx_target_version(processor)}


def test_the_printed_commands_install_one_arch() -> None:
    result = run("--sysfs", str(FIXTURES / "mi300x"), "--package", "jax-rocm7-pjrt")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "node 1: gfx942 (target id gfx942:sramecc+, gfx_target_version 90402)"
    assert len([line for line in lines if line.startswith("node ")]) == 8
    assert "  pip:  pip install 'jax-rocm7-pjrt[device-gfx942]'" in lines
    assert "  apt:  sudo apt install amdrocm-core8.2-gfx942" in lines
    assert "  dnf:  sudo dnf install amdrocm-core8.2-gfx942" in lines


def test_json_and_the_rocm_version() -> None:
    result = run("--sysfs", str(FIXTURES / "rx7900xtx"), "--json", "--rocm-version", "8.3.0")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["processors"] == ["gfx1100"]
    assert document["gpus"][0]["device_id"] == 0x744C
    assert document["pip"] == "pip install 'PACKAGE[device-gfx1100]'"
    assert document["apt"] == "sudo apt install amdrocm-core8.3-gfx1100"


def test_several_processors_are_listed_in_processor_order(tmp_path: Path) -> None:
    """An APU with a discrete card: both processors, each once."""
    nodes = tmp_path / NODES
    for number, machine, node in ((0, "phoenix-apu", 0), (1, "phoenix-apu", 1), (2, "mi300x", 1)):
        (nodes / str(number)).mkdir(parents=True)
        source = FIXTURES / machine / NODES / str(node) / "properties"
        (nodes / str(number) / "properties").write_bytes(source.read_bytes())
    result = run("--sysfs", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "  pip:  pip install 'PACKAGE[device-gfx942]' 'PACKAGE[device-gfx1103]'" in (
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
    result = run("--sysfs", str(FIXTURES / "mi300x"), option, value)
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert line.startswith(f"error: {message}")
