"""Registry credentials, found where skopeo, podman and docker keep them, and the
answer to a registry's challenge (distribution-spec, and the docker token spec for
``Bearer``).

Credentials are looked for in this order, the first file with an entry for the
registry winning: ``--authfile FILE``; ``$REGISTRY_AUTH_FILE``;
``$XDG_RUNTIME_DIR/containers/auth.json``; ``~/.config/containers/auth.json``;
``~/.docker/config.json``. Each is ``{"auths": {"HOST[:PORT]": {"auth":
base64("user:password")}}}``; a key may also be written ``https://HOST`` or
``HOST/v1/`` (docker's forms), or name a repository (``HOST/NAMESPACE``, the
longest match wins). A file is read only when a registry asks for credentials, by
the small-file reader (never a FIFO); a malformed one is one :class:`ImageError`
naming it. No message holds a password or a token.

On a 401 the ``WWW-Authenticate`` challenge says how to answer: ``Basic`` is
answered with the credentials; ``Bearer realm=...,service=...,scope=...`` by a GET
of the realm (with the credentials when there are some, anonymous otherwise) for a
token of the run's scope (``repository:NAME:pull`` to pull, ``pull,push`` to push),
kept for the run's later requests. Credentials go only over HTTPS or to a loopback
host.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfxpack.image import ImageError
from gfxpack.regular_files import UnreadableFile, read_small_file

AUTH_FILE_MAX = 1 << 20
TOKEN_MAX = 1 << 20
# Shared with the registry client (registry.py), which talks to the same hosts.
TIMEOUT = 60
# A loopback host, as a URL's hostname spells it or, for IPv6, as HOST[:PORT] does.
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
FORMAT = '{"auths": {"HOST[:PORT]": {"auth": base64("user:password")}}}'
# One auth-param of a challenge: name=token or name="quoted string" (RFC 9110 11.2).
PARAM = re.compile(r'\s*([A-Za-z0-9_.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*(?:,|$)')


def auth_files(authfile: Path | None, env: Mapping[str, str]) -> tuple[Path, ...]:
    """Where credentials are looked for, in order."""
    home = Path(env.get("HOME") or Path.home())
    found = [authfile] if authfile is not None else []
    if env.get("REGISTRY_AUTH_FILE"):
        found.append(Path(env["REGISTRY_AUTH_FILE"]))
    if env.get("XDG_RUNTIME_DIR"):
        found.append(Path(env["XDG_RUNTIME_DIR"], "containers/auth.json"))
    found += [home / ".config/containers/auth.json", home / ".docker/config.json"]
    return tuple(found)


def _key(text: str) -> str:
    """An auths key as HOST[:PORT][/PATH], without docker's scheme and /v1/ or /v2/.

    >>> _key("https://index.docker.io/v1/"), _key("ghcr.io/example"), _key("h:5000")
    ('index.docker.io', 'ghcr.io/example', 'h:5000')
    """
    text = re.sub(r"^[a-z]+://", "", text)
    return re.sub(r"/v[12]/?$", "", text).rstrip("/")


@dataclass(frozen=True, slots=True)
class Credentials:
    """A user and password, and the file they came from; the password is never shown."""

    user: str
    password: str
    source: Path

    def __repr__(self) -> str:
        return f"Credentials(user={self.user!r}, source={str(self.source)!r})"

    def basic(self) -> str:
        pair = f"{self.user}:{self.password}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")


def find_credentials(
    files: tuple[Path, ...], host: str, name: str, given: bool
) -> Credentials | None:
    """The credentials for ``host``'s repository ``name`` from the first of ``files``
    holding an entry for it; None when none does. A missing file is skipped, but for
    the first one when ``given`` (the --authfile the user named)."""
    for index, path in enumerate(files):
        try:
            data = read_small_file(path, AUTH_FILE_MAX, "registry auth file")
        except UnreadableFile as e:
            if e.missing and not (given and index == 0):
                continue
            raise ImageError(f"cannot read the registry auth file {e}") from None
        entry = _entry(_auths(data, path), host, name)
        if entry is not None:
            return _decoded(entry, path)
    return None


def _malformed(path: Path, problem: str) -> ImageError:
    return ImageError(f"registry auth file {path}: {problem}; expected {FORMAT}")


def _auths(data: bytes, path: Path) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, ValueError):
        raise _malformed(path, "not JSON") from None
    if not isinstance(document, dict):
        raise _malformed(path, "not a JSON object")
    auths = document.get("auths", {})
    if not isinstance(auths, dict):
        raise _malformed(path, '"auths" is not an object')
    return auths


def _entry(auths: dict[str, Any], host: str, name: str) -> tuple[str, Any] | None:
    """The most specific entry for ``host/name``: a repository key before its host's."""
    wanted = f"{host}/{name}"
    matches = [
        (len(_key(key)), key, entry)
        for key, entry in auths.items()
        if wanted == _key(key) or wanted.startswith(_key(key) + "/")
        if entry != {}  # docker's placeholder when a credential helper holds them
    ]
    return max(matches)[1:] if matches else None


def _decoded(entry: tuple[str, Any], path: Path) -> Credentials:
    key, value = entry
    where = f'"auths"[{key!r}]'
    if not isinstance(value, dict) or not isinstance(value.get("auth"), str):
        raise _malformed(path, f'{where} has no "auth" string')
    try:
        user, colon, password = (
            base64.b64decode(value["auth"], validate=True).decode().partition(":")
        )
    except (binascii.Error, UnicodeDecodeError):
        raise _malformed(path, f'{where}: "auth" is not base64 of UTF-8 text') from None
    if not colon or not user:
        raise _malformed(path, f'{where}: "auth" is not base64 of "user:password"')
    return Credentials(user, password, path)


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """The scheme and parameters of a ``WWW-Authenticate`` header.

    >>> parse_challenge('Bearer realm="https://a/token",service="reg",scope="x:y:pull"')
    ('bearer', {'realm': 'https://a/token', 'service': 'reg', 'scope': 'x:y:pull'})
    """
    scheme, _, rest = header.strip().partition(" ")
    params: dict[str, str] = {}
    position = 0
    while position < len(rest) and (match := PARAM.match(rest, position)):
        quoted, plain = match.group(2), match.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else plain
        params[match.group(1).lower()] = value
        position = match.end()
    return scheme.lower(), params


