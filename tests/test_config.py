"""package.json loading: the schema, upstream's quirks, and one message per bad input."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gfxpack.cli import cli
from gfxpack.config import InvalidConfig, load_config, parse_config


def entry(**fields):
    return {"Package": "amdrocm-x", **fields}


def config_of(*entries):
    return parse_config(json.dumps(list(entries)), "pkg.json")


def error_of(text: str) -> str:
    with pytest.raises(InvalidConfig) as caught:
        parse_config(text, "pkg.json")
    return str(caught.value)


def test_example_loads_with_every_key_kind(example_config):
    specs = {spec.name: spec for spec in example_config.packages}
    assert len(specs) >= 25
    assert example_config.warnings == ()
    blas = specs["amdrocm-blas"]
    assert blas.gfxarch and not blas.metapackage
    assert [s.artifact for s in blas.artifactory] == ["blas", "hipblasltprovider"]
    assert blas.artifactory[1].gfxarch is False
    assert specs["amdrocm-openmp"].disabled
    assert specs["amdrocm-core"].postinstall
    llvm = specs["amdrocm-llvm"]
    assert llvm.deb.depends[1].names() == ("libstdc++6", "libstdc++8")
    assert [r.names() for r in llvm.deb.recommends] == [("gcc",), ("g++",), ("gcc-multilib",)]
    runtime = specs["amdrocm-runtime"]
    assert runtime.deb.replaces[0].names() == ("hip-runtime-amd",)
    assert runtime.rpm.replaces[0].names() == ("hip-runtime-amd",)  # from Obsoletes


def test_a_minimal_entry_gets_defaults():
    (spec,) = config_of(entry()).packages
    assert (spec.gfxarch, spec.metapackage, spec.disabled) == (False, False, False)
    assert spec.architecture == "amd64" and spec.build_arch == "x86_64"
    assert spec.deb.depends == () and spec.artifactory == ()


@pytest.mark.parametrize(
    "word", ["True", "true", " TRUE ", "1", "t", "yes", "Y", "on", "enable", "enabled", "found"]
)
def test_upstream_true_words(word):
    assert config_of(entry(Gfxarch=word)).packages[0].gfxarch is True


@pytest.mark.parametrize("word", ["False", "false", "0", "no", "off", "", "disabled"])
def test_false_words(word):
    assert config_of(entry(Gfxarch=word)).packages[0].gfxarch is False


def test_json_booleans_are_accepted():
    spec = config_of(entry(Gfxarch=True, Metapackage=False)).packages[0]
    assert spec.gfxarch is True and spec.metapackage is False


@pytest.mark.parametrize("key", ["Disablepackaging", "DisablePackaging", "DISABLEPACKAGING"])
def test_flag_keys_are_case_insensitive(key):
    assert config_of(entry(**{key: "True"})).packages[0].disabled is True


def test_artifact_gfxarch_is_true_only_for_true():
    art = {
        "Artifact": "blas",
        "Artifact_Gfxarch": "False",
        "Artifact_Subdir": [{"Name": "rocBLAS", "Components": ["lib"]}],
    }
    (source,) = config_of(entry(Artifactory=[art])).packages[0].artifactory
    assert source.gfxarch is False
    assert source.subdirs[0].components == ("lib",)


def test_unknown_keys_warn_naming_key_and_package():
    config = config_of(entry(Colour="blue", debdepends=["libc6"], Disable_DH_STRIP="True"))
    assert config.warnings == (
        "pkg.json: /0/Colour (amdrocm-x): unknown key 'Colour' ignored",
        "pkg.json: /0/debdepends (amdrocm-x): unknown key 'debdepends' ignored (did you mean "
        "'DEBDepends'? non-flag keys are case-sensitive)",
        "pkg.json: /0/Disable_DH_STRIP (amdrocm-x): key 'Disable_DH_STRIP' is ignored "
        "(upstream documents it but reads Disable_DEB_STRIP)",
    )


def test_misspelt_keys_suggest_the_known_key():
    config = config_of(entry(DEBDepend=["libc6"], RPMRequire=[], Gfxarc="True"))
    assert config.warnings == (
        "pkg.json: /0/DEBDepend (amdrocm-x): unknown key 'DEBDepend' ignored "
        "(did you mean 'DEBDepends'?)",
        "pkg.json: /0/RPMRequire (amdrocm-x): unknown key 'RPMRequire' ignored "
        "(did you mean 'RPMRequires'?)",
        "pkg.json: /0/Gfxarc (amdrocm-x): unknown key 'Gfxarc' ignored (did you mean 'Gfxarch'?)",
    )


def test_unknown_keys_are_errors_with_strict(tmp_path):
    path = tmp_path / "package.json"
    path.write_text(json.dumps([entry(DEBDepend=["libc6"])]))
    args = ["plan", "--config", str(path), "--target", "gfx942", "--rocm-version", "8.2.0"]
    relaxed = CliRunner().invoke(cli, args)
    assert relaxed.exit_code == 0
    assert "did you mean 'DEBDepends'?" in relaxed.stderr
    strict = CliRunner().invoke(cli, [*args, "--strict"])
    assert strict.exit_code == 1
    assert strict.stderr.splitlines()[0] == (
        f"error: {path}: /0/DEBDepend (amdrocm-x): unknown key 'DEBDepend' ignored "
        "(did you mean 'DEBDepends'?)"
    )


def test_legacy_keys_warn_only_where_content_is_read():
    legacy = {"Components": ["lib"], "Artifact": "ck"}
    assert config_of(entry(DisablePackaging="True", **legacy)).warnings == ()
    assert config_of(entry(**legacy)).warnings == (
        "pkg.json: /0/Components (amdrocm-x): legacy key 'Components' is ignored; "
        "list content in Artifactory",
        "pkg.json: /0/Artifact (amdrocm-x): legacy key 'Artifact' is ignored; "
        "list content in Artifactory",
    )


# --- bad input: one clear message each -----------------------------------------

BAD = {
    "not-json": (
        '[{"Package": "a"',
        "pkg.json: line 1 column 17: not valid JSON: Expecting ',' delimiter",
    ),
    "not-an-array": (
        '{"Package": "amdrocm-x"}',
        "pkg.json: /: expected an array of package objects, got an object",
    ),
    "entry-not-object": (
        '[{"Package": "amdrocm-x"}, "amdrocm-y"]',
        'pkg.json: /1: expected a package object, got a string ("amdrocm-y")',
    ),
    "missing-package": (
        '[{"Gfxarch": "True"}]',
        "pkg.json: /0: missing required key 'Package'",
    ),
    "empty-package": (
        '[{"Package": ""}]',
        "pkg.json: /0/Package: expected a package name (lowercase letters, digits, '+', "
        "'-' and '.', at least two characters), got ''",
    ),
    "package-not-string": (
        '[{"Package": 7}]',
        "pkg.json: /0/Package: expected a package name (lowercase letters, digits, '+', "
        "'-' and '.', at least two characters), got a number (7)",
    ),
    "bad-package-name": (
        '[{"Package": "AMD_rocm"}]',
        "pkg.json: /0/Package: expected a package name (lowercase letters, digits, '+', "
        "'-' and '.', at least two characters), got 'AMD_rocm'",
    ),
    "depends-not-list": (
        '[{"Package": "amdrocm-x", "DEBDepends": "libc6"}]',
        'pkg.json: /0/DEBDepends: expected an array of strings, got a string ("libc6")',
    ),
    "depends-item-not-string": (
        '[{"Package": "amdrocm-x", "DEBDepends": ["libc6", "a", "b", 5]}]',
        "pkg.json: /0/DEBDepends/3: expected a string, got a number (5)",
    ),
    "bad-deb-relation": (
        '[{"Package": "amdrocm-x", "DEBDepends": ["python3 (>= )"]}]',
        "pkg.json: /0/DEBDepends/0: 'python3 (>= )' is not a Debian relation (expected "
        "'name', 'name (>= version)' or alternatives joined by '|')",
    ),
    "bad-rpm-relation": (
        '[{"Package": "amdrocm-x", "RPMRequires": ["python3 >="]}]',
        "pkg.json: /0/RPMRequires/0: 'python3 >=' is not an RPM dependency (expected "
        "'name', 'name >= version' or '(a or b)')",
    ),
    "string-not-string": (
        '[{"Package": "amdrocm-x", "Description_Short": ["x"]}]',
        "pkg.json: /0/Description_Short: expected a string, got an array",
    ),
    "bad-boolean": (
        '[{"Package": "amdrocm-x", "Gfxarch": "maybe"}]',
        'pkg.json: /0/Gfxarch: expected a boolean ("True" or "False"), got a string ("maybe")',
    ),
    "boolean-number": (
        '[{"Package": "amdrocm-x", "Metapackage": 1}]',
        'pkg.json: /0/Metapackage: expected a boolean ("True" or "False"), got a number (1)',
    ),
    "flag-twice": (
        '[{"Package": "amdrocm-x", "Gfxarch": "True", "GfxArch": "False"}]',
        "pkg.json: /0/GfxArch: 'GfxArch' and 'Gfxarch' both set the same flag; keep one",
    ),
    "key-twice": (
        '[{"Package": "amdrocm-x", "Section": "devel", "Section": "libs"}]',
        "pkg.json: /0/Section: key 'Section' appears more than once in amdrocm-x",
    ),
    "artifact-gfxarch-yes": (
        '[{"Package": "amdrocm-x", "Artifactory": [{"Artifact": "x", "Artifact_Gfxarch": "yes"}]}]',
        'pkg.json: /0/Artifactory/0/Artifact_Gfxarch: expected a boolean ("True" or "False"), '
        'got a string ("yes")',
    ),
    "artifactory-not-list": (
        '[{"Package": "amdrocm-x", "Artifactory": {"Artifact": "x"}}]',
        "pkg.json: /0/Artifactory: expected an array of artifact objects, got an object",
    ),
    "artifact-underscore": (
        '[{"Package": "amdrocm-x", "Artifactory": [{"Artifact": "core_hip"}]}]',
        "pkg.json: /0/Artifactory/0/Artifact: expected an artifact name (a letter, then "
        "letters, digits or '-'; no '_'), got 'core_hip'",
    ),
    "bad-component": (
        '[{"Package": "amdrocm-x", "Artifactory": [{"Artifact": "x", "Artifact_Subdir": '
        '[{"Name": "X", "Components": ["lib", "bin"]}]}]}]',
        "pkg.json: /0/Artifactory/0/Artifact_Subdir/0/Components/1: expected one of lib, run, "
        "dev, doc, test, dbg, got 'bin'",
    ),
    "duplicate-package": (
        '[{"Package": "amdrocm-x"}, {"Package": "amdrocm-y"}, {"Package": "amdrocm-x"}]',
        "pkg.json: /2/Package: duplicate package 'amdrocm-x' (first defined at /0)",
    ),
    "meta-with-artifactory": (
        '[{"Package": "amdrocm-x", "Metapackage": "True", "Artifactory": '
        '[{"Artifact": "x", "Artifact_Subdir": []}]}]',
        "pkg.json: /0/Artifactory: amdrocm-x is a metapackage, which has no payload: remove "
        'Artifactory or set Metapackage to "False"',
    ),
    "bad-maintainer": (
        '[{"Package": "amdrocm-x", "Maintainer": "ROCm team"}]',
        "pkg.json: /0/Maintainer: expected 'Name <email>', got 'ROCm team'",
    ),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_input_message(case):
    text, message = BAD[case]
    assert error_of(text) == message


def test_every_problem_is_reported_at_once():
    message = error_of('[{"Package": "amdrocm-x", "Gfxarch": "maybe"}, 3, {"Package": ""}]')
    assert message.splitlines() == [
        'pkg.json: /0/Gfxarch: expected a boolean ("True" or "False"), got a string ("maybe")',
        "pkg.json: /1: expected a package object, got a number (3)",
        "pkg.json: /2/Package: expected a package name (lowercase letters, digits, '+', "
        "'-' and '.', at least two characters), got ''",
    ]


def test_pointer_escapes_slash_and_tilde():
    message = error_of(
        '[{"Package": "amdrocm-x", "Artifactory": [{"Artifact": "x", '
        '"Artifact_Subdir": [{"Name": "a", "Components": "lib"}]}]}]'
    )
    assert "/0/Artifactory/0/Artifact_Subdir/0/Components: expected an array" in message


def test_missing_file(tmp_path):
    with pytest.raises(InvalidConfig) as caught:
        load_config(tmp_path / "nope.json")
    assert str(caught.value) == f"{tmp_path / 'nope.json'}: file not found"


def test_strip_and_dwz_switches_are_validated_though_they_always_hold():
    # gfxpack never strips or runs dwz: the switches need no value, but a bad one is an error.
    config = config_of(entry(Disable_DWZ="True", Disable_DEB_STRIP="False"))
    assert config.warnings == ()
    assert error_of('[{"Package": "amdrocm-x", "Disable_RPM_STRIP": "maybe"}]') == (
        'pkg.json: /0/Disable_RPM_STRIP: expected a boolean ("True" or "False"), '
        'got a string ("maybe")'
    )
