"""Every kind a spec can name is a class of its stage, registered under that name."""

import typing

import pytest

from jitagent.harness.spec import ActionSpec, MemorySpec, PlanningSpec
from jitagent.runtime.actions import Action
from jitagent.runtime.memory import Memory
from jitagent.runtime.planning import Planning
from jitagent.runtime.verify import Verify
from jitagent.runtime.voting import Vote


@pytest.mark.parametrize("stage, field", [
    (Memory, MemorySpec.model_fields["kind"]), (Planning, PlanningSpec.model_fields["kind"]),
    (Action, ActionSpec.model_fields["kind"]), (Verify, ActionSpec.model_fields["verify"]),
    (Vote, ActionSpec.model_fields["vote"])])
def test_each_kind_the_spec_names_is_a_class_of_its_stage(stage, field):
    assert set(stage.kinds) == set(typing.get_args(field.annotation))
    assert all(issubclass(kind, stage) for kind in stage.kinds.values())
