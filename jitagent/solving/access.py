"""Who is calling (issue 45): a bearer token names a tenant and a role, from one config that every door
reads through the solving layer — gRPC, the HTTP door, MCP over HTTP.

A deployment is one of three:
- open: no token at all; every caller is the operator (a server on loopback for one user);
- one token (`--auth-token-file` or JITAGENT_AUTH_TOKEN): its holder is the operator, as before;
- a tokens file (`--tokens-file`): each entry the SHA-256 of a token (never the token: the file is no
  secret), its tenant and its role. `jitagent tokens add FILE --tenant T` makes one.

A `client` solves and reports on its own runs; what steers every tenant's memory — Rollback, reports
that name no run — is the `operator`'s. With a tokens file every run id is its tenant's (`team-a:…`): a
`request_id` names a run in the caller's tenant only, and another tenant's run id is not found. What may
teach a tenant's memory is the operator's to say too (`teaches`): the verifier kinds whose pass on its
tasks counts as verified — a client writes its tasks' verifiers, and `shell_check: true` proves nothing —
and whether its reports count.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness_bank import pools
from jitagent.common.errors import clipped
from jitagent.tasks.task import VerifierSpec

Role = Literal["client", "operator"]
# what may admit a run as evidence: the pass of its task's verifier of a kind, or a report on it
EVIDENCE = (*(k for k in get_args(VerifierSpec.model_fields["kind"].annotation) if k != "none"), "report")
TENANT_PATTERN = f"^{pools.NAME}$"
MAX_BATCH = 64  # tasks in one Synthesize call, unless a tenant's quota says otherwise


class Caller(BaseModel):
    model_config = ConfigDict(frozen=True)

    tenant: str = "default"
    role: Role = "operator"
    pool: str | None = None  # the memory shared with other tenants, where the operator named one
    max_open: int | None = None  # the tenant's solves open at once (None: only the server's limit)
    max_batch: int | None = None  # tasks in one Synthesize call (None: any)
    teaches: frozenset[str] = frozenset(EVIDENCE)  # the evidence of its runs that its memory learns from
    max_runs: int | None = None  # runs the bank keeps of the tenant (None: any)
    max_clusters: int | None = None  # clusters of its pool (None: any)

    @property
    def operator(self) -> bool:
        return self.role == "operator"


# an open or one-token deployment's every caller; this machine's own commands. Its tenant is a name no
# tokens file can give (TENANT_PATTERN), so no tenant shares its run ids or memory.
OPERATOR = Caller(tenant="_local")


class Grant(BaseModel):
    """One token's entry in a tokens file."""

    model_config = ConfigDict(extra="forbid")

    token_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="hex SHA-256 of the token")
    tenant: str = Field(pattern=TENANT_PATTERN)
    role: Role = "client"
    pool: str | None = Field(None, pattern=TENANT_PATTERN, description="a memory this tenant shares with "
                             "the others that name it (opt-in); default: the tenant's own")
    max_open: int | None = Field(None, ge=1, description="the tenant's solves open at once (calls and task "
                                 "streams); default: only the server's --max-concurrent")
    max_batch: int = Field(MAX_BATCH, ge=1, le=10_000, description="tasks in one Synthesize call")
    max_runs: int | None = Field(None, ge=1, description="runs the bank keeps of the tenant, and so its "
                                 "outcomes and labelled tasks (the files they hold) at most; default: any")
    max_clusters: int | None = Field(None, ge=1, description="clusters of the tenant's pool; a task that "
                                     "would open one more is refused; default: any")
    teaches: list[str] = Field(list(EVIDENCE), description="what admits the tenant's runs as evidence its "
                               "memory learns from: the verifier kinds whose pass counts as verified, and "
                               f"`report` for its reports on its runs; of {', '.join(EVIDENCE)} "
                               f"(default: all)")

    @model_validator(mode="after")
    def _known_evidence(self) -> Grant:
        if unknown := sorted(set(self.teaches) - set(EVIDENCE)):
            raise ValueError(f"teaches: {unknown[0]!r} is none of {', '.join(EVIDENCE)}")
        return self


class TokensFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tokens: list[Grant] = Field(min_length=1)

    @model_validator(mode="after")
    def _once_each(self) -> TokensFile:
        hashes = [g.token_sha256 for g in self.tokens]
        if len(set(hashes)) != len(hashes):
            raise ValueError("a token is listed twice")
        tenants = {g.tenant for g in self.tokens}
        if taken := sorted({g.pool for g in self.tokens if g.pool and g.pool != g.tenant} & tenants):
            raise ValueError(f"pool {taken[0]!r} is also a tenant's name: it would share that tenant's own "
                             f"memory without its say")
        return self


class AccessError(ValueError):
    """A tokens file that cannot be used: one line naming the file and what is wrong."""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Access:
    """Bearer tokens to callers. No grants: open."""

    def __init__(self, grants: list[Grant] | tuple[Grant, ...] = (), tenanted: bool = False):
        self._callers = {g.token_sha256: Caller(**g.model_dump(exclude={"token_sha256", "teaches"}),
                                                teaches=frozenset(g.teaches)) for g in grants}
        self.tenanted = tenanted  # run ids live in their tenant's namespace

    @classmethod
    def one_token(cls, token: str | None) -> Access:
        """The single-token deployment: its holder is the operator (no token: open)."""
        access = cls()
        if token:
            access._callers[digest(token)] = OPERATOR
        return access

    @classmethod
    def configured(cls, token: str | None, tokens_file: Path | None) -> Access:
        """A deployment's access: its tokens file's tenants and roles, or its one token's operator, or open.
        AccessError (one line) for both at once or a file that cannot be used."""
        if tokens_file is None:
            return cls.one_token(token)
        if token:
            raise AccessError("one token (--auth-token-file or JITAGENT_AUTH_TOKEN) or a tokens file "
                              "(--tokens-file), not both: put the one token in the file as the operator's")
        return cls(read_tokens(tokens_file).tokens, tenanted=True)

    @property
    def open(self) -> bool:
        return not self._callers

    def caller(self, authorization: str | bytes | None) -> Caller | None:
        """The caller an `Authorization: Bearer …` header names; None where it names none we know."""
        if self.open:
            return OPERATOR
        if isinstance(authorization, bytes):
            authorization = authorization.decode(errors="replace")
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        return self._callers.get(digest(token.strip()))  # a hash's lookup time tells nothing of a token

    def run_id(self, caller: Caller, name: str) -> str:
        """The id of the run `caller` names `name` (its request id, or a new one)."""
        return f"{caller.tenant}:{name}" if self.tenanted else name

    def pool(self, caller: Caller) -> str:
        """The memory `caller`'s runs learn in and from: its tenant's own, or the pool it shares; "" where
        there are no tenants."""
        return (caller.pool or caller.tenant) if self.tenanted else ""

    def reads(self, caller: Caller) -> str:
        """The pool whose harnesses `caller` may list and read: its own; "" (every one) for the operator."""
        return "" if caller.operator else self.pool(caller)

    def reporter(self, caller: Caller) -> str:
        """The evidence a report of `caller`'s is kept with: who said it."""
        return f"report:{caller.tenant}" if self.tenanted else "report"

    def owns(self, caller: Caller, run_id: str) -> bool:
        """Whether `caller` may see and report on the run `run_id` (the operator: any)."""
        return caller.operator or not self.tenanted or run_id.startswith(f"{caller.tenant}:")


def read_tokens(path: Path) -> TokensFile:
    try:
        return TokensFile.model_validate(json.loads(Path(path).read_text()))
    except OSError as exc:
        raise AccessError(f"--tokens-file {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise AccessError(f"--tokens-file {path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "the file"
        raise AccessError(f"--tokens-file {path}: {where}: {clipped(error['msg'], 200)}") from None


def add_token(path: Path, tenant: str, role: Role, pool: str | None = None,
              teaches: list[str] | None = None) -> str:
    """A new random token for `tenant` (sharing `pool`, where named; learning from the evidence `teaches`
    names, else all) in the tokens file at `path` (made if absent); the token is returned once and stored
    only as its hash."""
    grants = read_tokens(path).tokens if Path(path).exists() else []
    token = secrets.token_urlsafe(32)
    try:
        grants.append(Grant(token_sha256=digest(token), tenant=tenant, role=role, pool=pool,
                            **({"teaches": teaches} if teaches else {})))
    except ValidationError as exc:
        error = exc.errors()[0]
        raise AccessError(f"{error['loc'][0]}: {clipped(error['msg'], 200)}") from None
    Path(path).write_text(TokensFile(tokens=grants).model_dump_json(indent=2) + "\n")
    return token
