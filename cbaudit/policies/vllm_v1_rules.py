"""The vLLM v0.23.0 rules cbaudit mirrors, each pinned to its source lines.

Every rule names the markers (ids in `pinned/vllm-v0.23.0-scheduler-rules.yaml`, checked
against the release by `cbaudit verify-pin`) of the vLLM lines it follows, and the cbaudit
code (`module:qualified.name`) that implements it. The rules are written in cbaudit's words;
no vLLM text is here. `docs/runtime-policy.md` shows this table; tests hold the two equal, every
marker to the manifest, every code reference to a real function, and every marker of the
manifest to some rule.

Parts: `config` (the engine configuration's mapping), `running` and `waiting` (the two passes of
one `schedule()` call, in `vllm-v1`), `kv` (block accounting), `update` (finishing), `report`
(what a trace line says, in `conform`), `scope` (settings cbaudit refuses rather than models),
`recorder` (the hooks of the vLLM recorder).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

MANIFEST = "pinned/vllm-v0.23.0-scheduler-rules.yaml"

_POLICY = "cbaudit.policies.vllm_v1:VllmV1Policy"
_CONFIG = "cbaudit.sim.engine_config"
_ENGINE = "cbaudit.sim.engine:Engine"
_BUILDER = "cbaudit.policies.base:PlanBuilder"
_SIDES = "cbaudit.conform.sides"
_INPUTS = "cbaudit.conform.inputs"
_RECORDER = "cbaudit.integrations.vllm_recorder:RecordingMixin"


@dataclass(frozen=True, slots=True)
class MirroredRule:
    """One rule of vLLM's scheduler that cbaudit follows."""

    rule: str  # stable id, `part.name`
    statement: str  # the rule, in cbaudit's words
    markers: tuple[str, ...]  # marker ids in MANIFEST
    code: tuple[str, ...]  # `module:qualified.name` of the cbaudit code that implements it


class _Rules:
    """An explicit table that refuses a second rule under the same id."""

    def __init__(self) -> None:
        self._items: dict[str, MirroredRule] = {}

    def add(self, rule: str, statement: str, markers: str, *code: str) -> None:
        if rule in self._items:
            raise ValueError(f"rule {rule!r} is already listed")
        self._items[rule] = MirroredRule(rule, statement, tuple(markers.split()), code)

    def __iter__(self) -> Iterator[MirroredRule]:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)


RULES = _Rules()
R = RULES.add

# --- configuration (cbaudit.sim.engine_config)
R(
    "config.token_budget",
    "Each step starts with max_num_scheduled_tokens tokens when it is set, else"
    " max_num_batched_tokens (default 2048).",
    "C01 C02 S02 S03 S10",
    f"{_CONFIG}:EngineConfig.token_budget",
)
R(
    "config.max_num_seqs",
    "At most max_num_seqs requests run at once (default 128): the sequence budget.",
    "C03 S01",
    f"{_CONFIG}:EngineConfig.budgets",
)
R(
    "config.budgets_checked",
    "max_num_batched_tokens smaller than max_num_seqs is refused, as vLLM's config refuses it.",
    "C12",
    f"{_CONFIG}:_check_ranges",
)
R(
    "config.policy",
    "policy (fcfs by default, or priority) picks the waiting queue and the victim rule.",
    "C07 S05 S06",
    f"{_CONFIG}:EngineConfig.policy_options",
    f"{_POLICY}.__init__",
)
R(
    "config.long_prefill_threshold",
    "long_prefill_token_threshold defaults to 0 (off); vLLM derives it only when"
    " max_num_partial_prefills > 1, which its engine arguments refuse, so cbaudit refuses"
    " max_num_partial_prefills other than 1 instead of deriving it.",
    "C04 C05 C10 C11 C17",
    f"{_CONFIG}:engine_config_from_data",
)
R(
    "config.reserve_full_isl",
    "scheduler_reserve_full_isl (default true, CLI --scheduler-reserve-full-isl) is copied"
    " by the scheduler and becomes vllm-v1's full_sequence_must_fit.",
    "C09 C19 S08",
    f"{_CONFIG}:EngineConfig.policy_options",
)
R(
    "config.max_model_len",
    "max_model_len comes from the model config; vllm-v1 takes it as an option.",
    "S04",
    f"{_CONFIG}:EngineConfig.policy_options",
)
R(
    "config.prompt_limit",
    "A prompt of max_model_len tokens or more never reaches the scheduler (the front end"
    " refuses it); cbaudit refuses such a request.",
    "P01 P02",
    f"{_CONFIG}:EngineConfig.apply",
    f"{_INPUTS}:_prompt_fits",
)
R(
    "config.null_block",
    "The block pool has num_gpu_blocks blocks and takes one out as its null block at start,"
    " never to be freed: num_gpu_blocks - 1 are usable and free at first.",
    "G02 B01 B03 B04",
    f"{_CONFIG}:EngineConfig.usable_blocks",
)

