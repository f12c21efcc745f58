"""gfxpack image end to end: the example release installed by apt-get and dnf over a
stand-in base, written as an OCI layout that skopeo and umoci read, with the same
files as try-install's root; layers by kind; reproducible digests; pushes to Debian's
docker-registry that upload only new layers; broken bases and registries as one error."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner, Result

from gfxpack.cli import cli
from gfxpack.image.layout import (
    CONFIG,
    LAYER_GZIP,
    LAYER_ZSTD,
    MANIFEST,
    REF_NAME,
    Descriptor,
    blob_path,
    manifest,
    put_bytes,
    put_json,
    write_index,
)
from gfxpack.trial import file_archs
from tests.doc_commands import doc_block, gfxpack_shell
from tests.image.conftest import BASE_TAG, need, write_base
from tests.verify.hostile import hostile_deb, published
from tests.verify.signed import make_key

pytestmark = pytest.mark.slow
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

META = "amdrocm-core8.2-{arch}"


def image(*args: str) -> Result:
    return CliRunner().invoke(cli, ["image", *args])


def built(repo: Path, base: Path, out: Path, *extra: str) -> dict:
    result = image(
        *("--repo", str(repo), "--base", f"oci:{base}:{BASE_TAG}", "--out", str(out)),
        *("--json", *extra),
    )
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout)


def fails(*args: str) -> str:
    result = image(*args)
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def tree(root: Path, under: str = "opt") -> dict[str, tuple]:
    """'/path' -> (kind, mode, contents or link target) of everything under root/under."""
    found = {}
    for directory, names, files in os.walk(root / under):
        for name in names + files:
            path = Path(directory, name)
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                what: object = os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                what = path.read_bytes()
            else:
                what = None
            found["/" + path.relative_to(root).as_posix()] = (
                stat.S_IFMT(info.st_mode),
                stat.S_IMODE(info.st_mode),
                what,
            )
    return found


def layer_names(layout: Path, digest: str) -> list[str]:
    blob = blob_path(layout, digest).read_bytes()
    if blob.startswith(ZSTD_MAGIC):
        blob = zstandard.ZstdDecompressor().stream_reader(blob).read()
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:*") as tar:
        return tar.getnames()


def compression_of(layout: Path, report: dict) -> str:
    """The compression of the new layers of the report's first image, by media type."""
    document = json.loads(blob_path(layout, report["images"][0]["manifest"]).read_bytes())
    return document["layers"][-1]["mediaType"].rpartition("+")[2]


def unpack_with_tar(copied: Path, rootfs: Path) -> None:
    """The layers of skopeo's dir: copy ``copied``, bottom first, unpacked by GNU tar
    (``--zstd`` runs the zstd tool) into ``rootfs``, each whiteout applied."""
    need("tar", "zstd")
    rootfs.mkdir(parents=True)
    layers = json.loads((copied / "manifest.json").read_text())["layers"]
    for layer in layers:
        blob = copied / layer["digest"].removeprefix("sha256:")
        flag = {"zstd": ["--zstd"], "gzip": ["--gzip"]}.get(layer["mediaType"][-4:], [])
        subprocess.run(
            ["tar", *flag, "-x", "--numeric-owner", "-p", "-f", str(blob), "-C", str(rootfs)],
            check=True, capture_output=True,
        )  # fmt: skip
        for whiteout in list(rootfs.rglob(".wh.*")):
            deleted = whiteout.with_name(whiteout.name.removeprefix(".wh."))
            if deleted.is_dir() and not deleted.is_symlink():
                shutil.rmtree(deleted)
            else:
                deleted.unlink(missing_ok=True)
            whiteout.unlink()


@pytest.fixture(scope="module", params=["gzip", "zstd"])
def images(request, example_repo, debian_base, tmp_path_factory) -> tuple[Path, dict]:
    need("skopeo", "umoci")
    out = tmp_path_factory.mktemp("images") / "layout"
    report = built(
        example_repo, debian_base, out, "--client", "apt", "--target", "gfx942,gfx950",
        "--compression", request.param, META,
    )  # fmt: skip
    assert compression_of(out, report) == request.param
    return out, report


