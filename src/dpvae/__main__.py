"""python -m dpvae: run one command, in the warm worker when a workflow build has one (dpvae.worker)."""

import sys

from dpvae.worker import submit

status = submit(sys.argv[1:])
if status is None:
    from dpvae.cli import main

    status = main()
sys.exit(status)
