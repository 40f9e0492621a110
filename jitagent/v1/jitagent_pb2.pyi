from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Verifier(_message.Message):
    __slots__ = ("kind", "expected", "tolerance", "pattern", "tests", "command", "case_sensitive")
    KIND_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_FIELD_NUMBER: _ClassVar[int]
    TOLERANCE_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    TESTS_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    CASE_SENSITIVE_FIELD_NUMBER: _ClassVar[int]
    kind: str
    expected: str
    tolerance: float
    pattern: str
    tests: str
    command: str
    case_sensitive: bool
    def __init__(self, kind: _Optional[str] = ..., expected: _Optional[str] = ..., tolerance: _Optional[float] = ..., pattern: _Optional[str] = ..., tests: _Optional[str] = ..., command: _Optional[str] = ..., case_sensitive: _Optional[bool] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ("id", "prompt", "type", "tags", "tools", "files", "verifier", "public_tests")
    class FilesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    VERIFIER_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_TESTS_FIELD_NUMBER: _ClassVar[int]
    id: str
    prompt: str
    type: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    tools: _containers.RepeatedScalarFieldContainer[str]
    files: _containers.ScalarMap[str, str]
    verifier: Verifier
    public_tests: str
    def __init__(self, id: _Optional[str] = ..., prompt: _Optional[str] = ..., type: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., tools: _Optional[_Iterable[str]] = ..., files: _Optional[_Mapping[str, str]] = ..., verifier: _Optional[_Union[Verifier, _Mapping]] = ..., public_tests: _Optional[str] = ...) -> None: ...

class Cost(_message.Message):
    __slots__ = ("prompt_tokens", "completion_tokens", "wall_s")
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    WALL_S_FIELD_NUMBER: _ClassVar[int]
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    def __init__(self, prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., wall_s: _Optional[float] = ...) -> None: ...

class SynthesisCost(_message.Message):
    __slots__ = ("synthesis", "repair", "dry_run", "selection")
    SYNTHESIS_FIELD_NUMBER: _ClassVar[int]
    REPAIR_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    SELECTION_FIELD_NUMBER: _ClassVar[int]
    synthesis: Cost
    repair: Cost
    dry_run: Cost
    selection: Cost
    def __init__(self, synthesis: _Optional[_Union[Cost, _Mapping]] = ..., repair: _Optional[_Union[Cost, _Mapping]] = ..., dry_run: _Optional[_Union[Cost, _Mapping]] = ..., selection: _Optional[_Union[Cost, _Mapping]] = ...) -> None: ...

class Check(_message.Message):
    __slots__ = ("rung", "ok", "error")
    RUNG_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    rung: str
    ok: bool
    error: str
    def __init__(self, rung: _Optional[str] = ..., ok: _Optional[bool] = ..., error: _Optional[str] = ...) -> None: ...

class CandidateRound(_message.Message):
    __slots__ = ("round", "output", "error")
    ROUND_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    round: int
    output: str
    error: str
    def __init__(self, round: _Optional[int] = ..., output: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class Candidate(_message.Message):
    __slots__ = ("index", "valid", "origin", "harness_id", "parent_id", "broken_before_repair", "broken_after_repair", "rounds", "checks", "notes", "dry_run", "score")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    VALID_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    HARNESS_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    BROKEN_BEFORE_REPAIR_FIELD_NUMBER: _ClassVar[int]
    BROKEN_AFTER_REPAIR_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    index: int
    valid: bool
    origin: str
    harness_id: str
    parent_id: str
    broken_before_repair: bool
    broken_after_repair: bool
    rounds: _containers.RepeatedCompositeFieldContainer[CandidateRound]
    checks: _containers.RepeatedCompositeFieldContainer[Check]
    notes: _containers.RepeatedScalarFieldContainer[str]
    dry_run: str
    score: float
    def __init__(self, index: _Optional[int] = ..., valid: _Optional[bool] = ..., origin: _Optional[str] = ..., harness_id: _Optional[str] = ..., parent_id: _Optional[str] = ..., broken_before_repair: _Optional[bool] = ..., broken_after_repair: _Optional[bool] = ..., rounds: _Optional[_Iterable[_Union[CandidateRound, _Mapping]]] = ..., checks: _Optional[_Iterable[_Union[Check, _Mapping]]] = ..., notes: _Optional[_Iterable[str]] = ..., dry_run: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class Harness(_message.Message):
    __slots__ = ("id", "name", "description", "parent_id", "origin", "generator", "spec_json", "created_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    GENERATOR_FIELD_NUMBER: _ClassVar[int]
    SPEC_JSON_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    description: str
    parent_id: str
    origin: str
    generator: str
    spec_json: str
    created_at: float
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., parent_id: _Optional[str] = ..., origin: _Optional[str] = ..., generator: _Optional[str] = ..., spec_json: _Optional[str] = ..., created_at: _Optional[float] = ...) -> None: ...

class Reference(_message.Message):
    __slots__ = ("harness_id", "name", "score", "similarity", "prior_reward", "prior_runs")
    HARNESS_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    PRIOR_REWARD_FIELD_NUMBER: _ClassVar[int]
    PRIOR_RUNS_FIELD_NUMBER: _ClassVar[int]
    harness_id: str
    name: str
    score: float
    similarity: float
    prior_reward: float
    prior_runs: int
    def __init__(self, harness_id: _Optional[str] = ..., name: _Optional[str] = ..., score: _Optional[float] = ..., similarity: _Optional[float] = ..., prior_reward: _Optional[float] = ..., prior_runs: _Optional[int] = ...) -> None: ...

class SynthesisResult(_message.Message):
    __slots__ = ("task_id", "route", "harness", "cluster", "references", "candidates", "cost", "reason", "wall_s")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    HARNESS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    REFERENCES_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    WALL_S_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    route: str
    harness: Harness
    cluster: str
    references: _containers.RepeatedCompositeFieldContainer[Reference]
    candidates: _containers.RepeatedCompositeFieldContainer[Candidate]
    cost: SynthesisCost
    reason: str
    wall_s: float
    def __init__(self, task_id: _Optional[str] = ..., route: _Optional[str] = ..., harness: _Optional[_Union[Harness, _Mapping]] = ..., cluster: _Optional[str] = ..., references: _Optional[_Iterable[_Union[Reference, _Mapping]]] = ..., candidates: _Optional[_Iterable[_Union[Candidate, _Mapping]]] = ..., cost: _Optional[_Union[SynthesisCost, _Mapping]] = ..., reason: _Optional[str] = ..., wall_s: _Optional[float] = ...) -> None: ...

class SynthesizeRequest(_message.Message):
    __slots__ = ("tasks", "n")
    TASKS_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    n: int
    def __init__(self, tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ..., n: _Optional[int] = ...) -> None: ...

class SynthesizeResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[SynthesisResult]
    def __init__(self, results: _Optional[_Iterable[_Union[SynthesisResult, _Mapping]]] = ...) -> None: ...

class SolveRequest(_message.Message):
    __slots__ = ("task", "n")
    TASK_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    task: Task
    n: int
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ..., n: _Optional[int] = ...) -> None: ...

class RunResult(_message.Message):
    __slots__ = ("task_id", "harness_id", "answer", "passed", "reward", "verdict", "cost", "error")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    HARNESS_ID_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    harness_id: str
    answer: str
    passed: bool
    reward: float
    verdict: str
    cost: Cost
    error: str
    def __init__(self, task_id: _Optional[str] = ..., harness_id: _Optional[str] = ..., answer: _Optional[str] = ..., passed: _Optional[bool] = ..., reward: _Optional[float] = ..., verdict: _Optional[str] = ..., cost: _Optional[_Union[Cost, _Mapping]] = ..., error: _Optional[str] = ...) -> None: ...

class SolveResult(_message.Message):
    __slots__ = ("synthesis", "run", "bank_decision")
    SYNTHESIS_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    BANK_DECISION_FIELD_NUMBER: _ClassVar[int]
    synthesis: SynthesisResult
    run: RunResult
    bank_decision: str
    def __init__(self, synthesis: _Optional[_Union[SynthesisResult, _Mapping]] = ..., run: _Optional[_Union[RunResult, _Mapping]] = ..., bank_decision: _Optional[str] = ...) -> None: ...

class SolveEvent(_message.Message):
    __slots__ = ("kind", "text", "step_kind", "tool", "ok", "result")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    STEP_KIND_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    kind: str
    text: str
    step_kind: str
    tool: str
    ok: bool
    result: SolveResult
    def __init__(self, kind: _Optional[str] = ..., text: _Optional[str] = ..., step_kind: _Optional[str] = ..., tool: _Optional[str] = ..., ok: _Optional[bool] = ..., result: _Optional[_Union[SolveResult, _Mapping]] = ...) -> None: ...

class StreamTasksRequest(_message.Message):
    __slots__ = ("task", "n")
    TASK_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    task: Task
    n: int
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ..., n: _Optional[int] = ...) -> None: ...

class StreamTasksResponse(_message.Message):
    __slots__ = ("sequence", "task_id", "result", "error")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    task_id: str
    result: SolveResult
    error: str
    def __init__(self, sequence: _Optional[int] = ..., task_id: _Optional[str] = ..., result: _Optional[_Union[SolveResult, _Mapping]] = ..., error: _Optional[str] = ...) -> None: ...

class ReportOutcomeRequest(_message.Message):
    __slots__ = ("harness_id", "task_id", "task_text", "task_type", "tags", "reward", "prompt_tokens", "completion_tokens", "wall_s", "verdict")
    HARNESS_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_TEXT_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    WALL_S_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    harness_id: str
    task_id: str
    task_text: str
    task_type: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    reward: float
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    verdict: str
    def __init__(self, harness_id: _Optional[str] = ..., task_id: _Optional[str] = ..., task_text: _Optional[str] = ..., task_type: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., reward: _Optional[float] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., wall_s: _Optional[float] = ..., verdict: _Optional[str] = ...) -> None: ...

class ReportOutcomeResponse(_message.Message):
    __slots__ = ("cluster", "promoted", "reason", "incumbent_id")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    PROMOTED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    INCUMBENT_ID_FIELD_NUMBER: _ClassVar[int]
    cluster: str
    promoted: bool
    reason: str
    incumbent_id: str
    def __init__(self, cluster: _Optional[str] = ..., promoted: _Optional[bool] = ..., reason: _Optional[str] = ..., incumbent_id: _Optional[str] = ...) -> None: ...

class GetHarnessRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class ListHarnessesRequest(_message.Message):
    __slots__ = ("origin", "limit", "offset")
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    origin: str
    limit: int
    offset: int
    def __init__(self, origin: _Optional[str] = ..., limit: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

class ListHarnessesResponse(_message.Message):
    __slots__ = ("harnesses",)
    HARNESSES_FIELD_NUMBER: _ClassVar[int]
    harnesses: _containers.RepeatedCompositeFieldContainer[Harness]
    def __init__(self, harnesses: _Optional[_Iterable[_Union[Harness, _Mapping]]] = ...) -> None: ...

class LineageRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class LineageResponse(_message.Message):
    __slots__ = ("chain",)
    CHAIN_FIELD_NUMBER: _ClassVar[int]
    chain: _containers.RepeatedCompositeFieldContainer[Harness]
    def __init__(self, chain: _Optional[_Iterable[_Union[Harness, _Mapping]]] = ...) -> None: ...

class RollbackRequest(_message.Message):
    __slots__ = ("cluster",)
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    cluster: str
    def __init__(self, cluster: _Optional[str] = ...) -> None: ...

class RollbackResponse(_message.Message):
    __slots__ = ("cluster", "restored", "replaced")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    RESTORED_FIELD_NUMBER: _ClassVar[int]
    REPLACED_FIELD_NUMBER: _ClassVar[int]
    cluster: str
    restored: str
    replaced: str
    def __init__(self, cluster: _Optional[str] = ..., restored: _Optional[str] = ..., replaced: _Optional[str] = ...) -> None: ...