def test_skopeo_and_umoci_read_every_image_as_try_install_installs_it(
    images, example_repo, tmp_path
):
    out, report = images
    assert [i["tag"] for i in report["images"]] == ["8.2.0-gfx942", "8.2.0-gfx950"]
    for built_image in report["images"]:
        tag, arch = built_image["tag"], built_image["arch"]
        inspected = json.loads(
            subprocess.run(
                ["skopeo", "inspect", f"oci:{out}:{tag}"], capture_output=True, check=True
            ).stdout
        )
        assert inspected["Digest"] == built_image["manifest"]
        assert inspected["Labels"]["io.gfxpack.gpu-arch"] == arch
        assert inspected["Labels"]["io.gfxpack.rocm-version"] == "8.2.0"
        assert inspected["Layers"] == [layer["digest"] for layer in built_image["layers"]]
        copied = tmp_path / f"dir-{arch}"
        subprocess.run(
            ["skopeo", "copy", "--quiet", f"oci:{out}:{tag}", f"dir:{copied}"],
            check=True, capture_output=True,
        )  # fmt: skip
        assert (copied / "manifest.json").is_file()
        unpacked = tmp_path / f"umoci-{arch}"
        if compression_of(out, report) == "zstd":
            # Bookworm's umoci (0.4.7) refuses tar+zstd layers: GNU tar unpacks the
            # layers skopeo copied instead, as umoci would.
            copied_layers = json.loads((copied / "manifest.json").read_text())["layers"]
            assert {x["mediaType"] for x in copied_layers[1:]} == {LAYER_ZSTD}
            unpack_with_tar(copied, unpacked / "rootfs")
        else:
            subprocess.run(
                ["umoci", "unpack", "--image", f"{out}:{tag}", str(unpacked)],
                check=True, capture_output=True,
            )  # fmt: skip
        trial_root = tmp_path / f"try-{arch}"
        result = CliRunner().invoke(
            cli,
            ["try-install", "--repo", str(example_repo), "--client", "apt",
             "--root", str(trial_root), META.replace("{arch}", arch)],
        )  # fmt: skip
        assert result.exit_code == 0, result.output + result.stderr
        in_image, in_trial = tree(unpacked / "rootfs"), tree(trial_root)
        assert in_image.keys() == in_trial.keys() and len(in_image) > 50
        assert in_image == in_trial
        # The package database says the same packages are installed.
        status = (unpacked / "rootfs/var/lib/dpkg/status").read_text()
        assert f"Package: amdrocm-blas8.2-{arch}\n" in status
        assert "Package: libc6\n" in status  # the base's own database, kept


def test_layers_by_kind_host_shared_device_of_one_arch(images):
    out, report = images
    first, second = report["images"]
    kinds = [[layer["what"] for layer in i["layers"]] for i in report["images"]]
    assert kinds == [
        ["base", "host", "device gfx942", "top"],
        ["base", "host", "device gfx950", "top"],
    ]
    # The base and the host layer are the same blobs in both arches' images.
    assert first["layers"][:2] == second["layers"][:2]
    assert first["layers"][2]["digest"] != second["layers"][2]["digest"]
    device = layer_names(out, first["layers"][2]["digest"])
    assert any(name.endswith("blas_lib_gfx942.kpack") for name in device)
    assert all(file_archs(name) <= {"gfx942"} for name in device)
    host = layer_names(out, first["layers"][1]["digest"])
    assert host and all(not file_archs(name) for name in host)
    top = layer_names(out, first["layers"][3]["digest"])
    assert "var/lib/dpkg/status" in top and not any(n.startswith("var/log/") for n in top)
    # Each layer's sizes are reported, and the comparison with every arch's layers.
    assert all(layer["size"] > 0 and layer["unpacked_size"] >= 1024 for layer in first["layers"])
    # ... and its packages against the same packages of every arch of the repository.
    compared = first["all_arch"]
    assert compared["archs"] == ["gfx942", "gfx950", "gfx1100"]
    assert 0 < compared["download"] < compared["all_arch_download"]
    assert report["all_arch_size"] == first["size"] + sum(
        layer["size"] for layer in second["layers"][2:]
    )


def test_two_builds_give_the_same_digests(images, example_repo, debian_base, tmp_path):
    out, report = images
    again = built(
        example_repo, debian_base, tmp_path / "again", "--client", "apt",
        "--target", "gfx942,gfx950", "--compression", compression_of(out, report), META,
    )  # fmt: skip
    assert [i["manifest"] for i in again["images"]] == [i["manifest"] for i in report["images"]]
    assert (tmp_path / "again/index.json").read_bytes() == (out / "index.json").read_bytes()


