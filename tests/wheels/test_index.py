"""gfxpack index: a static PEP 503 / PEP 691 index that pip and uv install one arch from,
and that refuses to publish a set of wheels whose extras, versions or paths disagree."""

from __future__ import annotations

import base64
import hashlib
import html.parser
import json
import os
import posixpath
import subprocess
import sys
import threading
import zipfile
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from click.testing import CliRunner, Result

from gfxpack.cli import cli
from gfxpack.wheels.index import JSON_TYPE

PLATFORM = "linux_x86_64"
ARCHES = ("gfx942", "gfx1100")
pytestmark = pytest.mark.skipif(
    os.uname().machine != "x86_64", reason="the wheels are tagged linux_x86_64"
)


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(
    directory: Path,
    name: str,
    version: str,
    files: dict[str, bytes],
    metadata: Sequence[str] = (),
    platform: str = PLATFORM,
) -> Path:
    """A wheel as the binary distribution format has it: members, then the .dist-info
    with METADATA, WHEEL and a RECORD of urlsafe-base64 sha256 hashes."""
    component = name.replace("-", "_")
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


def index(wheels: Path, out: Path) -> Result:
    return CliRunner().invoke(cli, ["index", "--wheels", str(wheels), "--out", str(out)])


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
        [f"{HOST} and {other.name} both install demo/libdemo.so"],
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
        f"error: {out}: already exists; give --force to replace it"
    ]
    assert (out / "mine").read_text() == "kept"
    forced = CliRunner().invoke(
        cli, ["index", "--wheels", str(wheels), "--out", str(out), "--force"]
    )
    assert forced.exit_code == 0, forced.output
    assert sorted(p.name for p in out.iterdir()) == ["files", "simple"]
