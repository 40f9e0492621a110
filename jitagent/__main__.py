import sys

from jitagent.cli import main

sys.exit(main())
