"""The example's hipDNN kernel provider, end to end: packed by gfxpack descriptors pack,
split per arch into the dnn packages, installed by apt-get and by dnf into throwaway roots
(gfxpack try-install), and loaded for one GPU from what was installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.formats import DEB, FORMATS
from gfxpack.kpack import KpackReader
from gfxpack.trial import try_install
from tests.conftest import EXAMPLE_TARGETS, ROOT, run

PROVIDER = "opt/rocm/core-8.2/lib/hipdnn/arch_content/hip-kernel-provider"
AUTHORED = ROOT / "examples" / "dnn-provider" / "descriptors"
PACKS = ("pointwise/pointwise_add.kdp.json", "pointwise/pointwise_mul.kdp.json")
DNN_ARCHES = [t for t in EXAMPLE_TARGETS if t != "gfx950"]  # the example has no dnn gfx950 build
CONV = {"hipkernel:conv_fwd": ["conv_fwd.float_block64", "conv_fwd.float_block256"]}
POINTWISE = {
    f"hipkernel:pointwise_{op}": [
        f"pointwise_{op}.float_block64",
        f"pointwise_{op}.float_block256",
        f"pointwise_{op}.half_block64",
    ]
    for op in ("add", "mul")
}


def provider_files(paths: list[str]) -> set[str]:
    """Files of a package payload under the provider's tree, relative to it."""
    prefix = f"./{PROVIDER}/"
    return {p[len(prefix) :] for p in paths if p.startswith(prefix) and not p.endswith("/")}


def deb_contents(deb: Path) -> list[str]:
    return [
        line.split()[-1] for line in run("dpkg-deb", "--contents", str(deb)).stdout.splitlines()
    ]


def rpm_contents(rpm: Path) -> list[str]:
    """Paths as dpkg-deb prints them: ``./`` in front, directories ending in ``/``."""
    query = run("rpm", "-qp", "--qf", "[%{FILEMODES:perms} %{FILENAMES}\\n]", str(rpm))
    return [
        f".{path}/" if perms.startswith("d") else f".{path}"
        for perms, path in (line.split(" ", 1) for line in query.stdout.splitlines())
    ]


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_each_dnn_device_package_carries_only_its_arch_shards(example_release, fmt):
    contents = deb_contents if fmt is DEB else rpm_contents
    files = {
        example_release.plan.by_key[key].relations(fmt).name: path
        for key, path in example_release.files(fmt).items()
    }
    for arch in DNN_ARCHES:
        shipped = provider_files(contents(files[f"amdrocm-dnn8.2-{arch}"]))
        assert shipped == {
            f"{arch}/kpack/hip_kernel_provider_{arch}.kpack",
            *(f"{arch}/{pack}" for pack in PACKS),
            # Where each shard's code objects came from, beside it (descriptors pack).
            *(f"{arch}/{pack.removesuffix('.json')}.provenance.json.gz" for pack in PACKS),
        }, arch
    assert "amdrocm-dnn8.2-gfx950" not in files
    host = provider_files(contents(files["amdrocm-dnn-host8.2"]))
    authored = {p.relative_to(AUTHORED).as_posix() for p in AUTHORED.rglob("*.json")}
    assert host == authored - set(PACKS)
    assert not [p for p in host if p.startswith("gfx")]
    # No other package ships any of the provider's files.
    others = [
        name
        for name, path in files.items()
        if not name.startswith("amdrocm-dnn") and provider_files(contents(path))
    ]
    assert others == []


def list_engines(root: Path, device: str, *extra: str):
    args = ["descriptors", "list-engines", "--installed", str(root), "--device", device]
    result = CliRunner().invoke(cli, [*args, *extra])
    assert result.exit_code == 0, result.output
    return result


def listing(root: Path, device: str) -> dict:
    """The --json listing, with the install root cut from the archive paths."""
    text = list_engines(root, device, "--json", "--level", "error").stdout
    return json.loads(text.replace(str(root), "<root>"))


def engines_of(data: dict) -> dict[str, dict[str, list[str]]]:
    return {
        e["name"]: {p["name"]: [k["name"] for k in p["kernels"]] for p in e["packs"]}
        for e in data["engines"]
    }


@pytest.mark.slow
def test_apt_and_dnf_installs_load_the_engines_a_gfx942_sees(example_repo, tmp_path):
    roots = {}
    for fmt, client in (("deb", "apt"), ("rpm", "dnf")):
        roots[fmt] = tmp_path / f"root-{fmt}"
        trial = try_install(example_repo, ["amdrocm-core8.2-gfx942"], client, roots[fmt])
        installed = {package.name for package in trial.packages}
        assert {"amdrocm-dnn-host8.2", "amdrocm-dnn8.2-gfx942"} <= installed, fmt
        assert not [name for name in installed if "gfx1100" in name or "gfx950" in name], fmt
        assert trial.ok and trial.archs == ["gfx942"], fmt
    gfx942 = listing(roots["deb"], "gfx942")
    assert engines_of(gfx942) == {"hipkernel:ConvFwd": CONV, "hipkernel:Pointwise": POINTWISE}
    assert gfx942["diagnostics"] == []
    # Every packaged kernel was verified against the installed archive; check it again here.
    kpack_kernels = [
        k
        for e in gfx942["engines"]
        for p in e["packs"]
        for k in p["kernels"]
        if k["source"] == "kpack"
    ]
    assert len(kpack_kernels) == 6
    for kernel in kpack_kernels:
        assert kernel["verified"] and kernel["arch"] == ["gfx942"]
        archive = kernel["library"].replace("<root>", str(roots["deb"]))
        assert archive == f"{roots['deb']}/{PROVIDER}/gfx942/kpack/hip_kernel_provider_gfx942.kpack"
        with KpackReader.open(archive) as reader:
            assert len(reader.read(kernel["toc_key"], "gfx942")) > 0
    # The rpm root gives the same listing, to the byte.
    assert listing(roots["rpm"], "gfx942") == gfx942
    # A gfx1100 sees the arch-independent engine only: no gfx1100 kernel is installed,
    # and the gfx942 packs are reported as dropped for it.
    for fmt, root in roots.items():
        gfx1100 = listing(root, "gfx1100")
        assert engines_of(gfx1100) == {"hipkernel:ConvFwd": CONV, "hipkernel:Pointwise": {}}, fmt
        kernels = [k for e in gfx1100["engines"] for p in e["packs"] for k in p["kernels"]]
        assert kernels and not [k for k in kernels if "gfx1100" in k["arch"] or k["arch"] != []]
        (pointwise,) = [e for e in gfx1100["engines"] if e["name"] == "hipkernel:Pointwise"]
        assert sorted((p["name"], p["arch"]) for p in pointwise["dropped_packs"]) == [
            ("hipkernel:pointwise_add", ["gfx942"]),
            ("hipkernel:pointwise_mul", ["gfx942"]),
        ]
    text = list_engines(roots["deb"], "gfx1100", "--level", "error").stdout
    assert "dropped for gfx1100: pack hipkernel:pointwise_add" in text
    assert "no gfx1100 kernel is installed" in text
    assert not (roots["deb"] / PROVIDER / "gfx1100").exists()
