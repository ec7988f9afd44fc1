"""Terminal output (issue 15, problem 6) and ``l1scale path`` as a workflow (problem 4).

Rendered at a real width: click's CliRunner with ``COLUMNS`` (what the results console reads
off a terminal), checked for lines wider than the terminal, cells rich cut short (``125…``),
titles wrapped mid-word and trailing spaces. (By hand: ``tmux new -x 80`` or
``script -q -c "COLUMNS=80 l1scale demo --quick" /dev/null``, at 80 and 120 columns.)
"""

import io
import json
import math
import re

import _cli_runner as cli
import numpy as np
import pytest
import scipy.sparse as sp

from l1scale import SparseLogisticRegression, load
from l1scale.data import dump_svmlight


def run(*args, columns=80):
    return cli.run(*args, env={"COLUMNS": str(columns)})


def ok(*args, columns=80):
    return cli.ok(*args, env={"COLUMNS": str(columns)})


def check_fits(text, columns):
    """Every line within the width, no cell cut short, no trailing space."""
    for line in text.splitlines():
        assert len(line) <= columns, f"wider than {columns}: {line!r}"
        assert "…" not in line, f"a truncated cell: {line!r}"
        assert line == line.rstrip(), f"trailing spaces: {line!r}"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    # titles that name two files are wider than 80 columns: they must wrap at spaces, not mid-word
    root = tmp_path_factory.mktemp("cli_output")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 30)) * (rng.random((400, 30)) < 0.5)
    w = np.zeros(30)
    w[:6] = [1.5, -1.0, 1.0, -0.8, 0.6, 0.4]
    y = np.where(X @ w + 0.8 * rng.standard_normal(400) > 0, 1.0, -1.0)
    paths = {"dir": root, "train": root / "train_examples.svm", "test": root / "test_examples.svm"}
    dump_svmlight(sp.csr_matrix(X[:320]), y[:320], paths["train"])
    dump_svmlight(sp.csr_matrix(X[320:]), y[320:], paths["test"])
    paths["model"] = root / "model.l1m"
    return paths


@pytest.mark.parametrize("columns", [80, 120])
def test_train_and_evaluate_fit_the_terminal_and_end_lines_cleanly(files, columns):
    train = ok("train", files["train"], "--test", files["test"], "-o", files["model"], "-q", columns=columns)
    check_fits(train.stdout, columns)
    assert "SparseLogisticRegression(logistic) on" in train.stdout
    # a path longer than its cell folds (nothing cut off): the model row and the lines under it
    lines = train.stdout.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("model "))
    column = lines[start].index("/")
    assert "".join(line[column:] for line in lines[start:]) == str(files["model"])
    evaluate = ok("evaluate", files["model"], files["test"], columns=columns)
    check_fits(evaluate.stdout, columns)
    # the title (model on data) is a line of its own, each word whole: not wrapped at 19 columns
    words = f"{files['model']} on {files['test']}".split()
    shown = evaluate.stdout.split()
    for word in words:
        assert word in shown, f"{word!r} was cut"
    assert re.search(r"^accuracy\s+\d\.\d+$", evaluate.stdout, re.MULTILINE)


def test_demo_fits_80_columns_with_every_number_whole():
    result = ok("demo", "--quick", "-q")
    check_fits(result.stdout, 80)
    doc = json.loads(ok("demo", "--quick", "-q", "--json").stdout)
    for row in doc["rows"]:
        assert row["dataset"] in result.stdout
        for value in (row["n_samples"], row["nnz"], row["nnz_coef"]):
            assert re.search(rf"\b{value}\b", result.stdout)
        assert f"{row['test_accuracy']:.4f}" in result.stdout


def test_path_table_fits_80_columns_and_marks_the_chosen_lams(files):
    result = ok("path", files["train"], "--n-lams", "15", "--cv", "4", "--rule", "1se", "-q")
    check_fits(result.stdout, 80)
    doc = json.loads(ok("path", files["train"], "--n-lams", "15", "--cv", "4", "--rule", "1se", "--json").stdout)
    assert doc["scoring"] == "neg_log_loss" and doc["rule"] == "1se"
    rows = doc["path"]
    assert len(rows) == 15 and all(r["cv_mean"] < 0 and r["cv_se"] >= 0 for r in rows)
    (best,) = (k for k, r in enumerate(rows) if "min" in r["marks"])
    (one_se,) = (k for k, r in enumerate(rows) if "1se" in r["marks"])
    assert rows[best]["cv_mean"] == max(r["cv_mean"] for r in rows)
    assert rows[best]["lam"] == pytest.approx(doc["lam_min"]) and rows[one_se]["lam"] == pytest.approx(doc["lam_1se"])
    threshold = rows[best]["cv_mean"] - rows[best]["cv_se"]
    assert one_se == min(k for k, r in enumerate(rows) if r["cv_mean"] >= threshold)
    assert [k for k, r in enumerate(rows) if r["chosen"]] == [one_se] and doc["chosen_lam"] == doc["lam_1se"]
    table_rows = [line for line in result.stdout.splitlines() if re.match(r"^\s+\d", line)]
    assert len(table_rows) == 15
    assert table_rows[one_se].rstrip().endswith("1se *") and table_rows[best].rstrip().endswith("min")
    assert "neg_log_loss (higher is better)" in " ".join(result.stdout.split())  # wrapped at spaces