# --- the running pass (vllm-v1)
R(
    "running.first",
    "Running requests are visited first, in running-list order, while the index is inside"
    " the list and tokens are left; waiting requests come second.",
    "S07 S11 S12 S40",
    f"{_POLICY}.choose",
    f"{_POLICY}._running_pass",
)
R(
    "running.new_tokens",
    "A running request asks for its whole remaining stream, num_tokens - computed (no"
    " prefill or decode phase), clamped to long_prefill_token_threshold when that is positive"
    " and smaller, then to the tokens left.",
    "R04 R05 S13 S14 S15 S16 S17",
    f"{_POLICY}._new_tokens",
    f"{_POLICY}._running_pass",
)
R(
    "running.max_model_len_clamp",
    "A running request's tokens are also clamped to max_model_len - 1 - computed (never"
    " binding while requests stop at max_model_len).",
    "S18",
    f"{_POLICY}._new_tokens",
    f"{_POLICY}._running_pass",
)
R(
    "running.zero_tokens",
    "A running request with no tokens to schedule is passed over, not a stop.",
    "S19",
    f"{_POLICY}._running_pass",
)
R(
    "running.allocation",
    "A running request needs cdiv(computed + new, block_size) minus the blocks it holds,"
    " with no whole-sequence check; when that is more than the free blocks a victim is"
    " preempted and the allocation retried.",
    "S20 K04 K06 T01 T02 T03",
    f"{_POLICY}._running_pass",
    f"{_BUILDER}.kv_needed",
)
R(
    "running.victim_priority",
    "Under priority the victim is the running request with the largest (priority,"
    " arrival_time), the first of equals, from the whole running list.",
    "S21 S22 S23",
    f"{_POLICY}._victim",
)
R(
    "running.victim_refund",
    "A victim already scheduled in this step gives its tokens back to the budget, leaves the"
    " step's schedule, and the walk steps back one.",
    "S24 S25 S26",
    f"{_POLICY}._running_pass",
    f"{_BUILDER}.unselect",
)
R(
    "running.victim_fcfs",
    "Under fcfs the victim is the last request of the running list.",
    "S27",
    f"{_POLICY}._victim",
)
R(
    "running.self_preemption",
    "A request that preempts itself is not scheduled and ends the running pass: nobody after"
    " it runs in this step.",
    "S28 S29 S30",
    f"{_POLICY}._running_pass",
)
R(
    "running.scheduled",
    "A request that fits is scheduled for its tokens and they leave the budget.",
    "S31 S32",
    f"{_BUILDER}.take",
)
R(
    "step.preempt_only",
    "A step whose running pass only preempted still is a step: the engine runs it with"
    " nothing scheduled.",
    "S30 E04 E05",
    f"{_POLICY}.preempt_only_is_a_step",
    f"{_ENGINE}.execute",
)

