"""The format objects: every DEB/RPM difference, asked of DEB or RPM."""

from __future__ import annotations

import pickle

import pytest

from gfxpack.config import PackageSpec
from gfxpack.formats import DEB, FORMATS, RPM, format_named
from gfxpack.formats.package_format import UnknownFormat
from gfxpack.plan import Req


def test_the_formats_and_their_names():
    assert [fmt.name for fmt in FORMATS] == ["deb", "rpm"]
    assert [format_named(fmt.name) for fmt in FORMATS] == [DEB, RPM]
    with pytest.raises(UnknownFormat, match="format 'apk': expected one of deb, rpm"):
        format_named("apk")
    # A build worker receives the same object, not a copy.
    assert pickle.loads(pickle.dumps((DEB, RPM))) == (DEB, RPM)
    assert pickle.loads(pickle.dumps(RPM)) is RPM


def test_names_keys_and_fields():
    assert (DEB.spell("a-devel"), RPM.spell("a-devel"), DEB.spell("a-develop")) == (
        "a-dev",
        "a-devel",
        "a-develop",
    )
    assert (DEB.key_of("depends"), RPM.key_of("depends")) == ("DEBDepends", "RPMRequires")
    assert (DEB.key_of("replaces"), RPM.key_of("replaces")) == ("Replaces", "Obsoletes")
    assert (DEB.field_name("replaces"), RPM.field_name("replaces")) == ("replaces", "obsoletes")
    spec = PackageSpec("amdrocm-x", architecture="arm64", build_arch="aarch64")
    assert (DEB.arch(spec), RPM.arch(spec)) == ("arm64", "aarch64")
    assert (DEB.solv_arch("all"), DEB.shown_arch("noarch"), RPM.solv_arch("noarch")) == (
        "noarch",
        "all",
        "noarch",
    )


def test_each_format_renders_a_planned_relation_in_its_syntax():
    dep = (Req("amdrocm-a8.2", "amdrocm-a8.2", ">", "8.2.0-1"), Req("libc6", text="libc6"))
    assert DEB.render(dep) == "amdrocm-a8.2 (>> 8.2.0-1) | libc6"
    assert RPM.render(dep) == "(amdrocm-a8.2 > 8.2.0-1 or libc6)"
    assert RPM.render(dep[:1]) == "amdrocm-a8.2 > 8.2.0-1"
    assert [r.names() for r in DEB.parse_field("a (>= 1),\n b | c")] == [("a",), ("b", "c")]
    assert [r.names() for r in RPM.parse_field("a >= 1, (b or c)")] == [("a",), ("b", "c")]
