"""The episode's step limit scales with its scene's goals (a sort of many parts gets more time), or stays fixed."""

import pytest

from scenegen.pipeline import PipelineConfig, generate
from scenegen.tasks.config import GOALS_PER_BUDGET, EpisodeConfig, episode_budget
from scenegen.tasks.episode import TaskEpisode
from tests.helpers.scene_assets import FAST


def test_the_budget_grows_once_per_goals_begun():
    assert [episode_budget(100, g) for g in (0, 1, GOALS_PER_BUDGET, GOALS_PER_BUDGET + 1, 10)] == \
        [100, 100, 100, 200, 300]


@pytest.mark.slow
def test_a_six_goal_sort_is_truncated_at_twice_the_limit_unless_scaling_is_off(tmp_path):
    pack = generate("sort 3 nuts and 3 bolts from the tote into the sorter", 1, tmp_path / "p", seed=0,
                    config=PipelineConfig(collision=FAST, preview_size=0), progress=False)
    for scale, limit in ((True, 8), (False, 4)):
        env = TaskEpisode(pack, EpisodeConfig(image_keys=(), max_episode_steps=4, steps_scale_with_goals=scale))
        try:
            env.reset(seed=0)
            assert env.step_limit == limit
            steps, truncated = 0, False
            while not truncated:
                _, _, terminated, truncated, _ = env.step([0.0] * env.action_dim)
                steps += 1
                assert not terminated
            assert steps == limit
        finally:
            env.close()
