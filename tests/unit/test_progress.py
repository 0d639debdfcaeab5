"""The progress reporter (dpvae.progress): its cadence and line format under a fake clock, ε only when a line is
written, resumed loops, and reading the newest line of each job log back (`python -m dpvae progress`)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dpvae import cli
from dpvae.progress import LINE, Progress, cadence, duration, newest_lines
from support.progress_logs import data_numbers


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def ledger(paper: float, sound: float | None = None, target: float | None = 1.0) -> SimpleNamespace:
    return SimpleNamespace(
        paper=SimpleNamespace(epsilon=paper),
        sound=None if sound is None else SimpleNamespace(epsilon=sound),
        target_epsilon=target,
    )


def reporter(total: int = 100, every: float = 30.0, **kwargs) -> tuple[Progress, Clock, list[str]]:
    clock, lines = Clock(), []
    return Progress("demo", total, every=every, clock=clock, write=lines.append, **kwargs), clock, lines


def test_a_line_every_cadence_seconds_and_at_the_end_with_rate_elapsed_and_eta():
    progress, clock, lines = reporter()
    for _ in range(10):  # 10 steps in 10 s each: lines at 30 s, 60 s, 90 s and the end (100 s)
        clock.now += 10
        progress.advance(10)
    assert lines == [
        "progress demo: 30/100 steps (30%), 1 steps/s, elapsed 30s, ETA 1m10s",
        "progress demo: 60/100 steps (60%), 1 steps/s, elapsed 1m00s, ETA 40s",
        "progress demo: 90/100 steps (90%), 1 steps/s, elapsed 1m30s, ETA 10s",
        "progress demo: 100/100 steps (100%), 1 steps/s, elapsed 1m40s, ETA 0s",
    ]
    assert all(LINE.fullmatch(line) for line in lines)


def test_cadence_zero_writes_at_every_advance_and_the_environment_sets_it(monkeypatch):
    progress, clock, lines = reporter(total=3, every=0.0, unit="images")
    for _ in progress.each(["a", "b", "c"]):
        clock.now += 0.5
    assert [line.split(",")[0] for line in lines] == [
        "progress demo: 1/3 images (33%)",
        "progress demo: 2/3 images (66%)",
        "progress demo: 3/3 images (100%)",
    ]
    assert lines[0] == "progress demo: 1/3 images (33%), 2 images/s, elapsed 0s, ETA 1s"
    monkeypatch.setenv("DPVAE_PROGRESS_SECONDS", "0")
    assert cadence() == 0.0 and Progress("x", 1).every == 0.0
    monkeypatch.setenv("DPVAE_PROGRESS_SECONDS", "-1")
    with pytest.raises(ValueError, match="DPVAE_PROGRESS_SECONDS"):
        cadence()
    monkeypatch.delenv("DPVAE_PROGRESS_SECONDS")
    assert cadence() == 30.0


def test_epsilon_is_the_accountants_after_done_units_computed_only_for_a_written_line():
    asked = []

    def spent(done: int) -> SimpleNamespace:
        asked.append(done)
        return ledger(0.5 * done / 100, 1.25 * done / 100)

    progress, clock, lines = reporter(epsilon=spent)
    for _ in range(100):
        clock.now += 1
        progress.advance()
    assert asked == [30, 60, 90, 100]  # not at every step
    assert (
        lines[-1]
        == "progress demo: 100/100 steps (100%), 1 steps/s, elapsed 1m40s, ETA 0s, eps paper 0.5 sound 1.25 target 1"
    )
    planned, clock, lines = reporter(total=1, epsilon=lambda _: ledger(2.0, None, None), epsilon_planned=True)
    clock.now += 2
    planned.advance()
    assert lines == [
        "progress demo: 1/1 steps (100%), 0.5 steps/s, elapsed 2s, ETA 0s, eps paper 2 (no sound bound) (planned end)"
    ]
    assert all(LINE.fullmatch(line) for line in lines)


def test_a_resumed_loop_counts_its_rate_from_where_it_resumed():
    progress, clock, lines = reporter(total=1000, every=10.0)
    clock.now += 500  # time before the resume (loading the checkpoint) does not count
    progress.start_at(900)
    for _ in range(10):
        clock.now += 1
        progress.advance(10)
    assert lines == [
        "progress demo: 1000/1000 steps (100%), 10 steps/s, elapsed 10s, ETA 0s",
    ]


def test_durations_and_unknown_rates():
    assert [duration(s) for s in (0, 59.9, 60, 3599, 3600, 7384, float("nan"), -1)] == [
        "0s", "59s", "1m00s", "59m59s", "1h00m", "2h03m", "?", "?",
    ]  # fmt: skip
    progress, clock, lines = reporter(total=2, every=0.0)
    progress.advance()  # no time has passed: no rate, no ETA
    assert lines == ["progress demo: 1/2 steps (50%), ? steps/s, elapsed 0s, ETA ?"]
    assert LINE.fullmatch(lines[0])


def test_the_checker_flags_a_loss_or_any_other_number_outside_a_progress_line():
    clean = [
        "2026-01-01 10:00:00,123 INFO dpvae.progress: progress p3gm DP-SGD: 3/24 steps (12%), 8.06 steps/s, "
        "elapsed 0s, ETA 2s, eps paper 0.8535 sound 1.315 target 1",
        "resumed at step 30/90",
        "2026-01-01 10:00:00,123 INFO dpvae.methods.checkpoint: resuming from checkpoint /r/checkpoint.pt at step 30",
    ]
    assert data_numbers("\n".join(clean)) == []
    planted = [
        "progress p3gm DP-SGD: 3/24 steps (12%), 8.06 steps/s, elapsed 0s, ETA 2s, loss 0.123",
        "loss 0.123",
        "step 10/100  phi 1.23  psi 0.5  3.2 steps/s",  # PriVAE's old line on a non-private run
        "2026-01-01 10:00:00,123 INFO dpvae.methods.dp_merf.train: epoch 1/2: loss 12.345678",  # DP-MERF's old line
    ]
    for line in planted:
        assert data_numbers("\n".join([*clean, line])) == [line]


def test_newest_line_of_each_running_job_log(tmp_path, capsys):
    first = tmp_path / "logs" / "results" / "run1" / "train.log"
    first.parent.mkdir(parents=True)
    first.write_text(
        "2026-01-01 10:00:00,123 INFO dpvae.progress: progress lvae training: 10/100 steps (10%), 1 steps/s, "
        "elapsed 10s, ETA 1m30s, eps paper 0.1 sound 0.2 target 1\n"
        "2026-01-01 10:00:30,123 INFO dpvae.progress: progress lvae training: 40/100 steps (40%), 1 steps/s, "
        "elapsed 40s, ETA 1m00s, eps paper 0.3 sound 0.5 target 1\n"
    )
    done = tmp_path / "logs" / "results" / "run2" / "sample.log"
    done.parent.mkdir(parents=True)
    done.write_text("progress sampling: 5/5 records (100%), 5 records/s, elapsed 1s, ETA 0s\n")
    (tmp_path / "logs" / "other.log").write_text("no progress here\n")
    jobs = newest_lines(tmp_path / "logs")
    assert [(j.log.name, j.name, j.done, j.total, j.eta) for j in jobs] == [
        ("train.log", "lvae training", 40, 100, "1m00s"),
        ("sample.log", "sampling", 5, 5, "0s"),
    ]
    assert cli.main(["progress", "--logs", str(tmp_path / "logs")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{first}: lvae training 40/100 steps, ETA 1m00s"]
    assert cli.main(["progress", "--logs", str(tmp_path / "logs"), "--all"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
