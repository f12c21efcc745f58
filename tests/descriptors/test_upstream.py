"""Real upstream descriptor sets load to the results their fixture README documents."""

from __future__ import annotations

import pytest

from gfxpack.descriptors import SymbolRegistry, engine_hex
from tests.conftest import SHARED, shared_path
from tests.descriptors.helpers import load, problems, summary

SETS = SHARED / "fixtures" / "upstream-descriptors"


@pytest.fixture(autouse=True)
def _upstream_sets_present() -> None:
    """Every test here reads the shared fixtures: skip, naming them, when they are absent."""
    shared_path("fixtures", "upstream-descriptors")


# name -> (engines {name: {pack: kernel count}}, engine UUID and hex id, WARN+ codes)
EXPECTED = {
    "conv_bias": (
        {"Hackweek:ConvBias": {"Hackweek:conv_bias": 3}},
        ("02139f60-f0f6-4709-a750-07c4559a0732", "0xCC121B3D99E8C7A5"),
        ["D207"],
    ),
    "batchnorm_inference": (
        {"hipkernel:BatchnormInference": {"hipkernel:batchnorm_inference": 9}},
        ("1f01bd0c-a36c-425c-83aa-2c5a056b2178", "0x2BD5168C29DECA22"),
        ["D207"],
    ),
    "conv_pointwise_rtc": (
        {"hipkernel:ConvPointwiseRtc": {"hipkernel:conv_pointwise_rtc": 9}},
        ("499fdc52-4aab-4d1a-884c-39ae48db749c", "0x971862E7F25E5E68"),
        ["D207"],
    ),
    "rmsnorm": (
        {"hipkernel:RMSnorm": {"hipkernel:rmsnorm_fwd": 1, "hipkernel:rmsnorm_bwd": 1}},
        ("67e83ac7-6d91-57cb-b330-a5a565d92bfa", "0x39C92D76B4C2BA9D"),
        [],
    ),
    "rmsnorm_pre_graph_match": ({}, None, ["D213", "D213", "D408"]),
    "conv_fwd": ({}, None, ["D213", "D408", "D407"]),
    "conv_fwd_pre_graph_match": (
        {"hipkernel:ConvFwd": {"hipkernel:conv_fwd": 3}},
        ("4e06e981-aaf2-4fe1-836d-09c221009a0c", "0xF6975AB2C79B088E"),
        [],
    ),
    "pointwise_pre_graph_match": (
        {
            "hipkernel:Pointwise": {
                "hipkernel:pointwise_add": 3,
                "hipkernel:pointwise_mul": 3,
                "hipkernel:pointwise_sub": 3,
            }
        },
        ("8f1a6c30-7d24-4a0e-9b51-2c6d84f0a911", "0x9E50BEF3DCA66EDF"),
        [],
    ),
    "pointwise_unit-l5": ({}, None, ["D208", "D208", "D409", "D409", "D409"]),
    "packed_pointwise": ({}, None, ["D208", "D208", "D408"]),
}

SYMBOLS = {
    "conv_bias": {
        "graph_match": ["Hackweek.conv_bias.graph_match"],
        "kernel_match": ["Hackweek.conv_bias.kernel_match"],
        "dispatch": ["Hackweek.conv_bias.dispatch"],
        "score": ["Hackweek.conv_bias.score"],
    },
    "rmsnorm": {
        "graph_match": [
            "hipkernel.rmsnorm.graph_match",
            "hipkernel.rmsnorm.is_forward",
            "hipkernel.rmsnorm.is_backward",
        ],
        "dispatch": ["hipkernel.rmsnorm_fwd.dispatch", "hipkernel.rmsnorm_bwd.dispatch"],
        "score": ["hipkernel.rmsnorm.score"],
    },
    "pointwise_pre_graph_match": {
        "graph_match": [
            f"hipkernel.pointwise.{s}"
            for s in ("graph_match", "add_match", "mul_match", "sub_match")
        ],
        "kernel_match": ["hipkernel.pointwise.kernel_match"],
        "dispatch": ["hipkernel.pointwise.dispatch"],
        "score": ["hipkernel.pointwise.score"],
    },
}


def counts(result):
    return {
        engine: {pack: len(kernels) for pack, kernels in packs.items()}
        for engine, packs in summary(result).items()
    }


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_upstream_set_loads_as_documented(name):
    engines, identity, codes = EXPECTED[name]
    result = load(SETS / name)
    assert counts(result) == engines
    assert sorted(problems(result)) == sorted(codes)
    if identity:
        (engine,) = result.sets
        assert (engine.engine.id, engine_hex(engine.engine_id)) == identity


@pytest.mark.parametrize("name", sorted(SYMBOLS))
def test_supplying_the_listed_symbols_changes_nothing(name):
    result = load(SETS / name, registry=SymbolRegistry(SYMBOLS[name]))
    assert counts(result) == EXPECTED[name][0]
    assert "D510" not in problems(result, at_least=0)


def test_rmsnorm_carries_its_sdk_version_and_comments_are_read():
    (engine,) = load(SETS / "rmsnorm").sets
    assert engine.engine.body.sdk_version == (1, 2, 0)


def test_conv_fwd_pre_graph_match_lists_matchers_and_kernels_in_authored_order():
    (engine,) = load(SETS / "conv_fwd_pre_graph_match").sets
    (pack,) = engine.packs
    assert [m.id[:8] for m in pack.matchers] == ["b833015e", "91d0e798"]
    assert [k.name for k in pack.kernels] == [
        "conv_fwd.f32_block64",
        "conv_fwd.f32_block256",
        "conv_fwd.f16_block64",
    ]


@pytest.mark.parametrize(
    ("first", "second", "conflicts", "collapses"),
    [
        ("rmsnorm", "rmsnorm_pre_graph_match", 3, 4),
        ("conv_fwd", "conv_fwd_pre_graph_match", 1, 5),
        ("pointwise_pre_graph_match", "pointwise_unit-l5", 3, 6),
    ],
)
def test_sets_loaded_together(first, second, conflicts, collapses):
    """Across two roots, the later differing copies are refused (D303), equal ones collapse
    (D302). Differing files that fail to parse (D213, D208) never reach the catalog, so only
    the UED and UMDs of rmsnorm, and the UED of conv_fwd, conflict."""
    result = load(SETS / first, SETS / second)
    assert problems(result).count("D303") == conflicts
    assert problems(result, at_least=0).count("D302") == collapses
