"""Configuration of a process: where its data lives and opening the bank there (`paths`), and its log lines
(`logs`). May import: common and the bank's store.
"""
