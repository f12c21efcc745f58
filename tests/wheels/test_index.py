"""gfxpack index: a static PEP 503 / PEP 691 index that pip and uv install one arch from,
and that refuses to publish a set of wheels whose extras, versions or paths disagree."""

from __future__ import annotations

import base64
import hashlib
import html.parser
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
import zipfile
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from click.testing import CliRunner, Result
from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.sources import WheelFile
from tests.conftest import tmpfs
from tests.wheels.conftest import declare

from gfxpack.cli import cli
from gfxpack.wheels.index import JSON_TYPE

PLATFORM = "linux_x86_64"
ARCHES = ("gfx942", "gfx1100")
pytestmark = [
    pytest.mark.slow,  # make check skips it: an index served to pip and uv
    pytest.mark.skipif(os.uname().machine != "x86_64", reason="the wheels are tagged linux_x86_64"),
]


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(
    directory: Path,
    name: str,
    version: str,
    files: dict[str, bytes],
    metadata: Sequence[str] = (),
    platform: str = PLATFORM,
    component: str = "",
) -> Path:
    """A wheel as the binary distribution format has it: members, then the .dist-info
    with METADATA, WHEEL and a RECORD of urlsafe-base64 sha256 hashes. ``component``
    spells the name in the file name (default: the name, "-" as "_")."""
    component = component or name.replace("-", "_")
    dist_info = f"{component}-{version}.dist-info"
    meta = "\n".join(
        [
            "Metadata-Version: 2.4",
            f"Name: {name}",
            f"Version: {version}",
            "Requires-Python: >=3.8",
            *metadata,
        ]
    )
    wheel = (
        f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-{platform}\n"
    )
    members = {
        **files,
        f"{dist_info}/METADATA": (meta + "\n").encode(),
        f"{dist_info}/WHEEL": wheel.encode(),
    }
    record = "".join(f"{path},{record_hash(data)},{len(data)}\n" for path, data in members.items())
    members[f"{dist_info}/RECORD"] = (record + f"{dist_info}/RECORD,,\n").encode()
    path = directory / f"{component}-{version}-py3-none-{platform}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


def host_wheel(directory: Path, version: str = "1.0") -> Path:
    extras = [f"device-{arch}" for arch in ARCHES] + ["device-all"]
    requires = [f'demo-device-{a}=={version}; extra == "device-{a}"' for a in ARCHES] + [
        f'demo-device-{a}=={version}; extra == "device-all"' for a in ARCHES
    ]
    return make_wheel(
        directory,
        "demo",
        version,
        {"demo/__init__.py": b"", "demo/libdemo.so": b"\x7fELF host code"},
        [*(f"Provides-Extra: {e}" for e in extras), *(f"Requires-Dist: {r}" for r in requires)],
    )


def device_wheel(directory: Path, arch: str, version: str = "1.0", host: str = "") -> Path:
    return make_wheel(
        directory,
        f"demo-device-{arch}",
        version,
        {f"demo/.kpack/demo_{arch}.kpack": f"device code for {arch}".encode()},
        [f"Requires-Dist: demo=={host or version}"],
    )


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    directory = tmp_path / "wheels"
    directory.mkdir()
    host_wheel(directory)
    for arch in ARCHES:
        device_wheel(directory, arch)
    return directory


def index(wheels: Path, out: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["index", "--wheels", str(wheels), "--out", str(out), *args])


