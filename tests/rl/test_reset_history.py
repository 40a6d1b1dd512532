"""An episode depends only on its seed and scene, not on the episodes an env ran before (issue 13).

PyBullet's ``restoreState`` brings bodies, velocities and saved contacts back, but not the broadphase (the
stale pairs it still keeps, the order of its contact manifolds): in a restored world, resting objects fell
asleep at other times than in a fresh one, and an expert that succeeded in a fresh env timed out after one
more reset. Each episode now starts in a world no episode has run in (``EpisodeConfig.fresh_worlds``).
"""

import numpy as np
import pytest

from rl.envs import PickPlaceEnv
from scenegen.tasks.expert import make_expert
from tests.helpers.rl_packs import pack as make_pack

CUTLERY = "put the spoon and the fork in the mug"


@pytest.fixture(scope="module")
def cutlery(tmp_path_factory):
    return make_pack(tmp_path_factory, CUTLERY, n=3, seed=1)


def _episode(env, sid, steps):
    """Proprioception, expert actions and final object poses of a seed-0 expert episode."""
    obs, _ = env.reset(seed=0, options={"scene_id": sid})
    expert = make_expert(env)
    expert.reset()
    seen, actions = [obs["proprio"].copy()], []
    for _ in range(steps):
        actions.append(expert.act(obs))
        obs, _, term, trunc, _ = env.step(actions[-1])
        seen.append(obs["proprio"].copy())
        if term or trunc:
            break
    return np.asarray(seen), np.asarray(actions), env.world.poses()


def _history(env, sid, reset_after):
    """What came before: a reset, another seed's expert episode cut short after 80 steps, maybe a reset."""
    env.reset(seed=0, options={"scene_id": sid})
    obs, _ = env.reset(seed=3, options={"scene_id": sid})
    expert = make_expert(env)
    expert.reset()
    for _ in range(80):
        obs, *_ = env.step(expert.act(obs))
    if reset_after:
        env.reset(seed=0, options={"scene_id": sid})


# with worlds restored from their snapshot (the old reset, fresh_worlds=False), scene 1 after the history with
# a last reset drifted from a fresh env at step 130, scene 2 after the one without at step 47
@pytest.mark.parametrize(("index", "reset_after"), [(1, True), (2, False)])
def test_episode_after_others_equals_a_fresh_one(cutlery, index, reset_after):
    sid = cutlery.scene_ids[index]
    fresh = PickPlaceEnv(cutlery, image_keys=(), max_episode_steps=200)
    used = PickPlaceEnv(cutlery, image_keys=(), max_episode_steps=200)
    _history(used, sid, reset_after)
    a, b = _episode(fresh, sid, 200), _episode(used, sid, 200)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert a[2] == b[2]
    assert used.cache.builds == 3 + reset_after  # every reset after the first started in a world built again
    fresh.close()
    used.close()
