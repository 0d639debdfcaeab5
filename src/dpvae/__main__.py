"""python -m dpvae."""

import sys

from dpvae.cli import main

sys.exit(main())
