"""Registry credentials found as skopeo finds them, malformed auth files as one error,
a token realm answering garbage as one error naming it, and the Authorization kept
off a redirect to another host; small HTTP servers of the test stand in for the
registry (tests/image/test_registry_auth.py has docker-registry as the referee)."""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gfxpack.image import ImageError
from gfxpack.image.auth import AuthFiles, Authorizer, auth_files, find_credentials
from gfxpack.image.registry import Reference, has_blob

DIGEST = "sha256:" + "0" * 64


def encoded(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def write(path: Path, auths: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"auths": auths}))
    return path


def test_the_files_are_looked_for_in_skopeos_order(tmp_path):
    env = {"HOME": "/home/u", "REGISTRY_AUTH_FILE": "/r.json", "XDG_RUNTIME_DIR": "/run/u"}
    assert auth_files(tmp_path / "given.json", env) == (
        tmp_path / "given.json",
        Path("/r.json"),
        Path("/run/u/containers/auth.json"),
        Path("/home/u/.config/containers/auth.json"),
        Path("/home/u/.docker/config.json"),
    )
    assert auth_files(None, {"HOME": "/home/u"}) == (
        Path("/home/u/.config/containers/auth.json"),
        Path("/home/u/.docker/config.json"),
    )


@pytest.mark.parametrize(
    "key",
    [
        "reg.example:5000",
        "https://reg.example:5000",
        "reg.example:5000/v1/",
        "http://reg.example:5000/v2/",
    ],
)
def test_a_key_in_dockers_forms_is_the_registrys(key, tmp_path):
    path = write(tmp_path / "auth.json", {key: {"auth": encoded("u", "p")}})
    found = find_credentials((path,), "reg.example:5000", "rocm/x", False)
    assert found is not None and (found.user, found.password, found.source) == ("u", "p", path)
    assert "p" not in repr(found).replace(str(path), "").replace("Credentials", "")


def test_the_first_file_holding_the_registry_wins_and_a_repository_key_before_its_hosts(tmp_path):
    other = write(tmp_path / "other.json", {"elsewhere.example": {"auth": encoded("o", "o")}})
    empty = write(tmp_path / "empty.json", {"reg.example": {}})  # docker's credsStore placeholder
    second = write(
        tmp_path / "second.json",
        {
            "reg.example": {"auth": encoded("host", "h")},
            "reg.example/rocm": {"auth": encoded("namespace", "n")},
        },
    )
    third = write(tmp_path / "third.json", {"reg.example": {"auth": encoded("late", "l")}})
    files = (tmp_path / "missing.json", other, empty, second, third)
    assert find_credentials(files, "reg.example", "rocm/x", False).user == "namespace"
    assert find_credentials(files, "reg.example", "base/debian", False).user == "host"
    assert find_credentials(files, "reg.example:5000", "rocm/x", False) is None


def test_a_missing_authfile_the_user_named_is_one_error(tmp_path):
    with pytest.raises(ImageError) as raised:
        find_credentials((tmp_path / "auth.json",), "reg.example", "rocm/x", True)
    assert str(raised.value) == (
        f"cannot read the registry auth file {tmp_path / 'auth.json'}: file not found"
    )


EXPECTED = '; expected {"auths": {"HOST[:PORT]": {"auth": base64("user:password")}}}'


@pytest.mark.parametrize(
    "text, problem",
    [
        ("{", "not JSON"),
        ("[]", "not a JSON object"),
        ('{"auths": []}', '"auths" is not an object'),
        (
            '{"auths": {"reg.example": {"user": "u"}}}',
            '"auths"[\'reg.example\'] has no "auth" string',
        ),
        (
            '{"auths": {"reg.example": {"auth": "s3cret!"}}}',
            '"auths"[\'reg.example\']: "auth" is not base64 of UTF-8 text',
        ),
        (
            json.dumps({"auths": {"reg.example": {"auth": base64.b64encode(b"s3cret").decode()}}}),
            '"auths"[\'reg.example\']: "auth" is not base64 of "user:password"',
        ),
    ],
    ids=["not-json", "not-object", "auths-not-object", "no-auth", "not-base64", "no-colon"],
)
def test_a_malformed_file_is_one_error_naming_it_and_no_secret(text, problem, tmp_path):
    path = tmp_path / "auth.json"
    path.write_text(text)
    with pytest.raises(ImageError) as raised:
        find_credentials((path,), "reg.example", "rocm/x", False)
    assert str(raised.value) == f"registry auth file {path}: {problem}{EXPECTED}"
    assert "s3cret" not in str(raised.value)


