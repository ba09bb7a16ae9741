import sys

from contextd.cli import main

sys.exit(main())
