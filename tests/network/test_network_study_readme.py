"""The network study writes its Fig 3.16 table into the README: every seed ratio beside ours."""

import pandas as pd

from solvermap.studies.network_dse import run


def _fig316() -> pd.DataFrame:
    rows = []
    for k, seed in enumerate(run.SEED_FIG316):
        row = {"cgra": seed["cgra"], "network": seed["network"]}
        for j, metric in enumerate(("perf", "perf_per_w", "perf_per_area")):
            row[f"seed_{metric}"] = seed[metric]
            row[f"ours_{metric}"] = 1.0 + k + j / 10
            row[f"ours_{metric}_design"] = f"D{k}{j}"
        rows.append(row)
    return pd.DataFrame(rows)


def test_block_puts_each_seed_ratio_beside_ours():
    block = run.fig316_block(_fig316())
    for k, seed in enumerate(run.SEED_FIG316):
        for j, metric in enumerate(("perf", "perf_per_w", "perf_per_area")):
            seed_text = "—" if seed[metric] is None else f"{seed[metric]:.1f}"
            assert f"{seed_text} / {1.0 + k + j / 10:.2f} (D{k}{j})" in block


def test_readme_block_is_replaced_and_the_rest_kept(tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{run.BEGIN}\nold table\n{run.END}\nafter\n")
    monkeypatch.setattr(run, "README", readme)
    run.write_readme(_fig316())
    text = readme.read_text()
    assert text.startswith("before\n") and text.endswith("\nafter\n")
    assert "old table" not in text and "(D00)" in text
