"""The `jitagent` command line: the entry point (`main`), what every command shares (`common`), options whose
value may also come from the environment or a config file (`settings`), and a module per command group
(`bank`, `serve`, `fleet`, `mcp`, `synthesize`, `train`, `completion`); what reaches a terminal (`terminal`,
`progress`). May import everything.
"""

import os

# grpc's core logs to stderr on its own (a port in use, twice) at the verbosity it reads once, on its first
# import, which loading the settings' defaults brings about: set before anything of the CLI loads
os.environ.setdefault("GRPC_VERBOSITY", "NONE")
