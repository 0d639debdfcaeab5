"""Which items can be built today, derived from the registries (methods, metrics, analyses, renderers).

An item is *done* when its renderer and every analysis it needs exist (every method and metric an experiment
names is registered, or the configuration is refused). docs/status.md's table, the scorecard's headline there
and in README.md, and docs/mst-aim.md's table of the today page's recorded numbers are generated here (tests keep
them true).
"""

from __future__ import annotations

from typing import Any

from dpvae.analyses import ANALYSES
from dpvae.items import ITEMS, Item
from dpvae.render.base import load_renderers

RENDERERS = load_renderers()


def missing_parts(item: Item, config: Any) -> list[str]:
    """What keeps `item` from being built (empty = done)."""
    from dpvae.config_types import as_config

    missing = [] if (item.key in RENDERERS) else [f"renderer {item.key}"]
    for name in item.experiments:
        exp = as_config(config).experiments[name]
        if not exp.trains and exp.analysis not in ANALYSES:
            missing.append(f"analysis {exp.analysis}")
    return sorted(set(missing))


def done_items(config: Any) -> list[Item]:
    from dpvae.config_types import as_config

    config = as_config(config)
    return [item for item in ITEMS.values() if not missing_parts(item, config)]


def status_table(config: Any) -> str:
    """docs/status.md's table: every item, done / partial / not yet, what it still needs, and how many of its
    published cells the recorded paper-scale reproductions match (`python -m dpvae scorecard`); under it, the
    reasons of the cells marked not DP (†)."""
    from dpvae.reproductions import not_dp_notes
    from dpvae.scorecard import item_summary, scorecard

    card = scorecard()
    reproduced = item_summary(card)
    lines = [headline(card), ""]
    lines += ["| item | title | status | still needed | paper scale (scorecard) |", "|---|---|---|---|---|"]
    for item in ITEMS.values():
        missing = missing_parts(item, config)
        parts = len(item.experiments) + 1
        status = (
            "done" if not missing else ("partial" if (item.key in RENDERERS) or len(missing) < parts else "not yet")
        )
        title = item.title.replace("|", "\\|")
        cells = reproduced.get(item.key, "no published numbers")
        lines.append(f"| `{item.key}` | {title} | {status} | {', '.join(missing) or '-'} | {cells} |")
    if notes := not_dp_notes(card["not_dp"]):
        lines += ["", *(f"{note}  " for note in notes)]
    return "\n".join(lines)


def headline(card=None) -> str:
    """The scorecard's headline in words (`scorecard.Fidelity`, `HEADLINE_WORDS`), of the recorded reproductions
    unless a card is given."""
    from dpvae.scorecard import HEADLINE_WORDS, fidelity, scorecard

    counts = fidelity(scorecard() if card is None else card)
    return f"**Scorecard at paper scale: {counts.headline}** ({counts.rest}). {HEADLINE_WORDS}"


STATUS_BEGIN, STATUS_END = "<!-- status:begin -->", "<!-- status:end -->"
HEADLINE_BEGIN, HEADLINE_END = "<!-- headline:begin -->", "<!-- headline:end -->"
TODAY_BEGIN, TODAY_END = "<!-- today:begin -->", "<!-- today:end -->"


def today_table() -> str:
    """The today page's recorded paper-scale numbers (reproductions/today.csv) as a markdown table."""
    from dpvae.render.today import recorded_markdown
    from dpvae.reproductions import REPRODUCTIONS_DIR, read_reproductions

    return recorded_markdown(read_reproductions(REPRODUCTIONS_DIR / "today.csv"))


def with_status(text: str, config: dict) -> str:
    """A page's text with the block between the status markers replaced by the current table (docs/status.md), the
    block between the headline markers by the scorecard's headline (README.md) and the one between the today markers
    by the today page's recorded numbers (docs/mst-aim.md); a page without a pair of markers keeps that part."""
    blocks = (
        (STATUS_BEGIN, STATUS_END, lambda: status_table(config)),
        (HEADLINE_BEGIN, HEADLINE_END, headline),
        (TODAY_BEGIN, TODAY_END, today_table),
    )
    for begin, end, make in blocks:
        if begin in text:
            head, rest = text.split(begin, 1)
            _, tail = rest.split(end, 1)
            text = f"{head}{begin}\n{make()}\n{end}{tail}"
    return text