def test_a_docker_archive_base_gives_the_same_image(images, example_repo, debian_base, tmp_path):
    out, report = images
    archive = tmp_path / "base.tar"
    subprocess.run(
        ["skopeo", "copy", "--quiet", f"oci:{debian_base}:{BASE_TAG}", f"docker-archive:{archive}"],
        check=True, capture_output=True,
    )  # fmt: skip
    result = image(
        *("--repo", str(example_repo), "--base", f"docker-archive:{archive}"),
        *("--out", str(tmp_path / "out"), "--client", "apt", "--json", "amdrocm-core8.2-gfx942"),
        *("--compression", compression_of(out, report)),
    )
    assert result.exit_code == 0, result.output + result.stderr
    again = json.loads(result.stdout)["images"][0]
    # The same host and device layers over the archive's (uncompressed) base layer.
    layers = [(x["what"], x["digest"]) for x in again["layers"]]
    assert layers[1:3] == [(x["what"], x["digest"]) for x in report["images"][0]["layers"][1:3]]


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_push_uploads_only_the_layers_the_registry_lacks(
    compression, registry, example_repo, debian_base, tmp_path
):
    need("skopeo")
    target = f"{registry.url}/rocm/amdrocm"
    first = built(
        example_repo, debian_base, tmp_path / "a", "--client", "apt", "--target", "gfx950",
        "--push", target, "--compression", compression, META,
    )  # fmt: skip
    uploads = registry.blob_uploads()
    layers = first["images"][0]["layers"]
    assert sorted(first["pushed"]["uploaded"]) == sorted(
        {*(x["digest"] for x in layers)}
        | {_config_digest(tmp_path / "a", first["images"][0]["manifest"])}
    )
    assert uploads == len(first["pushed"]["uploaded"])
    second = built(
        example_repo, debian_base, tmp_path / "b", "--client", "apt", "--target", "gfx942",
        "--push", target, "--compression", compression, META,
    )  # fmt: skip
    new = second["images"][0]["layers"]
    # The base and host layers were there: only the device and top layers and the config.
    assert sorted(second["pushed"]["already_there"]) == sorted(x["digest"] for x in new[:2])
    assert {x["digest"] for x in new[2:]} <= set(second["pushed"]["uploaded"])
    assert len(second["pushed"]["uploaded"]) == 3
    assert registry.blob_uploads() - uploads == 3
    for tag, wanted in (("8.2.0-gfx950", first), ("8.2.0-gfx942", second)):
        inspected = json.loads(
            subprocess.run(
                ["skopeo", "inspect", "--tls-verify=false", f"docker://{target}:{tag}"],
                capture_output=True, check=True,
            ).stdout
        )  # fmt: skip
        assert inspected["Digest"] == wanted["images"][0]["manifest"]
    # A node that pulled gfx950's image, pulling gfx942's, downloads only its device and
    # top layers and its config (skopeo into one layout: the blobs it has are kept).
    pulled = tmp_path / "node"
    copy = ["skopeo", "copy", "--quiet", "--src-tls-verify=false"]
    subprocess.run([*copy, f"docker://{target}:8.2.0-gfx950", f"oci:{pulled}:a"], check=True)
    before = registry.blob_downloads()
    subprocess.run([*copy, f"docker://{target}:8.2.0-gfx942", f"oci:{pulled}:b"], check=True)
    fetched = registry.blob_downloads() - before
    config = _config_digest(tmp_path / "b", second["images"][0]["manifest"])
    # (skopeo inspect above fetched the config already)
    assert {x["digest"] for x in new[2:]} <= fetched <= {x["digest"] for x in new[2:]} | {config}
    assert not fetched & {x["digest"] for x in new[:2]}


def test_force_replaces_only_a_layout(example_repo, tmp_path):
    out = tmp_path / "documents"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    line = fails(
        *("--repo", str(example_repo), "--base", str(tmp_path), "--out", str(out), "--force"),
        "amdrocm-core8.2-gfx942",
    )
    assert line == (
        f"error: {out}: holds files and is not an OCI layout (no oci-layout); --force "
        "replaces only a layout"
    )
    assert (out / "thesis.tex").read_text() == "years of work"


