"""Evaluation-protocol commands of the ``scenegen`` CLI: ``evalset``, ``compare``, ``diagnose``, ``dr``, ``correlate``.

``scenegen evalset make`` freezes a tiered eval set, ``evalset run`` scores a policy on it,
``compare`` tests runs against each other, ``diagnose`` ranks a run's failure modes and their
conditions, ``dr propose`` turns a diagnosis into DR weights, and ``correlate`` measures how
well simulation scores track real (or target-condition) scores. See ``docs/evaluation.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from scenegen.errors import ConfigError


def _echo_json(data: object) -> None:
    click.echo(json.dumps(data, indent=1, sort_keys=True, default=str))


# ---------------------------------------------------------------------------------------------- evalset
@click.group()
def evalset() -> None:
    """Frozen, hashed, tiered evaluation sets (make, show, bump, export, run)."""


@evalset.command("make", epilog="""\b
Examples:
  scenegen evalset make "put the banana in the bowl" --tiers 1-5 -n 20 -o sets/banana
  scenegen evalset make --pack out/demo -n 16 -o sets/demo --repeats 3
""")
@click.argument("source", required=False)
@click.option("-n", "per_tier", type=int, required=True, help="Configurations per tier.")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="The set's folder (new).")
@click.option("--tiers", default=None, help="Tiers to generate, e.g. 1-5 or 1,3 (default: the prompt as written).")
@click.option("--pack", "packs", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Reference an existing pack (by its content hash) instead of generating; once per tier.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of generation and of reset seeds.")
@click.option("--repeats", type=int, default=1, show_default=True, help="Rollouts per configuration.")
@click.option("--max-steps", "max_steps", type=int, default=200, show_default=True,
              help="Episode length, the same for every policy on the set.")
@click.option("--dr", "dr_path", type=click.Path(dir_okay=False), default=None,
              help="DR.json whose per-configuration draw is frozen (default: nominal scenes).")
@click.option("--qa/--no-qa", default=True, show_default=True, help="QA-check generated scenes.")
@click.option("--fast-collision", is_flag=True, help="Cheaper CoACD settings for generated assets.")
@click.option("--workers", type=int, default=1, show_default=True, help="Generation workers.")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None, help="Asset cache folder.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def make(source: str | None, per_tier: int, out: str, tiers: str | None, packs: tuple[str, ...], seed: int,
         repeats: int, max_steps: int, dr_path: str | None, qa: bool, fast_collision: bool, workers: int,
         cache_dir: str | None, quiet: bool) -> None:
    """Sample, instantiate and freeze an eval set from SOURCE (a prompt or task family) or from --pack folders."""
    from rl.evalset import make_evalset
    from rl.guided_dr import load_dr
    from scenegen.assets.collision.config import CollisionConfig
    from scenegen.pipeline import PipelineConfig

    if source and packs:
        raise ConfigError("give either SOURCE (to generate packs) or --pack (to reference them), not both")
    collision = CollisionConfig.fast() if fast_collision else CollisionConfig()
    pipeline = PipelineConfig(workers=workers, collision=collision)
    es = make_evalset(source, out, per_tier, tiers=tiers or (), packs=packs, seed=seed, repeats=repeats,
                      max_episode_steps=max_steps, dr=load_dr(dr_path) if dr_path else None, pipeline=pipeline,
                      qa=qa, cache_dir=cache_dir, progress=not quiet)
    click.echo(f"froze eval set {es.root} v{es.version}: {len(es.configurations)} configurations over tiers "
               f"{es.tiers()} x {es.repeats} repeat(s), hash {es.content_hash[:16]}")


@evalset.command("show")
@click.argument("set_dir", type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def show(set_dir: str, as_json: bool) -> None:
    """Verify SET (hash and packs) and summarise it; exits 2 when it changed since it was frozen."""
    from collections import Counter

    from rl.evalset import load_evalset

    es = load_evalset(set_dir)
    d = {"path": str(es.root), "name": es.doc["name"], "version": es.version, "content_hash": es.content_hash,
         "parent_hash": es.doc.get("parent_hash"), "repeats": es.repeats,
         "episode_steps": es.episode["max_episode_steps"], "dr": es.doc.get("dr") is not None,
         "configurations": len(es.configurations),
         "per_tier": dict(sorted(Counter(str(c["tier"]) for c in es.configurations).items())),
         "packs": {k: v["content_hash"][:16] for k, v in es.doc["packs"].items()}}
    if as_json:
        _echo_json(d)
        return
    click.echo(f"{d['name']} v{d['version']} ({d['content_hash'][:16]}, parent {str(d['parent_hash'])[:16]}): "
               f"{d['configurations']} configurations {d['per_tier']} x {d['repeats']} repeat(s), "
               f"{d['episode_steps']} steps, DR {'on' if d['dr'] else 'off'}; verified")


@evalset.command("bump")
@click.argument("set_dir", type=click.Path(exists=True))
@click.option("-o", "--out", default=None, type=click.Path(), help="Write the new version here (default: in place).")
@click.option("--repeats", type=int, default=None, help="New rollouts per configuration.")
@click.option("--max-steps", "max_steps", type=int, default=None, help="New episode length.")
@click.option("--note", default="", help="Why the version changed (recorded).")
def bump_cmd(set_dir: str, out: str | None, repeats: int | None, max_steps: int | None, note: str) -> None:
    """Freeze SET (edited or not) as a new version recording its parent's hash."""
    from rl.evalset import bump

    es = bump(set_dir, out, repeats=repeats, max_episode_steps=max_steps, note=note)
    click.echo(f"froze {es.root} v{es.version} ({es.content_hash[:16]}), parent {es.doc['parent_hash'][:16]}")


