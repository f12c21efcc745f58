"""The one AMDGPU processor table: its invariants, LLVM's e_flags values, the kernel
driver's numbers, processor order, the name checks and the code-object check."""

from __future__ import annotations

import pytest

from gfxpack import amdgpu
from gfxpack.amdgpu import (
    GENERIC_OF,
    GENERIC_PROCESSORS,
    MACH,
    PROCESSORS,
    TABLE,
    TargetId,
    code_object_problem,
    gfx_target_version,
    owner_of,
    processor_of,
    processor_problem,
    sort_targets,
    target_order,
)
from gfxpack.file_arch import file_arch
from gfxpack.plan import targets as plan_targets
from tests.code_objects import code_object


def test_every_processor_has_one_row_with_e_flags_and_a_driver_number():
    names = [p.name for p in TABLE]
    assert len(names) == len(set(names)) and len(TABLE) > 50
    assert not set(names) & GENERIC_PROCESSORS
    for processor in TABLE:
        assert 0x20 <= processor.mach <= 0xFF, processor
        assert processor.gfx_target_version > 0, processor
        # A variant target (gfx1250-strict) reports its owner's number: the device is one.
        assert processor_of(processor.gfx_target_version) == owner_of(processor.name)
    # No two names share an EF_AMDGPU_MACH value: e_flags name one processor.
    assert len(set(MACH.values())) == len(MACH) == len(TABLE) + len(GENERIC_PROCESSORS)
    # Every generic target covers processors, and every processor's generic is one.
    assert set(GENERIC_OF.values()) == GENERIC_PROCESSORS
    assert all(name.endswith("-generic") for name in GENERIC_PROCESSORS)


def test_every_owner_and_its_targets_are_processors_of_the_table():
    """Target owners (TheRock#8280): one row per owner, each of its targets a current
    processor, the owner first, no target under two owners, and no owner owned."""
    assert amdgpu.OWNERS["gfx1250"] == ("gfx1250", "gfx1250-strict")
    seen: list[str] = []
    for owner, targets in amdgpu.OWNERS.items():
        assert targets[0] == owner
        assert set(targets) <= PROCESSORS, targets
        seen.extend(targets)
        for target in targets:
            assert owner_of(target) == owner
            # One device: the driver reports the owner's number for each target.
            assert gfx_target_version(target) == gfx_target_version(owner)
    assert len(seen) == len(set(seen))
    assert owner_of("gfx942") == "gfx942"
    # The variant is a target of its own: its e_flags, its id, its place after gfx1250.
    assert MACH["gfx1250-strict"] == 0xEB
    assert str(TargetId.parse("gfx1250-strict")) == "gfx1250-strict"
    assert processor_problem("gfx1250-strict") is None
    assert sort_targets(["gfx1251", "gfx1250-strict", "gfx1250"]) == [
        "gfx1250",
        "gfx1250-strict",
        "gfx1251",
    ]


@pytest.mark.parametrize(
    ("name", "value"),
    [  # llvm/include/llvm/BinaryFormat/ELF.h, EF_AMDGPU_MACH_AMDGCN_*
        ("gfx900", 0x2C),
        ("gfx906", 0x2F),
        ("gfx908", 0x30),
        ("gfx90a", 0x3F),
        ("gfx940", 0x40),
        ("gfx942", 0x4C),
        ("gfx950", 0x4F),
        ("gfx1030", 0x36),
        ("gfx1100", 0x41),
        ("gfx1151", 0x4A),
        ("gfx1170", 0x5D),
        ("gfx1201", 0x4E),
        ("gfx1250", 0x49),
        ("gfx1251", 0x5A),
        ("gfx9-4-generic", 0x5F),
        ("gfx11-generic", 0x54),
        ("gfx12-5-generic", 0x5B),
    ],
)
def test_e_flags_values_are_llvms(name, value):
    assert MACH[name] == value


@pytest.mark.parametrize(
    ("name", "version"),
    [  # what /sys/class/kfd/kfd/topology/nodes/*/properties reports as gfx_target_version
        ("gfx906", 90006),
        ("gfx908", 90008),
        ("gfx90a", 90010),
        ("gfx90c", 90012),
        ("gfx942", 90402),
        ("gfx950", 90500),
        ("gfx1010", 100100),
        ("gfx1012", 100102),
        ("gfx1100", 110000),
        ("gfx1151", 110501),
        ("gfx1201", 120001),
        ("gfx1251", 120501),
    ],
)
def test_gfx_target_version_is_the_drivers_number(name, version):
    assert gfx_target_version(name) == version
    assert processor_of(version) == name


def test_generic_targets_and_names_that_are_no_processor_have_no_driver_number():
    assert gfx_target_version("gfx9-4-generic") is None
    assert gfx_target_version("gfx94") is None and processor_of(90401 + 1000) is None


def test_removed_processors_are_recognised_in_code_objects_but_never_named():
    assert {"gfx940", "gfx941"} <= set(MACH) and not {"gfx940", "gfx941"} & PROCESSORS
    assert amdgpu.check_target("gfx940") is not None


