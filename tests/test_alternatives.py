"""Maintainer scripts of Postinstall packages: update-alternatives for the release prefix."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gfxpack.alternatives import MAX_PRIORITY, UnplaceableVersion, priority, scripts_for
from gfxpack.formats import DEB, FORMATS, RPM
from gfxpack.plan import Kind, plan
from tests.conftest import SEED_TARGETS, dpkg_root, run
from tests.small_tree import build, make_tree, write_config

EPOCH = 1_704_067_200


@pytest.fixture(scope="module")
def release(example_config):
    return plan(example_config.packages, SEED_TARGETS, "8.2.0")


# Oldest first: the order update-alternatives must keep. Nightlies and dev builds of
# one version by their date, then its release candidates, then the release.
ORDERED = [
    "7.14.0~20260101",
    "7.14.0~dev20260625",
    "7.14.0~20260626gefed3c3",
    "7.14.0~pre0",
    "7.14.0~rc1",
    "7.14.0",
    "7.14.1",
    "8.0.0~20270101",
    "8.0.0",
    "10.1.0",
    "10.10.0",
    "14.0.0",
    "20.3.0",
    "63.63.31",
]


def test_newer_versions_get_higher_priorities_that_update_alternatives_takes():
    ranks = [priority(version, EPOCH) for version in ORDERED]
    assert ranks == sorted(set(ranks))
    assert all(0 <= rank <= MAX_PRIORITY for rank in ranks)
    assert MAX_PRIORITY == 2**31 - 1


def test_a_dev_build_without_a_date_is_dated_by_the_build():
    """Ordered among its version's nightlies by SOURCE_DATE_EPOCH, below its release."""
    day = 86400
    early, late = priority("7.14.0.dev0+1a2b", EPOCH), priority("7.14.0.dev0+1a2b", EPOCH + day)
    assert priority("7.14.0~20231231", EPOCH) < early < late < priority("7.14.0~rc0", EPOCH)
    # Before 2020 or past the last day: the first or last nightly day, never a wrap.
    assert priority("7.14.0.dev0", 0) == priority("7.14.0~20200101", EPOCH)
    assert priority("7.14.0.dev0", 2**40) < priority("7.14.0~rc0", EPOCH)


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("64.0.0", "the major 64 is above 63"),
        ("7.64.0", "the minor 64 is above 63"),
        ("7.1.32", "the patch 32 is above 31"),
        ("7.1.0~rc255", "release candidate 255 is above 254"),
        ("7.1.0~20191231", "the date 2019-12-31 is outside 2020-01-01 to 2064-02-26"),
        ("7.1.0~20261399", "20261399 is no date (YYYYMMDD expected)"),
        ("eight", "expected X.Y or X.Y.Z"),
    ],
)
def test_a_version_the_scheme_cannot_place_is_an_error(version, message):
    with pytest.raises(UnplaceableVersion) as error:
        priority(version, EPOCH)
    assert str(error.value).startswith(f"ROCm version {version!r}: {message}")


# A version as the scheme's fields: major, minor, patch, then its stage as (kind, number,
# suffix): a nightly (0, its day), a release candidate (1, its number), the release (2).
_STAGE = st.one_of(
    st.dates(date(2020, 1, 1), date(2064, 2, 26)).map(
        lambda d: (0, d.toordinal(), d.strftime("~%Y%m%d"))
    ),
    st.integers(0, 254).map(lambda n: (1, n, f"~rc{n}")),
    st.just((2, 0, "")),
)
_VERSIONS = st.tuples(st.integers(0, 63), st.integers(0, 63), st.integers(0, 31), _STAGE)


@given(_VERSIONS, _VERSIONS)
def test_priorities_order_versions_as_their_fields_do(a, b):
    """For any two placeable versions: in range, and ordered as (major, minor, patch,
    nightly by date < candidate by number < release)."""

    def rank(v):
        return priority(f"{v[0]}.{v[1]}.{v[2]}{v[3][2]}", EPOCH)

    def key(v):
        return (*v[:3], *v[3][:2])

    assert 0 <= rank(a) <= MAX_PRIORITY and 0 <= rank(b) <= MAX_PRIORITY
    assert (rank(a) < rank(b)) == (key(a) < key(b))
    assert (rank(a) == rank(b)) == (key(a) == key(b))


