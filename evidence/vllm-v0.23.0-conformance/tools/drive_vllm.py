"""Drive vLLM v0.23.0's real V1 Scheduler on CPU over driver workloads; one JSON line a step.

cbaudit's own driver (no vLLM code is copied; vLLM is imported, from the environment that
`../shared/peers/vllm/setup.sh` builds). It writes the trace format of that folder's
`drive_workload.py` and sets the engine up the same way: chunked prefill on, prefix caching
off, async scheduling off, a mocked model that samples one token for each scheduled request
whose computed tokens reach its length, EOS ignored so a request stops at `output_tokens` (or
at `max_model_len`). Beyond that driver it honours three more config keys:

* `scheduler_reserve_full_isl` (bool) and `max_num_scheduled_tokens` (int), passed to
  `SchedulerConfig`;
* `"loop": "engine"`: call `schedule()` while the scheduler `has_requests()` (finished but
  unreported requests included), as `EngineCore.step` does, instead of only while a request is
  unfinished.

`--recorder DIR` runs the scheduler class cbaudit's recorder provides, looked up the way
`vllm serve --scheduler-cls` looks it up (`SchedulerConfig.get_scheduler_cls()`), and writes
one record per workload to DIR/NAME.record.jsonl.

usage (see run_vllm.sh): drive_vllm.py MODEL_DIR [--recorder DIR] WORKLOAD OUT [WORKLOAD OUT ...]
"""

import json
import os
import sys
import time

import torch
from vllm.config import CacheConfig, ModelConfig, ParallelConfig, SchedulerConfig, VllmConfig
from vllm.sampling_params import SamplingParams
from vllm.utils.hashing import sha256
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.request import Request
from vllm.v1.structured_output import StructuredOutputManager

EOS_ID = 50256
SAMPLED_ID = 7
RECORDER = "cbaudit.integrations.vllm_recorder.RecordingScheduler"


def build_scheduler(cfg, model_dir, scheduler_cls=None):
    bs = cfg["block_size"]
    max_len = cfg.get("max_model_len", 2048)
    mc = ModelConfig(model=model_dir, dtype="float16", seed=42, skip_tokenizer_init=True,
                     max_model_len=max_len)
    extra = {}
    if "scheduler_reserve_full_isl" in cfg:
        extra["scheduler_reserve_full_isl"] = bool(cfg["scheduler_reserve_full_isl"])
    if cfg.get("max_num_scheduled_tokens") is not None:
        extra["max_num_scheduled_tokens"] = int(cfg["max_num_scheduled_tokens"])
    if scheduler_cls is not None:
        extra["scheduler_cls"] = scheduler_cls
    sc = SchedulerConfig(max_num_seqs=cfg["max_num_seqs"],
                         max_num_batched_tokens=cfg["max_num_batched_tokens"],
                         max_model_len=max_len,
                         long_prefill_token_threshold=cfg.get("long_prefill_token_threshold", 0),
                         enable_chunked_prefill=True, async_scheduling=False,
                         policy=cfg["policy"], is_encoder_decoder=mc.is_encoder_decoder, **extra)
    cc = CacheConfig(block_size=bs, gpu_memory_utilization=0.9, cache_dtype="auto",
                     enable_prefix_caching=False)
    vc = VllmConfig(scheduler_config=sc, model_config=mc, cache_config=cc,
                    parallel_config=ParallelConfig())
    spec = FullAttentionSpec(block_size=bs, num_kv_heads=1, head_size=1, dtype=torch.float32)
    kvc = KVCacheConfig(num_blocks=cfg["num_blocks"], kv_cache_tensors=[],
                        kv_cache_groups=[KVCacheGroupSpec(["layer"], spec)])
    cc.num_gpu_blocks = cfg["num_blocks"]
    register_all_kvcache_specs(vc)
    cls = Scheduler
    if scheduler_cls is not None:
        cls = sc.get_scheduler_cls()  # the engine core's own lookup
        assert cls.__name__ == scheduler_cls.rsplit(".", 1)[1], cls
    return cls(vllm_config=vc, kv_cache_config=kvc, block_size=bs, log_stats=True,
               structured_output_manager=StructuredOutputManager(vc))


