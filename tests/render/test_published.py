"""Published numbers: schema validation, planted bad rows, and cross-checks against the paper texts."""

from __future__ import annotations

import csv
import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from dpvae.render.published import (
    COLUMNS,
    KEY_COLUMNS,
    PUBLISHED_DIR_ENV,
    load_published,
    published_dir,
    published_text_table,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
PAPERS_DIR = SHARED / "papers"
needs_papers = pytest.mark.skipif(not PAPERS_DIR.is_dir(), reason="paper texts (../shared/papers) absent")
NUM = r"(\d+(?:\.\d+)?)"  # a printed number, without a sentence-ending full stop


# ----------------------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------------------
def lookup(frame: pd.DataFrame, **key: str) -> float:
    """The one value whose key columns equal `key` (unspecified string keys must be empty)."""
    defaults = {"classifier": "", "setting": "", "source": "paper"}
    mask = pd.Series(True, index=frame.index)
    for col, wanted in {**defaults, **key}.items():
        mask &= frame[col] == wanted
    assert mask.sum() == 1, f"expected exactly one row for {key}, found {int(mask.sum())}"
    return float(frame.loc[mask, "value"].iloc[0])


def has_row(frame: pd.DataFrame, **key: str) -> bool:
    """Whether any row matches every given column value."""
    mask = pd.Series(True, index=frame.index)
    for col, wanted in key.items():
        mask &= frame[col] == wanted
    return bool(mask.any())


def paper_lines(name: str) -> list[str]:
    return (PAPERS_DIR / name).read_text(encoding="utf-8").splitlines()


def clean_cell(cell: str) -> str:
    """Drop HTML tags, superscripts and citation brackets from a paper-table cell; squash whitespace."""
    cell = re.sub(r"<sup>.*?</sup>|<[^>]+>|\[\d+\]", "", cell)
    return re.sub(r"\s+", " ", cell).strip()


def table_row(lines: list[str], caption: str, label: str) -> list[str]:
    """Cells after the row label of the first row starting with `label` below the caption line."""
    start = next(i for i, line in enumerate(lines) if line.startswith(caption))
    for line in lines[start + 1 :]:
        cells = [clean_cell(c) for c in line.split("\t")]
        if cells[0].startswith(label):
            return cells[1:]
    raise AssertionError(f"row {label!r} not found below {caption!r}")


def as_number(cell: str) -> float | None:
    """Printed number of a table cell; None for N/A or '-' cells."""
    cell = cell.strip()
    return None if cell in {"N/A", "-", ""} else float(cell)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return load_published()


def write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("a", newline="", encoding="utf-8") as handle:
        csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n").writerows(rows)


def copy_published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "published"
    shutil.copytree(published_dir(), target)
    monkeypatch.setenv(PUBLISHED_DIR_ENV, str(target))
    return target


VALID_ROW = {
    "paper": "p3gm", "item": "table6", "dataset": "credit", "method": "p3gm", "epsilon": "1",
    "delta": "1e-5", "metric": "auroc", "classifier": "mean4", "setting": "plant=1", "value": "0.5",
    "source": "paper", "cited_from": "", "note": "",
}  # fmt: skip


# ----------------------------------------------------------------------------------------------------------
# schema and loader behaviour
# ----------------------------------------------------------------------------------------------------------
def test_default_directory_is_the_repository_resource_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PUBLISHED_DIR_ENV, raising=False)
    repo = Path(__file__).resolve().parents[2]
    assert published_dir() == repo / "workflow" / "resources" / "published"


def test_all_files_load_with_the_documented_schema(table: pd.DataFrame) -> None:
    assert tuple(table.columns) == COLUMNS
    for col in ("epsilon", "delta", "value"):
        assert table[col].dtype == float
    assert table["value"].notna().all()
    assert not table.duplicated(list(KEY_COLUMNS)).any()
    assert set(table["source"]) == {"paper", "reference-code", "dpimagebench"}
    assert {"p3gm", "dp2vae"} <= set(table["paper"])