def test_update_alternatives_keeps_the_order(tmp_path):
    """dpkg's update-alternatives itself takes each priority and, as releases go, falls
    back from the newest to the next."""
    ua = [
        "update-alternatives",
        *("--altdir", str(tmp_path / "alternatives")),
        *("--admindir", str(tmp_path / "admin")),
        *("--log", str(tmp_path / "log")),
    ]
    for directory in ("alternatives", "admin", "links", "releases"):
        (tmp_path / directory).mkdir()
    link = tmp_path / "links" / "core"
    for version in ORDERED:
        (tmp_path / "releases" / version).mkdir()
        path = str(tmp_path / "releases" / version)
        run(*ua, "--install", str(link), "rocm-core", path, str(priority(version, EPOCH)))
    for version in reversed(ORDERED):
        assert os.path.realpath(link) == str(tmp_path / "releases" / version)
        run(*ua, "--remove", "rocm-core", str(tmp_path / "releases" / version))
    assert not link.exists()


def test_only_versioned_variants_of_postinstall_bases_carry_scripts(release):
    carrying = {
        p.key for p in release.packages for fmt in FORMATS if scripts_for(release, p, fmt, EPOCH)
    }
    core = {p.key for p in release.family("amdrocm-core") if p.kind is not Kind.NON_VERSIONED}
    assert core and core <= carrying
    assert all(release.specs[release.by_key[key].base].postinstall for key in carrying)
    assert not any(release.by_key[key].kind is Kind.NON_VERSIONED for key in carrying)


@pytest.mark.parametrize("fmt", FORMATS)
def test_scripts_are_valid_shell_naming_the_prefix_and_the_siblings(release, fmt):
    package = release.by_key["amdrocm-core8.2-gfx942"]
    scripts = scripts_for(release, package, fmt, EPOCH)
    # dpkg deregisters before removal (prerm); rpm after it (%postun), as its guidelines ask.
    removal = "prerm" if fmt is DEB else "postrm"
    assert sorted(scripts) == sorted(["postinst", removal])
    for text in scripts.values():
        subprocess.run(["sh", "-n"], input=text, text=True, check=True)
    assert release.prefix in scripts["postinst"]
    assert f" {priority('8.2.0', EPOCH)}" in scripts["postinst"]
    siblings = [p.name(fmt) for p in release.family("amdrocm-core") if p.key != package.key]
    named = [name for name in siblings if name in scripts[removal]]
    assert named and "amdrocm-core" not in scripts[removal].split()  # not the alias


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="needs shellcheck")
@pytest.mark.parametrize("fmt", FORMATS)
def test_scripts_pass_shellcheck(release, fmt):
    """No warning from shellcheck, as POSIX sh (dash runs dpkg's scripts, bash rpm's)."""
    for key in ("amdrocm-core8.2-gfx942", "amdrocm-core8.2"):
        for name, text in scripts_for(release, release.by_key[key], fmt, EPOCH).items():
            checked = subprocess.run(
                ["shellcheck", "--shell=sh", "-"], input=text, text=True, capture_output=True
            )
            assert checked.returncode == 0, f"{key} {name}:\n{checked.stdout}"


def test_each_format_relocates_the_way_its_tools_do(release):
    package = release.by_key["amdrocm-core8.2"]
    deb = scripts_for(release, package, DEB, EPOCH)
    rpm = scripts_for(release, package, RPM, EPOCH)
    assert "DPKG_ROOT" in deb["postinst"] and "dpkg-query" in deb["prerm"]
    assert "RPM_INSTALL_PREFIX0" in rpm["postinst"] and "rpm -q" in rpm["postrm"]
    assert "DPKG_ROOT" not in rpm["postinst"]


def deb_scripts_at(example_config, root, versions):
    """X.Y -> the DEB scripts of amdrocm-core<X.Y>-gfx942 at each version, its prefix
    (with a lib directory) made under ``root``."""
    scripts = {}
    for version in versions:
        release = plan(example_config.packages, SEED_TARGETS, version)
        xy = version.rsplit(".", 1)[0]
        scripts[xy] = scripts_for(release, release.by_key[f"amdrocm-core{xy}-gfx942"], DEB, EPOCH)
        assert release.prefix == f"/opt/rocm/core-{xy}"
        (root / release.prefix.lstrip("/") / "lib").mkdir(parents=True, exist_ok=True)
    return scripts


