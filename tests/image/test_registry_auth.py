"""Registries that ask for credentials, Debian's docker-registry the referee: Basic
(htpasswd) and Bearer (a token server of the test signing RS256 JWTs); credentials
from --authfile or where skopeo looks; none, or wrong ones, as one error; the
password in no output."""

from __future__ import annotations

import base64
import json
import secrets
import ssl
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gfxpack.cli import cli
from tests.image.conftest import BASE_TAG, PASSWORD, USER, Registry, need, serve_registry

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def no_stored_credentials(tmp_path, monkeypatch) -> None:
    """Nothing of the machine's own: HOME empty, no REGISTRY_AUTH_FILE or XDG_RUNTIME_DIR."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("REGISTRY_AUTH_FILE", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)


def auth_file(path: Path, host: str, user: str, password: str, key: str = "{host}") -> Path:
    encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"auths": {key.format(host=host): {"auth": encoded}}}))
    return path


def image(*args: str) -> Result:
    return CliRunner().invoke(cli, ["image", *args])


def build(example_repo: Path, debian_base: Path, out: Path, *extra: str) -> Result:
    return image(
        *("--repo", str(example_repo), "--base", f"oci:{debian_base}:{BASE_TAG}"),
        *("--out", str(out), "--client", "apt", "amdrocm-core8.2-gfx942", *extra),
    )


def one_error(result: Result) -> str:
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (result.stderr, result.exception)
    assert_no_secret(result)
    return lines[0]


def assert_no_secret(result: Result, password: str = PASSWORD) -> None:
    said = result.stdout + result.stderr
    assert password not in said
    assert base64.b64encode(f"{USER}:{password}".encode()).decode() not in said


def inspect(registry: Registry, name: str) -> dict:
    need("skopeo")
    return json.loads(
        subprocess.run(
            ["skopeo", "inspect", "--creds", f"{USER}:{PASSWORD}", "--tls-verify=false",
             f"docker://{registry.url}/{name}"],
            capture_output=True, check=True,
        ).stdout
    )  # fmt: skip


def test_a_push_with_the_authfiles_credentials_lands(
    basic_registry, example_repo, debian_base, tmp_path
):
    authfile = auth_file(tmp_path / "auth.json", basic_registry.url, USER, PASSWORD)
    target = f"{basic_registry.url}/rocm/amdrocm"
    result = build(example_repo, debian_base, tmp_path / "out", "--push", target,
                   "--authfile", str(authfile), "--json")  # fmt: skip
    assert result.exit_code == 0, result.output + result.stderr
    assert_no_secret(result)
    report = json.loads(result.stdout)
    assert report["pushed"]["tags"] == [f"{target}:8.2.0-gfx942"]
    assert (
        inspect(basic_registry, "rocm/amdrocm:8.2.0-gfx942")["Digest"]
        == (report["images"][0]["manifest"])
    )


@pytest.mark.parametrize(
    "where, key",
    [
        ("home/.docker/config.json", "https://{host}/v1/"),
        ("home/.config/containers/auth.json", "{host}"),
        ("run/containers/auth.json", "http://{host}"),
    ],
    ids=["docker-config", "containers-auth", "xdg-runtime-dir"],
)
def test_a_registry_base_is_pulled_with_stored_credentials(
    where, key, basic_registry, example_repo, debian_base, tmp_path, monkeypatch
):
    need("skopeo")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    base = f"docker://{basic_registry.url}/bases/debian:12"
    subprocess.run(
        ["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--dest-creds",
         f"{USER}:{PASSWORD}", f"oci:{debian_base}:{BASE_TAG}", base],
        check=True, capture_output=True,
    )  # fmt: skip
    auth_file(tmp_path / where, basic_registry.url, USER, PASSWORD, key)
    result = image(
        *("--repo", str(example_repo), "--base", base, "--out", str(tmp_path / "out")),
        *("--client", "apt", "--json", "amdrocm-core8.2-gfx942"),
    )
    assert result.exit_code == 0, result.output + result.stderr
    assert_no_secret(result)


def test_no_credentials_is_one_error_naming_where_they_were_looked_for(
    basic_registry, example_repo, debian_base, tmp_path, monkeypatch
):
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(tmp_path / "nowhere.json"))
    result = build(example_repo, debian_base, tmp_path / "out",
                   "--push", f"{basic_registry.url}/rocm/amdrocm")  # fmt: skip
    home = tmp_path / "home"
    assert one_error(result) == (
        f"error: registry {basic_registry.url} asks for credentials and none were found for "
        f"it (looked in {tmp_path / 'nowhere.json'}, {home / '.config/containers/auth.json'}, "
        f"{home / '.docker/config.json'}): log in with `skopeo login {basic_registry.url}` "
        "or give --authfile"
    )
    assert not (tmp_path / "out").exists()


def test_a_wrong_password_is_one_error_naming_the_file(
    basic_registry, example_repo, debian_base, tmp_path
):
    authfile = auth_file(tmp_path / "auth.json", basic_registry.url, USER, "not-" + PASSWORD)
    target = f"{basic_registry.url}/rocm/amdrocm"
    result = build(example_repo, debian_base, tmp_path / "out",
                   "--push", target, "--authfile", str(authfile))  # fmt: skip
    assert one_error(result) == (
        f"error: registry {basic_registry.url} refused the credentials for "
        f"{basic_registry.url} from {authfile}"
    )
    assert_no_secret(result, "not-" + PASSWORD)


def test_a_malformed_authfile_is_one_error_naming_it(
    basic_registry, example_repo, debian_base, tmp_path
):
    authfile = tmp_path / "auth.json"
    authfile.write_text(json.dumps({"auths": {basic_registry.url: {"auth": PASSWORD}}}))
    target = f"{basic_registry.url}/rocm/amdrocm"
    result = build(example_repo, debian_base, tmp_path / "out",
                   "--push", target, "--authfile", str(authfile))  # fmt: skip
    assert one_error(result) == (
        f'error: registry auth file {authfile}: "auths"[\'{basic_registry.url}\']: "auth" is '
        'not base64 of UTF-8 text; expected {"auths": {"HOST[:PORT]": {"auth": '
        'base64("user:password")}}}'
    )


ISSUER, SERVICE = "gfxpack-test-issuer", "gfxpack-test-registry"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass
class TokenServer:
    """A docker token server: Basic credentials checked, RS256 JWTs signed by openssl
    with the certificate in the header's x5c; every request it answered, recorded."""

    key: Path
    cert_der: bytes
    requests: list[dict[str, str]] = field(default_factory=list)
    url: str = ""

    def token(self, user: str, scope: str) -> str:
        kind, _, rest = scope.partition(":")
        name, _, actions = rest.rpartition(":")
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(self.cert_der).decode()]}
        claims = {
            "iss": ISSUER, "sub": user, "aud": SERVICE, "exp": now + 300, "nbf": now - 10,
            "iat": now, "jti": secrets.token_hex(8),
            "access": [{"type": kind, "name": name, "actions": actions.split(",")}] if user else [],
        }  # fmt: skip
        signed = ".".join(b64url(json.dumps(x).encode()) for x in (header, claims))
        signature = subprocess.run(
            ["openssl", "dgst", "-sha256", "-sign", str(self.key)],
            input=signed.encode(), capture_output=True, check=True,
        ).stdout  # fmt: skip
        return f"{signed}.{b64url(signature)}"


