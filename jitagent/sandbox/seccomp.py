"""The seccomp filter of every sandboxed run, a classic-BPF program assembled here (libseccomp's Python
binding is not on PyPI), as bwrap's `--seccomp FD` and `prctl(PR_SET_SECCOMP)` take it.

It refuses, with EPERM, what a run has no use for and what namespaces leave within its reach: sockets
other than unix, IPv4 and IPv6 (vsock reaches the hypervisor, netlink and packet sockets the kernel's
network code), io_uring whole (its IORING_OP_SOCKET makes sockets of any family without socket(2)),
the kernel keyrings (shared by every process of a uid: consecutive runs on one pool uid would share
them), and the calls that attach to, mount, re-namespace or extend the kernel. A run without
capabilities fails most of those anyway; refused here, the kernel code behind them is out of its
reach. Syscall numbers are x86_64's: elsewhere there is no filter (`program()` is None) and
`ExecResult.confinement` says so. Every other ABI on x86_64 (i386 by int 0x80, x32) is refused whole.
"""

from __future__ import annotations

import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
DENY = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
# seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (the low half first: little-endian)
NR, ARCH, ARG0 = 0, 4, 16
LD_W_ABS, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JSET|K, BPF_RET|K

DENIED = {
    "ptrace": 101, "mount": 165, "umount2": 166, "pivot_root": 155, "unshare": 272, "setns": 308,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442,  # the new mount API: mount by other means
    "add_key": 248, "request_key": 249, "keyctl": 250,
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
    "open_by_handle_at": 304,
    # io_uring: IORING_OP_SOCKET makes sockets of any family, past the family check below
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
}
SOCKET_CALLS = {"socket": 41, "socketpair": 53}
FAMILIES = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10}


def program() -> bytes | None:
    """The filter, or None where the machine is not x86_64."""
    if platform.machine() != "x86_64":
        return None
    code: list = [
        (LD_W_ABS, ARCH), (JEQ, AUDIT_ARCH_X86_64, None, "deny"),
        (LD_W_ABS, NR), (JSET, X32_SYSCALL_BIT, "deny", None),
        *[(JEQ, nr, "deny", None) for nr in DENIED.values()],
        *[(JEQ, nr, "family", None) for nr in SOCKET_CALLS.values()],
        (RET, ALLOW),
        "family", (LD_W_ABS, ARG0), *[(JEQ, family, "allow", None) for family in FAMILIES.values()],
        "deny", (RET, DENY),
        "allow", (RET, ALLOW),
    ]
    return assemble(code)


def assemble(code: list) -> bytes:
    """struct sock_filter {u16 code; u8 jt; u8 jf; u32 k} for each instruction: `(op, k)` or
    `(op, k, jump_if_true, jump_if_false)`, a jump a label (a string in `code` before its target) or
    None for the next instruction."""
    labels, instructions = {}, []
    for item in code:
        if isinstance(item, str):
            labels[item] = len(instructions)
        else:
            instructions.append(item)
    out = bytearray()
    for at, (op, k, *jumps) in enumerate(instructions):
        offsets = [0 if to is None else labels[to] - at - 1 for to in (jumps or [None, None])]
        if not all(0 <= offset <= 255 for offset in offsets):
            raise ValueError(f"instruction {at}: a jump of {offsets} does not fit classic BPF")
        out += struct.pack("=HBBI", op, *offsets, k)
    return bytes(out)