# --- preemption (the engine and the plan builder)
R(
    "preempt.recompute",
    "A victim's blocks all return to the pool at once (usable by the retry), its computed"
    " tokens drop to 0 (its outputs stay: it re-prefills them later) and it is preempted.",
    "S70 S71 S72 S73 K07 T06",
    f"{_BUILDER}.preempt",
    f"{_ENGINE}._preempt",
)
R(
    "preempt.requeue",
    "A victim goes back to the waiting queue with prepend: at the very front under fcfs (one"
    " by one, so several victims keep their running order), by its order under priority.",
    "S74 Q03 Q05",
    f"{_ENGINE}._preempt",
    f"{_POLICY}._waiting_order",
)

# --- the waiting pass (vllm-v1)
R(
    "waiting.only_without_preemption",
    "The waiting pass runs only in a step that preempted nobody.",
    "S41",
    f"{_POLICY}.choose",
)
R(
    "waiting.loop",
    "Waiting requests are admitted while the queue is not empty and tokens are left, and"
    " never while max_num_seqs requests run.",
    "S42 S43",
    f"{_POLICY}._waiting_pass",
)
R(
    "waiting.queue_order",
    "The head of the waiting queue is taken: the front of the FCFS deque, or the smallest"
    " (priority, arrival_time, request_id) of the priority heap.",
    "S44 S90 Q06 R01 R02 R03",
    f"{_POLICY}._waiting_order",
)
R(
    "waiting.no_cached_tokens",
    "A waiting request starts from 0 computed tokens (new, or reset by preemption): with"
    " prefix caching off the lookup finds nothing.",
    "S45 G01",
    f"{_POLICY}._new_tokens",
)
R(
    "waiting.new_tokens",
    "A waiting request asks for num_tokens - computed (a resumed one re-prefills prompt and"
    " outputs), clamped by the threshold, then by the tokens left.",
    "S46 S47 S48",
    f"{_POLICY}._new_tokens",
)
R(
    "waiting.full_sequence",
    "With scheduler_reserve_full_isl the blocks for the whole current sequence,"
    " cdiv(min(num_tokens, max_model_len), block_size), must be free, not only the first"
    " chunk's.",
    "S49 S50 K01 K02 K03",
    f"{_POLICY}._admit",
)
R(
    "waiting.chunk_fits",
    "The first chunk's blocks, cdiv(min(computed + new, max_model_len), block_size), must be"
    " free as well.",
    "K04 K05 K06",
    f"{_POLICY}._admit",
    f"{_BUILDER}.take",
)
R(
    "waiting.stop_on_refusal",
    "A waiting request that does not fit stops the waiting pass: nobody behind it is tried.",
    "S51",
    f"{_POLICY}._waiting_pass",
)
R(
    "waiting.admitted",
    "An admitted request leaves the waiting queue for the end of the running list, is new"
    " or resumed (after a preemption), and its tokens leave the budget.",
    "S52 Q02 S53 S54 S55 S56 S65",
    f"{_ENGINE}._move_admitted",
    f"{_BUILDER}.take",
    f"{_SIDES}:StepRenderer.event",
)

# --- block accounting
R(
    "kv.holding",
    "A request holds cdiv(tokens it was allocated for, block_size) blocks; after the step"
    " that is cdiv(computed, block_size). With caching off the new blocks are not cached.",
    "T04 T05 K08",
    f"{_ENGINE}._serve",
)
R(
    "kv.free_count",
    "The free count is the free queue's length, the null block never in it.",
    "B02",
    f"{_SIDES}:StepRenderer.event",
)
R(
    "kv.never_fits",
    "A request that cannot fit alone, cdiv(min(prompt + outputs - 1, max_model_len - 1),"
    " block_size) > num_gpu_blocks - 1, would preempt itself forever in vLLM; cbaudit refuses"
    " such a workload before it starts.",
    "B03 K03 S30",
    f"{_ENGINE}._exceeding_pool",
)

