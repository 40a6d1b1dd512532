"""Design-time checks of issue 13: impossible pairings fail at once; the new words and flags parse."""

from __future__ import annotations

import time

import pytest

from scenegen.design import design
from scenegen.design.rules import parse
from scenegen.errors import PromptError


def _goals(prompt: str) -> list[tuple]:
    return [(g.subject, g.predicate, g.object) for g in parse(prompt).goals]


def test_the_plate_in_the_cup_fails_in_the_designer_at_once():
    t = time.perf_counter()
    with pytest.raises(PromptError) as err:
        design("put the plate in the cup", 4, seed=0)
    assert time.perf_counter() - t < 1.0
    msg = str(err.value)
    assert "\n" not in msg
    assert "the plate (16.0 cm across at its smallest) cannot go in the cup (6.0-8.0 cm across)" in msg
    assert "bowl" in msg                                 # it suggests a receptacle the plate fits in


@pytest.mark.parametrize("prompt, subject, receptacle", [
    ("put the large apple in the small cup", "apple", "cup"),
    ("put the bowl in the glass", "bowl", "glass"),
    ("put the bowl in the mug", "bowl", "mug"),
    ("put the plate on the block", "plate", "block"),
    ("stack the plate on the phone", None, None),        # a phone is not a support at all
])
def test_impossible_pairings_name_both_objects_and_their_sizes(prompt, subject, receptacle):
    with pytest.raises(PromptError) as err:
        parse(prompt)
    msg = str(err.value)
    if subject is not None:
        assert f"the {subject} (" in msg and f"the {receptacle} (" in msg and "cm across" in msg, msg


def test_a_fixed_size_is_taken_into_account():
    assert _goals("put the small apple in the large bowl") == [("apple_1", "in", "bowl_1")]
    with pytest.raises(PromptError, match=r"the apple \(7\.1 cm across at its smallest\) cannot go in the cup "
                                          r"\(6\.0-6\.7 cm across\)"):
        parse("put the large apple in the small cup")


@pytest.mark.parametrize("prompt, goals", [
    ("put the toy car in the box", [("toy_car_1", "in", "box_1")]),
    ("put the spatula on the pan", [("spatula_1", "on", "pan_1")]),
    ("put the egg in the pan", [("egg_1", "in", "pan_1")]),
    ("put the peach in the pot", [("peach_1", "in", "pot_1")]),
    ("put the spoon in the glass", [("spoon_1", "in", "glass_1")]),
    ("put the knife and the scissors in the toolbox",
     [("knife_1", "in", "toolbox_1"), ("scissors_1", "in", "toolbox_1")]),
    ("put the lid on the plate", [("lid_1", "on", "plate_1")]),
    ("put the phone next to the remote", [("phone_1", "near", "remote_1")]),
    ("put the soap on the sponge", None),                # a sponge is not a support
    ("put the tennis ball in the mug", [("tennis_ball_1", "in", "mug_1")]),
    ("put the kettle next to the teapot", [("kettle_1", "near", "teapot_1")]),
    ("put the screwdriver beside the toolbox bin", [("screwdriver_1", "near", "bin_1")]),
])
def test_new_objects_and_flags_parse(prompt, goals):
    if goals is None:
        with pytest.raises(PromptError):
            parse(prompt)
    else:
        assert _goals(prompt) == goals


def test_pot_and_glass_are_their_own_objects():
    g = parse("put the glass in the pot")
    assert sorted(o.category for o in g.objects() if o.id != "table") == ["glass", "pot"]
    assert [o.category for o in parse("put the apple in the jar").objects() if o.id != "table"] == ["apple", "jar"]
