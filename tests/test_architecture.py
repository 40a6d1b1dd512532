"""The house's rules, checked: one-way layers (import-linter), no module cycles, small modules, mapped folders."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("scenegen", "qa", "rl")
MAX_LINES = 500


def _graph() -> nx.DiGraph:
    g = grimp.build_graph(*PACKAGES, cache_dir=None)
    dg = nx.DiGraph()
    for module in g.modules:
        dg.add_node(module)
        for dep in g.find_modules_directly_imported_by(module):
            dg.add_edge(module, dep)
    return dg


def test_no_module_imports_one_that_imports_it_back():
    cycles = [sorted(c) for c in nx.strongly_connected_components(_graph()) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_layer_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "BROKEN" not in proc.stdout


def test_modules_stay_small():
    big = {str(p.relative_to(ROOT)): n for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
           if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines (split them): {big}"


def test_architecture_doc_maps_every_folder():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    folders = sorted({str(p.parent.relative_to(ROOT)) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")})
    missing = [f for f in folders if f"`{f}/`" not in doc]
    assert not missing, f"docs/architecture.md does not map: {missing}"


def test_docs_point_only_inside_the_project():
    for md in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        text = md.read_text()
        assert "../shared" not in text and "DESIGN.md" not in text, f"{md.name} points outside the project"