def test_a_fifo_is_never_opened(tmp_path):
    fifo = tmp_path / "auth.json"
    os.mkfifo(fifo)
    with pytest.raises(ImageError) as raised:
        find_credentials((fifo,), "reg.example", "rocm/x", False)
    assert str(raised.value).startswith(f"cannot read the registry auth file {fifo}: ")
    assert "FIFO" in str(raised.value)


Handle = Callable[[BaseHTTPRequestHandler], None]


@contextmanager
def serving(handle: Handle) -> Iterator[int]:
    """An HTTP server on 127.0.0.1 answering every request with ``handle``; its port."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # (http.server's names)
            handle(self)

        do_HEAD = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def answer(
    handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes = b""
) -> None:
    handler.send_response(status)
    for name, value in {**headers, "Content-Length": str(len(body))}.items():
        handler.send_header(name, value)
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)


@pytest.mark.parametrize("body", [b"<html>busy</html>", b'{"token": ""}', b"[]", b"x" * (1 << 21)])
def test_a_token_realm_answering_garbage_is_one_error_naming_it(body):
    with serving(lambda h: answer(h, 200, {}, body)) as port:
        realm = f"http://127.0.0.1:{port}/token"
        challenge = f'Bearer realm="{realm}",service="s",scope="repository:rocm/x:pull"'
        with pytest.raises(ImageError) as raised:
            Authorizer("h", "rocm/x", "pull", ()).answer(challenge, "http://127.0.0.1/v2/")
    assert str(raised.value) == (
        f'token realm {realm} answered no token (expected a JSON object with "token" or '
        '"access_token")'
    )


def test_an_unreachable_token_realm_is_one_error_naming_it():
    challenge = 'Bearer realm="http://127.0.0.1:9/token",service="s"'
    with pytest.raises(ImageError) as raised:
        Authorizer("h", "rocm/x", "pull", ()).answer(challenge, "http://127.0.0.1/v2/")
    assert str(raised.value).startswith("token realm http://127.0.0.1:9/token unreachable: ")


def test_the_authorization_follows_a_redirect_to_the_same_host_only(tmp_path):
    """A blob HEAD answered by a redirect: to the same host the Authorization goes
    along, to a storage host ('localhost', another origin) it does not."""
    seen: dict[str, str | None] = {}

    def storage(h: BaseHTTPRequestHandler) -> None:
        seen["storage"] = h.headers.get("Authorization")
        answer(h, 200, {})

    with serving(storage) as storage_port:

        def registry(h: BaseHTTPRequestHandler) -> None:
            given = h.headers.get("Authorization")
            if given != "Basic " + encoded("u", "p"):
                answer(h, 401, {"WWW-Authenticate": 'Basic realm="test"'})
            elif h.path.startswith("/v2/rocm/x/blobs/"):
                answer(h, 307, {"Location": "/moved"})
            else:
                seen["moved"] = given
                answer(h, 307, {"Location": f"http://localhost:{storage_port}/blob"})

        with serving(registry) as port:
            reference = Reference(f"127.0.0.1:{port}", "rocm/x")
            path = write(tmp_path / "auth.json", {reference.host: {"auth": encoded("u", "p")}})
            auth = AuthFiles((path,), True).authorizer(reference.host, "rocm/x", "pull")
            assert has_blob(reference, auth, DIGEST)
    assert seen == {"moved": "Basic " + encoded("u", "p"), "storage": None}
