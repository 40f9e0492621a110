"""Where a harness's code and tools run: the launch into bubblewrap with a seccomp filter (`launch`,
`seccomp`), the program that runs first inside it (`launcher`), what a run holds on the host — a uid, a
cgroup, capped disk (`host`) — the server's own file work beneath a workspace, never through a link
(`safe_files`),
and the tools a harness may call (`tools`). May import: common.
"""
