"""gfxpack detect on copies of real machines' KFD topology (tests/fixtures/kfd)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gfxpack.amdgpu import gfx_target_version
from gfxpack.cli import cli
from gfxpack.detect import (
    EXPECTED_LINE,
    HSA_CAP_SRAM_EDCSUPPORTED,
    NODES,
    DetectError,
    detect,
    read_properties,
)

FIXTURES = Path(__file__).parent / "fixtures" / "kfd"  # README.md: which machine, where from
GPU = "simd_count 64\ngfx_target_version 90402\n"


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
    assert document["pip"] is None  # no --package: no line with a name to replace
    assert document["apt"] == "sudo apt install amdrocm-core8.3-gfx90a"


def test_several_processors_are_listed_in_processor_order(tmp_path: Path) -> None:
    """Two kinds of GPU in one machine: both processors, each once, gfx90a first."""
    nodes = tmp_path / NODES
    for number, machine, node in ((0, "mi210", 0), (1, "mi300x-cpx", 2), (2, "mi210", 2)):
        (nodes / str(number)).mkdir(parents=True)
        source = FIXTURES / machine / NODES / str(node) / "properties"
        (nodes / str(number) / "properties").write_bytes(source.read_bytes())
    result = run("--sysfs", str(tmp_path), "--package", "demo")
    assert result.exit_code == 0, result.output
    assert "  pip:  pip install 'demo[device-gfx90a,device-gfx942]'" in result.output.splitlines()


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
    assert result.output.splitlines() == [f"error: {properties}:2: {EXPECTED_LINE}"]
    properties.write_text("simd_count 64\n" * 10000)
    result = run("--sysfs", str(tmp_path))
    assert result.exit_code == 1
    assert "a KFD node's properties file of at most 64 KiB is expected" in result.output
    properties.unlink()
    os.mkfifo(properties)
    result = run("--sysfs", str(tmp_path))
    assert result.exit_code == 1
    assert result.output.splitlines() == [f"error: {properties}: not a regular file (a FIFO)"]


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


def one_error(root: Path) -> str:
    """The one error line ``detect --sysfs root`` prints, exit status 1, no traceback."""
    result = run("--sysfs", str(root))
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "unexpected" not in result.output
    [line] = result.output.splitlines()
    assert line.startswith("error: ")
    return line


def gpu_node(root: Path, name: str, properties: str = GPU) -> Path:
    node = root / NODES / name
    node.mkdir(parents=True)
    (node / "properties").write_text(properties)
    return node / "properties"


@pytest.mark.parametrize("name", ["\u0661", "\u00b2", "01", "-1", "1" * 10, "node1"])
def test_a_node_not_named_by_ascii_digits_is_one_error(name: str, tmp_path: Path) -> None:
    """int() takes '\u0661' (Arabic-indic one) as 1, and '\u00b2' passes isdigit() but
    not int(): the kernel names nodes %d, so anything else is refused by name."""
    gpu_node(tmp_path, "0")
    gpu_node(tmp_path, name)
    line = one_error(tmp_path)
    assert line == (
        f"error: {tmp_path / NODES / name}: expected a node directory named by its number "
        "in ASCII digits (0, 1, 2 ...)"
    )


@pytest.mark.parametrize(
    "value",
    ["9" * 5000, "9" * 21, str(2**64), "\u0669\u0660\u0664\u0660\u0662"],
    ids=["5000-digits", "21-digits", "2**64", "arabic-indic-digits"],
)
def test_a_number_out_of_bounds_is_one_error(value: str, tmp_path: Path) -> None:
    properties = gpu_node(tmp_path, "1", f"simd_count 64\ngfx_target_version {value}\n")
    assert one_error(tmp_path) == f"error: {properties}:2: {EXPECTED_LINE}"


def test_the_largest_u64_is_read(tmp_path: Path) -> None:
    properties = gpu_node(tmp_path, "1", f"{GPU}local_mem_size {2**64 - 1}\n")
    assert read_properties(properties)["local_mem_size"] == 2**64 - 1


MARKER = "gfxpack-detect-marker-0c4f"
# /proc/self/environ is the environment a process started with (setenv() does not
# change it), so the marker goes into the environment of a new process.
WITH_MARKER = {"GFXPACK_TEST_MARKER": MARKER, **os.environ}  # first: in any quote


def in_a_process(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], env=WITH_MARKER, capture_output=True, text=True, check=False
    )


def test_a_file_that_does_not_parse_is_never_quoted(tmp_path: Path) -> None:
    """A properties link to /proc/self/environ printed the environment: the message
    names the file and line and what was expected, never what the line holds."""
    environ = tmp_path / "environ"
    environ.symlink_to("/proc/self/environ")
    shown = in_a_process(f"print(open({str(environ)!r}).read())")
    assert MARKER in shown.stdout  # the link does lead to the marker
    # No root: the link is followed (as /sys/class links are), the content refused.
    caught = in_a_process(
        "from pathlib import Path\n"
        "from gfxpack.detect import DetectError, read_properties\n"
        f"try: read_properties(Path({str(environ)!r}))\n"
        "except DetectError as e: print(e)\n"
    )
    assert caught.stdout == f"{environ}:1: {EXPECTED_LINE}\n", caught.stderr
    # The same bytes in a tree, as a file of its own.
    properties = gpu_node(tmp_path / "copy", "1", shown.stdout)
    line = one_error(tmp_path / "copy")
    assert MARKER not in line and line.startswith(f"error: {properties}:1: expected")


def test_a_link_out_of_the_tree_is_not_followed(tmp_path: Path) -> None:
    node = tmp_path / NODES / "1"
    node.mkdir(parents=True)
    (node / "properties").symlink_to("/proc/self/environ")
    result = subprocess.run(
        [sys.executable, "-m", "gfxpack", "detect", "--sysfs", str(tmp_path)],
        env=WITH_MARKER,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1 and not result.stdout
    [line] = result.stderr.splitlines()
    assert MARKER not in line
    assert line.startswith(f"error: {node / 'properties'}: leads out of {tmp_path} ")
    # A link that stays inside the tree is followed, as sysfs's /sys/class links are.
    (node / "properties").unlink()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "properties").write_text(GPU)
    (node / "properties").symlink_to(tmp_path / "elsewhere" / "properties")
    [gpu] = detect(tmp_path)
    assert gpu.processor == "gfx942"