@evalset.command("export")
@click.argument("set_dir", type=click.Path(exists=True))
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="Folder for the export.")
@click.option("--pictures/--no-pictures", default=True, show_default=True, help="Top-down picture per configuration.")
def export_cmd(set_dir: str, out: str, pictures: bool) -> None:
    """Write SET's object layouts (layouts.csv) and a top-down picture per configuration."""
    from rl.evalset_export import export_layouts

    s = export_layouts(set_dir, out, pictures=pictures)
    click.echo(f"{s['rows']} object rows and {s['pictures']} pictures in {s['out']} (see layouts.md)")


@evalset.command("run", epilog="""\b
Examples:
  scenegen evalset run sets/banana --policy expert -o runs/expert
  scenegen evalset run sets/banana --policy noisy-expert:0.3 -o runs/noisy --videos 2
""")
@click.argument("set_dir", type=click.Path(exists=True))
@click.option("--policy", required=True,
              help="expert, noisy-expert:SIGMA, random, a FlowVLA checkpoint folder, or module:factory[=ARG].")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="Run folder.")
@click.option("--label", default=None, help="The run's name in reports (default: the policy spec).")
@click.option("--cameras", default="front", show_default=True, help="Cameras the policy sees (comma-separated).")
@click.option("--image-size", type=int, default=128, show_default=True, help="Camera image side (pixels).")
@click.option("--videos", type=int, default=0, show_default=True, help="Episodes to record as GIFs.")
@click.option("--json", "as_json", is_flag=True, help="Print the overall scores as JSON.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def run_cmd(set_dir: str, policy: str, out: str, label: str | None, cameras: str, image_size: int, videos: int,
            as_json: bool, quiet: bool) -> None:
    """Evaluate a policy on every configuration of SET (a tampered set is refused)."""
    from rl.evalreport import write_run
    from rl.evalrun import run_evalset

    keys = tuple(c.strip() for c in cameras.split(",") if c.strip())
    result, clips = run_evalset(set_dir, policy, label=label, image_keys=keys, image_size=image_size,
                                videos=videos, progress=not quiet)
    root = write_run(out, result, clips)
    o = result["scores"]["overall"]
    if as_json:
        _echo_json(result["scores"])
        return
    click.echo(f"{result['policy']}: success {100 * o['success_rate']:.1f}% [{100 * o['success_ci95'][0]:.1f}, "
               f"{100 * o['success_ci95'][1]:.1f}] over {o['episodes']} episodes, progress "
               f"{o['progress']['mean']:.3f}; report {root / 'report.md'}")


