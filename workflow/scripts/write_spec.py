"""A spec rule's job: write `params.spec` (computed by the Snakefile's plan) as JSON to the output.

A `script:` job starts a bare Python (a fraction of a second), where a `run:` job would start a whole new
Snakemake; the spec travels in Snakemake's script preamble, never on a command line. Like the shell rules'
jobs, it imports the checkout's package from $DPVAE_SRC (set by the Snakefile; a path in the job's
environment, not in what Snakemake tracks) and ends a failure with one `dpvae: error:` line on the terminal,
its traceback in the log.
"""

import json
import os
import sys
import traceback

sys.path.insert(0, os.environ["DPVAE_SRC"])
try:
    from dpvae.files import write_json, write_text

    spec = snakemake.params.spec
    write_json(snakemake.output[0], spec)
    write_text(snakemake.log[0], f"wrote {snakemake.output[0]} ({len(json.dumps(spec))} bytes, pid {os.getpid()})\n")
except Exception as error:  # noqa: BLE001 - any failure: its traceback to the log, one line to the terminal
    try:
        with open(snakemake.log[0], "a") as log:
            traceback.print_exc(file=log)
    except OSError:
        traceback.print_exc()
    reason = (str(error).strip().splitlines() or [""])[0]
    print(
        f"dpvae: error: writing {snakemake.output[0]} failed: {type(error).__name__}: {reason} "
        f"(traceback in {snakemake.log[0]})",
        file=sys.stderr,
        flush=True,
    )
    sys.exit(1)
