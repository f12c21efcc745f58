"""Pushing images to and pulling a base from a registry: the OCI distribution API
(distribution-spec ``spec.md``), spoken directly over HTTP.

A push asks for each blob first (``HEAD /v2/NAME/blobs/DIGEST``) and uploads only the
ones the registry does not hold (``POST`` an upload, ``PUT`` it whole with its
digest), then puts the manifest under its tag; so pushing a second arch's image of a
release uploads its device and top layers, not the host layer again. A loopback
registry (127.0.0.1, localhost, ::1) is spoken to over plain HTTP, any other over
HTTPS. No credentials are sent: a registry asking for them is one error saying so
(``skopeo copy oci:OUT:TAG docker://...`` pushes with them).

An unreachable registry, or one that refuses a request, is one :class:`ImageError`
naming the registry, the request and its answer.
"""

from __future__ import annotations

import http.client
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

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
TIMEOUT = 60
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


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a redirected PUT or POST is an answer to read, not to follow


_PLAIN = urllib.request.build_opener(_NoRedirect)
_FOLLOWING = urllib.request.build_opener()


@contextmanager
def _request(
    reference: Reference,
    method: str,
    url: str,
    what: str,
    body: IO[bytes] | bytes | None = None,
    headers: dict[str, str] | None = None,
    ok: tuple[int, ...] = (200,),
    follow: bool = False,
) -> Iterator[http.client.HTTPResponse]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    opener = _FOLLOWING if follow else _PLAIN
    try:
        response = opener.open(request, timeout=TIMEOUT)
    except urllib.error.HTTPError as e:
        if e.code in ok:
            response = e
        else:
            raise _refused(reference, what, e) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", e)
        raise ImageError(f"registry {reference.host} unreachable ({what}): {reason}") from None
    with response:
        if response.status not in ok:
            raise ImageError(
                f"registry {reference.host} refused {what}: HTTP {response.status} "
                f"(expected {' or '.join(map(str, ok))})"
            )
        yield response


def _refused(reference: Reference, what: str, error: urllib.error.HTTPError) -> ImageError:
    said = error.read(300).decode("utf-8", "replace") if error.fp else ""
    said = " ".join("".join(c if c.isprintable() else " " for c in said).split())
    if error.code == 401:
        said = "it asks for credentials, which gfxpack does not send (push with skopeo copy)"
    return ImageError(
        f"registry {reference.host} refused {what}: HTTP {error.code} {error.reason}"
        + (f": {said}" if said else "")
    )


def has_blob(reference: Reference, digest: str) -> bool:
    with _request(
        reference, "HEAD", f"{reference.base_url}/blobs/{digest}", f"HEAD of blob {digest}",
        ok=(200, 404), follow=True,
    ) as response:  # fmt: skip
        return response.status == 200


def upload_blob(reference: Reference, path: Path, digest: str) -> None:
    """A monolithic upload: POST for a session, then PUT the whole blob to it."""
    what = f"upload of blob {digest}"
    start_url = f"{reference.base_url}/blobs/uploads/"
    with _request(reference, "POST", start_url, what, b"", ok=(202,)) as response:
        location = response.headers.get("Location")
    if not location:
        raise ImageError(f"registry {reference.host} refused {what}: no upload Location given")
    url = urllib.parse.urljoin(start_url, location)
    url += ("&" if "?" in url else "?") + urllib.parse.urlencode({"digest": digest})
    size = path.stat().st_size
    headers = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
    with open(path, "rb") as body, _request(reference, "PUT", url, what, body, headers, (201,)):
        pass


def put_manifest(reference: Reference, tag: str, data: bytes, media_type: str) -> None:
    url = f"{reference.base_url}/manifests/{tag}"
    headers = {"Content-Type": media_type}
    with _request(reference, "PUT", url, f"PUT of manifest {tag}", data, headers, (201,)):
        pass


def push(layout: Path, manifests: list[Descriptor], reference: Reference) -> Pushed:
    """Push each image of ``layout`` named by ``manifests`` (each tagged by its
    ref.name annotation) to ``reference``'s repository."""
    pushed = Pushed(f"{reference.host}/{reference.name}")
    for descriptor in manifests:
        data = blob_path(layout, descriptor.digest).read_bytes()
        document = parse_document(data, f"{layout}: manifest {descriptor.digest}")
        blobs = [document["config"], *document["layers"]]
        for blob in blobs:
            digest = blob["digest"]
            if digest in pushed.uploaded or digest in pushed.present:
                continue
            if has_blob(reference, digest):
                pushed.present.append(digest)
            else:
                upload_blob(reference, blob_path(layout, digest), digest)
                pushed.uploaded.append(digest)
        tag = descriptor.annotations[REF_NAME]
        put_manifest(reference, tag, data, descriptor.media_type)
        pushed.tags.append(f"{reference.host}/{reference.name}:{tag}")
    return pushed


def pull(text: str, out: Path) -> Path:
    """The image ``text`` names (HOST/NAME:TAG), its blobs checked, into a new OCI
    layout ``out`` holding it alone; ``out``."""
    reference = Reference.parse(text)
    tag = reference.tag or "latest"
    start(out)
    shown = f"base docker://{reference}"

    def fetch(what: str, url: str, accept: str | None = None) -> bytes:
        headers = {"Accept": accept} if accept else {}
        with _request(reference, "GET", url, what, headers=headers, follow=True) as response:
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
                _download(reference, blob, out)
    write_index(out, [Descriptor(media_type, descriptor.digest, descriptor.size, {REF_NAME: tag})])
    return out


def _platform_ok(entry: dict[str, Any]) -> bool:
    platform = entry.get("platform") or {}
    return bool(
        platform.get("os", "linux") == "linux" and platform.get("architecture", "amd64") == "amd64"
    )


def _download(reference: Reference, blob: Descriptor, out: Path) -> None:
    path = blob_path(out, blob.digest)
    if path.exists():
        return
    partial = path.with_name(f".{path.name}.partial")
    url = f"{reference.base_url}/blobs/{blob.digest}"
    what = f"GET of blob {blob.digest}"
    with (
        _request(reference, "GET", url, what, follow=True) as response,
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
