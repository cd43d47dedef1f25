"""``python -m docmaster_core`` runs the CLI."""
import sys

from .cli import main

sys.exit(main())