# ---------------------------------------------------------------------------------------------- compare
@click.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--set", "set_dir", required=True, type=click.Path(exists=True), help="The frozen set of every run.")
@click.option("-o", "--out", default=None, type=click.Path(file_okay=False), help="Write compare.{json,md,png} here.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare(runs: tuple[str, ...], set_dir: str, out: str | None, as_json: bool) -> None:
    """Compare RUNS (the first is the baseline) on one set: CIs, two-proportion and paired bootstrap tests."""
    from rl.evalreport import compare as run_compare
    from rl.evalreport import compare_chart, compare_markdown
    from rl.evalrun import load_result
    from rl.evalset import load_evalset
    from scenegen.fileio import canonical_json, write_atomic

    es = load_evalset(set_dir, verify_packs=False)
    cmp = run_compare([load_result(r) for r in runs], es.content_hash)
    md = compare_markdown(cmp)
    if out:
        root = Path(out)
        write_atomic(root / "compare.json", canonical_json(cmp, float_digits=None, indent=1, separators=None),
                     error=ConfigError)
        write_atomic(root / "compare.md", md + "\n![success per run](compare.png)\n", error=ConfigError)
        compare_chart(cmp, root / "compare.png")
    if as_json:
        _echo_json(cmp)
    else:
        click.echo(md)


# ---------------------------------------------------------------------------------------------- diagnose
@click.command()
@click.argument("result", type=click.Path(exists=True))
@click.option("--top", type=int, default=3, show_default=True, help="Conditions kept per failure mode.")
@click.option("-o", "--out", default=None, type=click.Path(dir_okay=False), help="Write the diagnosis JSON here.")
@click.option("--json", "as_json", is_flag=True, help="Print the diagnosis as JSON.")
def diagnose(result: str, top: int, out: str | None, as_json: bool) -> None:
    """Rank the failure modes of an eval RESULT and the conditions under which each rises."""
    from rl.diagnose import diagnose as run_diagnose
    from rl.diagnose import markdown
    from rl.evalrun import load_result
    from scenegen.fileio import canonical_json, write_atomic

    d = run_diagnose(load_result(result), top=top)
    if out:
        write_atomic(out, canonical_json(d, float_digits=None, indent=1, separators=None), error=ConfigError)
    if as_json:
        _echo_json(d)
    else:
        click.echo(markdown(d))


# ---------------------------------------------------------------------------------------------- dr
@click.group()
def dr() -> None:
    """Guided domain randomization (propose)."""


@dr.command("propose")
@click.argument("diagnosis", type=click.Path(exists=True))
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False), help="DR.json to write.")
@click.option("--base", "base_path", default=None, type=click.Path(exists=True, dir_okay=False),
              help="The DR.json the policy was trained with (default: DRConfig defaults).")
@click.option("--strength", type=float, default=0.5, show_default=True, help="Weight change per unit of risk ratio.")
def propose_cmd(diagnosis: str, out: str, base_path: str | None, strength: float) -> None:
    """Turn a DIAGNOSIS (scenegen diagnose -o, or an eval result) into DR weights and layout knobs."""
    from rl.diagnose import diagnose as run_diagnose
    from rl.evalrun import RESULT_SCHEMA
    from rl.evalset import read_json
    from rl.guided_dr import load_dr, propose, write_dr

    data = read_json(Path(diagnosis) / "result.json" if Path(diagnosis).is_dir() else diagnosis, "diagnosis")
    if not isinstance(data, dict):
        raise ConfigError(f"{diagnosis} is not a diagnosis (expected a JSON object)")
    if data.get("schema") == RESULT_SCHEMA:
        data = run_diagnose(data)
    doc = propose(data, load_dr(base_path) if base_path else None, strength=strength)
    write_dr(doc, out)
    changes = [e["change"] for e in doc["evidence"] if not e["change"].startswith("none")]
    click.echo(f"wrote {out}: " + ("; ".join(changes) if changes else "no significant condition, DR unchanged")
               + (f"; tier weights {doc['layout']['tier_weights']}" if doc["layout"]["tier_weights"] else ""))


# ---------------------------------------------------------------------------------------------- correlate
@click.command()
@click.argument("sim_csv", type=click.Path(exists=True, dir_okay=False))
@click.argument("real_csv", type=click.Path(exists=True, dir_okay=False))
@click.option("--plot", default=None, type=click.Path(dir_okay=False), help="Scatter plot (PNG) to write.")
@click.option("--resamples", type=int, default=2000, show_default=True, help="Bootstrap resamples.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (pearson, mmrv, pearson_ci95, mmrv_ci95, n).")
def correlate(sim_csv: str, real_csv: str, plot: str | None, resamples: int, as_json: bool) -> None:
    """Pearson r and MMRV (SIMPLER's, asymmetric: MMRV(sim, real)) of SIM_CSV against REAL_CSV (policy,score)."""
    from rl.correlate import correlate as run_correlate
    from rl.correlate import read_scores, scatter

    res = run_correlate(read_scores(sim_csv), read_scores(real_csv), resamples=resamples)
    if plot:
        scatter(res, plot)
    if as_json:
        _echo_json(res)
        return

    def ci(v: list | None) -> str:
        return "n/a" if v is None else f"[{v[0]:.3f}, {v[1]:.3f}]"

    pr = "n/a (a side is constant)" if res["pearson"] is None else f"{res['pearson']:.3f}"
    click.echo(f"n = {res['n']} policies: Pearson r = {pr} {ci(res['pearson_ci95'])}, MMRV = {res['mmrv']:.3f} "
               f"{ci(res['mmrv_ci95'])}")
