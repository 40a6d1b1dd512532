"""Training-rollout success per PPOFlow iteration, from ``ppoflow_lift.py`` results (-> a PNG).

    python benchmarks/plot_ppoflow.py benchmarks/ppoflow_lift_bc100.json benchmarks/ppoflow_lift_rft.json \
        -o benchmarks/ppoflow_curves.png

Each curve is one PPOFlow run (``ppo_*`` stages of every prompt): the share of the episodes that ended
in an iteration that succeeded, raw and as a 10-iteration moving average. A run's ``metrics.jsonl`` (a file
ending in ``.jsonl``) gives its curve too, when the run was never scored into a results file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from ppoflow_noise_scale import rows_of


def curves(paths: list[str]) -> dict[str, list[float]]:
    """``{label: success per iteration}`` for every PPOFlow stage of the given result files."""
    out = {}
    for path in paths:
        if path.endswith(".jsonl"):
            out[Path(path).stem] = [float(r["success_rate"]) for r in rows_of(Path(path))]
            continue
        doc = json.loads(Path(path).read_text())
        for prompt, stages in doc["prompts"].items():
            for tag, v in stages.items():
                if isinstance(v, dict) and "train_success_curve" in v:
                    out[f"{Path(path).stem}: {tag} ({prompt})"] = [float(x) for x in v["train_success_curve"]]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("-o", "--out", default="ppoflow_curves.png")
    ap.add_argument("--window", type=int, default=10)
    a = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=120)
    for i, (label, ys) in enumerate(curves(a.results).items()):
        x, color = np.arange(1, len(ys) + 1), f"C{i}"
        ax.plot(x, ys, color=color, alpha=0.3, lw=1)
        w = min(a.window, len(ys))
        ax.plot(x[w - 1:], np.convolve(ys, np.ones(w) / w, mode="valid"), color=color, lw=2,
                label=f"{label}, {w}-iteration mean")
    ax.set(xlabel="PPOFlow iteration", ylabel="training-rollout success", ylim=(0, 1.05))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