class Anchors(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.anchors.append(dict(attrs))


def anchors(page: Path) -> list[dict[str, str | None]]:
    parser = Anchors()
    parser.feed(page.read_text())
    return parser.anchors


def test_the_index_pages(wheels: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    result = index(wheels, out)
    assert result.exit_code == 0, result.output
    root = json.loads((out / "simple" / "index.json").read_text())
    assert root["meta"]["api-version"] == "1.1"
    names = ["demo", "demo-device-gfx1100", "demo-device-gfx942"]
    assert [p["name"] for p in root["projects"]] == names
    assert [a["href"] for a in anchors(out / "simple" / "index.html")] == [f"{n}/" for n in names]

    project = out / "simple" / "demo-device-gfx942"
    page = json.loads((project / "index.json").read_text())
    assert page["meta"]["api-version"] == "1.1" and page["name"] == "demo-device-gfx942"
    assert page["versions"] == ["1.0"]
    [entry] = page["files"]
    wheel = project / entry["url"]
    data = wheel.read_bytes()
    assert data == (wheels / entry["filename"]).read_bytes()
    assert entry["hashes"] == {"sha256": hashlib.sha256(data).hexdigest()}
    assert entry["size"] == len(data)
    assert entry["requires-python"] == ">=3.8"
    # PEP 658/714: the METADATA of the wheel beside it, under the hash the page gives.
    metadata = Path(f"{wheel}.metadata").read_bytes()
    with zipfile.ZipFile(wheel) as archive:
        assert metadata == archive.read("demo_device_gfx942-1.0.dist-info/METADATA")
    core = hashlib.sha256(metadata).hexdigest()
    assert entry["core-metadata"] == entry["dist-info-metadata"] == {"sha256": core}

    [link] = anchors(project / "index.html")
    assert link["href"] == f"{entry['url']}#sha256={entry['hashes']['sha256']}"
    assert link["data-requires-python"] == ">=3.8"
    assert link["data-core-metadata"] == link["data-dist-info-metadata"] == f"sha256={core}"
    assert 'data-requires-python="&gt;=3.8"' in (project / "index.html").read_text()


# --- the real clients, over 127.0.0.1 ---------------------------------------------------


class Server:
    """A static server of an index directory that does what a web server's config does:
    ``/simple/<project>/`` is index.json for a client that asks for PEP 691 JSON (when
    ``negotiate``), index.html otherwise. It logs every path served and its type."""

    def __init__(self, root: Path, negotiate: bool) -> None:
        self.served: list[tuple[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = unquote(urlsplit(self.path).path)
                relative = posixpath.normpath(path).lstrip("/")
                target, kind = root / relative, "application/octet-stream"
                if path.endswith("/"):
                    wants = negotiate and JSON_TYPE in self.headers.get("Accept", "")
                    target = target / ("index.json" if wants else "index.html")
                    kind = JSON_TYPE if wants else "text/html"
                if relative.startswith("..") or not target.is_file():
                    self.send_error(404)
                    return
                body = target.read_bytes()
                server.served.append((path, kind))
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/simple"

    def wheels_served(self) -> list[str]:
        return sorted(posixpath.basename(p) for p, _ in self.served if p.endswith(".whl"))


@pytest.fixture
def serve(tmp_path: Path, wheels: Path) -> Iterator[Callable[[bool], Server]]:
    out = tmp_path / "site"
    assert index(wheels, out).exit_code == 0
    servers: list[Server] = []

    def start(negotiate: bool) -> Server:
        server = Server(out, negotiate)
        threading.Thread(target=server.httpd.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.httpd.shutdown()
        server.httpd.server_close()


def fresh_venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    return where / "bin" / "python"


def installed(venv: Path) -> dict[str, list[str]]:
    """The distributions installed in ``venv`` and the .kpack files of the demo package."""
    [site] = venv.glob("lib/python*/site-packages")
    return {
        "dists": sorted(p.name for p in site.glob("*.dist-info")),
        "kpacks": sorted(p.name for p in site.glob("demo/.kpack/*")),
    }


ONE_ARCH = {
    "dists": ["demo-1.0.dist-info", "demo_device_gfx942-1.0.dist-info"],
    "kpacks": ["demo_gfx942.kpack"],
}
DOWNLOADED = [
    "demo-1.0-py3-none-linux_x86_64.whl",
    "demo_device_gfx942-1.0-py3-none-linux_x86_64.whl",
]
CLIENT_ENV = {
    **os.environ,
    "PIP_CONFIG_FILE": os.devnull,
    "PIP_NO_INPUT": "1",
    "UV_NO_CONFIG": "1",
    "UV_PYTHON_DOWNLOADS": "never",
}


def test_pip_installs_the_host_and_one_arch(
    serve: Callable[[bool], Server], tmp_path: Path
) -> None:
    """pip reads the PEP 691 JSON pages and the PEP 658 metadata, downloads two wheels."""
    server = serve(True)  # negotiates: JSON for a client that asks
    venv = tmp_path / "pip-venv"
    python = fresh_venv(venv)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-cache-dir",
         "--disable-pip-version-check", "--index-url", server.url, "demo[device-gfx942]"],
        check=True, env=CLIENT_ENV, capture_output=True,
    )  # fmt: skip
    assert installed(venv) == ONE_ARCH
    assert server.wheels_served() == DOWNLOADED
    assert ("/simple/demo/", JSON_TYPE) in server.served
    # PEP 658: pip resolved from the .metadata files before downloading the two wheels.
    assert "/files/demo_device_gfx1100-1.0-py3-none-linux_x86_64.whl.metadata" not in {
        p for p, _ in server.served
    }
    assert f"/files/{DOWNLOADED[1]}.metadata" in {p for p, _ in server.served}


def test_uv_installs_the_host_and_one_arch_from_the_html_pages(
    serve: Callable[[bool], Server], tmp_path: Path
) -> None:
    """uv on a server without negotiation: the PEP 503 pages alone do."""
    uv = pytest.importorskip("uv").find_uv_bin()
    server = serve(False)  # HTML only
    venv = tmp_path / "uv-venv"
    python = fresh_venv(venv)
    subprocess.run(
        [uv, "pip", "install", "--no-cache", "--python", str(python), "--index-url", server.url,
         "demo[device-gfx942]"],
        check=True, env=CLIENT_ENV, capture_output=True,
    )  # fmt: skip
    assert installed(venv) == ONE_ARCH
    assert server.wheels_served() == DOWNLOADED
    assert ("/simple/demo/", "text/html") in server.served


# --- refusals -------------------------------------------------------------------------------

HOST = "demo-1.0-py3-none-linux_x86_64.whl"


def assert_refused(result: Result, tmp_path: Path, lines: list[str]) -> None:
    """Exactly these error lines, and nothing written: no OUT, no scratch beside it."""
    assert result.exit_code == 1, result.output
    assert result.output.splitlines() == [f"error: {line}" for line in lines]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wheels"]


def test_an_extra_that_points_at_nothing(wheels: Path, tmp_path: Path) -> None:
    (wheels / "demo_device_gfx1100-1.0-py3-none-linux_x86_64.whl").unlink()
    missing = f"requires demo-device-gfx1100==1.0: no such wheel in {wheels}"
    assert_refused(
        index(wheels, tmp_path / "site"),
        tmp_path,
        [f"{HOST}: extra device-all {missing}", f"{HOST}: extra device-gfx1100 {missing}"],
    )


def test_a_device_wheel_for_another_platform_only(wheels: Path, tmp_path: Path) -> None:
    (wheels / "demo_device_gfx942-1.0-py3-none-linux_x86_64.whl").unlink()
    make_wheel(
        wheels, "demo-device-gfx942", "1.0", {"demo/.kpack/demo_gfx942.kpack": b"arm"},
        ["Requires-Dist: demo==1.0"], platform="linux_aarch64",
    )  # fmt: skip
    missing = f"requires demo-device-gfx942==1.0: no such wheel for platform {PLATFORM} in {wheels}"
    assert_refused(
        index(wheels, tmp_path / "site"),
        tmp_path,
        [f"{HOST}: extra device-all {missing}", f"{HOST}: extra device-gfx942 {missing}"],
    )


def test_a_device_wheel_pinning_another_host_version(wheels: Path, tmp_path: Path) -> None:
    device = "demo_device_gfx942-1.0-py3-none-linux_x86_64.whl"
    (wheels / device).unlink()
    device_wheel(wheels, "gfx942", "1.0", host="1.1")
    assert_refused(
        index(wheels, tmp_path / "site"),
        tmp_path,
        [
            f"{device}: requires demo==1.1, but it is version 1.0; "
            "host and device versions must agree"
        ],
    )


def test_device_wheels_of_another_version(wheels: Path, tmp_path: Path) -> None:
    for arch in ARCHES:
        (wheels / f"demo_device_{arch}-1.0-py3-none-linux_x86_64.whl").unlink()
        device_wheel(wheels, arch, "1.1")
    lines = [
        f"{HOST}: extra device-{extra} requires demo-device-{arch}==1.0, but {wheels} has it "
        "only as version 1.1; host and device versions must agree"
        # extras in name order, each extra's requirements in METADATA order
        for extra, arch in [
            ("all", "gfx942"),
            ("all", "gfx1100"),
            ("gfx1100",) * 2,
            ("gfx942",) * 2,
        ]
    ]
    assert_refused(index(wheels, tmp_path / "site"), tmp_path, lines)


def test_two_distributions_installing_one_path(wheels: Path, tmp_path: Path) -> None:
    other = make_wheel(wheels, "other", "2.0", {"demo/libdemo.so": b"someone else's"})
    assert_refused(
        index(wheels, tmp_path / "site"),
        tmp_path,
        [f"{HOST} and {other.name} both install lib/python*/site-packages/demo/libdemo.so"],
    )


def test_a_broken_wheel_and_a_symlink(wheels: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.whl"
    secret.write_bytes(b"not a zip")
    (wheels / "zzz-1.0-py3-none-any.whl").write_bytes(b"not a zip either")
    result = index(wheels, tmp_path / "site")
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert line.startswith(f"error: {wheels}/zzz-1.0-py3-none-any.whl: not a wheel (a zip archive)")
    (wheels / "zzz-1.0-py3-none-any.whl").unlink()
    (wheels / "link-1.0-py3-none-any.whl").symlink_to(secret)
    result = index(wheels, tmp_path / "site")
    assert result.output.splitlines() == [
        f"error: {wheels}/link-1.0-py3-none-any.whl: not a regular file (a symlink, a "
        "directory or a device); give the wheel itself"
    ]
    assert not (tmp_path / "site").exists()
    assert secret.read_bytes() == b"not a zip" and secret.stat().st_nlink == 1


def test_an_existing_index_is_kept_unless_forced(wheels: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / "mine").write_text("kept")
    result = index(wheels, out)
    assert result.output.splitlines() == [
        f"error: {out}: not an index gfxpack wrote (mine); index adds wheels to only an "
        "earlier index"
    ]
    assert (out / "mine").read_text() == "kept"
    # --force replaces an earlier index only: this directory is someone's.
    forced = index(wheels, out, "--force")
    assert forced.exit_code == 1
    assert forced.output.splitlines() == [
        f"error: {out}: not an index gfxpack wrote (mine); --force replaces only an earlier index"
    ]
    assert sorted(p.name for p in out.iterdir()) == ["mine"]
    assert (out / "mine").read_text() == "kept"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".site.")]
    (out / "mine").unlink()
    out.rmdir()
    assert index(wheels, out).exit_code == 0
    (wheels / "demo_device_gfx942-1.0-py3-none-linux_x86_64.whl").unlink()
    (wheels / "demo_device_gfx1100-1.0-py3-none-linux_x86_64.whl").unlink()
    make_wheel(wheels, "solo", "3.0", {"solo.py": b""})
    (wheels / HOST).unlink()
    forced = index(wheels, out, "--force")
    assert forced.exit_code == 0, forced.output
    assert sorted(p.name for p in (out / "simple").iterdir()) == [
        "index.html",
        "index.json",
        "solo",
    ]


@pytest.mark.parametrize(
    "planted",
    ["notes.txt", "simple/demo/notes.txt", "files/notes.txt", "simple/notes.txt", "other/"],
)
def test_force_keeps_an_earlier_index_with_anything_else_in_it(
    wheels: Path, tmp_path: Path, planted: str
) -> None:
    out = tmp_path / "site"
    assert index(wheels, out).exit_code == 0
    target = out / planted
    if planted.endswith("/"):
        target.mkdir()
    else:
        target.write_text("mine")
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    forced = index(wheels, out, "--force")
    assert forced.exit_code == 1
    assert forced.output.splitlines() == [
        f"error: {out}: not an index gfxpack wrote ({planted.rstrip('/')}); "
        "--force replaces only an earlier index"
    ]
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


# --- every scheme where installers put it -----------------------------------------------


def install_with_installer(wheel: Path, prefix: Path) -> dict[str, str]:
    """Install ``wheel`` into ``prefix`` with PyPA's reference installer, the venv layout
    of this Python: the referee of where each scheme lands. Its scheme paths."""
    paths = sysconfig.get_paths("venv", vars={"base": str(prefix), "platbase": str(prefix)})
    schemes = {name: paths[name] for name in ("purelib", "platlib", "scripts", "data")}
    schemes["headers"] = str(prefix / "include" / "site" / "demo")
    with WheelFile.open(wheel) as source:
        install(source, SchemeDictionaryDestination(schemes, sys.executable, "posix"), {})
    return schemes


def test_a_data_file_in_site_packages_clashes_with_another_distributions_module(
    wheels: Path, tmp_path: Path
) -> None:
    """A ``data`` file lands at the environment's prefix: under lib/python*/site-packages
    it replaces another distribution's module, as the reference installer shows."""
    python = f"python{sys.version_info.major}.{sys.version_info.minor}"
    evil = make_wheel(
        wheels, "evil", "2.0",
        {f"evil-2.0.data/data/lib/{python}/site-packages/demo/__init__.py": b"import os\n"},
    )  # fmt: skip
    schemes = install_with_installer(evil, tmp_path / "prefix")
    assert (Path(schemes["purelib"]) / "demo" / "__init__.py").read_bytes() == b"import os\n"
    shutil.rmtree(tmp_path / "prefix")
    assert_refused(
        index(wheels, tmp_path / "site"),
        tmp_path,
        [f"{HOST} and {evil.name} both install lib/python*/site-packages/demo/__init__.py"],
    )


def test_a_data_file_in_bin_clashes_with_another_distributions_script(
    wheels: Path, tmp_path: Path
) -> None:
    tool = make_wheel(wheels, "tool", "1.0", {"tool-1.0.data/scripts/demo-run": b"#!/bin/sh\n"})
    other = make_wheel(wheels, "other", "1.0", {"other-1.0.data/data/bin/demo-run": b"rm\n"})
    assert_refused(
        index(wheels, tmp_path / "site"),
        tmp_path,
        [f"{other.name} and {tool.name} both install bin/demo-run"],
    )


@pytest.mark.parametrize(
    ("member", "problem"),
    [
        (
            "odd-1.0.data/purelib2/odd.py",
            "installs into the scheme 'purelib2'; installers know purelib, platlib, "
            "scripts, headers, data",
        ),
        ("odd-1.0.data/platlib", "installs into the scheme 'platlib'; installers know "
         "purelib, platlib, scripts, headers, data"),
        (
            "other-9.data/purelib/odd.py",
            "a .data directory that is not the wheel's own (odd-1.0.data); "
            "installers disagree where it goes",
        ),
    ],
)  # fmt: skip
def test_a_scheme_installers_do_not_know_is_refused(
    wheels: Path, tmp_path: Path, member: str, problem: str
) -> None:
    odd = make_wheel(wheels, "odd", "1.0", {member: b"x = 1\n"})
    assert_refused(
        index(wheels, tmp_path / "site"), tmp_path, [f"{odd.name}: member {member!r}: {problem}"]
    )


# --- one file per distribution, version, build and tag ----------------------------------------


def test_twin_spellings_of_one_wheel_are_refused(wheels: Path, tmp_path: Path) -> None:
    first = make_wheel(wheels, "Foo_Bar", "1.0", {"foo_bar/a.py": b"a = 1\n"})
    second = make_wheel(
        wheels, "foo.bar", "1.0.0", {"foo_bar/b.py": b"b = 2\n"}, component="foo.bar"
    )
    assert (first.name, second.name) == (
        "Foo_Bar-1.0-py3-none-linux_x86_64.whl",
        "foo.bar-1.0.0-py3-none-linux_x86_64.whl",
    )
    assert_refused(
        index(wheels, tmp_path / "site"),
        tmp_path,
        [
            f"{first.name} and {second.name} are both foo-bar 1.0 for py3-none-{PLATFORM}; "
            "an installer would pick either"
        ],
    )


def test_one_distribution_for_other_tags_or_builds_is_published(
    wheels: Path, tmp_path: Path
) -> None:
    built = make_wheel(wheels, "solo", "1.0", {"solo/a.py": b""})
    built.rename(wheels / "solo-1.0-1-py3-none-linux_x86_64.whl")
    make_wheel(wheels, "solo", "1.0", {"solo/a.py": b""})
    make_wheel(wheels, "solo", "1.0", {"solo/a.py": b""}, platform="linux_aarch64")
    result = index(wheels, tmp_path / "site")
    assert result.exit_code == 0, result.output
    assert len(json.loads((tmp_path / "site/simple/solo/index.json").read_text())["files"]) == 3


@pytest.mark.parametrize("tag", ["linux_x86_64+x", "linux_x86_64%2F", "any'", "linux_x86_64 "])
def test_a_tag_with_characters_outside_the_wheel_spec_is_refused(
    wheels: Path, tmp_path: Path, tag: str
) -> None:
    odd = make_wheel(wheels, "odd", "1.0", {"odd.py": b""}, platform=tag)
    assert_refused(
        index(wheels, tmp_path / "site"),
        tmp_path,
        [
            f"{odd.name}: the tag {tag!r} holds characters outside the wheel spec's "
            "(letters, digits and '_'; '.' between tags)"
        ],
    )


def test_a_metadata_naming_another_distribution_or_version_is_refused(
    wheels: Path, tmp_path: Path
) -> None:
    liar = make_wheel(wheels, "liar", "1.0", {"liar.py": b""})
    liar.rename(wheels / "honest-1.0-py3-none-linux_x86_64.whl")
    assert_refused(
        index(wheels, tmp_path / "site"),
        tmp_path,
        [
            "honest-1.0-py3-none-linux_x86_64.whl: METADATA says liar 1.0, the file name "
            "honest 1.0; they must agree"
        ],
    )


# --- every URL percent-encoded ---------------------------------------------------------------

LOCAL = "1.0+rocm7.2"


def test_a_local_version_is_percent_encoded_and_pip_installs_it(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    host_wheel(wheels, LOCAL)
    for arch in ARCHES:
        device_wheel(wheels, arch, LOCAL)
    out = tmp_path / "site"
    assert index(wheels, out).exit_code == 0
    encoded = "demo-1.0%2Brocm7.2-py3-none-linux_x86_64.whl"
    page = json.loads((out / "simple" / "demo" / "index.json").read_text())
    [entry] = page["files"]
    assert entry["url"] == f"../../files/{encoded}"
    assert entry["filename"] == f"demo-{LOCAL}-py3-none-linux_x86_64.whl"
    [link] = anchors(out / "simple" / "demo" / "index.html")
    assert link["href"] == f"../../files/{encoded}#sha256={entry['hashes']['sha256']}"
    # Every URL of every page: unreserved characters and %XX escapes only.
    urls = [a["href"] or "" for p in out.rglob("index.html") for a in anchors(p)]
    urls += [
        f["url"]
        for p in out.rglob("index.json")
        for f in json.loads(p.read_text()).get("files", [])
    ]
    assert len(urls) == 2 * 3 + 3
    assert all(re.fullmatch(r"(?:[A-Za-z0-9._~/#=-]|%[0-9A-F]{2})+", url) for url in urls), urls
    # pip follows the encoded URLs to the files and installs the host and one arch.
    server = Server(out, negotiate=True)
    threading.Thread(target=server.httpd.serve_forever, daemon=True).start()
    try:
        venv = tmp_path / "venv"
        python = fresh_venv(venv)
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-cache-dir",
             "--disable-pip-version-check", "--index-url", server.url, "demo[device-gfx942]"],
            check=True, env=CLIENT_ENV, capture_output=True,
        )  # fmt: skip
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
    assert installed(venv) == {
        "dists": [f"demo-{LOCAL}.dist-info", f"demo_device_gfx942-{LOCAL}.dist-info"],
        "kpacks": ["demo_gfx942.kpack"],
    }
    assert server.wheels_served() == [
        f"demo-{LOCAL}-py3-none-linux_x86_64.whl",
        f"demo_device_gfx942-{LOCAL}-py3-none-linux_x86_64.whl",
    ]


# --- bounded unpacking ------------------------------------------------------------------------


def test_max_unpacked_size_is_the_bound_of_every_wheel(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    big = make_wheel(wheels, "big", "1.0", {"big/data.bin": os.urandom(1000)})
    assert_refused(
        index(wheels, tmp_path / "site", "--max-unpacked-size", "512"),
        tmp_path,
        [f"{big}: member 'big/data.bin': declares 1,000 bytes; the wheel may unpack to 512"],
    )
    assert index(wheels, tmp_path / "site", "--max-unpacked-size", "2K").exit_code == 0


def test_a_member_declaring_a_huge_ratio_is_refused_before_any_read(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    bomb = make_wheel(wheels, "bomb", "1.0", {"bomb/zeros.bin": bytes(1000)})
    bomb.write_bytes(declare(bomb.read_bytes(), "bomb/zeros.bin", 1 << 30))
    info = zipfile.ZipFile(bomb).getinfo("bomb/zeros.bin")
    assert (info.file_size, info.compress_size) == (1 << 30, 1000)  # stored: 1000 bytes
    assert_refused(
        index(wheels, tmp_path / "site"),
        tmp_path,
        [
            f"{bomb}: member 'bomb/zeros.bin': declares 1,073,741,824 bytes from 1,000 "
            "compressed, more than 1100 times as many; no real member expands so much"
        ],
    )


def test_a_full_out_is_one_line_naming_it(wheels: Path, tmp_path: Path) -> None:
    """Out of room copying the wheels: the index's place is named, not a wheel."""
    make_wheel(wheels, "noise", "1.0", {"noise.bin": os.urandom(256 << 10)})
    with tmpfs(tmp_path / "full", "size=64k") as full:
        out = full / "site"
        result = index(wheels, out)
        assert result.exit_code == 1
        assert result.output.splitlines() == [
            f"error: {out}: cannot write the index: No space left on device"
        ]
        assert list(full.iterdir()) == []


# --- extras that must pass on to another split distribution ---------------------------------


def app_wheel(directory: Path, passes_on: Sequence[str] = ()) -> Path:
    """``app`` 2.0, split with one extra (device-gfx942, and device-all), requiring
    ``demo`` 1.0; ``passes_on``: the extras it passes on as ``demo[<extra>]``."""
    extras = ["device-gfx942", "device-all"]
    requires = [f'app-device-gfx942==2.0; extra == "{e}"' for e in extras]
    requires += [f'demo[{e}]==1.0; extra == "{e}"' for e in passes_on]
    make_wheel(
        directory, "app-device-gfx942", "2.0", {"app/.kpack/app_gfx942.kpack": b"app code"},
        ["Requires-Dist: app==2.0"],
    )  # fmt: skip
    return make_wheel(
        directory, "app", "2.0", {"app/__init__.py": b""},
        [*(f"Provides-Extra: {e}" for e in extras), "Requires-Dist: demo==1.0",
         *(f"Requires-Dist: {r}" for r in requires)],
    )  # fmt: skip


def test_an_extra_that_leaves_a_split_dependency_without_its_arch_is_refused(
    wheels: Path, tmp_path: Path
) -> None:
    app = app_wheel(wheels)
    chain = "installs demo 1.0 (app -> demo) without its device code for"
    rule = "each extra must require demo[<the same extra>] (gfxpack split passes them on when both are split in one run)"  # noqa: E501
    assert_refused(
        index(wheels, tmp_path / "site"),
        tmp_path,
        [f"{app.name}: installing app[device-all,device-gfx942] {chain} all, gfx942; {rule}"],
    )
    # Passing on device-gfx942 alone still leaves device-all's chain without every arch.
    for wheel in wheels.glob("app*"):
        wheel.unlink()
    app = app_wheel(wheels, ["device-gfx942"])
    assert_refused(
        index(wheels, tmp_path / "site"),
        tmp_path,
        [f"{app.name}: installing app[device-all] {chain} all; {rule}"],
    )
    for wheel in wheels.glob("app*"):
        wheel.unlink()
    app_wheel(wheels, ["device-gfx942", "device-all"])
    result = index(wheels, tmp_path / "site")
    assert result.exit_code == 0, result.output


# --- requirements the index lacks, and the wheels that provide them --------------------------


def needy_host(directory: Path) -> Path:
    """The demo host, requiring ``helper>=1`` (which requires ``leaf``)."""
    path = host_wheel(directory)
    path.unlink()
    extras = [f"device-{arch}" for arch in ARCHES] + ["device-all"]
    requires = [f'demo-device-{a}==1.0; extra == "device-{a}"' for a in ARCHES] + [
        f'demo-device-{a}==1.0; extra == "device-all"' for a in ARCHES
    ]
    return make_wheel(
        directory, "demo", "1.0", {"demo/__init__.py": b"", "demo/libdemo.so": b"\x7fELF"},
        [*(f"Provides-Extra: {e}" for e in extras), "Requires-Dist: helper>=1",
         'Requires-Dist: sphinx; extra == "docs"', *(f"Requires-Dist: {r}" for r in requires)],
    )  # fmt: skip


def test_a_requirement_nothing_provides_is_a_warning_or_with_self_contained_an_error(
    wheels: Path, tmp_path: Path
) -> None:
    host = needy_host(wheels)
    out = tmp_path / "site"
    missing = f"{host.name}: requires helper>=1, which nothing in the index provides"
    refused = index(wheels, out, "--self-contained")
    assert_refused(refused, tmp_path, [f"{missing} (--self-contained)"])
    result = index(wheels, out)
    assert result.exit_code == 0, result.output
    # One warning: sphinx is the docs extra's, not an install's.
    assert [line for line in result.stderr.splitlines() if line.startswith("warning")] == [
        f"warning: {missing}; pip install --index-url fails without it "
        "(--mirror-deps DIR publishes it from a directory of wheels)"
    ]
    assert json.loads(index(wheels, tmp_path / "again", "--json").stdout)["unresolved"] == [missing]


def test_mirror_deps_publishes_what_the_split_wheels_require(wheels: Path, tmp_path: Path) -> None:
    needy_host(wheels)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    make_wheel(downloads, "helper", "0.9", {"helper_old.py": b""})  # too old: not taken
    make_wheel(downloads, "helper", "1.5", {"helper.py": b""}, ["Requires-Dist: leaf"])
    make_wheel(downloads, "leaf", "3.0", {"leaf.py": b""})
    make_wheel(downloads, "unrelated", "1.0", {"unrelated.py": b""})
    out = tmp_path / "site"
    result = index(wheels, out, "--mirror-deps", str(downloads), "--self-contained", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["unresolved"] == []
    assert sorted(report["projects"]) == [
        "demo", "demo-device-gfx1100", "demo-device-gfx942", "helper", "leaf"
    ]  # fmt: skip
    assert report["projects"]["helper"] == ["helper-1.5-py3-none-linux_x86_64.whl"]
    assert (out / "files" / "leaf-3.0-py3-none-linux_x86_64.whl").is_file()


# --- an index that grows ------------------------------------------------------------------------


def test_an_existing_index_grows_and_keeps_every_wheel_published(
    wheels: Path, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    assert index(wheels, out).exit_code == 0
    first = {p.name: p.read_bytes() for p in (out / "files").iterdir()}
    newer = tmp_path / "newer"
    newer.mkdir()
    host_wheel(newer, "1.1")
    for arch in ARCHES:
        device_wheel(newer, arch, "1.1")
    result = index(newer, out, "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["added"]) == 3
    # Every earlier file kept as it was, the pages listing both releases.
    for name, data in first.items():
        assert (out / "files" / name).read_bytes() == data
    page = json.loads((out / "simple" / "demo" / "index.json").read_text())
    assert page["versions"] == ["1.0", "1.1"] and len(page["files"]) == 2
    assert len(anchors(out / "simple" / "demo" / "index.html")) == 2
    # Publishing the same files again adds nothing; another file under a published
    # name is refused, and the index is left as it was.
    again = index(newer, out, "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["added"] == []
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    changed = tmp_path / "changed"
    changed.mkdir()
    host_wheel(changed, "1.1").write_bytes(b"other bytes")
    result = index(changed, out)
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"error: {changed / 'demo-1.1-py3-none-linux_x86_64.whl'}: the index has another file "
        "of this name; a published file never changes (give it another version or build tag)"
    ]
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    # The gate runs over the whole: a 1.2 host whose device wheels are missing is refused.
    lacking = tmp_path / "lacking"
    lacking.mkdir()
    host_wheel(lacking, "1.2")
    result = index(lacking, out)
    assert result.exit_code == 1 and "requires demo-device-gfx942==1.2" in result.output


def test_the_index_says_how_to_install_one_gpu_and_what_a_bare_install_gets(
    wheels: Path, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    result = index(wheels, out)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1:] == [
        "install for one GPU (a bare install gets the host code alone, no device code):",
        "  pip install --index-url <URL>/simple 'demo[device-<arch>]'  (arch: gfx942, gfx1100, "
        "or all)",
    ]
    page = (out / "simple" / "demo" / "index.html").read_text()
    assert "A bare &#x27;pip install demo&#x27; installs the host code alone" in page
    described = json.loads((out / "simple" / "demo" / "index.json").read_text())
    assert "pip install 'demo[device-<arch>]'" in described["_description"]
    assert "_description" not in json.loads(
        (out / "simple" / "demo-device-gfx942" / "index.json").read_text()
    )


def test_the_extra_index_url_trap_and_the_safe_uv_command(wheels: Path, tmp_path: Path) -> None:
    """What the guide says: beside an index with a newer fat release (PyPI), pip's
    --extra-index-url takes the fat wheel and drops the extra with a warning; uv with
    the split index as its extra index (asked first, first-index strategy) does not."""
    uv = pytest.importorskip("uv").find_uv_bin()
    fat = tmp_path / "fat"
    fat.mkdir()
    make_wheel(fat, "demo", "1.1", {"demo/__init__.py": b"", "demo/libdemo.so": b"\x7fELF fat"})
    servers = []
    for name, directory in (("split", wheels), ("pypi", fat)):
        assert index(directory, tmp_path / f"site-{name}").exit_code == 0
        servers.append(Server(tmp_path / f"site-{name}", negotiate=True))
        threading.Thread(target=servers[-1].httpd.serve_forever, daemon=True).start()
    split, pypi = (server.url for server in servers)
    try:
        pip_venv = tmp_path / "pip-venv"
        python = fresh_venv(pip_venv)
        trapped = subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-cache-dir",
             "--disable-pip-version-check", "--index-url", pypi, "--extra-index-url", split,
             "demo[device-gfx942]"],
            check=True, env=CLIENT_ENV, capture_output=True, text=True,
        )  # fmt: skip
        assert installed(pip_venv)["dists"] == ["demo-1.1.dist-info"]
        assert "demo 1.1 does not provide the extra 'device-gfx942'" in trapped.stderr
        uv_venv = tmp_path / "uv-venv"
        python = fresh_venv(uv_venv)
        subprocess.run(
            [uv, "pip", "install", "--no-cache", "--python", str(python), "--index-url", pypi,
             "--extra-index-url", split, "demo[device-gfx942]"],
            check=True, env=CLIENT_ENV, capture_output=True,
        )  # fmt: skip
        assert installed(uv_venv) == ONE_ARCH
    finally:
        for server in servers:
            server.httpd.shutdown()
            server.httpd.server_close()