def run_script(script, name, *args, root):
    """``script`` run as dpkg runs it outside a chroot (DPKG_ROOT), with ``set -e``."""
    env = {**os.environ, "DPKG_ROOT": str(root)}
    return run("sh", "-c", script, name, *args, env=env)


def resolved(root, link):
    """Where ``link`` (/opt/rocm/...) leads through /etc/alternatives, inside ``root``;
    None when it is not there."""
    path = root / link.lstrip("/")
    if not path.is_symlink():
        return None
    alternative = os.readlink(path)
    assert alternative == f"/etc/alternatives/{os.path.basename(alternative)}"
    return os.readlink(root / alternative.lstrip("/"))


def test_two_releases_side_by_side_the_newer_wins_and_removing_it_falls_back(
    example_config, tmp_path
):
    """The DEB scripts of 10.1 and 14.0, run as dpkg runs them (DPKG_ROOT), with the
    real update-alternatives: two-digit majors order, and each release keeps its own
    /opt/rocm/core-<major> while the other wins /opt/rocm/core."""
    root = dpkg_root(tmp_path / "root")
    scripts = deb_scripts_at(example_config, root, ("14.0.0", "10.1.0"))
    for xy in ("14.0", "10.1"):  # the older configured last: priority decides, not order
        run_script(scripts[xy]["postinst"], "postinst", "configure", root=root)
    assert resolved(root, "/opt/rocm/core") == "/opt/rocm/core-14.0"
    assert resolved(root, "/opt/rocm/lib") == "/opt/rocm/core-14.0/lib"
    assert resolved(root, "/opt/rocm/core-14") == "/opt/rocm/core-14.0"
    assert resolved(root, "/opt/rocm/core-10") == "/opt/rocm/core-10.1"
    run_script(scripts["14.0"]["prerm"], "prerm", "remove", root=root)
    assert resolved(root, "/opt/rocm/core") == "/opt/rocm/core-10.1"
    assert resolved(root, "/opt/rocm/lib") == "/opt/rocm/core-10.1/lib"
    assert resolved(root, "/opt/rocm/core-10") == "/opt/rocm/core-10.1"
    assert resolved(root, "/opt/rocm/core-14") is None
    assert not (root / "etc/alternatives/rocm-core-14").exists()
    run_script(scripts["10.1"]["prerm"], "prerm", "remove", root=root)
    assert not list((root / "etc/alternatives").iterdir())
    assert not list((root / "var/lib/dpkg/alternatives").iterdir())


def register_as_older_gfxpack_did(root, xy, rank):
    """What an older gfxpack's postinst registered: /opt/rocm/core-<major> a slave of
    rocm-core, beside the others (here /opt/rocm/lib)."""
    prefix = f"/opt/rocm/core-{xy}"
    major = xy.split(".")[0]
    run(
        *("update-alternatives", "--root", str(root), "--install"),
        *("/opt/rocm/core", "rocm-core", prefix, str(rank)),
        *("--slave", f"/opt/rocm/core-{major}", f"rocm-core-{major}", prefix),
        *("--slave", "/opt/rocm/lib", "rocm-lib", f"{prefix}/lib"),
    )


# The package of this gfxpack configured on a machine holding 10.1 and 14.0 from an
# older one: an upgrade of either, or 10.2 beside them, whose rocm-core-10 is still a
# slave of 10.1's choice -> where each link leads then, and once it is removed again.
MOVES = {
    "10.1.0": ({"core": "14.0", "core-10": "10.1", "core-14": "14.0", "lib": "14.0/lib"},
               {"core": "14.0", "core-10": None, "core-14": "14.0", "lib": "14.0/lib"}),
    "14.0.0": ({"core": "14.0", "core-10": "10.1", "core-14": "14.0", "lib": "14.0/lib"},
               {"core": "10.1", "core-10": "10.1", "core-14": None, "lib": "10.1/lib"}),
    "10.2.0": ({"core": "14.0", "core-10": "10.2", "core-14": "14.0", "lib": "14.0/lib"},
               {"core": "14.0", "core-10": "10.1", "core-14": "14.0", "lib": "14.0/lib"}),
}  # fmt: skip


