"""The quality report's statistics (`dpvae.quality`) and page (`dpvae.quality_report`) on planted releases: a copy of
the training split, random noise, a collapsed column, images; the measures on hand-checked tables."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import numpy as np
import pytest

from dpvae import quality, quality_report
from dpvae.data.store import Prepared, Split

COLUMNS = [
    {"name": "age", "kind": "continuous", "min": 0.0, "max": 100.0},
    {"name": "score", "kind": "continuous", "min": 0.0, "max": 1.0},
    {"name": "colour", "kind": "categorical", "min": 0.0, "max": 2.0, "categories": ["red", "green", "other"]},
]
META = {"columns": COLUMNS, "label_column": "label", "label_names": ["lo", "mid", "hi"]}


def _records(n: int, rng: np.random.Generator) -> Split:
    """Three classes that the first two columns decide (a classifier trained on them is far above chance)."""
    x = np.column_stack([rng.random(n), rng.random(n), rng.integers(0, 3, n) / 2]).astype(np.float32)
    y = np.digitize(x[:, 0] + x[:, 1], [0.7, 1.3]).astype(np.int64)
    return Split(x, y)


@pytest.fixture(scope="module")
def table() -> Prepared:
    rng = np.random.default_rng(0)
    return Prepared(_records(300, rng), _records(100, rng), META)


def test_tvd_and_cramers_v_on_hand_checked_tables():
    assert quality.tvd(np.array([1.0, 0, 0]), np.array([0.0, 1, 0])) == 1
    assert quality.tvd(np.array([2.0, 2]), np.array([1.0, 3])) == pytest.approx(0.25)
    assert quality.cramers_v(np.array([[10.0, 0], [0, 10]])) == pytest.approx(1)
    assert quality.cramers_v(np.array([[5.0, 5], [5, 5]])) == pytest.approx(0)
    assert np.isnan(quality.cramers_v(np.array([[5.0, 0], [5, 0]])))  # one column: undefined


def test_a_copy_of_the_training_split_is_faithful_and_flagged_as_too_close(table):
    """Synthetic = the training records: every TVD 0, dependence equal, utility as real's, and every record at
    distance 0 from a training record (the closeness flag)."""
    found = quality.assess(table, {"x": table.train.x, "y": table.train.y}, None)
    assert isinstance(found, quality.TableQuality)
    assert [m.column for m in found.marginals] == ["age", "score", "colour", "label"]
    assert found.tvd_1way == 0 and found.dependence.tvd_2way == 0 and found.dependence.mean_abs_difference == 0
    assert found.efficacy.synthetic == found.efficacy.real and found.efficacy.real.auroc > 0.9
    assert found.closeness.synthetic_exact == 1 and found.closeness.holdout_median > 0
    assert [f.kind for f in found.flags] == ["closeness"]
    assert found.dependence.numeric == (True, True, False, False)
    assert not found.headline.private


def test_random_noise_gets_the_utility_flag(table):
    """Uniform records with labels drawn apart from them: classifiers trained on them are at chance."""
    rng = np.random.default_rng(1)
    noise = {"x": rng.random((1000, 3)).astype(np.float32), "y": rng.integers(0, 3, 1000)}
    found = quality.assess(table, noise, None)
    assert found.efficacy.synthetic.auroc <= 0.5 + quality.CHANCE_AUROC < found.efficacy.real.auroc - 0.4
    assert "utility" in [f.kind for f in found.flags]
    page = quality_report.render(found, _context(Path("w")))
    assert 'class="flags"' in page and "ML utility at chance" in page
    assert quality_report.terminal_line(found, Path("w/report.html")).startswith("FLAGGED ML utility at chance")


def test_collapsed_marginals_get_the_marginals_flag(table):
    """Every synthetic record at one value: far marginals; numeric values outside the training range get their own
    bin, so they count in the TVD."""
    x = np.tile(np.array([[1.0, 0.0, 1.0]], dtype=np.float32), (200, 1))  # age 100: above every training age
    found = quality.assess(table, {"x": x, "y": np.zeros(200, dtype=np.int64)}, None)
    assert found.tvd_1way > quality.FAR_TVD and "marginals" in [f.kind for f in found.flags]
    age = found.marginals[0]
    assert age.bins[-1].startswith(">") and age.synthetic[-1] == 1 and age.tvd == 1
    assert found.efficacy.single_class and "utility" in [f.kind for f in found.flags]


def _context(work: Path) -> quality_report.Context:
    return quality_report.Context("privbayes", work.parent / "x.csv", work, "x.csv, x.privacy.json")


def test_the_page_is_self_contained_and_labelled_private_first(table, tmp_path):
    rng = np.random.default_rng(2)
    found = quality.assess(table, {"x": _records(500, rng).x, "y": _records(500, rng).y}, None)
    path = quality_report.write(found, _context(tmp_path), tmp_path / "report.html")
    page = path.read_text()
    body = re.sub(r"<[^>]+>", "", page[page.index("<body>") :]).strip()
    assert body.startswith("⚠ " + quality_report.WARNING)
    assert path.stat().st_mode & 0o777 == 0o600
    for section in ("Privacy", "Marginals", "Pairwise dependence", "ML efficacy", "Distance to the closest"):
        assert f"<h2>{section}" in page, section
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 2 and all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert not re.search(r"(src|href)=\"(?!data:)", page)  # nothing fetched from elsewhere


def test_images_get_grids_labels_and_classifier_accuracy(tmp_path):
    """Images [N, C, H, W]: a grid per class (synthetic, real), the labels' TVD, logistic regression on real vs on
    synthetic; FID said not computed."""
    rng = np.random.default_rng(3)

    def images(n: int) -> Split:
        y = rng.integers(0, 2, n)
        x = rng.random((n, 1, 6, 6)) * 0.3 + y[:, None, None, None] * 0.6  # class 1 is brighter
        return Split(x.astype(np.float32), y.astype(np.int64))

    prepared = Prepared(images(200), images(60), {"label_names": ["dark", "bright"]})
    synthetic = images(300)
    found = quality.assess(prepared, {"x": synthetic.x, "y": synthetic.y}, None)
    assert isinstance(found, quality.ImageQuality)
    assert found.synthetic_grid.labels == ("dark", "bright") == found.real_grid.labels
    assert [len(i) for i in found.synthetic_grid.images] == [quality.GRID_COLUMNS] * 2
    assert found.efficacy.synthetic.accuracy > 0.9 and found.flags == ()
    page = quality_report.render(found, _context(tmp_path))
    for section in ("Samples per class", "Labels", "ML efficacy"):
        assert f"<h2>{section}" in page
    assert "FID not computed" in page and len(re.findall(r"data:image/png;base64,", page)) == 3


def test_names_are_shown_as_written(tmp_path):
    """A column or category named with mathtext's `$` or with HTML renders literally (matplotlib and the page)."""
    rng = np.random.default_rng(4)
    odd = [
        {"name": "$a_$ per $b$", "kind": "continuous", "min": 0.0, "max": 1.0},  # mathtext that cannot parse
        {"name": "<b>x</b>", "kind": "categorical", "min": 0.0, "max": 1.0, "categories": ["$a$", "<i>"]},
    ]
    split = Split(np.column_stack([rng.random(80), rng.integers(0, 2, 80)]).astype(np.float32), rng.integers(0, 2, 80))
    prepared = Prepared(split, split, {"columns": odd, "label_names": ["$no", "<yes>"]})
    page = quality_report.render(quality.assess(prepared, {"x": split.x, "y": split.y}, None), _context(tmp_path))
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page
