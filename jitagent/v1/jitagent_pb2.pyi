import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.rpc import status_pb2 as _status_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Route(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROUTE_UNSPECIFIED: _ClassVar[Route]
    ROUTE_EXPLOIT: _ClassVar[Route]
    ROUTE_EXPLORE: _ClassVar[Route]
    ROUTE_SYNTHESIZED: _ClassVar[Route]
    ROUTE_FALLBACK: _ClassVar[Route]
    ROUTE_VARIANT: _ClassVar[Route]

class Origin(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ORIGIN_UNSPECIFIED: _ClassVar[Origin]
    ORIGIN_SEED: _ClassVar[Origin]
    ORIGIN_SYNTHESIZED: _ClassVar[Origin]
    ORIGIN_REPAIRED: _ClassVar[Origin]
    ORIGIN_EVOLVED: _ClassVar[Origin]

class Split(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SPLIT_UNSPECIFIED: _ClassVar[Split]
    SPLIT_LEARN: _ClassVar[Split]
    SPLIT_SCORE: _ClassVar[Split]
    SPLIT_FINAL: _ClassVar[Split]

class StepKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STEP_KIND_UNSPECIFIED: _ClassVar[StepKind]
    STEP_KIND_PLAN: _ClassVar[StepKind]
    STEP_KIND_MODEL: _ClassVar[StepKind]
    STEP_KIND_TOOL: _ClassVar[StepKind]
    STEP_KIND_MEMORY: _ClassVar[StepKind]
    STEP_KIND_REFLECTION: _ClassVar[StepKind]
    STEP_KIND_SUBTASK: _ClassVar[StepKind]
    STEP_KIND_SAMPLE: _ClassVar[StepKind]
    STEP_KIND_VOTE: _ClassVar[StepKind]
    STEP_KIND_VERIFY: _ClassVar[StepKind]
ROUTE_UNSPECIFIED: Route
ROUTE_EXPLOIT: Route
ROUTE_EXPLORE: Route
ROUTE_SYNTHESIZED: Route
ROUTE_FALLBACK: Route
ROUTE_VARIANT: Route
ORIGIN_UNSPECIFIED: Origin
ORIGIN_SEED: Origin
ORIGIN_SYNTHESIZED: Origin
ORIGIN_REPAIRED: Origin
ORIGIN_EVOLVED: Origin
SPLIT_UNSPECIFIED: Split
SPLIT_LEARN: Split
SPLIT_SCORE: Split
SPLIT_FINAL: Split
STEP_KIND_UNSPECIFIED: StepKind
STEP_KIND_PLAN: StepKind
STEP_KIND_MODEL: StepKind
STEP_KIND_TOOL: StepKind
STEP_KIND_MEMORY: StepKind
STEP_KIND_REFLECTION: StepKind
STEP_KIND_SUBTASK: StepKind
STEP_KIND_SAMPLE: StepKind
STEP_KIND_VOTE: StepKind
STEP_KIND_VERIFY: StepKind

class Verifier(_message.Message):
    __slots__ = ("exact", "numeric", "regex", "python_tests", "shell_check", "reasoning_gym", "calls")
    EXACT_FIELD_NUMBER: _ClassVar[int]
    NUMERIC_FIELD_NUMBER: _ClassVar[int]
    REGEX_FIELD_NUMBER: _ClassVar[int]
    PYTHON_TESTS_FIELD_NUMBER: _ClassVar[int]
    SHELL_CHECK_FIELD_NUMBER: _ClassVar[int]
    REASONING_GYM_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    exact: ExactAnswer
    numeric: NumericAnswer
    regex: RegexMatch
    python_tests: PythonTests
    shell_check: ShellCheck
    reasoning_gym: ReasoningGymEntry
    calls: ExpectedCalls
    def __init__(self, exact: _Optional[_Union[ExactAnswer, _Mapping]] = ..., numeric: _Optional[_Union[NumericAnswer, _Mapping]] = ..., regex: _Optional[_Union[RegexMatch, _Mapping]] = ..., python_tests: _Optional[_Union[PythonTests, _Mapping]] = ..., shell_check: _Optional[_Union[ShellCheck, _Mapping]] = ..., reasoning_gym: _Optional[_Union[ReasoningGymEntry, _Mapping]] = ..., calls: _Optional[_Union[ExpectedCalls, _Mapping]] = ...) -> None: ...

class ExactAnswer(_message.Message):
    __slots__ = ("expected", "case_sensitive")
    EXPECTED_FIELD_NUMBER: _ClassVar[int]
    CASE_SENSITIVE_FIELD_NUMBER: _ClassVar[int]
    expected: str
    case_sensitive: bool
    def __init__(self, expected: _Optional[str] = ..., case_sensitive: _Optional[bool] = ...) -> None: ...

class NumericAnswer(_message.Message):
    __slots__ = ("expected", "tolerance")
    EXPECTED_FIELD_NUMBER: _ClassVar[int]
    TOLERANCE_FIELD_NUMBER: _ClassVar[int]
    expected: float
    tolerance: float
    def __init__(self, expected: _Optional[float] = ..., tolerance: _Optional[float] = ...) -> None: ...

class RegexMatch(_message.Message):
    __slots__ = ("pattern", "case_sensitive")
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    CASE_SENSITIVE_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    case_sensitive: bool
    def __init__(self, pattern: _Optional[str] = ..., case_sensitive: _Optional[bool] = ...) -> None: ...

class PythonTests(_message.Message):
    __slots__ = ("tests", "prelude")
    TESTS_FIELD_NUMBER: _ClassVar[int]
    PRELUDE_FIELD_NUMBER: _ClassVar[int]
    tests: str
    prelude: str
    def __init__(self, tests: _Optional[str] = ..., prelude: _Optional[str] = ...) -> None: ...

class ShellCheck(_message.Message):
    __slots__ = ("command",)
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    command: str
    def __init__(self, command: _Optional[str] = ...) -> None: ...

class ReasoningGymEntry(_message.Message):
    __slots__ = ("dataset", "seed", "size", "index")
    DATASET_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    dataset: str
    seed: int
    size: int
    index: int
    def __init__(self, dataset: _Optional[str] = ..., seed: _Optional[int] = ..., size: _Optional[int] = ..., index: _Optional[int] = ...) -> None: ...

class ExpectedCalls(_message.Message):
    __slots__ = ("expected",)
    EXPECTED_FIELD_NUMBER: _ClassVar[int]
    expected: str
    def __init__(self, expected: _Optional[str] = ...) -> None: ...

class ToolSet(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ("id", "prompt", "type", "tags", "tools", "files", "verifier", "public_tests", "split", "client_tools", "tool_choice", "single_call")
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
    SPLIT_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    SINGLE_CALL_FIELD_NUMBER: _ClassVar[int]
    id: str
    prompt: str
    type: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    tools: ToolSet
    files: _containers.ScalarMap[str, str]
    verifier: Verifier
    public_tests: str
    split: Split
    client_tools: _containers.RepeatedCompositeFieldContainer[ClientTool]
    tool_choice: str
    single_call: bool
    def __init__(self, id: _Optional[str] = ..., prompt: _Optional[str] = ..., type: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., tools: _Optional[_Union[ToolSet, _Mapping]] = ..., files: _Optional[_Mapping[str, str]] = ..., verifier: _Optional[_Union[Verifier, _Mapping]] = ..., public_tests: _Optional[str] = ..., split: _Optional[_Union[Split, str]] = ..., client_tools: _Optional[_Iterable[_Union[ClientTool, _Mapping]]] = ..., tool_choice: _Optional[str] = ..., single_call: _Optional[bool] = ...) -> None: ...

class ClientTool(_message.Message):
    __slots__ = ("name", "description", "parameters")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters: _Optional[str] = ...) -> None: ...

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
    origin: Origin
    harness_id: str
    parent_id: str
    broken_before_repair: bool
    broken_after_repair: bool
    rounds: _containers.RepeatedCompositeFieldContainer[CandidateRound]
    checks: _containers.RepeatedCompositeFieldContainer[Check]
    notes: _containers.RepeatedScalarFieldContainer[str]
    dry_run: str
    score: float
    def __init__(self, index: _Optional[int] = ..., valid: _Optional[bool] = ..., origin: _Optional[_Union[Origin, str]] = ..., harness_id: _Optional[str] = ..., parent_id: _Optional[str] = ..., broken_before_repair: _Optional[bool] = ..., broken_after_repair: _Optional[bool] = ..., rounds: _Optional[_Iterable[_Union[CandidateRound, _Mapping]]] = ..., checks: _Optional[_Iterable[_Union[Check, _Mapping]]] = ..., notes: _Optional[_Iterable[str]] = ..., dry_run: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

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
    origin: Origin
    generator: str
    spec_json: str
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., parent_id: _Optional[str] = ..., origin: _Optional[_Union[Origin, str]] = ..., generator: _Optional[str] = ..., spec_json: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Arm(_message.Message):
    __slots__ = ("harness_id", "name", "posterior_mean", "prior_mean", "prior_weight", "runs", "mean_tokens", "similarity")
    HARNESS_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    POSTERIOR_MEAN_FIELD_NUMBER: _ClassVar[int]
    PRIOR_MEAN_FIELD_NUMBER: _ClassVar[int]
    PRIOR_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    MEAN_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    harness_id: str
    name: str
    posterior_mean: float
    prior_mean: float
    prior_weight: float
    runs: int
    mean_tokens: float
    similarity: float
    def __init__(self, harness_id: _Optional[str] = ..., name: _Optional[str] = ..., posterior_mean: _Optional[float] = ..., prior_mean: _Optional[float] = ..., prior_weight: _Optional[float] = ..., runs: _Optional[int] = ..., mean_tokens: _Optional[float] = ..., similarity: _Optional[float] = ...) -> None: ...

class SynthesisResult(_message.Message):
    __slots__ = ("run_id", "task_id", "route", "harness", "cluster", "arms", "candidates", "cost", "reason", "wall_s")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    HARNESS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    ARMS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    WALL_S_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    task_id: str
    route: Route
    harness: Harness
    cluster: str
    arms: _containers.RepeatedCompositeFieldContainer[Arm]
    candidates: _containers.RepeatedCompositeFieldContainer[Candidate]
    cost: SynthesisCost
    reason: str
    wall_s: float
    def __init__(self, run_id: _Optional[str] = ..., task_id: _Optional[str] = ..., route: _Optional[_Union[Route, str]] = ..., harness: _Optional[_Union[Harness, _Mapping]] = ..., cluster: _Optional[str] = ..., arms: _Optional[_Iterable[_Union[Arm, _Mapping]]] = ..., candidates: _Optional[_Iterable[_Union[Candidate, _Mapping]]] = ..., cost: _Optional[_Union[SynthesisCost, _Mapping]] = ..., reason: _Optional[str] = ..., wall_s: _Optional[float] = ...) -> None: ...

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
    __slots__ = ("task", "n", "request_id")
    TASK_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    task: Task
    n: int
    request_id: str
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ..., n: _Optional[int] = ..., request_id: _Optional[str] = ...) -> None: ...

class SolveResult(_message.Message):
    __slots__ = ("run_id", "synthesis", "bank_decision", "examples", "task_id", "route", "harness_id", "harness_name", "cluster", "answer", "passed", "reward", "verdict", "error", "interrupted", "cost", "total_cost", "wall_s", "tool_calls")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SYNTHESIS_FIELD_NUMBER: _ClassVar[int]
    BANK_DECISION_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    HARNESS_ID_FIELD_NUMBER: _ClassVar[int]
    HARNESS_NAME_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    INTERRUPTED_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    TOTAL_COST_FIELD_NUMBER: _ClassVar[int]
    WALL_S_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    synthesis: SynthesisResult
    bank_decision: str
    examples: _containers.RepeatedScalarFieldContainer[str]
    task_id: str
    route: Route
    harness_id: str
    harness_name: str
    cluster: str
    answer: str
    passed: bool
    reward: float
    verdict: str
    error: str
    interrupted: bool
    cost: Cost
    total_cost: Cost
    wall_s: float
    tool_calls: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, run_id: _Optional[str] = ..., synthesis: _Optional[_Union[SynthesisResult, _Mapping]] = ..., bank_decision: _Optional[str] = ..., examples: _Optional[_Iterable[str]] = ..., task_id: _Optional[str] = ..., route: _Optional[_Union[Route, str]] = ..., harness_id: _Optional[str] = ..., harness_name: _Optional[str] = ..., cluster: _Optional[str] = ..., answer: _Optional[str] = ..., passed: _Optional[bool] = ..., reward: _Optional[float] = ..., verdict: _Optional[str] = ..., error: _Optional[str] = ..., interrupted: _Optional[bool] = ..., cost: _Optional[_Union[Cost, _Mapping]] = ..., total_cost: _Optional[_Union[Cost, _Mapping]] = ..., wall_s: _Optional[float] = ..., tool_calls: _Optional[_Iterable[str]] = ...) -> None: ...

class Routed(_message.Message):
    __slots__ = ("route", "cluster", "text", "arms")
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ARMS_FIELD_NUMBER: _ClassVar[int]
    route: Route
    cluster: str
    text: str
    arms: _containers.RepeatedCompositeFieldContainer[Arm]
    def __init__(self, route: _Optional[_Union[Route, str]] = ..., cluster: _Optional[str] = ..., text: _Optional[str] = ..., arms: _Optional[_Iterable[_Union[Arm, _Mapping]]] = ...) -> None: ...

class Retrieved(_message.Message):
    __slots__ = ("text", "arms")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ARMS_FIELD_NUMBER: _ClassVar[int]
    text: str
    arms: _containers.RepeatedCompositeFieldContainer[Arm]
    def __init__(self, text: _Optional[str] = ..., arms: _Optional[_Iterable[_Union[Arm, _Mapping]]] = ...) -> None: ...

class CandidateChecked(_message.Message):
    __slots__ = ("index", "ok", "text")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    index: int
    ok: bool
    text: str
    def __init__(self, index: _Optional[int] = ..., ok: _Optional[bool] = ..., text: _Optional[str] = ...) -> None: ...

class Chosen(_message.Message):
    __slots__ = ("harness_id", "name", "examples", "evidence")
    HARNESS_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    harness_id: str
    name: str
    examples: _containers.RepeatedScalarFieldContainer[str]
    evidence: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, harness_id: _Optional[str] = ..., name: _Optional[str] = ..., examples: _Optional[_Iterable[str]] = ..., evidence: _Optional[_Iterable[str]] = ...) -> None: ...

class Step(_message.Message):
    __slots__ = ("kind", "text", "tool", "ok", "step", "depth")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    kind: StepKind
    text: str
    tool: str
    ok: bool
    step: int
    depth: int
    def __init__(self, kind: _Optional[_Union[StepKind, str]] = ..., text: _Optional[str] = ..., tool: _Optional[str] = ..., ok: _Optional[bool] = ..., step: _Optional[int] = ..., depth: _Optional[int] = ...) -> None: ...

class Verdict(_message.Message):
    __slots__ = ("passed", "text")
    PASSED_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    passed: bool
    text: str
    def __init__(self, passed: _Optional[bool] = ..., text: _Optional[str] = ...) -> None: ...

class BankDecision(_message.Message):
    __slots__ = ("cluster", "text")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    cluster: str
    text: str
    def __init__(self, cluster: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class SolveEvent(_message.Message):
    __slots__ = ("run_id", "retrieved", "candidate", "repaired", "routed", "chosen", "step", "verdict", "bank", "result")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    RETRIEVED_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    REPAIRED_FIELD_NUMBER: _ClassVar[int]
    ROUTED_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    BANK_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    retrieved: Retrieved
    candidate: CandidateChecked
    repaired: CandidateChecked
    routed: Routed
    chosen: Chosen
    step: Step
    verdict: Verdict
    bank: BankDecision
    result: SolveResult
    def __init__(self, run_id: _Optional[str] = ..., retrieved: _Optional[_Union[Retrieved, _Mapping]] = ..., candidate: _Optional[_Union[CandidateChecked, _Mapping]] = ..., repaired: _Optional[_Union[CandidateChecked, _Mapping]] = ..., routed: _Optional[_Union[Routed, _Mapping]] = ..., chosen: _Optional[_Union[Chosen, _Mapping]] = ..., step: _Optional[_Union[Step, _Mapping]] = ..., verdict: _Optional[_Union[Verdict, _Mapping]] = ..., bank: _Optional[_Union[BankDecision, _Mapping]] = ..., result: _Optional[_Union[SolveResult, _Mapping]] = ...) -> None: ...

class StreamTasksRequest(_message.Message):
    __slots__ = ("task", "n", "request_id")
    TASK_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    task: Task
    n: int
    request_id: str
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ..., n: _Optional[int] = ..., request_id: _Optional[str] = ...) -> None: ...

class StreamTasksResponse(_message.Message):
    __slots__ = ("sequence", "task_id", "run_id", "result", "error")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    task_id: str
    run_id: str
    result: SolveResult
    error: _status_pb2.Status
    def __init__(self, sequence: _Optional[int] = ..., task_id: _Optional[str] = ..., run_id: _Optional[str] = ..., result: _Optional[_Union[SolveResult, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class ReportOutcomeRequest(_message.Message):
    __slots__ = ("run_id", "reward", "detail", "prompt_tokens", "completion_tokens", "wall_s", "harness_id", "task_id", "task_text", "task_type", "tags", "check")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    WALL_S_FIELD_NUMBER: _ClassVar[int]
    HARNESS_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_TEXT_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    CHECK_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    reward: float
    detail: str
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    harness_id: str
    task_id: str
    task_text: str
    task_type: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    check: Verifier
    def __init__(self, run_id: _Optional[str] = ..., reward: _Optional[float] = ..., detail: _Optional[str] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., wall_s: _Optional[float] = ..., harness_id: _Optional[str] = ..., task_id: _Optional[str] = ..., task_text: _Optional[str] = ..., task_type: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., check: _Optional[_Union[Verifier, _Mapping]] = ...) -> None: ...

class ReportOutcomeResponse(_message.Message):
    __slots__ = ("cluster", "harness_id", "promoted", "reason", "incumbent_id")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    HARNESS_ID_FIELD_NUMBER: _ClassVar[int]
    PROMOTED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    INCUMBENT_ID_FIELD_NUMBER: _ClassVar[int]
    cluster: str
    harness_id: str
    promoted: bool
    reason: str
    incumbent_id: str
    def __init__(self, cluster: _Optional[str] = ..., harness_id: _Optional[str] = ..., promoted: _Optional[bool] = ..., reason: _Optional[str] = ..., incumbent_id: _Optional[str] = ...) -> None: ...

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
    origin: Origin
    limit: int
    offset: int
    def __init__(self, origin: _Optional[_Union[Origin, str]] = ..., limit: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

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
