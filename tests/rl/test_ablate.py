"""Diversity ablations: nested pools, knob restrictions, equal budgets, reports, runners, end to end with resume."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from rl import ablate_arm
from rl.ablate import (
    AblationConfig,
    AblationError,
    Arm,
    RunnerConfig,
    arms,
    instance_key,
    layout_key,
    nested_order,
    pool_prompt,
    restrict,
    run_ablation,
    training_ids,
)
from rl.ablate_arm import ArmTask, dispatch
from rl.ablate_report import collect, markdown, write_results
from scenegen.cli import main
from scenegen.errors import BudgetError, ConfigError


# ---------------------------------------------------------------------------------------------- fake scenes
def fake_scene(i: int, instance: int, quadrant: tuple[bool, bool]) -> SimpleNamespace:
    """A scene with a table, a banana (instance ``instance``) at ``quadrant``, a bowl and a distractor."""
    objs = [SimpleNamespace(id="table", category="table", role="support"),
            SimpleNamespace(id="banana_1", category="banana", role="target"),
            SimpleNamespace(id="bowl_1", category="bowl", role="receptacle"),
            SimpleNamespace(id="mug_1", category="mug", role="distractor")]
    x, y = (0.6 if quadrant[0] else 0.4), (0.1 if quadrant[1] else -0.1)
    pose = SimpleNamespace
    poses = {"table": pose(position=(0.5, 0.0, 0.0)), "banana_1": pose(position=(x, y, 0.1)),
             "bowl_1": pose(position=(0.45, 0.05, 0.1)), "mug_1": pose(position=(0.7 - 0.01 * i, 0.2, 0.1))}
    graph = SimpleNamespace(support_id="table", objects=lambda: objs)
    assets = {"table": "t", "banana_1": f"banana-{instance}", "bowl_1": "bowl-0", "mug_1": f"mug-{i}"}
    return SimpleNamespace(graph=graph, assets=assets, poses=poses, settled=None)


def fake_pool(n: int = 200) -> dict:
    return {f"{i:04x}" + "ab" * 30: fake_scene(i, i % 5, (i % 2 == 0, i % 3 == 0)) for i in range(n)}


def test_pools_are_nested_for_every_knob_setting():
    pool = fake_pool()
    order = nested_order(list(pool), seed=0)
    assert sorted(order) == sorted(pool) and order == nested_order(list(reversed(pool)), 0)
    assert order != nested_order(list(pool), 1)
    for inst, lay in ((0, 0), (2, 0), (0, 1), (1, 2)):
        sets = [training_ids(order, pool, Arm(n, instances=inst, layouts=lay)) for n in (1, 5, 10)]
        assert [len(s) for s in sets] == [1, 5, 10]
        for small, large in zip(sets, sets[1:], strict=False):
            assert large[: len(small)] == small  # N=1 ids among N=5 ids among N=10 ids
        if inst:
            assert len({instance_key(pool[s]) for s in sets[-1]}) <= inst
        if lay:
            assert len({layout_key(pool[s]) for s in sets[-1]}) <= lay
    full = training_ids(order, pool, Arm(10))
    assert len({instance_key(pool[s]) for s in full}) > 2 and len({layout_key(pool[s]) for s in full}) > 1
    with pytest.raises(ConfigError, match="larger pool"):
        training_ids(order, pool, Arm(60, instances=1, layouts=1))


def test_restrict_keeps_the_first_keys_met():
    keys = {"a": 1, "b": 2, "c": 1, "d": 3, "e": 2}
    assert restrict("abcde", keys, 2) == ["a", "b", "c", "e"]
    assert restrict("abcde", keys, 0) == list("abcde")


def test_arms_are_the_product_of_the_knobs_and_configs_are_checked():
    cfg = AblationConfig(ns=(5, 1), dr=(True, False), distractors=(0, 2))
    a = arms(cfg)
    assert len(a) == 2 * 2 * 2 and [x.n for x in a[:2]] == [1, 5]
    assert {x.name for x in a} >= {"n001-d0", "n005-d2-nodr"} and len({x.name for x in a}) == len(a)
    assert Arm(10, instances=3, layouts=2).name == "n010-i3-l2"
    for bad, match in (({"ns": ()}, "ns"), ({"ns": (0,)}, "ns"), ({"ns": (5, 5)}, "distinct"),
                       ({"pool_size": 3, "ns": (1, 5)}, "pool_size"), ({"ood_seed": 0}, "must differ"),
                       ({"dr": ()}, "dr"), ({"seeds": 0}, "seeds")):
        with pytest.raises(ConfigError, match=match):
            AblationConfig(**bad)
    with pytest.raises(ConfigError, match="backend"):
        RunnerConfig(backend="slurm")
    assert pool_prompt("put the banana in the bowl", 2).endswith("with 2 distractors")
    with pytest.raises(ConfigError, match="sets its distractors"):
        pool_prompt("put the banana in the bowl with 3 distractors", 2)


def test_cli_rejects_bad_values_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["ablate", "put the banana in the bowl", "--n", "0,5", "-o", str(tmp_path / "abl")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "AblationConfig.ns" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "abl").exists()


# ---------------------------------------------------------------------------------------------- reports
def _score(s: int, n: int) -> dict:
    return {"successes": s, "episodes": n, "success_rate": s / n}


def _write_synthetic(root, rates: dict[int, tuple[int, int]], seeds: int = 2, n_ep: int = 100) -> None:
    """An ablation folder whose runs scored ``rates[N] = (ID successes, OOD successes)`` per seed."""
    plan = {"spec": {"prompt": "put the banana in the bowl", "ablation": {"seeds": seeds, "budget_env_steps": 500}},
            "init": "bc", "ood_set": {"path": "ood", "content_hash": "f" * 64}, "arms": {}}
    for n, (ids, oods) in rates.items():
        name = f"n{n:03d}"
        plan["arms"][name] = {"n": n, "distractors": None, "instances": 0, "layouts": 0, "dr": True}
        for s in range(seeds):
            res = {"arm": name, "seed": s, "status": "done",
                   "train": {"budget_env_steps": 500, "env_steps": 512, "iterations": 2, "train_seconds": 6.0,
                             "gpu_minutes": 0.05},
                   "id": {**_score(ids, n_ep), "env_steps": 1000, "seconds": 2.0},
                   "ood": {**_score(oods, n_ep), "env_steps": 1000, "seconds": 2.0,
                           "split": {"novel_category": _score(oods // 2, n_ep // 2), "seen_categories": None}}}
            f = root / "runs" / name / f"seed-{s}" / "result.json"
            f.parent.mkdir(parents=True)
            f.write_text(json.dumps(res))
    (root / "plan.json").write_text(json.dumps(plan))


def test_results_pool_seeds_and_test_the_papers_shape(tmp_path):
    _write_synthetic(tmp_path, {1: (90, 50), 5: (85, 65), 50: (80, 78)})
    res = collect(tmp_path)
    assert res["complete"] and [a["arm"] for a in res["arms"]] == ["n001", "n005", "n050"]
    a1 = res["arms"][0]
    assert a1["id"]["episodes"] == 200 and a1["id"]["success_rate"] == pytest.approx(0.9)
    assert a1["gap"]["diff"] == pytest.approx(0.4) and a1["gap"]["diff_ci95"][0] > 0.25
    assert a1["ood_novel_category"]["episodes"] == 100 and a1["env_steps"] == [512, 512]
    (shape,) = res["shape"]
    assert shape["n_small"] == 1 and shape["n_large"] == 50 and shape["verdict"].startswith("holds")
    assert shape["ood_rise"]["diff"] == pytest.approx(0.28) and shape["gap_shrink"]["diff_ci95"][0] > 0
    write_results(tmp_path, res)
    md = (tmp_path / "results.md").read_text()
    assert "| n050 | 50 |" in md and "holds" in md and (tmp_path / "results.png").stat().st_size > 1000
    flat = tmp_path / "flat"
    flat.mkdir()
    _write_synthetic(flat, {1: (50, 50), 50: (50, 51)})
    assert collect(flat)["shape"][0]["verdict"] != shape["verdict"]


def test_a_missing_seed_leaves_the_ablation_incomplete(tmp_path):
    _write_synthetic(tmp_path, {1: (50, 40), 5: (50, 45)})
    (tmp_path / "runs" / "n005" / "seed-1" / "result.json").unlink()
    res = collect(tmp_path, [{"arm": "n005", "seed": 1, "status": "failed", "error": "RuntimeError: boom"}])
    a5 = res["arms"][1]
    assert not res["complete"] and a5["seeds_done"] == 1 and a5["errors"] == ["RuntimeError: boom"]
    assert "Not complete" in markdown(res)


# ---------------------------------------------------------------------------------------------- runners
def _task(name: str, seed: int = 0, **kw) -> ArmTask:
    return ArmTask(name, seed, f"/nonexistent/{name}", "pool", ("s",), "init", "id", "ood", {}, True, 10, 32, **kw)


def stub_run(task: ArmTask) -> dict:
    if task.name == "boom":
        raise RuntimeError("arm exploded")
    time.sleep(0.2)
    return {"arm": task.name, "seed": task.seed, "status": "done"}


def test_sequential_runner_reports_failures_and_skips_work_past_the_deadline():
    out = dispatch([_task("a"), _task("boom"), _task("b")], run=stub_run)
    assert [o["status"] for o in out] == ["done", "failed", "done"] and "arm exploded" in out[1]["error"]
    late = dispatch([_task("a")], run=stub_run, deadline=time.time() - 1)
    assert late[0]["status"] == "unfinished"
    with pytest.raises(ConfigError):
        dispatch([_task("a")], backend="threads", run=stub_run)


@pytest.mark.slow
def test_process_runner_runs_arms_concurrently():
    tasks = [_task(f"a{i}") for i in range(4)] + [_task("boom")]
    t0 = time.perf_counter()
    out = dispatch(tasks, backend="process", concurrent=4, run=stub_run)
    assert [o["status"] for o in out] == ["done"] * 4 + ["failed"]
    assert [o["arm"] for o in out[:4]] == ["a0", "a1", "a2", "a3"] and time.perf_counter() - t0 < 60


@pytest.mark.slow
def test_ray_runner_gives_each_arm_its_resources():
    pytest.importorskip("ray")
    out = dispatch([_task("a"), _task("boom"), _task("b", 1)], backend="ray", concurrent=2, run=stub_run)
    assert [o["status"] for o in out] == ["done", "failed", "done"] and out[2]["seed"] == 1
    with pytest.raises(Exception, match="no GPU"):
        dispatch([_task("a", gpu_fraction=0.5)], backend="ray", run=stub_run)


def test_overrunning_arms_are_given_up_on(monkeypatch):
    monkeypatch.setattr(ablate_arm, "OVERRUN_S", 0.0)
    with pytest.raises(BudgetError, match="past the ablation's deadline"):
        dispatch([_task("slow")], backend="process", run=_sleepy, deadline=time.time() + 0.5)


def _sleepy(task: ArmTask) -> dict:
    time.sleep(30)
    return {}


# ---------------------------------------------------------------------------------------------- end to end
def _tiny(tmp_path_factory):
    from rl.bc import BCConfig
    from rl.policies.configuration_flow_vla import FlowVLAConfig, TextConfig, VisionConfig
    from rl.ppoflow import PPOFlowConfig
    from tests.helpers.rl_packs import CONFIG
    from tests.helpers.scene_assets import cache_dir

    cfg = AblationConfig(ns=(1, 2), seeds=1, budget_env_steps=12, ood_configs=2, id_configs=2, max_episode_steps=10,
                         image_size=32, qa=False, bc_scenes=1, bc_demos=1, dr=(True, False))
    policy = FlowVLAConfig(chunk_size=4, n_action_steps=2, num_inference_steps=2, d_model=16, heads=2, obs_layers=1,
                           expert_layers=1, ff_mult=2, vision=VisionConfig(channels=(8, 16), grid=2),
                           text=TextConfig(layers=0))
    kw = {"ppo": PPOFlowConfig(num_envs=2, decisions_per_env=3, k=1, minibatch_size=3, update_epochs=1),
          "bc": BCConfig(steps=5, batch_size=4, warmup_steps=1, log_every=1, checkpoint_every=100, device="cpu"),
          "policy": policy, "pipeline": CONFIG, "cache_dir": str(cache_dir(tmp_path_factory)), "progress": False,
          "runner": RunnerConfig(env_backend="sync", eval_workers=1)}
    return cfg, kw


@pytest.mark.slow
def test_two_arm_ablation_end_to_end_and_resume_after_a_killed_arm(tmp_path, tmp_path_factory, monkeypatch):
    import torch

    from rl.evalset import load_evalset
    from scenegen.pack.reader import load_pack

    torch.set_num_threads(1)
    cfg, kw = _tiny(tmp_path_factory)
    out = tmp_path / "abl"
    trained: list[str] = []
    real_train = ablate_arm.train_arm

    def killed_n2(task):
        trained.append(task.name)
        if task.name == "n002":
            raise RuntimeError("simulated kill of arm n002")
        return real_train(task)

    monkeypatch.setattr(ablate_arm, "train_arm", killed_n2)
    with pytest.raises(AblationError, match="n002"):
        run_ablation("put the banana in the bowl", out, cfg, **kw)
    assert trained == ["n001", "n002", "n001-nodr", "n002-nodr"]  # the N axis x the DR axis
    assert (out / "runs/n001/seed-0/result.json").is_file() and not (out / "runs/n002/seed-0/result.json").exists()
    partial = json.loads((out / "results.json").read_text())
    assert not partial["complete"] and partial["arms"][0]["complete"] and "simulated kill" in \
        partial["arms"][1]["errors"][0] and partial["arms"][3]["complete"]
    first = (out / "runs/n001/seed-0/result.json").stat().st_mtime_ns

    with pytest.raises(ConfigError, match="already holds an ablation"):
        run_ablation("put the banana in the bowl", out, cfg, **kw)
    with pytest.raises(ConfigError, match="budget_env_steps|ablation"):
        run_ablation("put the banana in the bowl", out, dataclasses.replace(cfg, budget_env_steps=24),
                     resume=True, **kw)

    trained.clear()
    monkeypatch.setattr(ablate_arm, "train_arm", lambda t: (trained.append(t.name), real_train(t))[1])
    res = run_ablation("put the banana in the bowl", out, cfg, resume=True, **kw)
    assert trained == ["n002"] and res["complete"]  # only the killed arm ran again
    assert (out / "runs/n001/seed-0/result.json").stat().st_mtime_ns == first

    plan = json.loads((out / "plan.json").read_text())
    s1, s2 = plan["arms"]["n001"]["scene_ids"], plan["arms"]["n002"]["scene_ids"]
    assert len(s1) == 1 and len(s2) == 2 and set(s1) < set(s2)  # nested
    pool = load_pack(plan["arms"]["n001"]["pool"])
    ood = load_evalset(out / "ood")
    assert not {c["scene_id"] for c in ood.configurations} & set(pool.scene_ids)  # OOD: no arm trains on it
    for name, ids in (("n001", s1), ("n002", s2)):
        es = load_evalset(plan["arms"][name]["id_set"])
        assert {c["scene_id"] for c in es.configurations} <= set(ids)  # ID: the arm's own scenes
    results = [json.loads((out / f"runs/{n}/seed-0/result.json").read_text()) for n in ("n001", "n002")]
    budgets = {r["train"]["budget_env_steps"] for r in results}
    assert budgets == {cfg.budget_env_steps}  # equal budgets per arm
    per_iteration = 2 * 3 * 2  # envs x decisions x action steps
    assert all(cfg.budget_env_steps <= r["train"]["env_steps"] < cfg.budget_env_steps + per_iteration
               for r in results)
    nodr = [json.loads((out / f"runs/{n}-nodr/seed-0/result.json").read_text()) for n in ("n001", "n002")]
    assert [r["train"]["dr"] for r in results + nodr] == [True, True, False, False]
    assert [r["scenes"] for r in nodr] == [s1, s2] and plan["arms"]["n002-nodr"]["id_set"] == plan["arms"]["n002"][
        "id_set"]  # the DR arms differ from their DR-on twins in DR only
    assert [(a["knobs"]["n"], a["knobs"]["dr"]) for a in res["arms"]] == [(1, True), (2, True), (1, False), (2, False)]
    assert len(res["shape"]) == 2  # one N-curve per DR setting
    for r in results + nodr:
        assert r["id"]["episodes"] == 2 and r["ood"]["episodes"] == 2
        assert 0 <= r["ood"]["success_ci95"][0] <= r["ood"]["success_rate"] <= r["ood"]["success_ci95"][1]
    provs = [json.loads((out / "runs" / n / "seed-0/policy/provenance.json").read_text()) for n in ("n001", "n002")]
    assert {p["init"] for p in provs} == {str((out / "bc/run").resolve())} == {str(Path(plan["init"]).resolve())}
    seeds = {json.loads((out / "runs" / n / "seed-0/ppo/config.json").read_text())["seed"] for n in ("n001", "n002")}
    assert seeds == {0}  # the same BC initialisation and training seed: N is the only difference
    assert (out / "results.png").is_file() and "| n002 | 2 |" in (out / "results.md").read_text()


@pytest.mark.slow
def test_given_pool_init_and_ood_set_with_arms_as_ray_tasks(tmp_path, tmp_path_factory):
    pytest.importorskip("ray")
    import torch

    from rl.envs import EnvConfig, PickPlaceEnv
    from rl.evalset import make_evalset
    from rl.policies.base import STATE
    from rl.policies.configuration_flow_vla import TextConfig, resolve
    from rl.policies.modeling_flow_vla import FlowVLA
    from tests.helpers.rl_packs import pack as make_pack

    pool, other = make_pack(tmp_path_factory), make_pack(tmp_path_factory, seed=6)
    ood = make_evalset(None, tmp_path / "ood", 2, packs=[other.root], max_episode_steps=10, progress=False)
    text = pool.scene(pool.scene_ids[0]).graph.instruction
    cfg, kw = _tiny(tmp_path_factory)
    vocab = ("<pad>", "<unk>", *sorted(set(text.split())))
    env = PickPlaceEnv(pool.root, EnvConfig(image_keys=()))
    a, d = env.action_space.shape[0], env.observation_space["proprio"].shape[0]
    env.close()
    pcfg = resolve(dataclasses.replace(kw["policy"], text=TextConfig(layers=0, vocab=vocab)), action_dim=a,
                   state_dim=d, cameras=("front",), robot_type="panda", tasks=[text])
    torch.manual_seed(0)
    stats = {STATE: {"mean": [0.0] * d, "std": [1.0] * d}, "action": {"mean": [0.0] * a, "std": [0.5] * a}}
    FlowVLA(pcfg, stats).save(tmp_path / "init")
    cfg = dataclasses.replace(cfg, dr=(True,), ns=(1, 3))
    kw["runner"] = RunnerConfig(backend="ray", concurrent=2, env_backend="sync", eval_workers=1)
    res = run_ablation(text, tmp_path / "abl", cfg, pool=str(pool.root), init=str(tmp_path / "init"),
                       ood_set=str(ood.root), **kw)
    assert res["complete"] and [a["knobs"]["n"] for a in res["arms"]] == [1, 3]
    assert res["ood_set"]["content_hash"] == ood.content_hash and res["runner"]["backend"] == "ray"
    plan = json.loads((tmp_path / "abl" / "plan.json").read_text())
    assert set(plan["arms"]["n003"]["scene_ids"]) == set(pool.scene_ids) and not (tmp_path / "abl" / "bc").exists()
    with pytest.raises(ConfigError, match="share"):  # an OOD set of the pool's own scenes is refused
        same = make_evalset(None, tmp_path / "same", 2, packs=[pool.root], max_episode_steps=10, progress=False)
        run_ablation(text, tmp_path / "abl2", cfg, pool=str(pool.root), init=str(tmp_path / "init"),
                     ood_set=str(same.root), **kw)


@pytest.mark.slow
def test_a_bc_learner_ablation_trains_each_arm_on_demonstrations_of_its_own_scenes(tmp_path, tmp_path_factory):
    import torch

    from rl.data.reader import DemoDataset

    torch.set_num_threads(1)
    for bad, match in (({"learner": "dqn"}, "learner"), ({"cameras": ("top",)}, "cameras"),
                       ({"cameras": ()}, "cameras")):
        with pytest.raises(ConfigError, match=match):
            AblationConfig(**bad)
    cfg, kw = _tiny(tmp_path_factory)
    cfg = dataclasses.replace(cfg, learner="bc", bc_demos=2, dr=(True,), cameras=("front", "wrist"))
    out = tmp_path / "abl"
    with pytest.raises(ConfigError, match="drop --init"):
        run_ablation("put the banana in the bowl", out, cfg, init=str(tmp_path), **kw)
    res = run_ablation("put the banana in the bowl", out, cfg, **kw)
    assert res["complete"] and res["learner"] == "bc" and "BC from scratch on 2" in res["budget"]
    assert not (out / "bc").exists()  # no shared initialisation
    plan = json.loads((out / "plan.json").read_text())
    assert plan["init"] is None
    for name, n in (("n001", 1), ("n002", 2)):
        run = out / "runs" / name / "seed-0"
        ids = plan["arms"][name]["scene_ids"]
        ds = DemoDataset(run / "demos")
        assert len(ds) == 2  # the same number of demonstrations for every arm
        recorded = {e["scene_id"] for e in ds.episodes_meta}
        r = json.loads((run / "result.json").read_text())
        assert r["train"]["learner"] == "bc" and r["train"]["demos"] == 2 and r["train"]["bc_steps"] == 5
        assert r["train"]["policy"] == str(run / "bc" / "policy") and r["id"]["episodes"] == 2
        assert 0 < r["train"]["bc_seconds"] <= r["train"]["train_seconds"] and r["train"]["gpu_minutes"] == 0.0
        assert len(ids) == n and recorded == set(ids)  # demonstrations of the arm's own scenes, all of them
        assert ds.cameras == ["front", "wrist"]
    assert "BC from scratch" in (out / "results.md").read_text()


def test_knob_effects_compare_arms_that_differ_in_one_knob_only():
    from rl.ablate_report import knob_effects

    def arm(name, n, dr, ids, oods):
        knobs = {"n": n, "distractors": None, "instances": 0, "layouts": 0, "dr": dr}
        return {"arm": name, "knobs": knobs, "id": {"successes": ids, "episodes": 40},
                "ood": {"successes": oods, "episodes": 40}}
    arms = [arm("n010", 10, True, 30, 4), arm("n010-nodr", 10, False, 36, 0), arm("n050", 50, True, 20, 2),
            arm("n050-nodr", 50, False, 20, 2)]
    eff = knob_effects(arms)
    assert [(e["knob"], e["n"], e["from"], e["to"]) for e in eff] == [("dr", 10, True, False), ("dr", 50, True, False)]
    assert eff[0]["id"]["diff"] == pytest.approx(6 / 40) and eff[0]["ood"]["diff"] == pytest.approx(-4 / 40)
    assert eff[1]["id"]["diff"] == 0 and eff[1]["ood"]["p_value"] == 1.0
    assert eff[0]["id"]["diff_ci95"][0] < eff[0]["id"]["diff"] < eff[0]["id"]["diff_ci95"][1]
    assert knob_effects([arms[0], arms[2]]) == []  # N alone is the shape's business, not a knob effect