def test_a_merged_usr_base_gets_the_packages_files_in_their_layers(example_repo, tmp_path):
    """On a base whose /opt is a symlink (as /lib is on a merged-/usr Debian), dpkg
    installs through it; the files still go to their package's layer, where they are."""
    root = tmp_path / "root"
    (root / "usr/opt").mkdir(parents=True)
    os.symlink("usr/opt", root / "opt")
    layout = write_base(root, tmp_path / "layout")
    report = built(
        example_repo, layout, tmp_path / "out", "--client", "apt", "--stand-ins",
        "amdrocm-core8.2-gfx942",
    )  # fmt: skip
    layers = {x["what"]: x["digest"] for x in report["images"][0]["layers"]}
    device = layer_names(tmp_path / "out", layers["device gfx942"])
    assert "usr/opt/rocm/core-8.2/.kpack/blas_lib_gfx942.kpack" in device
    host = layer_names(tmp_path / "out", layers["host"])
    # ("opt" is the base's symlink, which the packages list as a directory they own)
    assert (
        host and [n for n in host if n not in ("opt", "usr") and not n.startswith("usr/opt")] == []
    )
    top = layer_names(tmp_path / "out", layers["top"])
    assert not [n for n in top if n.startswith("usr/opt/rocm/core-8.2/")]


def _config_digest(layout: Path, manifest: str) -> str:
    return json.loads(blob_path(layout, manifest).read_bytes())["config"]["digest"]


def test_a_registry_base_is_pulled(registry, example_repo, debian_base, tmp_path):
    need("skopeo")
    subprocess.run(
        ["skopeo", "copy", "--quiet", "--dest-tls-verify=false", f"oci:{debian_base}:{BASE_TAG}",
         f"docker://{registry.url}/bases/debian:12"],
        check=True, capture_output=True,
    )  # fmt: skip
    result = image(
        *("--repo", str(example_repo), "--base", f"docker://{registry.url}/bases/debian:12"),
        *("--out", str(tmp_path / "out"), "--client", "apt", "--json", "amdrocm-core8.2-gfx942"),
    )
    assert result.exit_code == 0, result.output + result.stderr


def test_an_unreachable_registry_is_one_error(example_repo, debian_base, tmp_path):
    line = fails(
        *("--repo", str(example_repo), "--base", f"oci:{debian_base}:{BASE_TAG}"),
        *("--out", str(tmp_path / "out"), "--client", "apt", "--push", "127.0.0.1:9/rocm/x"),
        "amdrocm-core8.2-gfx942",
    )
    assert line.startswith("error: registry 127.0.0.1:9 unreachable (HEAD of blob sha256:")
    assert not (tmp_path / "out").exists()


def _broken_copy(base: Path, tmp_path: Path) -> tuple[Path, str]:
    copy = tmp_path / "broken"
    shutil.copytree(base, copy)
    index = json.loads((copy / "index.json").read_text())
    manifest = json.loads(blob_path(copy, index["manifests"][0]["digest"]).read_bytes())
    return copy, manifest["layers"][0]["digest"]


@pytest.mark.parametrize("damage", ["missing-layer", "bad-digest"])
def test_a_broken_base_is_one_error(damage, example_repo, debian_base, tmp_path):
    copy, layer = _broken_copy(debian_base, tmp_path)
    path = blob_path(copy, layer)
    if damage == "missing-layer":
        path.unlink()
        expected = f"error: base oci:{copy}:{BASE_TAG}: blob {layer} is missing"
    else:
        data = bytearray(path.read_bytes())
        data[-1] ^= 1
        path.write_bytes(bytes(data))
        expected = f"error: base oci:{copy}:{BASE_TAG}: blob {layer} has the digest sha256:"
    line = fails(
        *("--repo", str(example_repo), "--base", f"oci:{copy}:{BASE_TAG}"),
        *("--out", str(tmp_path / "out"), "--client", "apt", "amdrocm-core8.2-gfx942"),
    )
    assert line.startswith(expected)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "member",
    ["escape/owned", "../owned", "/escape/owned"],
    ids=["through-symlink", "dotdot", "absolute-through-symlink"],
)
def test_a_base_member_leaving_the_root_is_refused(member, example_repo, tmp_path):
    """A layer member naming a path through a symlink an earlier layer made (to /etc),
    or above the root, is one error; nothing is written outside the root."""
    root = tmp_path / "root"
    root.mkdir()
    os.symlink("/etc", root / "escape")
    layout = write_base(root, tmp_path / "layout")
    line = _with_extra_layer(layout, member, example_repo, tmp_path)
    assert member in line and ("symlink" in line or "leaves the root" in line), line
    assert not Path("/etc/owned").exists() and not (tmp_path / "owned").exists()