def test_path_saves_the_chosen_model_and_a_plot(files, tmp_path):
    pytest.importorskip("matplotlib")
    model, png = tmp_path / "chosen.l1m", tmp_path / "path.png"
    result = ok("path", files["train"], "--n-lams", "10", "--cv", "3", "-o", model, "--plot", png, "--json")
    doc = json.loads(result.stdout)
    assert doc["model"] == str(model) and doc["plot"] == str(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    est = load(model)
    assert type(est) is SparseLogisticRegression and est.lam_[0] == pytest.approx(doc["chosen_lam"])
    assert np.count_nonzero(est.coef_) == doc["chosen_nnz"]
    # what `train --lam` gives at that lam
    trained = tmp_path / "trained.l1m"
    ok("train", files["train"], "--lam", repr(doc["chosen_lam"]), "--tol", "1e-10", "-q", "-o", trained)
    # The path's tol (1e-6) bounds the suboptimality; the coefficients agree to about its square root.
    np.testing.assert_allclose(est.coef_, load(trained).coef_, atol=1e-3)
    usage = run("path", files["train"], "--cv", "0", "-o", tmp_path / "none.l1m")
    assert usage.exit_code == 2 and "--cv" in usage.stderr and not (tmp_path / "none.l1m").exists()


def test_path_warns_when_the_chosen_lam_is_at_the_edge_of_the_grid(files):
    result = ok("path", files["train"], "--n-lams", "3", "--lam-min-ratio", "0.5", "--cv", "3", "-q")
    assert re.search(r"^Warning: the chosen lam .* is the smallest of the grid", result.stderr, re.MULTILINE)
    assert "--lam-min-ratio" in result.stderr
    doc = json.loads(
        ok("path", files["train"], "--n-lams", "3", "--lam-min-ratio", "0.5", "--cv", "3", "--json").stdout
    )
    assert any("smallest of the grid" in m for m in doc["warnings"])


def test_path_progress_on_stderr_and_quiet(files):
    loud = ok("path", files["train"], "--n-lams", "8", "--cv", "2")
    # 8 lams on each of 2 folds and once on all the data (the refit over the whole grid is the table's
    # path: no second solve of it)
    assert "2-fold cross-validation and the path on all the data: 24/24 solves" in loud.stderr
    assert ok("path", files["train"], "--n-lams", "8", "--cv", "2", "-q").stderr == ""


def test_path_help_names_only_options_it_has():
    from l1scale.cli.path import path

    options = {
        opt for param in path.params for opt in getattr(param, "opts", []) + getattr(param, "secondary_opts", [])
    }
    options |= {"--help"}
    text = ok("path", "--help").stdout
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))
    assert named <= options, f"help names options path does not have: {named - options}"
    assert "--hash-bits" in options  # VW data are read with it, as train's help says


def test_live_table_shows_the_certificate_the_solver_writes_after_the_callback():
    """cd writes the returned point's exact objective and certificate into its History's last row
    after the callback: the live table must show them, not the blank of the callback's time."""
    from rich.console import Console

    from l1scale.cli._progress import Progress
    from l1scale.solvers.base import History

    progress = Progress()
    progress.console = Console(file=io.StringIO(), force_terminal=True, width=80)
    history = History()
    with progress:
        for it, cert in enumerate((0.5, math.nan, 0.01, math.nan)):
            history.append(objective=1.0 / (it + 1), certificate=cert, nnz=it, time=0.1 * it, data_accesses=0)
            progress(it, history)
        history.certificate[-1] = 3e-9  # the solver certifies the point it returns
    shown = [row[3] for row in progress.rows]
    assert shown == ["5.000e-01", "", "1.000e-02", "3.000e-09"]
    assert progress.rows[-1][1] == "3"
