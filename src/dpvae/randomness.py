"""Where a run's randomness comes from: seeded (a replication run) or secret (a release).

A *replication run* (the papers' datasets at the smoke and paper scales) derives every random stream from its run
id and seed, so that it repeats byte for byte; whoever knows the seed (it sits in the config and in train.json)
can recompute its noise, so such a run is not a release, and its ledger says so (`SEEDED`).

A *release* (`dpvae synth`, and an own-data run whose dataset does not say `randomness: seeded`) draws every
stream from a 256-bit key of the process taken from the operating system's entropy (`secrets`), or read once
from a seed file the user keeps secret; the key is never written anywhere (no spec, record, checkpoint name or
log carries it), and its ledger says `SECRET`. Its numpy streams are seeded with 64 bits of an HMAC-SHA256 of the
key and the stream's name; its CPU torch streams get the whole Mersenne-Twister state (624 words) from the key, as
a torch CPU generator's `manual_seed` keeps only 32 bits; CUDA generators (Philox) take a 64-bit seed.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpvae.runspec import RunSpec

#: a spec's `randomness` for a release (absent: seeded, a replication run)
SECRET = "secret"
#: what a ledger says of its randomness
SEEDED_NOTE = "seeded (repeatable; not a release)"
SECRET_NOTE = "secret (OS entropy, never written)"
SEED_FILE_NOTE = "secret (a seed file the user keeps; never copied)"

_KEY: bytes | None = None  # the process's secret key, made on first use or read from a seed file
_FROM_FILE = False
#: a torch CPU generator's state: an 8-byte initial seed, `left`, `seeded`, `next`, then 624 8-byte words
_MT_WORDS, _MT_OFFSET, _MT_STATE_BYTES = 624, 24, 5056


def is_secret(spec: RunSpec) -> bool:
    return spec.randomness == SECRET


def note(spec: RunSpec) -> str:
    """What a ledger says of the run's randomness."""
    if not is_secret(spec):
        return SEEDED_NOTE
    return SEED_FILE_NOTE if _FROM_FILE else SECRET_NOTE


def resumable(spec: RunSpec) -> bool:
    """Whether a killed run may resume from its checkpoint: a seeded run, or a release keyed by a seed file (a new
    process reads the same key). A release keyed by OS entropy may not: its key died with the process, and a resumed
    run would mix two draws of its noise (e.g. P3GM's DP-PCA drawn again beside a decoder trained on the first),
    which its ledger does not cover. It starts over; the killed run released nothing."""
    return not is_secret(spec) or _FROM_FILE


def key_tag(spec: RunSpec) -> str:
    """What a checkpoint stores to be resumed only under the same key: "" when seeded, else 128 bits of a keyed
    stream of its own (an HMAC output: it tells nothing of the key or of any other stream)."""
    return _secret_bytes(spec, "checkpoint-tag", 16).hex() if is_secret(spec) else ""


def use_seed_file(path: Path) -> None:
    """Take the process's key from a file the user keeps secret (read once here; never copied or named)."""
    global _KEY, _FROM_FILE
    material = path.read_bytes()
    _KEY, _FROM_FILE = hashlib.sha256(b"dpvae seed file|" + material).digest(), True


def forget() -> None:
    """Drop the process's key (the next secret stream draws a new one from the OS)."""
    global _KEY, _FROM_FILE
    _KEY, _FROM_FILE = None, False


def _key() -> bytes:
    global _KEY
    if _KEY is None:
        _KEY = secrets.token_bytes(32)
    return _KEY


def _secret_bytes(spec: RunSpec, stream: str, n: int) -> bytes:
    """n bytes of the keyed stream `stream` of this run."""
    return _keyed(f"{spec.run_id}|{stream}".encode(), n)


def _keyed(label: bytes, n: int) -> bytes:
    """n bytes of the process key's stream `label` (HMAC-SHA256 in counter mode)."""
    blocks = (hmac.new(_key(), label + i.to_bytes(4, "little"), hashlib.sha256).digest() for i in range(-(-n // 32)))
    return b"".join(blocks)[:n]


def secret_seed(label: str) -> int:
    """63 secret bits of the process key's stream `label`, for what is drawn outside a run (a release's split:
    `dpvae prepare --secret`); from a seed file, when the process has one, like every secret stream."""
    return int.from_bytes(_keyed(f"outside a run|{label}".encode(), 8), "little") >> 1


def stream_seed(spec: RunSpec, stream: str) -> int:
    """The seed of a named random stream of this run: 32 bits of sha256(run id, seed, stream) when seeded (the same
    run and stream give the same seed), 64 secret bits when secret."""
    if is_secret(spec):
        return int.from_bytes(_secret_bytes(spec, stream, 8), "little")
    digest = hashlib.sha256(f"{spec.run_id}|{spec.seed}|{stream}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def seed_torch(generator: Any, spec: RunSpec, stream: str) -> Any:
    """Seed a torch generator (or `torch.default_generator`) for the stream; a secret CPU one gets its whole state."""
    generator.manual_seed(stream_seed(spec, stream))
    if is_secret(spec) and generator.device.type == "cpu":
        import torch

        state = generator.get_state()
        if state.numel() != _MT_STATE_BYTES:
            raise RuntimeError(f"torch's CPU generator state is {state.numel()} bytes, not {_MT_STATE_BYTES}")
        words = torch.frombuffer(bytearray(_secret_bytes(spec, stream + "|mt19937", 4 * _MT_WORDS)), dtype=torch.uint8)
        view = state[_MT_OFFSET : _MT_OFFSET + 8 * _MT_WORDS].view(_MT_WORDS, 8)
        view[:, :4] = words.view(_MT_WORDS, 4)
        view[:, 4:] = 0
        generator.set_state(state)
    return generator


def seed_globals(spec: RunSpec, stream: str = "global") -> None:
    """Seed Python's, numpy's and torch's global generators for the run (CUDA's too, where there is one)."""
    import random

    import numpy as np
    import torch

    seed = stream_seed(spec, stream)
    random.seed(seed)
    np.random.seed([seed & 0xFFFFFFFF, seed >> 32] if is_secret(spec) else seed)
    seed_torch(torch.default_generator, spec, stream)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
