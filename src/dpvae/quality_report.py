"""The data holder's quality report: `dpvae.quality`'s statistics as one self-contained HTML page (its plots embedded
as base64 PNG), labelled at its top as holding statistics of the private data. `dpvae synth` writes it into the
private workspace (`dpvae.release.REPORT`); it is never part of the release."""

from __future__ import annotations

import base64
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpvae.files import atomic_write
from dpvae.quality import (
    CHANCE_AUROC,
    CLOSE_DCR,
    FAR_TVD,
    GRID_CLASSES,
    GRID_COLUMNS,
    IMAGE_COMPONENTS,
    Closeness,
    Dependence,
    Efficacy,
    Grid,
    Headline,
    Marginal,
    Quality,
    TableQuality,
)

WARNING = "Contains statistics of your private data: not part of the release; do not publish."
SHOWN_CATEGORIES = 20  # a categorical column's bars beyond these (the largest) are summed as one
REAL, SYNTHETIC = "#4c72b0", "#dd8452"


@dataclass(frozen=True)
class Context:
    """What the page says of the release it describes."""

    method: str
    samples: Path  # the released samples (--out)
    work: Path  # the private workspace holding the report
    released: str  # the release bundle's files (`dpvae.release.RELEASED`)


def write(quality: Quality, context: Context, path: Path) -> Path:
    """The page at `path`, readable by its owner only."""
    text = render(quality, context)
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    os.chmod(path, 0o600)
    return path


def terminal_line(quality: Quality, path: Path) -> str:
    """synth's one line on the report: where it is and, first, what it flags."""
    where = f"quality report (private: statistics of your data, not part of the release; do not publish): {path}"
    if not quality.flags:
        return where
    return f"FLAGGED {'; '.join(flag.text for flag in quality.flags)} -- see the {where}"


def render(quality: Quality, context: Context) -> str:
    import jinja2

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["num"] = _num
    template = env.from_string(PAGE)
    common: dict[str, Any] = {
        "q": quality,
        "context": context,
        "warning": WARNING,
        "privacy": _privacy_rows(quality.headline),
        "limits": {"chance": CHANCE_AUROC, "far": FAR_TVD, "close": CLOSE_DCR},
        "components": IMAGE_COMPONENTS,
    }
    if isinstance(quality, TableQuality):
        return template.render(
            **common,
            table=True,
            marginals_png=_png(_marginals_figure(quality.marginals)),
            dependence_png=_png(_dependence_figure(quality.dependence)),
            efficacy=_efficacy_rows(quality.efficacy),
            closeness=_closeness_rows(quality.closeness),
        )
    return template.render(
        **common,
        table=False,
        synthetic_grid_png=_png(_grid_figure(quality.synthetic_grid, "synthetic")),
        real_grid_png=_png(_grid_figure(quality.real_grid, "real (training split)")),
        labels_png=_png(_marginals_figure((quality.labels,))),
        grid_columns=GRID_COLUMNS,
        grid_classes=GRID_CLASSES,
        efficacy=_efficacy_rows(quality.efficacy),
    )