def links(root):
    """Where /opt/rocm/{core,core-10,core-14,lib} lead, as MOVES spells it."""
    names = ("core", "core-10", "core-14", "lib")
    leads = {name: resolved(root, f"/opt/rocm/{name}") for name in names}
    return {k: v and v.removeprefix("/opt/rocm/core-") for k, v in leads.items()}


@pytest.mark.parametrize("version", sorted(MOVES))
def test_releases_registered_by_an_older_gfxpack_move_to_the_new_groups(
    example_config, tmp_path, version
):
    """A machine with 10.1 and 14.0 from an older gfxpack, then this gfxpack's package
    at ``version``: its postinst (``set -e``) succeeds though update-alternatives makes
    no slave a master, every installed major keeps its /opt/rocm/core-<major>, the
    older choices keep their other slaves, and removal falls back in each group."""
    root = dpkg_root(tmp_path / "root")
    for xy, old in (("10.1", "10.1.0"), ("14.0", "14.0.0")):
        (root / f"opt/rocm/core-{xy}/lib").mkdir(parents=True)
        register_as_older_gfxpack_did(root, xy, priority(old, EPOCH))
    # The older registration's bug: 14.0 wins, and takes /opt/rocm/core-10 with it.
    assert resolved(root, "/opt/rocm/core-10") is None
    xy = version.rsplit(".", 1)[0]
    scripts = deb_scripts_at(example_config, root, (version,))[xy]
    configured, removed = MOVES[version]
    run_script(scripts["postinst"], "postinst", "configure", root=root)
    assert links(root) == configured
    query = run("update-alternatives", "--root", str(root), "--query", "rocm-core").stdout
    assert "rocm-core-" not in query  # no choice carries such a slave any more
    # Configuring again (dpkg-reconfigure, a file trigger) finds nothing left to move.
    run_script(scripts["postinst"], "postinst", "configure", root=root)
    assert links(root) == configured
    run_script(scripts["prerm"], "prerm", "remove", root=root)
    assert links(root) == removed


def test_a_release_an_older_gfxpack_registered_leaves_its_major_link_to_the_next_run(
    example_config, tmp_path
):
    """The documented limit: an older package's removal script deregisters only from
    rocm-core, so once its files are gone its major's link dangles until the next
    update-alternatives run on that group, which drops the missing release."""
    root = dpkg_root(tmp_path / "root")
    (root / "opt/rocm/core-10.1/lib").mkdir(parents=True)
    register_as_older_gfxpack_did(root, "10.1", priority("10.1.0", EPOCH))
    scripts = deb_scripts_at(example_config, root, ("14.0.0",))["14.0"]
    run_script(scripts["postinst"], "postinst", "configure", root=root)
    assert resolved(root, "/opt/rocm/core-10") == "/opt/rocm/core-10.1"
    # The older package's prerm, then dpkg removing its files.
    ua = ("update-alternatives", "--root", str(root))
    run(*ua, "--remove", "rocm-core", "/opt/rocm/core-10.1")
    shutil.rmtree(root / "opt/rocm/core-10.1")
    assert resolved(root, "/opt/rocm/core") == "/opt/rocm/core-14.0"
    assert resolved(root, "/opt/rocm/core-10") == "/opt/rocm/core-10.1"  # dangling
    run(*ua, "--auto", "rocm-core-10")
    assert resolved(root, "/opt/rocm/core-10") is None
    assert not (root / "var/lib/dpkg/alternatives/rocm-core-10").exists()


def test_a_build_at_a_version_the_priority_cannot_place_stops_with_one_line(tmp_path):
    """Before anything is written: no package with a wrapped priority."""
    config = write_config(tmp_path / "package.json", Postinstall="True")
    make_tree(tmp_path / "artifacts")
    result = build(tmp_path, tmp_path / "artifacts", "--rocm-version", "64.0.0", config=config)
    assert result.exit_code == 1
    assert result.output == (
        "error: ROCm version '64.0.0': the major 64 is above 63, the largest the "
        "update-alternatives priority can order\n"
    )
    assert not (tmp_path / "out").exists()