def test_dpimagebench_rows_are_a_labelled_second_reference_for_two_baselines(table: pd.DataFrame) -> None:
    bench = table[table["source"] == "dpimagebench"]
    assert set(bench["method"]) == {"dp-merf", "gs-wgan"} and set(bench["item"]) == {"table1"}
    assert (bench["epsilon"] == 10).all() and (bench["cited_from"] == "").all()
    assert bench["note"].str.contains("DPImageBench").all() and (bench["classifier"] == "").all()
    assert len(bench) == 8 and set(bench["dataset"]) == {"mnist", "fashion-mnist"}


def test_single_paper_selection_returns_exactly_that_papers_rows(table: pd.DataFrame) -> None:
    p3gm = load_published("p3gm")
    assert set(p3gm["paper"]) == {"p3gm"}
    assert len(p3gm) == (table["paper"] == "p3gm").sum()


def test_unknown_paper_is_rejected_naming_the_argument() -> None:
    with pytest.raises(ValueError, match="paper"):
        load_published("p3gm2")


def test_accuracies_are_fractions_and_non_private_rows_have_no_epsilon(table: pd.DataFrame) -> None:
    accuracy = table[table["metric"] == "accuracy"]["value"]
    assert accuracy.between(0, 1).all()
    non_private = table[table["method"].isin(["real", "original", "vae", "pgm"])]
    assert non_private["epsilon"].isna().all() and non_private["delta"].isna().all()