def _num(value: float | None) -> str:
    """A statistic to 3 decimals (TVD, r, V, distances), '–' where undefined."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.3f}"


def _privacy_rows(h: Headline) -> list[tuple[str, str]]:
    from dpvae.privacy.summary import num

    if not h.private:
        return [("privacy", "not private: this method gives no differential-privacy guarantee")]
    rows = [
        ("headline ε", f"{num(h.epsilon)} at δ = {num(h.delta)} ({h.headline} accounting)"),
        ("sound ε (proven bound)", "unbounded" if h.sound is None else num(h.sound)),
        ("paper's ε (the paper's claim)", "–" if h.paper is None else num(h.paper)),
        ("target ε", "none" if h.target is None else num(h.target)),
        ("randomness", h.randomness or "not recorded"),
    ]
    if h.not_dp:
        rows.append(("not DP", h.not_dp))
    return rows


def _efficacy_rows(e: Efficacy | None) -> list[tuple[str, ...]]:
    if e is None:
        return []

    def row(name: str, s: Any) -> tuple[str, ...]:
        se = math.sqrt(max(s.accuracy * (1 - s.accuracy), 0) / e.n_test)
        return name, f"{s.accuracy:.3f} ± {se:.3f}", f"{s.auroc:.3f}", f"{s.auprc:.3f}"

    return [
        row("trained on synthetic" + (" (one class only)" if e.single_class else ""), e.synthetic),
        row("trained on real (training split)", e.real),
        ("chance", f"{e.majority:.3f} (the training split's majority class)", "0.5", "–"),
    ]


def _closeness_rows(c: Closeness) -> list[tuple[str, str, str, str]]:
    return [
        ("synthetic → training", _num(c.synthetic_median), _num(c.synthetic_p5), f"{c.synthetic_exact:.1%}"),
        ("held-out test → training", _num(c.holdout_median), _num(c.holdout_p5), f"{c.holdout_exact:.1%}"),
    ]


def _plain(names: Any) -> list[str]:
    """Names as matplotlib shows them literally (a `$` would start its mathtext)."""
    return [str(name).replace("$", r"\$") for name in names]


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _shown(m: Marginal) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The bars of a marginal: a categorical column's SHOWN_CATEGORIES largest, the rest summed as one."""
    real, synthetic = np.asarray(m.real), np.asarray(m.synthetic)
    bins = list(m.bins)
    if m.kind == "categorical" and len(bins) > SHOWN_CATEGORIES:
        top = np.sort(np.argsort(-(real + synthetic), kind="stable")[: SHOWN_CATEGORIES - 1])
        rest = np.setdiff1d(np.arange(len(bins)), top)
        bins = [bins[i] for i in top] + [f"({len(rest)} others)"]
        real = np.append(real[top], real[rest].sum())
        synthetic = np.append(synthetic[top], synthetic[rest].sum())
    return bins, real, synthetic


def _marginals_figure(marginals: tuple[Marginal, ...]) -> Any:
    from matplotlib.figure import Figure

    columns = min(3, len(marginals))
    rows = math.ceil(len(marginals) / columns)
    figure = Figure(figsize=(4.2 * columns, 3.0 * rows), layout="constrained")
    axes = np.atleast_1d(figure.subplots(rows, columns)).ravel()
    for ax, m in zip(axes, marginals, strict=False):
        bins, real, synthetic = _shown(m)
        at = np.arange(len(bins))
        ax.bar(at - 0.2, real, 0.4, color=REAL, label="real (training split)")
        ax.bar(at + 0.2, synthetic, 0.4, color=SYNTHETIC, label="synthetic")
        turned = m.kind == "numeric" or len(bins) > 4
        ax.set_xticks(at, _plain(bins), rotation=60 if turned else 0, ha="right" if turned else "center", fontsize=7)
        ax.set_title(f"{_plain([m.column])[0]}: TVD {m.tvd:.3f}", fontsize=9)
        ax.set_ylabel("share", fontsize=8)
    for ax in axes[len(marginals) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7)
    return figure


def _dependence_figure(d: Dependence) -> Any:
    import matplotlib
    from matplotlib.figure import Figure

    size = max(3.5, 0.45 * len(d.columns) + 1.5)
    figure = Figure(figsize=(2 * size + 1, size), layout="constrained")
    axes = figure.subplots(1, 2)
    image = None
    for ax, (title, matrix) in zip(axes, (("real (training split)", d.real), ("synthetic", d.synthetic)), strict=True):
        values = np.asarray(matrix, dtype=float)
        np.fill_diagonal(values, np.nan)  # a column with itself: not shown
        cmap = matplotlib.colormaps["RdBu_r"].with_extremes(bad="#eeeeee")
        image = ax.imshow(values, cmap=cmap, vmin=-1, vmax=1)
        ax.set_xticks(range(len(d.columns)), _plain(d.columns), rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(d.columns)), _plain(d.columns), fontsize=7)
        ax.set_title(title, fontsize=9)
        if len(d.columns) <= 12:
            for (i, j), v in np.ndenumerate(values):
                if np.isfinite(v):
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6)
    figure.colorbar(image, ax=axes, shrink=0.8, label="Pearson's r (two numeric) / Cramér's V (others)")
    return figure


