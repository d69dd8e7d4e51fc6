import sys

from collkit.cli import main

sys.exit(main())