def _with_extra_layer(layout: Path, member: str, repo: Path, tmp_path: Path) -> str:
    """gfxpack image over ``layout``'s base plus a layer holding the one file ``member``
    (written by hand: gfxpack's own writer never writes such a member)."""
    raw = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        info = tarfile.TarInfo(member)
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    diff_id = "sha256:" + hashlib.sha256(gzip.decompress(raw.getvalue())).hexdigest()
    layer = put_bytes(layout, LAYER_GZIP, raw.getvalue())
    index = json.loads((layout / "index.json").read_text())
    old = json.loads(blob_path(layout, index["manifests"][0]["digest"]).read_bytes())
    config = json.loads(blob_path(layout, old["config"]["digest"]).read_bytes())
    config["rootfs"]["diff_ids"].append(diff_id)
    config_descriptor = put_json(layout, CONFIG, config)
    layers = [Descriptor(x["mediaType"], x["digest"], x["size"]) for x in old["layers"]]
    image_descriptor = put_json(layout, MANIFEST, manifest(config_descriptor, [*layers, layer], {}))
    write_index(
        layout,
        [Descriptor(MANIFEST, image_descriptor.digest, image_descriptor.size, {REF_NAME: "evil"})],
    )
    return fails(
        *("--repo", str(repo), "--base", f"oci:{layout}:evil"),
        *("--out", str(tmp_path / "out"), "--client", "apt", "--stand-ins"),
        "amdrocm-core8.2-gfx942",
    )


def test_an_image_of_another_arch_is_refused(example_repo, debian_base, tmp_path):
    line = fails(
        *("--repo", str(example_repo), "--base", f"oci:{debian_base}:{BASE_TAG}"),
        *("--out", str(tmp_path / "out"), "--client", "apt", "--target", "gfx942"),
        "amdrocm-core8.2-gfx942",
        "amdrocm-blas8.2-gfx1100",
    )
    assert line.startswith(
        "error: the gfx942 image would hold 3 packages (amdrocm-blas8.2-gfx1100, "
        "amdrocm-solver8.2-gfx1100, amdrocm-sparse8.2-gfx1100) and "
    )
    assert "(gfx1100)" in line and not (tmp_path / "out").exists()