def test_valid_planted_row_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Control for the planted-bad-row tests: the base row itself passes validation."""
    directory = copy_published(tmp_path, monkeypatch)
    write_rows(directory / "p3gm.csv", [VALID_ROW])
    loaded = load_published("p3gm")
    assert lookup(loaded, item="table6", dataset="credit", method="p3gm", metric="auroc", classifier="mean4",
                  setting="plant=1") == 0.5  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"source": "papers"}, "unknown source 'papers'"),
        ({"item": "table9"}, "item 'table9'"),
        ({"dataset": "fmnist"}, "unknown dataset 'fmnist'"),
        ({"method": "P3GM"}, "unknown method 'P3GM'"),
        ({"metric": "accuracy", "classifier": "cnn", "value": "79.4"}, "outside"),
        ({"value": "0.9x"}, "not a number"),
        ({"value": ""}, "value is empty"),
        ({"delta": ""}, "both set or both empty"),
        ({"epsilon": "-1"}, "epsilon '-1'"),
        ({"source": "reference-code", "cited_from": "[41]"}, "cited_from"),
        ({"paper": "dp2vae"}, "does not match the file p3gm.csv"),
        ({"setting": "d_p 10"}, "key=value"),
        ({"metric": "n_records", "classifier": "", "value": "284807.5"}, "not an integer"),
    ],
)
def test_planted_bad_row_is_rejected_naming_file_and_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: dict[str, str], message: str
) -> None:
    directory = copy_published(tmp_path, monkeypatch)
    n_rows = len(pd.read_csv(directory / "p3gm.csv", dtype=str))
    write_rows(directory / "p3gm.csv", [{**VALID_ROW, **change}])
    with pytest.raises(ValueError) as error:
        load_published("p3gm")
    text = str(error.value)
    assert f"p3gm.csv row {n_rows + 1} (line {n_rows + 2})" in text
    assert message in text


def test_duplicate_key_is_rejected_naming_both_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = copy_published(tmp_path, monkeypatch)
    n_rows = len(pd.read_csv(directory / "p3gm.csv", dtype=str))
    write_rows(directory / "p3gm.csv", [VALID_ROW, {**VALID_ROW, "value": "0.6", "note": "other"}])
    with pytest.raises(ValueError, match=rf"p3gm\.csv: rows {n_rows + 1}, {n_rows + 2} share the key"):
        load_published()


def test_missing_column_is_rejected_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = copy_published(tmp_path, monkeypatch)
    frame = pd.read_csv(directory / "dp2vae.csv", dtype=str, keep_default_na=False)
    frame.drop(columns="note").to_csv(directory / "dp2vae.csv", index=False)
    with pytest.raises(ValueError, match=r"dp2vae\.csv: columns"):
        load_published("dp2vae")


def test_text_tables_load_and_reject_a_bad_mark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert published_text_table("p3gm_table1").shape == (15, 4)
    assert published_text_table("p3gm_table2").shape == (13, 2)
    with pytest.raises(ValueError, match="name"):
        published_text_table("p3gm_table3")
    directory = copy_published(tmp_path, monkeypatch)
    with (directory / "p3gm_table1.csv").open("a", encoding="utf-8") as handle:
        handle.write("Utility in classification tasks,p3gm,yes,\n")
    with pytest.raises(ValueError, match=r"p3gm_table1\.csv row 16 \(line 17\): value 'yes'"):
        published_text_table("p3gm_table1")


# ----------------------------------------------------------------------------------------------------------
# cross-checks against the paper texts (every cell of the printed tables)
# ----------------------------------------------------------------------------------------------------------
P3GM_DATASETS = {"Kaggle Credit": "credit", "UCI ESR": "esr", "Adult": "adult", "UCI ISOLET": "isolet"}


@needs_papers
def test_p3gm_table3_and_table4_match_the_paper(table: pd.DataFrame) -> None:
    lines, rows = paper_lines("p3gm.txt"), table[table["paper"] == "p3gm"]
    labels = {**P3GM_DATASETS, "MNIST": "mnist", "Fashion": "fashion-mnist"}
    for label, dataset in labels.items():
        cells = table_row(lines, "TABLE III:", label)
        for metric, cell in zip(("n_records", "n_features", "n_classes", "pct_positive"), cells):
            expected = as_number(cell)
            key = dict(item="table3", dataset=dataset, method="original", metric=metric)
            if expected is None:  # printed '-': no row
                assert not has_row(rows, **key), key
            else:
                assert lookup(rows, **key) == expected, key
        cells = table_row(lines, "TABLE IV:", label)
        for metric, cell in zip(("sigma_s", "lr", "epochs", "batch_size"), cells):
            assert lookup(rows, item="table4", dataset=dataset, method="p3gm", metric=metric) == float(cell)
    assert ((rows["item"] == "table3") | (rows["item"] == "table4")).sum() == 6 * 4 + 6 * 4 - 2


@needs_papers
def test_p3gm_table5_matches_the_paper(table: pd.DataFrame) -> None:
    lines, rows = paper_lines("p3gm.txt"), table[table["paper"] == "p3gm"]
    columns = [(m, meth) for m in ("auroc", "auprc") for meth in ("vae", "pgm", "p3gm")]
    for label, clf in (("LR", "lr"), ("AB", "ab"), ("GBM", "gbm"), ("XB", "xgb")):
        for (metric, method), cell in zip(columns, table_row(lines, "TABLE V:", label), strict=True):
            key = dict(item="table5", dataset="credit", method=method, metric=metric, classifier=clf)
            assert lookup(rows, **key) == float(cell), key


@needs_papers
def test_p3gm_table6_matches_the_paper(table: pd.DataFrame) -> None:
    lines, rows = paper_lines("p3gm.txt"), table[table["paper"] == "p3gm"]
    methods = ("privbayes", "ryan", "dp-gm", "p3gm", "original")
    columns = [(metric, method) for metric in ("auroc", "auprc") for method in methods]
    for label, dataset in P3GM_DATASETS.items():
        for (metric, method), cell in zip(columns, table_row(lines, "TABLE VI:", label), strict=True):
            key = dict(item="table6", dataset=dataset, method=method, metric=metric, classifier="mean4")
            assert lookup(rows, **key) == float(cell), key


@needs_papers
def test_p3gm_table7_and_table8_match_the_paper(table: pd.DataFrame) -> None:
    lines, rows = paper_lines("p3gm.txt"), table[table["paper"] == "p3gm"]
    for label, dataset in (("MNIST", "mnist"), ("Fashion", "fashion-mnist")):
        cells = table_row(lines, "TABLE VII:", label)
        for method, cell in zip(("vae", "dp-gm", "privbayes", "ryan", "p3gm"), cells, strict=True):
            key = dict(item="table7", dataset=dataset, method=method, metric="accuracy", classifier="cnn")
            assert lookup(rows, **key) == float(cell), key
    for label, dataset in P3GM_DATASETS.items():
        cells = table_row(lines, "TABLE VIII:", label)
        for method, cell in zip(("privbayes", "ryan", "dp-gm", "p3gm"), cells, strict=True):
            key = dict(item="table8", dataset=dataset, method=method, metric="tvd2")
            assert lookup(rows, **key) == float(cell), key


@needs_papers
def test_p3gm_table1_marks_match_the_paper() -> None:
    lines, marks = paper_lines("p3gm.txt"), published_text_table("p3gm_table1")
    methods = ("privbayes", "ryan", "dp-vae", "dp-gm", "p3gm")
    for feature in marks["feature"].unique():
        cells = table_row(lines, "TABLE I:", feature)
        cells += [""] * (len(methods) - len(cells))
        expected = ["✓" if "✓" in cell else "–" for cell in cells]
        got = marks[marks["feature"] == feature].set_index("method").loc[list(methods), "value"].tolist()
        assert got == expected, feature


@needs_papers
def test_p3gm_table2_symbols_match_the_paper() -> None:
    lines = paper_lines("p3gm.txt")
    start = next(i for i, line in enumerate(lines) if line.startswith("TABLE II:"))
    printed = [line.split("\t") for line in lines[start + 3 : start + 16]]

    def squash(text: str) -> str:  # the text extraction lost every '|' and keeps HTML tags
        return re.sub(r"<[^>]+>|\||\s", "", text).rstrip(".")

    symbols = published_text_table("p3gm_table2")
    assert [squash(s) for s in symbols["symbol"]] == [squash(cells[0]) for cells in printed]
    assert [squash(m) for m in symbols["meaning"]] == [squash(cells[1]) for cells in printed]


DP2VAE_T1 = {
    "Real data": "real", "DP-CGAN": "dp-cgan", "DP-MERF": "dp-merf", "G-PATE": "g-pate",
    "DataLens": "datalens", "GS-WGAN": "gs-wgan", "DP-Sinkhorn ( $m = 1$": "dp-sinkhorn-m1",
    "DP-Sinkhorn ( $m = 3$": "dp-sinkhorn-m3", "Ours": "dp2vae",
}  # fmt: skip


@needs_papers
def test_dp2vae_table1_matches_the_paper_with_percent_converted(table: pd.DataFrame) -> None:
    lines, rows = paper_lines("dp2vae.txt"), table[table["paper"] == "dp2vae"]
    per_dataset = (("fid", ""), ("accuracy", "lr"), ("accuracy", "mlp"), ("accuracy", "cnn"))
    columns = [(dataset, metric, clf) for dataset in ("mnist", "fashion-mnist") for metric, clf in per_dataset]
    n_cells = 0
    for label, method in DP2VAE_T1.items():
        cells = [clean_cell(c) for c in table_row(lines, "Table 1:", label) if clean_cell(c)]
        printed_epsilon, values = cells[0], cells[1:]
        epsilons = rows.loc[(rows["item"] == "table1") & (rows["method"] == method), "epsilon"]
        if method == "real":
            assert "infty" in printed_epsilon and epsilons.isna().all()
        else:
            assert (epsilons == float(printed_epsilon)).all()
        for (dataset, metric, clf), cell in zip(columns, values, strict=True):
            expected = as_number(cell)
            key = dict(item="table1", dataset=dataset, method=method, metric=metric, classifier=clf)
            if expected is None:  # printed 'N/A': no row
                assert not has_row(rows, **key), key
                continue
            n_cells += 1
            scale = 100 if metric == "accuracy" else 1
            assert math.isclose(lookup(rows, **key) * scale, expected, abs_tol=1e-9), key
    paper_rows = (rows["item"] == "table1") & (rows["source"] == "paper")  # DPImageBench's rows are a second source
    assert n_cells == paper_rows.sum() == 9 * 8 - 8


@needs_papers
def test_dp2vae_table2_matches_the_paper_with_percent_converted(table: pd.DataFrame) -> None:
    lines, rows = paper_lines("dp2vae.txt"), table[table["paper"] == "dp2vae"]
    start = next(i for i, line in enumerate(lines) if line.startswith("Table 2:"))
    header = [clean_cell(c) for c in lines[start + 2].split("\t")][2:]
    methods = {"PATE-GAN": "pate-gan", "DP-MERF": "dp-merf", "GS-WGAN": "gs-wgan", "G-PATE": "g-pate",
               "DataLens": "datalens", "Ours": "dp2vae"}  # fmt: skip
    datasets = {"MNIST": "mnist", "FMNIST": "fashion-mnist", "CelebA": "celeba"}
    dataset = ""
    for line in lines[start + 3 : start + 9]:
        cells = [clean_cell(c) for c in line.split("\t")]
        dataset = datasets.get(cells[0], dataset)
        metric = "fid" if cells[1].startswith("FID") else "accuracy"
        clf, scale = ("cnn", 100) if metric == "accuracy" else ("", 1)
        for name, cell in zip(header, cells[2:], strict=True):
            key = dict(item="table2", dataset=dataset, method=methods[name], metric=metric, classifier=clf)
            value = lookup(rows, **key)
            assert math.isclose(value * scale, float(cell), abs_tol=1e-9), key
    assert (rows["item"] == "table2").sum() == 36
    assert (rows.loc[rows["item"] == "table2", "epsilon"] == 1).all()


@needs_papers
def test_dp2vae_numbers_printed_in_figure_captions_and_appendix(table: pd.DataFrame) -> None:
    text = (PAPERS_DIR / "dp2vae.txt").read_text(encoding="utf-8")
    rows = table[table["paper"] == "dp2vae"]
    panels = re.findall(rf"\((a|b)\) w/o? pre-training\. FID = {NUM}, CNN Acc = {NUM}", text)
    assert [p[0] for p in panels] == ["a", "b"]
    fig5 = dict(item="fig5", dataset="mnist", method="dp2vae")
    for (_, fid, acc), setting in zip(panels, ("pretrain=false", "pretrain=true"), strict=True):
        assert lookup(rows, **fig5, metric="fid", setting=setting) == float(fid)
        got = lookup(rows, **fig5, metric="accuracy", classifier="cnn", setting=setting)
        assert math.isclose(got * 100, float(acc))
    fid, acc = re.search(rf"FID of our generation is {NUM}, and CNN Acc is {NUM}", text).groups()
    assert lookup(rows, item="fig7", dataset="celeba", method="dp2vae", metric="fid") == float(fid)
    got = lookup(rows, item="fig7", dataset="celeba", method="dp2vae", metric="accuracy", classifier="cnn")
    assert math.isclose(got * 100, float(acc))


@needs_papers
def test_every_paper_sourced_number_is_printed_in_its_paper(table: pd.DataFrame) -> None:
    for paper, name, percent in (("p3gm", "p3gm.txt", 1), ("dp2vae", "dp2vae.txt", 100)):
        text = (PAPERS_DIR / name).read_text(encoding="utf-8")
        printed = {round(float(number), 6) for number in re.findall(NUM, text)}
        rows = table[(table["paper"] == paper) & (table["source"] == "paper")]
        shown = rows["value"].where(rows["metric"] != "accuracy", rows["value"] * percent).round(6)
        missing = rows[~shown.isin(printed)]
        assert missing.empty, missing[list(KEY_COLUMNS) + ["value"]]


# ----------------------------------------------------------------------------------------------------------
# reference-code values against the authors' printed notebook outputs (their only source)
# ----------------------------------------------------------------------------------------------------------
SHOW_IPYNB = Path(__file__).with_name("p3gm_show_ipynb.txt")
NOTEBOOK_LINE = re.compile(r"(?P<label>[\w ]+?) (?:\[(?P<vector>[^\]]*)\](?: (?P<tag>\S+))?|(?P<scalar>\S+))")


def notebook_cells() -> dict[int, list[tuple[str, list[float], str]]]:
    """Each printed cell of `p3gm_show_ipynb.txt` as (label, numbers, trailing tag) per line."""
    cells: dict[int, list[tuple[str, list[float], str]]] = {}
    for line in SHOW_IPYNB.read_text(encoding="utf-8").splitlines():
        if line.startswith("## cell "):
            cell = cells.setdefault(int(line.removeprefix("## cell ")), [])
        elif line and not line.startswith("#"):
            match = NOTEBOOK_LINE.fullmatch(line)
            assert match, line
            numbers = (match["vector"] or match["scalar"]).split()
            cell.append((match["label"], [float(n) for n in numbers], match["tag"] or ""))
    return cells


def notebook_values() -> dict[tuple[str, str, str, str, str, float], float]:
    """The notebook's numbers keyed as p3gm.csv keys its reference-code rows:
    (item, dataset, metric, classifier, setting, epsilon) -> value."""
    cells, values = notebook_cells(), {}
    for label, (auroc, auprc, _), _ in cells[3][:4]:  # Table VI averages [AUROC, AUPRC, accuracy]
        setting = "positive=le50K" if label == "adult" else ""  # the code's positive class (A-G2)
        values["table6", label, "auroc", "mean4", "", 1.0] = auroc
        values["table6", label, "auprc", "mean4", setting, 1.0] = auprc
    for label, (accuracy,), _ in cells[3][4:]:  # Table VII, d' = 30
        dataset = {"mnist": "mnist", "fashion": "fashion-mnist"}[label]
        values["table7", dataset, "accuracy", "cnn", "", 1.0] = accuracy
    names = {"LR": "lr", "XgBoost": "xgb", "ADB": "ab", "GBC": "gbm"}
    for label, (auroc, auprc, _), _ in cells[5]:  # Table V per classifier
        classifier = names[label.removeprefix("credit ")]
        values["table5", "credit", "auroc", classifier, "", 1.0] = auroc
        values["table5", "credit", "auprc", classifier, "", 1.0] = auprc
    epsilons = {"credit_01": 0.1, "credit_05": 0.5, "credit_1": 1.0, "credit_5": 5.0}
    for label, (auroc, auprc, _), _ in cells[7]:  # Fig 4, nominal epsilon of the run
        values["fig4", "credit", "auroc", "mean4", "", epsilons[label]] = auroc
        values["fig4", "credit", "auprc", "mean4", "", epsilons[label]] = auprc
    for _, (auroc, auprc, _), ratio in cells[9]:  # Fig 8, the ratio printed after the scores
        values["fig8", "credit", "auroc", "mean4", f"ratio={ratio}", 1.0] = auroc
        values["fig8", "credit", "auprc", "mean4", f"ratio={ratio}", 1.0] = auprc
    for label, (accuracy,), _ in cells[11]:  # Fig 5
        values["fig5", "mnist", "accuracy", "cnn", f"d_p={label.removeprefix('z_dim_')}", 1.0] = accuracy
    for label, (tvd,), _ in cells[13]:  # Table VIII on public reconstructions (A-G10)
        values["table8", label, "tvd2", "", "reading=notebook", 1.0] = tvd
    return values


def test_reference_code_rows_are_the_notebook_outputs(table: pd.DataFrame) -> None:
    """Every reference-code row of p3gm.csv is one printed notebook number, at the digits the CSV keeps."""
    rows = table[(table["paper"] == "p3gm") & (table["source"] == "reference-code")]
    recorded = {
        (r.item, r.dataset, r.metric, r.classifier, r.setting, float(r.epsilon)): float(r.value)
        for r in rows.itertuples()
    }
    expected = notebook_values()
    assert len(expected) == len(rows) == 8 + 8 + 4 + 2 + 8 + 7 + 16
    assert recorded.keys() == expected.keys()
    wrong = {
        k: (v, expected[k]) for k, v in recorded.items() if v not in (round(expected[k], 4), round(expected[k], 5))
    }
    assert not wrong, wrong
