"""Pushing images to and pulling a base from a registry: the OCI distribution API
(distribution-spec ``spec.md``), spoken directly over HTTP.

A push asks for each blob first (``HEAD /v2/NAME/blobs/DIGEST``) and uploads only the
ones the registry does not hold (``POST`` an upload, ``PUT`` it whole with its
digest), then puts the manifest under its tag; so pushing a second arch's image of a
release uploads its device and top layers, not the host layer again. A loopback
registry (127.0.0.1, localhost, ::1) is spoken to over plain HTTP, any other over
HTTPS. A registry answering 401 is answered as its ``WWW-Authenticate`` challenge
asks (``Basic``, or a ``Bearer`` token from its realm), with credentials found where
skopeo, podman and docker keep them (:mod:`.auth`); the Authorization is then sent
with each later request of the run, over HTTPS or to a loopback registry only, and
never to another host: not after a redirect (blob downloads are often redirected to
a storage host), nor to an upload Location elsewhere. No credentials for a registry
that asks, or credentials refused, is one error naming the registry and where they
were looked for or came from.

An unreachable registry, or one that refuses a request, is one :class:`ImageError`
naming the registry, the request and its answer.
"""

from __future__ import annotations

import http.client
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from gfxpack._io import HashingWriter
from gfxpack.image import ImageError
from gfxpack.image.auth import (
    LOOPBACK,
    NOT_FOLLOWING,
    TIMEOUT,
    AuthFiles,
    Authorizer,
    secure,
)
from gfxpack.image.base import MAX_DOCUMENT, as_descriptor, parse_document
from gfxpack.image.layout import (
    DOCKER_LIST,
    DOCKER_MANIFEST,
    INDEX,
    MANIFEST,
    REF_NAME,
    Descriptor,
    blob_path,
    put_bytes,
    start,
    write_index,
)

CHUNK = 1 << 20
# distribution-spec's grammar for repository names and tags.
NAME = re.compile(
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
)
TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
HOST = re.compile(r"(?:[A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\])(?::[0-9]{1,5})?")
ACCEPT = ", ".join((MANIFEST, INDEX, DOCKER_MANIFEST, DOCKER_LIST))


@dataclass(frozen=True, slots=True)
class Reference:
    """HOST[:PORT]/NAME[:TAG|@DIGEST] of a registry."""

    host: str
    name: str
    tag: str = ""  # a tag or a digest

    @classmethod
    def parse(cls, text: str, tag_required: bool = False) -> Reference:
        """
        >>> Reference.parse("127.0.0.1:5000/rocm/image:8.2.0-gfx942")
        Reference(host='127.0.0.1:5000', name='rocm/image', tag='8.2.0-gfx942')
        """
        host, slash, rest = text.partition("/")
        name, tag = rest, ""
        if "@" in rest:
            name, _, tag = rest.partition("@")
        elif ":" in rest.rpartition("/")[2]:
            name, _, tag = rest.rpartition(":")
        wanted = "HOST[:PORT]/NAME[:TAG], e.g. 127.0.0.1:5000/rocm/amdrocm"
        if not slash or not HOST.fullmatch(host) or not NAME.fullmatch(name):
            raise ImageError(f"registry reference {text!r}: expected {wanted}")
        if tag and not (TAG.fullmatch(tag) or re.fullmatch(r"sha256:[0-9a-f]{64}", tag)):
            raise ImageError(f"registry reference {text!r}: {tag!r} is not a tag or a digest")
        return cls(host, name, tag)

    @property
    def base_url(self) -> str:
        hostname = self.host.rsplit(":", 1)[0] if not self.host.endswith("]") else self.host
        scheme = "http" if hostname in LOOPBACK else "https"
        return f"{scheme}://{self.host}/v2/{self.name}"

    def __str__(self) -> str:
        separator = "@" if self.tag.startswith("sha256:") else ":"
        return f"{self.host}/{self.name}{separator + self.tag if self.tag else ''}"


@dataclass
class Pushed:
    """What a push did: blobs uploaded, blobs the registry already held, tags put."""

    registry: str
    uploaded: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "registry": self.registry,
            "uploaded": self.uploaded,
            "already_there": self.present,
            "tags": self.tags,
        }


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, parts.netloc.lower()


