"""A spec rule's job: write `params.spec` (computed by the Snakefile's plan) as JSON to the output.

A `script:` job starts a bare Python (a fraction of a second), where a `run:` job would start a whole new
Snakemake; the spec travels in Snakemake's script preamble, never on a command line.
"""

import json
import os

from dpvae.files import write_json, write_text  # the checkout's package: the Snakefile puts src/ on PYTHONPATH

spec = snakemake.params.spec
write_json(snakemake.output[0], spec)
write_text(snakemake.log[0], f"wrote {snakemake.output[0]} ({len(json.dumps(spec))} bytes, pid {os.getpid()})\n")
