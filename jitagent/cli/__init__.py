"""The `jitagent` command line: the entry point (`main`), what every command shares (`common`), options whose
value may also come from the environment or a config file (`settings`), and a module per command group
(`bank`, `serve`, `fleet`, `mcp`, `synthesize`, `train`, `completion`); what reaches a terminal (`terminal`,
`progress`). May import everything.
"""