def test_plan_split_and_kpack_read_the_same_table():
    assert plan_targets.PROCESSORS is PROCESSORS
    assert plan_targets.check_target is amdgpu.check_target
    # The splitter once missed what the planner knew: gfx1170 and gfx1251.
    assert file_arch("library/TensileLibrary_gfx1251.co") == "gfx1251"
    assert file_arch("amdgcn/bitcode/oclc_isa_version_1170.bc") == "gfx1170"
    assert file_arch("db/gfx942130.db.txt") == "gfx942"  # longest name first


def test_processors_sort_in_llvm_order_and_generics_after_their_family():
    given = ["gfx1201", "gfx1151", "gfx1100", "gfx950", "gfx942", "gfx90a"]
    assert sort_targets(given) == ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1151", "gfx1201"]
    # A generic target follows the processors its name numbers (Decision 16):
    # gfx9-4-generic every gfx94N, gfx11-generic every gfx11NN.
    for generic in GENERIC_PROCESSORS:
        numbers = tuple(map(int, generic[3:].removesuffix("-generic").split("-")))
        family = [p for p in PROCESSORS if target_order(p)[1 : 1 + len(numbers)] == numbers]
        assert family and all(target_order(p) < target_order(generic) for p in family), generic
    # One position per processor; a variant target (gfx1250-strict) right after its owner.
    numbers = [target_order(name)[1:6] for name in sort_targets(PROCESSORS)]
    assert numbers == sorted(set(numbers))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("GFX942", "'GFX942' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"),
        (
            "banana",
            "'banana' is not an AMDGPU processor LLVM knows (expected a processor such as gfx942)",
        ),
        ("gfx9420", "'gfx9420' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"),
        ("gfx94", "'gfx94' is not an AMDGPU processor LLVM knows (did you mean gfx942?)"),
        (
            "gfx94X-dcgpu",
            "'gfx94X-dcgpu' is a family of processors, not a processor; give one of them (gfx942)",
        ),
        (
            "gfx110X-all",
            "'gfx110X-all' is a family of processors, not a processor; give one of them "
            "(gfx1100, gfx1101, gfx1102, gfx1103)",
        ),
        (
            "gfx9-4-generic",
            "'gfx9-4-generic' is a generic target, not a processor; give one of the "
            "processors it covers (gfx942, gfx950)",
        ),
        (
            "gfx942:xnack+",
            "'gfx942:xnack+': no target features here; give the processor alone (gfx942)",
        ),
    ],
)
def test_a_name_that_is_not_one_processor_is_refused_with_a_suggestion(name, message):
    assert processor_problem(name) == message


def test_features_and_generic_targets_where_they_are_allowed():
    assert processor_problem("gfx942:sramecc+:xnack-", features=True) is None
    assert processor_problem("gfx9-4-generic", generic=True) is None
    assert processor_problem("gfx942:tgsplit+", features=True) == (
        "'gfx942:tgsplit+': 'tgsplit+' is not a target feature (expected xnack+, xnack-, "
        "sramecc+ or sramecc-, each at most once)"
    )


# --- code objects ------------------------------------------------------------------------

XNACK_ON, SRAMECC_OFF = 0x300, 0x800  # e_flags, code object v4 and later


@pytest.mark.parametrize(
    ("code", "problem"),
    [
        (b"\x7fELF" + bytes(20), "not an ELF file, expected an AMDGPU code object"),
        (b"PK\x03\x04" + bytes(100), "not an ELF file, expected an AMDGPU code object"),
        (
            b"\x7fELF\x01" + code_object("gfx942")[5:],
            "not a 64-bit little-endian ELF file, expected an AMDGPU code object",
        ),
        (code_object("gfx942", machine=62), "e_machine 62, expected 224 (AMDGPU)"),
        (code_object("gfx942", osabi=0), "OS/ABI 0, expected 64 (HSA)"),
        (code_object("gfx1100"), "e_flags say gfx1100, --arch says gfx942"),
        (code_object("gfx9-4-generic"), "e_flags say gfx9-4-generic, --arch says gfx942"),
    ],
    ids=["short", "zip", "32-bit", "x86-64", "not-hsa", "other-processor", "generic"],
)
def test_a_file_that_is_not_a_code_object_of_its_arch_is_named(code, problem):
    target = TargetId.parse("gfx942")
    assert code_object_problem(code, target, exact=False, claimed="--arch") == problem


def test_a_bare_processor_holds_its_variants_a_target_id_only_its_own():
    variant = code_object("gfx942", flags=XNACK_ON | SRAMECC_OFF)
    assert code_object_problem(variant, TargetId.parse("gfx942"), exact=False) is None
    assert code_object_problem(variant, TargetId.parse("gfx942:sramecc-:xnack+")) is None
    # A bundle entry names exactly what it was compiled for: split keeps checking that.
    assert code_object_problem(variant, TargetId.parse("gfx942")) == (
        "e_flags say sramecc-, the target id gfx942 does not"
    )
    xnack_on = code_object("gfx942", flags=XNACK_ON)
    assert code_object_problem(xnack_on, TargetId.parse("gfx942:xnack-"), exact=False) == (
        "e_flags say xnack+, the target id gfx942:xnack- does not"
    )