def test_an_rpm_based_root_gets_dnfs_install_reproducibly(example_repo, rpm_base, tmp_path):
    """dnf installs over an rpm-based base; the rpm database's install times are
    SOURCE_DATE_EPOCH (the clock frozen), so two builds give the same digests."""
    need("umoci", "rpm")
    epoch = "1700000000"
    reports = []
    for n in range(2):
        result = CliRunner().invoke(
            cli,
            ["image", "--repo", str(example_repo), "--base", f"oci:{rpm_base}:{BASE_TAG}",
             "--out", str(tmp_path / f"out{n}"), "--client", "dnf", "--json",
             "amdrocm-core8.2-gfx942"],
            env={"SOURCE_DATE_EPOCH": epoch},
        )  # fmt: skip
        assert result.exit_code == 0, result.output + result.stderr
        reports.append(json.loads(result.stdout)["images"][0])
    assert reports[0]["manifest"] == reports[1]["manifest"]
    layers = [x["what"] for x in reports[0]["layers"]]
    assert layers == ["base", "host", "device gfx942", "top"]
    unpacked = tmp_path / "unpacked"
    subprocess.run(
        ["umoci", "unpack", "--image", f"{tmp_path / 'out0'}:8.2.0-gfx942", str(unpacked)],
        check=True, capture_output=True,
    )  # fmt: skip
    rootfs = unpacked / "rootfs"
    assert (rootfs / "opt/rocm/core-8.2/.kpack/blas_lib_gfx942.kpack").is_file()
    assert not list(rootfs.rglob("*gfx950*"))
    installed = subprocess.run(
        ["rpm", "--root", str(rootfs), "-q", "--qf", "%{INSTALLTIME}", "amdrocm-blas8.2-gfx942"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert installed == epoch


def test_the_guides_commands_run_as_written(example_repo, debian_base, tmp_path):
    need("skopeo")
    shutil.copytree(example_repo, tmp_path / "repo")
    shutil.copytree(debian_base, tmp_path / "base")
    index = tmp_path / "base/index.json"
    index.write_text(index.read_text().replace(f'"{BASE_TAG}"', '"12"'))
    result = gfxpack_shell(tmp_path, doc_block("guides/container-images.md", "## Try it"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "1"
    assert "8.2.0-gfx950" in result.stdout and "device gfx950" in result.stdout


def test_a_base_without_the_system_packages_is_one_error_naming_one(example_repo, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    layout = write_base(empty, tmp_path / "layout")
    line = fails(
        *("--repo", str(example_repo), "--base", f"oci:{layout}:{BASE_TAG}"),
        *("--out", str(tmp_path / "out"), "--client", "apt", "amdrocm-core8.2-gfx942"),
    )
    assert "cannot install amdrocm-core8.2-gfx942 over it: " in line
    assert "nothing provides libc6" in line and "--stand-ins" in line


def test_layers_by_family(example_repo, debian_base, tmp_path):
    report = built(
        example_repo, debian_base, tmp_path / "out", "--client", "apt", "--layers", "family",
        "amdrocm-core8.2-gfx942",
    )  # fmt: skip
    kinds = [layer["what"] for layer in report["images"][0]["layers"]]
    assert "amdrocm-blas-host host" in kinds and "amdrocm-blas device gfx942" in kinds
    assert kinds[0] == "base" and kinds[-1] == "top" and len(kinds) > 10
    # Host families first, then device ones: no device layer below a host one.
    devices = [n for n, what in enumerate(kinds) if "device" in what]
    hosts = [n for n, what in enumerate(kinds) if what.endswith(" host")]
    assert max(hosts) < min(devices)


@pytest.mark.parametrize("client", ["apt", "dnf"])
def test_a_signed_repository_is_checked_by_the_client(
    client, signed_repo, rsa_key, debian_base, rpm_base, tmp_path
):
    """With --keyring the indexes are checked first, then by apt (signed-by) or dnf
    (gpgcheck, repo_gpgcheck); a keyring without the signing key is one error."""
    _, repo = signed_repo
    base = debian_base if client == "apt" else rpm_base
    keyring = rsa_key.export(tmp_path / "keys.asc", armor=True)
    report = built(
        repo, base, tmp_path / "out", "--client", client, "--keyring", str(keyring),
        "amdrocm-core8.2-gfx942",
    )  # fmt: skip
    assert [x["what"] for x in report["images"][0]["layers"]][1:3] == ["host", "device gfx942"]
    other = make_key(tmp_path / "other", "ed25519").export(tmp_path / "other.gpg")
    line = fails(
        *("--repo", str(repo), "--base", f"oci:{base}:{BASE_TAG}", "--out", str(tmp_path / "o2")),
        *("--client", client, "--keyring", str(other), "amdrocm-core8.2-gfx942"),
    )
    assert "not a good signature by a key of" in line and str(other) in line
    assert not (tmp_path / "o2").exists()


def test_an_interrupted_build_leaves_nothing(example_repo, debian_base, tmp_path):
    """SIGTERM mid-install: no layout at --out, no partial one beside it, and none of the
    run's scratch roots in the temporary directory."""
    scratch = Path(tempfile.gettempdir())
    earlier = set(scratch.glob("gfxpack-image-*"))
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "gfxpack", "image", "--repo", str(example_repo),
         "--base", f"oci:{debian_base}:{BASE_TAG}", "--out", str(out), "--client", "apt",
         "--target", "gfx942,gfx950,gfx1100", META],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not [
        p for p in set(scratch.glob("gfxpack-image-*")) - earlier if (p / "root-shared").exists()
    ]:
        time.sleep(0.05)
    time.sleep(0.5)  # inside the install
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == []
    assert set(scratch.glob("gfxpack-image-*")) - earlier == set()
    with open("/proc/self/mounts", encoding="utf-8") as mounts:  # no arch's overlay left
        assert [line for line in mounts if "/gfxpack-image-" in line] == []


def test_a_repository_path_apt_would_misread_is_read_as_it_is(example_repo, debian_base, tmp_path):
    """apt reads the repository by its file method at a fixed path in the sandbox: a
    space or a percent sign in the repository's own path (which apt would decode twice
    in a file: URI) changes nothing."""
    repo = tmp_path / "a b%20c" / "repo"
    shutil.copytree(example_repo, repo, symlinks=True)
    report = built(repo, debian_base, tmp_path / "out", "--client", "apt", "amdrocm-core8.2-gfx942")
    assert [i["arch"] for i in report["images"]] == ["gfx942"]
    assert any(layer["what"] == "device gfx942" for layer in report["images"][0]["layers"])


def test_a_layer_that_cannot_be_written_fails_the_run_and_leaves_nothing(
    example_release, debian_base, tmp_path
):
    """gfx950's package leaves a FIFO in its root, which no layer may hold: while other
    arches install and their layers are written, the run stops with one error naming
    it, and leaves no layout, no scratch root and no mount."""
    packages = tmp_path / "packages"
    shutil.copytree(example_release.out, packages, ignore=shutil.ignore_patterns("index.json"))
    for arch in ("gfx942", "gfx1100"):
        hostile_deb(packages, f"fifo-{arch}", ":")
    hostile_deb(packages, "fifo-gfx950", 'mkfifo "$DPKG_ROOT/opt/fifo"')
    repo = published(packages, tmp_path / "repo")
    scratch = Path(tempfile.gettempdir())
    earlier = set(scratch.glob("gfxpack-image-*"))
    out = tmp_path / "out"
    line = fails(
        *("--repo", str(repo), "--base", f"oci:{debian_base}:{BASE_TAG}", "--out", str(out)),
        *("--client", "apt", "--target", "gfx942,gfx950,gfx1100", META, "fifo-{arch}"),
    )
    assert "/opt/fifo: is a FIFO" in line, line
    assert not out.exists() and [p.name for p in out.parent.iterdir() if p.name != "out"] == [
        "packages",
        "repo",
    ]
    assert set(scratch.glob("gfxpack-image-*")) - earlier == set()
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        assert [line for line in mounts if "/gfxpack-image-" in line] == []


def test_progress_is_told_each_step_in_order(example_repo, debian_base, tmp_path):
    """What a terminal's progress line shows: the shared install, each arch's install
    with how many are done, then the last layers."""
    from gfxpack.image.workflow import build_images

    steps: list[tuple[str, int, int]] = []
    build_images(
        example_repo, [META], f"oci:{debian_base}:{BASE_TAG}", tmp_path / "out",
        ["gfx942", "gfx950"], client="apt", progress=lambda *step: steps.append(step),
    )  # fmt: skip
    assert steps == [
        ("installing the packages every arch shares", 0, 2),
        ("installing gfx942's packages", 0, 2),
        ("installing gfx950's packages", 1, 2),
        ("writing the last layers", 2, 2),
    ]


def test_every_image_read_back_as_a_base_unpacks_as_gnu_tar_unpacks_it(images, tmp_path):
    """An image gfxpack wrote, gzip or zstd, is a base gfxpack reads: its layers, applied
    by gfxpack's unpacker, give the root GNU tar gives from skopeo's copy of them."""
    from gfxpack.image.base import read_base
    from gfxpack.image.unpack import unpack

    out, report = images
    built_image = report["images"][0]
    base = read_base(f"oci:{out}:{built_image['tag']}", tmp_path / "scratch")
    assert [layer.descriptor.digest for layer in base.layers] == [
        layer["digest"] for layer in built_image["layers"]
    ]
    ours = tmp_path / "ours"
    ours.mkdir()
    unpack(base, ours)
    copied = tmp_path / "copied"
    subprocess.run(
        ["skopeo", "copy", "--quiet", f"oci:{out}:{built_image['tag']}", f"dir:{copied}"],
        check=True, capture_output=True,
    )  # fmt: skip
    unpack_with_tar(copied, tmp_path / "tar")
    by_us, by_tar = tree(ours, ""), tree(tmp_path / "tar", "")
    assert by_us == by_tar and len(by_us) > 50