def drive(wl, out_path, model_dir, scheduler_cls=None):
    cfg = wl["config"]
    sched = build_scheduler(cfg, model_dir, scheduler_cls)
    init_none_hash(sha256)
    hasher = get_request_block_hasher(cfg["block_size"], sha256)

    def to_request(spec, k):
        params = SamplingParams(ignore_eos=True, max_tokens=spec["output_tokens"])
        params.update_from_generation_config({}, EOS_ID)
        prompt = [3 + (k * 7919 + j) % 50000 for j in range(spec["prompt_tokens"])]
        return Request(request_id=spec["id"], prompt_token_ids=prompt, sampling_params=params,
                       pooling_params=None, mm_features=None, block_hasher=hasher,
                       priority=spec.get("priority", 0),
                       arrival_time=float(spec["arrival_step"]) + k * 1e-6)

    queue = sorted(enumerate(wl["requests"]), key=lambda kr: (kr[1]["arrival_step"], kr[0]))
    busy = sched.has_requests if cfg.get("loop") == "engine" else sched.has_unfinished_requests
    pos = 0
    step = 0
    with open(out_path, "w") as out:
        while pos < len(queue) or busy():
            while pos < len(queue) and queue[pos][1]["arrival_step"] <= step:
                k, spec = queue[pos]
                sched.add_request(to_request(spec, k))
                pos += 1
            if not busy():
                out.write(json.dumps({"step": step, "scheduled": {}, "idle": True}) + "\n")
                step += 1
                continue
            so = sched.schedule()
            counts = dict(so.num_scheduled_tokens)
            ids = list(counts)
            samples = [[SAMPLED_ID] if sched.requests[r].num_computed_tokens
                       >= sched.requests[r].num_tokens else [] for r in ids]
            mro = ModelRunnerOutput(req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)},
                                    sampled_token_ids=samples, logprobs=None,
                                    prompt_logprobs_dict={}, pooler_output=[])
            sched.update_from_output(so, mro)
            resumed = getattr(so.scheduled_cached_reqs, "resumed_req_ids", None) or []
            rec = {"step": step, "scheduled": counts, "total": so.total_num_scheduled_tokens,
                   "new": [r.req_id for r in so.scheduled_new_reqs],
                   "resumed": sorted(resumed),
                   "preempted": sorted(so.preempted_req_ids or []),
                   "finished": sorted(so.finished_req_ids or []),
                   "running_after": [r.request_id for r in sched.running],
                   "waiting_after": len(sched.waiting),
                   "free_blocks_after": sched.kv_cache_manager.block_pool.get_num_free_blocks()}
            out.write(json.dumps(rec, sort_keys=True) + "\n")
            step += 1
            if step > 200000:
                raise SystemExit(f"{out_path}: runaway (a request can never fit?)")
    if hasattr(sched, "close_record"):
        sched.close_record()
    return step


def main(argv):
    model_dir, rest = argv[0], argv[1:]
    rec_dir = scheduler_cls = None
    if rest[:1] == ["--recorder"]:
        rec_dir, rest = rest[1], rest[2:]
        scheduler_cls = RECORDER
        os.makedirs(rec_dir, exist_ok=True)
    if not rest or len(rest) % 2:
        raise SystemExit("usage: drive_vllm.py MODEL_DIR [--recorder DIR] WORKLOAD OUT [...]")
    for wpath, opath in zip(rest[::2], rest[1::2]):
        with open(wpath) as f:
            wl = json.load(f)
        if rec_dir is not None:
            name = os.path.basename(wpath).split(".")[0]
            rpath = os.path.join(rec_dir, name + ".record.jsonl")
            if os.path.exists(rpath):
                os.remove(rpath)
            os.environ["CBAUDIT_VLLM_RECORD"] = rpath
        t = time.perf_counter()
        steps = drive(wl, opath, model_dir, scheduler_cls)
        print(f"{wpath}: {steps} steps in {time.perf_counter() - t:.2f}s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