# --- the update
R(
    "update.computed_advance",
    "Computed tokens advance when the step is scheduled; a request whose computed tokens"
    " reach num_tokens samples one token.",
    "S63 S81",
    f"{_ENGINE}._serve",
)
R(
    "update.stop",
    "A request stops when num_tokens reaches max_model_len or its outputs reach max_tokens:"
    " it produces min(max_tokens, max_model_len - prompt) tokens.",
    "S84 U01 U02 R06",
    f"{_CONFIG}:EngineConfig.output_limit",
    f"{_ENGINE}._serve",
)
R(
    "update.finish",
    "A finished request's blocks are freed in the update and it leaves the running list, the"
    " others keeping their order.",
    "S82 S83 S89",
    f"{_ENGINE}._retire",
)
R(
    "update.arrival",
    "A new request is enqueued: appended under fcfs, pushed onto the heap under priority.",
    "S85 S86 S87 Q01 Q04 E06",
    f"{_ENGINE}.admit",
)

# --- what a trace line reports (conform)
R(
    "report.finished_lag",
    "finished_req_ids at a step are the requests finished since the previous schedule():"
    " they show one scheduled step after their update, and wait through idle steps.",
    "S62 S64 S88",
    f"{_SIDES}:StepRenderer.event",
)
R(
    "report.engine_loop",
    "A real engine calls schedule() while it has requests, finished-but-unreported ones"
    " included, so after the last finish it makes one more step that reports it; the CPU"
    " driver calls it only while a request is unfinished.",
    "S91 I01 I02 E03",
    f"{_SIDES}:StepRenderer._quiet",
    f"{_SIDES}:StepRenderer.end",
)
R(
    "report.arrival_time",
    "Requests carry the arrival_time the caller gives (the driver: step + position * 1e-6;"
    " a deployment: the front end's clock), which priority compares.",
    "R07",
    f"{_INPUTS}:ConformWorkload.arrival_ranks",
)

# --- settings cbaudit refuses instead of modelling
R(
    "scope.prefix_caching",
    "Prefix caching is on by default in vLLM and changes what a waiting request has"
    " computed; cbaudit refuses an engine or a record with it on.",
    "C20",
    f"{_CONFIG}:engine_config_from_data",
    f"{_INPUTS}:read_record_header",
)
R(
    "scope.chunked_prefill",
    "Chunked prefill is on by default; cbaudit refuses an engine with it off.",
    "C06",
    f"{_CONFIG}:engine_config_from_data",
)
R(
    "scope.async_scheduling",
    "With a scheduler class given, vLLM uses it even where async scheduling would pick the"
    " AsyncScheduler (on by default where supported): the recorder refuses async scheduling.",
    "C13 C14 C15 C21",
    f"{_RECORDER}.__init__",
)

# --- the recorder's hooks
R(
    "recorder.scheduler_cls",
    "--scheduler-cls takes a module.Class name that the engine core resolves by importing the"
    " module and reading the attribute, then builds with Scheduler's arguments.",
    "C08 C16 C18 C22 E01 E02",
    "cbaudit.integrations.vllm_recorder:__getattr__",
)
R(
    "recorder.outputs",
    "A step's decisions are in SchedulerOutput: tokens per request, new requests, resumed"
    " ids, preempted ids, finished ids.",
    "O01 O02 O03 O04 S60 S61",
    f"{_RECORDER}.schedule",
)
R(
    "recorder.update_and_aborts",
    "update_from_output finishes requests (with their output counts); finish_requests"
    " finishes them from outside (aborts).",
    "S80 S92",
    f"{_RECORDER}.update_from_output",
    f"{_RECORDER}.finish_requests",
)


def rules_table(where: dict[str, str]) -> str:
    """The Markdown table of docs/runtime-policy.md: rule, statement, markers (with `where`,
    marker id -> `file:line`), cbaudit code."""
    rows = [
        "| rule | what vLLM v0.23.0 does | markers | cbaudit code |",
        "|---|---|---|---|",
    ]
    for r in RULES:
        markers = "<br>".join(f"{m} `{where.get(m, '?')}`" for m in r.markers)
        code = "<br>".join(f"`{c}`" for c in r.code)
        rows.append(f"| `{r.rule}` | {r.statement} | {markers} | {code} |")
    return "\n".join(rows) + "\n"
