"""What a release draws outside a run (`randomness.secret_seed`: the split and domain estimate of `dpvae prepare
--secret`) comes from the process key like every secret stream: fresh OS entropy in each process, or a seed file's
key, which repeats it (so that a neighbour walk can pin it); never the replication seed."""

from __future__ import annotations

from dpvae import randomness


def test_a_secret_seed_is_fresh_per_process_and_repeats_under_a_seed_file(tmp_path):
    randomness.forget()
    first = randomness.secret_seed("prepare|mine")
    randomness.forget()  # another process
    assert randomness.secret_seed("prepare|mine") != first
    assert randomness.secret_seed("prepare|mine") != randomness.secret_seed("prepare|other")
    (tmp_path / "seed").write_bytes(b"kept secret")
    pinned = []
    for _ in range(2):
        randomness.forget()
        randomness.use_seed_file(tmp_path / "seed")
        pinned.append(randomness.secret_seed("prepare|mine"))
    randomness.forget()
    assert pinned[0] == pinned[1] and 0 <= pinned[0] < 2**63
