"""Allow ``python -m compiler``."""

from compiler.cli import main

raise SystemExit(main())
