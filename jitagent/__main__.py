import sys

from jitagent.cli.main import main

sys.exit(main())