def secure(url: str) -> bool:
    """Whether credentials may go to ``url``: HTTPS, or plain HTTP to a loopback host."""
    parts = urllib.parse.urlsplit(url)
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK)


class CredentialsRefused(ImageError):
    """A token realm answered 401 to the credentials (the caller names them)."""


def fetch_token(
    realm: str, params: dict[str, str], scope: str, credentials: Credentials | None
) -> str:
    """A token from the realm of a ``Bearer`` challenge, for ``scope``; one error naming
    the realm when it is unreachable, refuses, or answers anything but a token."""
    parts = urllib.parse.urlsplit(realm)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ImageError(f"token realm {realm!r}: not an HTTP or HTTPS URL")
    query = {"scope": scope, **({"service": params["service"]} if "service" in params else {})}
    separator = "&" if parts.query else "?"
    url = realm + separator + urllib.parse.urlencode(sorted(query.items()))
    headers = {}
    if credentials is not None:
        if not secure(realm):
            raise ImageError(
                f"token realm {realm}: not HTTPS, and gfxpack sends credentials only over "
                "HTTPS or to a loopback host"
            )
        headers["Authorization"] = credentials.basic()
    request = urllib.request.Request(url, headers=headers)
    try:
        with NOT_FOLLOWING.open(request, timeout=TIMEOUT) as response:
            data = response.read(TOKEN_MAX + 1)
    except urllib.error.HTTPError as e:
        if e.code == 401 and credentials is not None:
            raise CredentialsRefused(realm) from None
        raise ImageError(f"token realm {realm} refused the request: HTTP {e.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise ImageError(f"token realm {realm} unreachable: {reason}") from None
    try:
        answer = json.loads(data) if len(data) <= TOKEN_MAX else None
    except (UnicodeDecodeError, ValueError):
        answer = None
    token = answer.get("token") or answer.get("access_token") if isinstance(answer, dict) else None
    if not isinstance(token, str) or not token or not token.isascii() or not token.isprintable():
        raise ImageError(
            f"token realm {realm} answered no token (expected a JSON object with "
            '"token" or "access_token")'
        )
    return token


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer to read, not to follow: credentials stay with the realm
    they were given to, and a redirected PUT or POST is not sent elsewhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


NOT_FOLLOWING = urllib.request.build_opener(NoRedirect)


@dataclass
class Authorizer:
    """The answers to one run's challenges from one registry repository: credentials
    looked up once, a token fetched once for the run's scope and kept."""

    host: str
    name: str
    actions: str  # "pull", or "pull,push"
    files: tuple[Path, ...]
    given: bool = False  # files[0] is the --authfile the user named
    header: str | None = None  # the Authorization every request sends, once known
    _credentials: Credentials | None = None
    _looked: bool = False

    @property
    def credentials(self) -> Credentials | None:
        if not self._looked:
            self._credentials = find_credentials(self.files, self.host, self.name, self.given)
            self._looked = True
        return self._credentials

    def answer(self, challenge: str | None, url: str) -> str:
        """The Authorization header answering a 401 to ``url`` whose challenge is
        ``challenge``; one error when there is none to give."""
        scheme, params = parse_challenge(challenge or "")
        credentials = self.credentials
        if scheme == "bearer" and params.get("realm"):
            scope = f"repository:{self.name}:{self.actions}"
            try:
                return "Bearer " + fetch_token(params["realm"], params, scope, credentials)
            except CredentialsRefused as e:
                raise ImageError(f"{self.refused()} (token realm {e})") from None
        if scheme != "basic":
            raise ImageError(
                f"registry {self.host} asks for credentials with a challenge gfxpack does not "
                f"answer: {scheme or 'none'!r} (Basic and Bearer are answered)"
            )
        if credentials is None:
            raise self.none_found()
        if not secure(url):
            raise ImageError(
                f"registry {self.host}: not HTTPS, and gfxpack sends credentials only over "
                "HTTPS or to a loopback host"
            )
        return credentials.basic()

    def refused(self) -> ImageError:
        """The error for a 401 to a request that carried the answer."""
        credentials = self.credentials
        if credentials is None:  # an anonymous token, not enough
            return self.none_found()
        return ImageError(
            f"registry {self.host} refused the credentials for {self.host} from "
            f"{credentials.source}"
        )

    def none_found(self) -> ImageError:
        return ImageError(
            f"registry {self.host} asks for credentials and none were found for it (looked "
            f"in {', '.join(map(str, self.files))}): log in with `skopeo login {self.host}` "
            "or give --authfile"
        )


@dataclass(frozen=True, slots=True)
class AuthFiles:
    """Where one run looks for credentials (:func:`auth_files`); ``given``: the first
    is the --authfile the user named, which must exist."""

    paths: tuple[Path, ...]
    given: bool = False

    @classmethod
    def find(cls, authfile: Path | None, env: Mapping[str, str]) -> AuthFiles:
        return cls(auth_files(authfile, env), authfile is not None)

    def authorizer(self, host: str, name: str, actions: str) -> Authorizer:
        return Authorizer(host, name, actions, self.paths, self.given)