def serve_tokens(server: TokenServer) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # (http.server's name)
            query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
            given = self.headers.get("Authorization", "")
            server.requests.append({**query, "authorization": given})
            user = ""
            if given:
                user, _, password = (
                    base64.b64decode(given.removeprefix("Basic ")).decode().partition(":")
                )
                if (user, password) != (USER, PASSWORD):
                    self.send_error(401)
                    return
            body = json.dumps({"token": server.token(user, query.get("scope", ""))}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.url = f"http://127.0.0.1:{http.server_address[1]}/token"
    threading.Thread(target=http.serve_forever, daemon=True).start()
    return http


@pytest.fixture
def token_registry(tmp_path) -> Iterator[tuple[Registry, TokenServer]]:
    """docker-registry with ``auth: token`` trusting the test's token server."""
    need("openssl")
    key, cert = tmp_path / "token.key", tmp_path / "token.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "2", "-subj", "/CN=gfxpack test token issuer"],
        capture_output=True, check=True,
    )  # fmt: skip
    server = TokenServer(key, ssl.PEM_cert_to_DER_cert(cert.read_text()))
    http = serve_tokens(server)
    auth = (
        f"auth:\n  token:\n    realm: {server.url}\n    service: {SERVICE}\n"
        f"    issuer: {ISSUER}\n    rootcertbundle: {cert}\n"
    )
    try:
        for registry in serve_registry(tmp_path, auth):
            yield registry, server
    finally:
        http.shutdown()