class _Following(urllib.request.HTTPRedirectHandler):
    """Follows a redirect of a GET or HEAD; the Authorization (an unredirected header,
    which urllib drops on a redirect) goes along only to the same scheme, host and port."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        authorization = req.unredirected_hdrs.get("Authorization")
        if new is not None and authorization and _origin(new.full_url) == _origin(req.full_url):
            new.add_unredirected_header("Authorization", authorization)
        return new


_FOLLOWING = urllib.request.build_opener(_Following)


@contextmanager
def _request(
    auth: Authorizer,
    method: str,
    url: str,
    what: str,
    body: IO[bytes] | bytes | None = None,
    headers: dict[str, str] | None = None,
    ok: tuple[int, ...] = (200,),
    follow: bool = False,
) -> Iterator[http.client.HTTPResponse]:
    """The answer to a request, a 401 answered as its challenge asks (once; a second
    401 is the credentials refused)."""
    opener = _FOLLOWING if follow else NOT_FOLLOWING
    answered = False
    while True:
        request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
        # Never to another host, such as an upload Location elsewhere.
        if auth.header is not None and secure(url) and _origin(url)[1] == auth.host.lower():
            request.add_unredirected_header("Authorization", auth.header)
        try:
            response = opener.open(request, timeout=TIMEOUT)
        except urllib.error.HTTPError as e:
            if e.code == 401 and _origin(e.geturl())[1] == auth.host.lower():
                challenge = e.headers.get("WWW-Authenticate")
                e.close()
                if answered:
                    raise auth.refused() from None
                auth.header = auth.answer(challenge, url)  # a token kept for the run
                answered = True
                if not isinstance(body, bytes | None):
                    body.seek(0)
                continue
            if e.code not in ok:
                raise _refused(auth.host, what, e) from None
            response = e
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            raise ImageError(f"registry {auth.host} unreachable ({what}): {reason}") from None
        break
    with response:
        if response.status not in ok:
            raise ImageError(
                f"registry {auth.host} refused {what}: HTTP {response.status} "
                f"(expected {' or '.join(map(str, ok))})"
            )
        yield response


def _refused(host: str, what: str, error: urllib.error.HTTPError) -> ImageError:
    said = error.read(300).decode("utf-8", "replace") if error.fp else ""
    said = " ".join("".join(c if c.isprintable() else " " for c in said).split())
    return ImageError(
        f"registry {host} refused {what}: HTTP {error.code} {error.reason}"
        + (f": {said}" if said else "")
    )


def has_blob(reference: Reference, auth: Authorizer, digest: str) -> bool:
    with _request(
        auth, "HEAD", f"{reference.base_url}/blobs/{digest}", f"HEAD of blob {digest}",
        ok=(200, 404), follow=True,
    ) as response:  # fmt: skip
        return response.status == 200


def upload_blob(reference: Reference, auth: Authorizer, path: Path, digest: str) -> None:
    """A monolithic upload: POST for a session, then PUT the whole blob to it."""
    what = f"upload of blob {digest}"
    start_url = f"{reference.base_url}/blobs/uploads/"
    with _request(auth, "POST", start_url, what, b"", ok=(202,)) as response:
        location = response.headers.get("Location")
    if not location:
        raise ImageError(f"registry {reference.host} refused {what}: no upload Location given")
    url = urllib.parse.urljoin(start_url, location)
    url += ("&" if "?" in url else "?") + urllib.parse.urlencode({"digest": digest})
    size = path.stat().st_size
    headers = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
    with open(path, "rb") as body, _request(auth, "PUT", url, what, body, headers, (201,)):
        pass


def put_manifest(
    reference: Reference, auth: Authorizer, tag: str, data: bytes, media_type: str
) -> None:
    url = f"{reference.base_url}/manifests/{tag}"
    headers = {"Content-Type": media_type}
    with _request(auth, "PUT", url, f"PUT of manifest {tag}", data, headers, (201,)):
        pass


def push(
    layout: Path,
    manifests: list[Descriptor],
    reference: Reference,
    auth_files: AuthFiles | None = None,
) -> Pushed:
    """Push each image of ``layout`` named by ``manifests`` (each tagged by its
    ref.name annotation) to ``reference``'s repository, with the credentials of
    ``auth_files`` (default: where skopeo looks, from this process's environment) when
    it asks."""
    files = auth_files or AuthFiles.find(None, os.environ)
    auth = files.authorizer(reference.host, reference.name, "pull,push")
    pushed = Pushed(f"{reference.host}/{reference.name}")
    for descriptor in manifests:
        data = blob_path(layout, descriptor.digest).read_bytes()
        document = parse_document(data, f"{layout}: manifest {descriptor.digest}")
        blobs = [document["config"], *document["layers"]]
        for blob in blobs:
            digest = blob["digest"]
            if digest in pushed.uploaded or digest in pushed.present:
                continue
            if has_blob(reference, auth, digest):
                pushed.present.append(digest)
            else:
                upload_blob(reference, auth, blob_path(layout, digest), digest)
                pushed.uploaded.append(digest)
        tag = descriptor.annotations[REF_NAME]
        put_manifest(reference, auth, tag, data, descriptor.media_type)
        pushed.tags.append(f"{reference.host}/{reference.name}:{tag}")
    return pushed


def pull(text: str, out: Path, auth_files: AuthFiles | None = None) -> Path:
    """The image ``text`` names (HOST/NAME:TAG), its blobs checked, into a new OCI
    layout ``out`` holding it alone; ``out``. Credentials as for :func:`push`."""
    reference = Reference.parse(text)
    files = auth_files or AuthFiles.find(None, os.environ)
    auth = files.authorizer(reference.host, reference.name, "pull")
    tag = reference.tag or "latest"
    start(out)
    shown = f"base docker://{reference}"

    def fetch(what: str, url: str, accept: str | None = None) -> bytes:
        headers = {"Accept": accept} if accept else {}
        with _request(auth, "GET", url, what, headers=headers, follow=True) as response:
            return response.read(MAX_DOCUMENT + 1)

    data = fetch(f"GET of manifest {tag}", f"{reference.base_url}/manifests/{tag}", ACCEPT)
    top = parse_document(data, f"{shown}: manifest")
    media_type = top.get("mediaType") or (INDEX if "manifests" in top else MANIFEST)
    descriptor = put_bytes(out, media_type, data)
    documents = [top]
    while documents:
        document = documents.pop()
        for entry in document.get("manifests") or []:
            child = as_descriptor(entry, f"{shown}: index")
            if child.media_type in (MANIFEST, DOCKER_MANIFEST) and not _platform_ok(entry):
                continue
            url = f"{reference.base_url}/manifests/{child.digest}"
            child_data = fetch(f"GET of manifest {child.digest}", url, ACCEPT)
            put_bytes(out, child.media_type, child_data)
            documents.append(parse_document(child_data, f"{shown}: {child.digest}"))
        for entry in [document.get("config"), *(document.get("layers") or [])]:
            if entry is not None:
                blob = as_descriptor(entry, f"{shown}: manifest")
                _download(reference, auth, blob, out)
    write_index(out, [Descriptor(media_type, descriptor.digest, descriptor.size, {REF_NAME: tag})])
    return out


def _platform_ok(entry: dict[str, Any]) -> bool:
    platform = entry.get("platform") or {}
    return bool(
        platform.get("os", "linux") == "linux" and platform.get("architecture", "amd64") == "amd64"
    )


def _download(reference: Reference, auth: Authorizer, blob: Descriptor, out: Path) -> None:
    path = blob_path(out, blob.digest)
    if path.exists():
        return
    partial = path.with_name(f".{path.name}.partial")
    url = f"{reference.base_url}/blobs/{blob.digest}"
    what = f"GET of blob {blob.digest}"
    with (
        _request(auth, "GET", url, what, follow=True) as response,
        open(partial, "wb") as file,
    ):
        sink = HashingWriter(file, "sha256")
        while chunk := response.read(CHUNK):
            sink.write(chunk)
            if sink.size > blob.size:
                break
    digest = "sha256:" + sink.hexdigest()
    if sink.size != blob.size or digest != blob.digest:
        partial.unlink()
        raise ImageError(
            f"registry {reference.host}: blob {blob.digest} arrived as {sink.size} bytes with "
            f"the digest {digest}"
        )
    partial.rename(path)