def _grid_figure(g: Grid, title: str) -> Any:
    """One row per class: its images side by side (grey, or colour from 3 channels)."""
    from matplotlib.figure import Figure

    shapes = [images.shape[1:] for images in g.images if len(images)]
    channels, height, width = shapes[0] if shapes else (1, 8, 8)
    pad = 1
    mosaic = np.ones((len(g.labels) * (height + pad), GRID_COLUMNS * (width + pad), 3))
    for r, images in enumerate(g.images):
        for c, image in enumerate(images[:GRID_COLUMNS]):
            pixels = np.clip(np.asarray(image, dtype=float), 0, 1).transpose(1, 2, 0)
            pixels = np.repeat(pixels, 3, axis=2) if pixels.shape[2] == 1 else pixels[:, :, :3]
            top, left = r * (height + pad), c * (width + pad)
            mosaic[top : top + height, left : left + width] = pixels
    scale = 0.5 if height <= 16 else 0.9
    figure = Figure(figsize=(GRID_COLUMNS * scale + 1.5, max(1, len(g.labels)) * scale + 0.6), layout="constrained")
    ax = figure.subplots()
    ax.imshow(mosaic, interpolation="nearest")
    ax.set_yticks([r * (height + pad) + height / 2 for r in range(len(g.labels))], _plain(g.labels), fontsize=8)
    ax.set_xticks([])
    ax.set_title(title, fontsize=9)
    return figure


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Quality report: {{ context.method }} release {{ context.samples.name }} (private)</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 68em; margin: 1em auto; padding: 0 1em; color: #222; }
.private { border: 3px solid #b00020; background: #fdecee; padding: .6em 1em; font-weight: 600; }
.flags { border: 3px solid #e08000; background: #fff4e0; padding: .4em 1em; }
.ok { border: 1px solid #4a8; background: #eef8f2; padding: .4em 1em; }
table { border-collapse: collapse; margin: .5em 0; } td, th { border: 1px solid #ccc; padding: .2em .6em; }
th { background: #f4f4f4; text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; } .small { color: #555; font-size: .9em; }
</style></head><body>
<p class="private">⚠ {{ warning }}<br><span class="small">This page stays in the private workspace
{{ context.work }}/ (mode 0700); the release is {{ context.released }}, nothing else.</span></p>
<h1>Quality report: method {{ context.method }}, {{ context.samples.name }}</h1>
<p>{{ q.n_synthetic }} synthetic records against the {{ q.n_train }} records of the training split (what the method
saw) and the {{ q.n_test }} of the held-out test split (never seen: the yardstick for utility and closeness).</p>
{% if q.flags %}<div class="flags"><strong>⚠ Flagged</strong><ul>
{% for flag in q.flags %}<li><strong>{{ flag.kind }}</strong>: {{ flag.text }}</li>{% endfor %}</ul></div>
{% else %}<p class="ok">No flag raised: utility above chance (macro AUROC more than {{ limits.chance }} above 0.5 and
accuracy above the training split's majority class alone){% if table %}, mean 1-way TVD ≤ {{ limits.far }},
synthetic records no closer to the training records than held-out ones{% else %}, label distribution's TVD
≤ {{ limits.far }}{% endif %}. A flag's absence is no proof of quality.</p>{% endif %}

<h2>Privacy (the ledger's headline)</h2>
<table>{% for name, value in privacy %}<tr><th>{{ name }}</th><td>{{ value }}</td></tr>{% endfor %}</table>

{% if table %}
<h2>Marginals: each column, real vs synthetic</h2>
<p>Total-variation distance (TVD, ½·L1 between the histograms: 0 identical, 1 disjoint) per column, numeric columns
in 10 equal-width bins over the training split's range (with a bin each side where synthetic values fall outside
it). Mean 1-way TVD: <strong>{{ q.tvd_1way | num }}</strong>. The test split against the training split gives
{{ q.baseline_1way | num }}: what sampling {{ q.n_test }} real records alone gives.</p>
<table><tr><th>column</th><th>kind</th><th>TVD synthetic</th><th>TVD test split</th></tr>
{% for m in q.marginals %}<tr><td>{{ m.column }}</td><td>{{ m.kind }}</td><td class="n">{{ m.tvd | num }}</td>
<td class="n">{{ m.baseline | num }}</td></tr>{% endfor %}</table>
<img alt="marginals" src="data:image/png;base64,{{ marginals_png }}">

<h2>Pairwise dependence</h2>
<p>Pearson's r for two numeric columns, Cramér's V (numeric columns in their bins) for any other pair; the label is a
column. Mean |real − synthetic| over the pairs: <strong>{{ q.dependence.mean_abs_difference | num }}</strong>.
2-way TVD averaged over the {{ (q.dependence.columns | length) * ((q.dependence.columns | length) - 1) // 2 }} pairs:
<strong>{{ q.dependence.tvd_2way | num }}</strong> (test split: {{ q.dependence.baseline | num }}).</p>
<img alt="dependence" src="data:image/png;base64,{{ dependence_png }}">
{% else %}
<h2>Samples per class</h2>
<p>The first {{ grid_columns }} images of each class (up to {{ grid_classes }} classes), synthetic and real.</p>
<div style="display: flex; gap: 1.5em; flex-wrap: wrap;">
<img alt="synthetic samples" src="data:image/png;base64,{{ synthetic_grid_png }}">
<img alt="real samples" src="data:image/png;base64,{{ real_grid_png }}"></div>
<h2>Labels</h2>
<p>TVD of the label distribution: <strong>{{ q.labels.tvd | num }}</strong>
(test split: {{ q.labels.baseline | num }}).</p>
<img alt="labels" src="data:image/png;base64,{{ labels_png }}">
{% endif %}

<h2>ML efficacy: train on synthetic, test on real</h2>
{% if q.efficacy %}
<p>{{ q.efficacy.classifiers | join(" and ") }} ({{ "mean of the two" if q.efficacy.classifiers | length > 1
else "logistic regression on the flattened pixels' first %d principal components" % components }}),
 {{ q.efficacy.classes }} classes, scored on the {{ q.efficacy.n_test }} records of the
real test split (accuracy ± its standard error); AUROC and AUPRC are macro one-vs-rest averages.
{{ q.efficacy.note }}</p>
<table><tr><th></th><th>accuracy</th><th>macro AUROC</th><th>macro AUPRC</th></tr>
{% for row in efficacy %}<tr><td>{{ row[0] }}</td>{% for v in row[1:] %}<td class="n">{{ v }}</td>{% endfor %}</tr>
{% endfor %}</table>
{% endif %}

{% if table %}
<h2>Distance to the closest training record (privacy sanity check)</h2>
<p>Euclidean distance of each record to its closest training record (numeric columns scaled to the training split's
range, categories one-hot: a mismatch counts as a full range). Synthetic records much closer than held-out real ones
would suggest copies of training records; this is a check, not a privacy guarantee (the ledger is). Share of
synthetic records closer than the test split's 5th percentile: {{ "%.1f%%" % (100 * q.closeness.below_holdout_p5) }}
(about 5 % expected); {{ q.closeness.measured }} synthetic records measured.</p>
<table><tr><th></th><th>median</th><th>5th percentile</th><th>at distance 0</th></tr>
{% for row in closeness %}<tr><td>{{ row[0] }}</td>{% for v in row[1:] %}<td class="n">{{ v }}</td>{% endfor %}</tr>
{% endfor %}</table>
{% endif %}
{% if q.notes %}<h2>Notes</h2><ul>{% for note in q.notes %}<li>{{ note }}</li>{% endfor %}</ul>{% endif %}
</body></html>
"""