def test_a_push_to_a_token_registry_fetches_one_token(
    token_registry, example_repo, debian_base, tmp_path
):
    registry, tokens = token_registry
    authfile = auth_file(tmp_path / "auth.json", registry.url, USER, PASSWORD)
    target = f"{registry.url}/rocm/amdrocm"
    result = build(example_repo, debian_base, tmp_path / "out", "--push", target,
                   "--authfile", str(authfile), "--json")  # fmt: skip
    assert result.exit_code == 0, result.output + result.stderr
    assert_no_secret(result)
    # One token for the whole push (five blobs and a manifest), of the push scope.
    assert [(x["scope"], x["service"]) for x in tokens.requests] == [
        ("repository:rocm/amdrocm:pull,push", SERVICE)
    ]
    assert tokens.requests[0]["authorization"].startswith("Basic ")
    # skopeo, answering the same challenge with the same credentials, sees the image.
    need("skopeo")
    inspected = subprocess.run(
        ["skopeo", "inspect", "--creds", f"{USER}:{PASSWORD}", "--tls-verify=false",
         f"docker://{target}:8.2.0-gfx942"], capture_output=True, check=True,
    )  # fmt: skip
    assert (
        json.loads(inspected.stdout)["Digest"] == json.loads(result.stdout)["images"][0]["manifest"]
    )
    # A base pulled from it asks for a pull token.
    result = image(
        *("--repo", str(example_repo), "--base", f"docker://{target}:8.2.0-gfx942"),
        *("--out", str(tmp_path / "again"), "--client", "apt", "--authfile", str(authfile)),
        "--stand-ins",
        "amdrocm-core8.2-gfx950",
    )
    assert result.exit_code == 0, result.output + result.stderr
    assert tokens.requests[-1]["scope"] == "repository:rocm/amdrocm:pull"


def test_a_token_registry_without_credentials_is_one_error(
    token_registry, example_repo, debian_base, tmp_path
):
    registry, tokens = token_registry
    result = build(example_repo, debian_base, tmp_path / "out", "--push", f"{registry.url}/rocm/x")
    assert one_error(result).startswith(
        f"error: registry {registry.url} asks for credentials and none were found for it"
    )
    assert tokens.requests and tokens.requests[0]["authorization"] == ""  # asked anonymously


def test_a_token_realm_refusing_the_password_is_one_error(
    token_registry, example_repo, debian_base, tmp_path
):
    registry, tokens = token_registry
    authfile = auth_file(tmp_path / "auth.json", registry.url, USER, "not-" + PASSWORD)
    result = build(example_repo, debian_base, tmp_path / "out", "--push", f"{registry.url}/rocm/x",
                   "--authfile", str(authfile))  # fmt: skip
    assert one_error(result) == (
        f"error: registry {registry.url} refused the credentials for {registry.url} from "
        f"{authfile} (token realm {tokens.url})"
    )
    assert_no_secret(result, "not-" + PASSWORD)
