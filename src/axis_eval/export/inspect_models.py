"""The Inspect AI eval log as ``axis export --inspect`` writes it (docs/export.md).

These models describe the part of Inspect AI's log format (``EvalLog`` version 2, the JSON
form that ``inspect_ai.log.read_eval_log`` reads and ``inspect view`` shows) that a report
fills: the eval spec, the plan, aggregate results, stats, and one sample per run with its
messages, tool calls, scores and token usage. Field names are Inspect's own (snake_case);
optional fields left ``None`` are omitted from the file. They are written from the format's
documentation and its reader's behaviour, not taken from Inspect's code, and Inspect is not
needed to write them (only the tests read the file back with it).
"""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from axis_eval._util.defaults import empty_list

INSPECT_LOG_VERSION = 2
"""The log format version Inspect's reader accepts (``version`` at the top of the file)."""

ScalarValue = str | int | float | bool


class InspectModel(BaseModel):
    """A part of the log: unknown fields are refused, so a typo is a test failure."""

    model_config = ConfigDict(extra="forbid")


class ContentText(InspectModel):
    type: Literal["text"] = "text"
    text: str


class ContentReasoning(InspectModel):
    """The agent's thinking (a transcript's ``thinking`` entry)."""

    type: Literal["reasoning"] = "reasoning"
    reasoning: str


Content = Annotated[ContentText | ContentReasoning, Field(discriminator="type")]


class ToolCall(InspectModel):
    id: str
    function: str
    """The tool's name as the agent called it."""
    arguments: dict[str, Any]
    """The input; an input that is not an object is wrapped as ``{"input": value}``."""
    type: Literal["function"] = "function"


class ToolCallError(InspectModel):
    type: Literal["unknown"] = "unknown"
    """The transcript does not say why a tool failed, only that it did."""
    message: str


class ChatMessageSystem(InspectModel):
    role: Literal["system"] = "system"
    content: str | list[Content]
    metadata: dict[str, Any] | None = None


class ChatMessageUser(InspectModel):
    role: Literal["user"] = "user"
    content: str | list[Content]
    source: Literal["input"] | None = None


class ChatMessageAssistant(InspectModel):
    role: Literal["assistant"] = "assistant"
    content: str | list[Content]
    tool_calls: list[ToolCall] | None = None
    model: str | None = None
    source: Literal["generate"] | None = "generate"


class ChatMessageTool(InspectModel):
    role: Literal["tool"] = "tool"
    content: str | list[Content]
    tool_call_id: str
    function: str
    error: ToolCallError | None = None


ChatMessage = Annotated[
    ChatMessageSystem | ChatMessageUser | ChatMessageAssistant | ChatMessageTool,
    Field(discriminator="role"),
]


class ModelUsage(InspectModel):
    """Tokens of one model (``model_usage`` maps a model name to one)."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    input_tokens_cache_write: int | None = None
    input_tokens_cache_read: int | None = None
    total_cost: float | None = None


class ChatCompletionChoice(InspectModel):
    message: ChatMessageAssistant
    stop_reason: Literal["stop", "unknown"] = "unknown"


class ModelOutput(InspectModel):
    """The run's final answer as the model's last output."""

    model: str = ""
    choices: list[ChatCompletionChoice] = Field(default_factory=empty_list)
    completion: str = ""
    usage: ModelUsage | None = None
    error: str | None = None


class Score(InspectModel):
    value: ScalarValue | dict[str, ScalarValue | None]
    answer: str | None = None
    explanation: str | None = None
    metadata: dict[str, Any] | None = None


class EvalError(InspectModel):
    message: str
    traceback: str = ""
    traceback_ansi: str = ""


class EvalSample(InspectModel):
    """One run: ``id`` names the pair, ``epoch`` is the run index (repeats of one input)."""

    id: str
    epoch: int
    input: str
    target: str = ""
    messages: list[ChatMessage] = Field(default_factory=empty_list)
    output: ModelOutput = Field(default_factory=ModelOutput)
    scores: dict[str, Score] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    model_usage: dict[str, ModelUsage] = Field(default_factory=dict)
    started_at: str | None = None
    completed_at: str | None = None
    total_time: float | None = None
    uuid: str | None = None
    error: EvalError | None = None


class EvalDataset(InspectModel):
    name: str | None = None
    location: str | None = None
    samples: int | None = None
    """How many samples the log holds (one per run)."""
    sample_ids: list[str] | None = None


class EvalConfig(InspectModel):
    epochs: int | None = None
    """The most runs any pair has."""


class EvalSpec(InspectModel):
    eval_id: str
    run_id: str
    created: str
    task: str
    task_id: str
    task_version: int = 0
    dataset: EvalDataset
    model: str
    config: EvalConfig = Field(default_factory=EvalConfig)
    packages: dict[str, str] = Field(default_factory=dict)
    metadata: dict[str, Any] | None = None


class EvalPlanStep(InspectModel):
    solver: str
    params: dict[str, Any] = Field(default_factory=dict)


class EvalPlan(InspectModel):
    name: str = "plan"
    steps: list[EvalPlanStep] = Field(default_factory=empty_list)
    config: dict[str, Any] = Field(default_factory=dict)


class EvalMetric(InspectModel):
    name: str
    value: int | float


class EvalScore(InspectModel):
    name: str
    scorer: str
    scored_samples: int | None = None
    unscored_samples: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, EvalMetric] = Field(default_factory=dict)


class EvalResults(InspectModel):
    total_samples: int = 0
    completed_samples: int = 0
    scores: list[EvalScore] = Field(default_factory=empty_list)


class EvalStats(InspectModel):
    started_at: str = ""
    completed_at: str = ""
    model_usage: dict[str, ModelUsage] = Field(default_factory=dict)


EvalStatus = Literal["started", "success", "cancelled", "error"]


class EvalLog(InspectModel):
    """The whole log; ``samples`` is written last (Inspect's header-only reader stops there)."""

    version: int = INSPECT_LOG_VERSION
    status: EvalStatus
    eval: EvalSpec
    plan: EvalPlan = Field(default_factory=EvalPlan)
    results: EvalResults | None = None
    stats: EvalStats = Field(default_factory=EvalStats)
    error: EvalError | None = None
    tags: list[str] = Field(default_factory=empty_list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    samples: list[EvalSample] | None = None
