"""`jitagent bench`: the runner (`runner`), its ledger (`ledger`), statistics (`stats`) and the report
(`report`). Kept light: the CLI imports `arms` without loading models or the bank."""
