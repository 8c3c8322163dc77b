#!/usr/bin/env python3
"""Write the conformance corpus workloads (the CPU driver's format) into a folder.

cbaudit's own generator (seeded random.Random only, no clock: the same files every run). Each
workload exercises rules of vLLM v0.23.0's scheduler; together the 19 exercise every rule
vllm-v1 mirrors (README.md beside this file: which rule each one exercises, and the ablation
check that says so). The parameters of each are in its builder below; `splitwise_fcfs` is the
first 200 rows of the public Splitwise code trace (`arrival_step = floor(arrived_at / 0.25 s)`,
`prompt_tokens = ceil(num_prefill_tokens / 8)`, `output_tokens = num_decode_tokens`);
`mooncake_fcfs` is 60 rows of Mooncake's public conversation trace (kvcache-ai/Mooncake,
`FAST25-release/traces/conversation_trace.jsonl`), from row 3,000: long prompts chunked under
a small token budget and a long-prefill threshold, in a pool that preempts.

usage: gen_corpus.py OUT_DIR [SPLITWISE_CSV [MOONCAKE_JSONL]]   (default
../shared/traces/splitwise_code.csv beside the repository; without MOONCAKE_JSONL the
mooncake workload is not written, and the script says so)
"""

from __future__ import annotations

import csv
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SPLITWISE = os.path.join(HERE, "..", "..", "..", "..", "shared", "traces", "splitwise_code.csv")


def cfg(bs=16, blocks=64, mbt=128, seqs=8, policy="fcfs", thr=0, mml=2048, **extra):
    c = {"block_size": bs, "num_blocks": blocks, "max_num_batched_tokens": mbt,
         "max_num_seqs": seqs, "policy": policy, "long_prefill_token_threshold": thr,
         "max_model_len": mml}
    c.update(extra)
    return c


def req(rid, p, o, step, prio=0):
    return {"id": rid, "prompt_tokens": p, "output_tokens": o, "priority": prio,
            "arrival_step": step}


def fcfs_ample():
    rng = random.Random(101)
    rs = [req(f"r{i}", rng.randint(8, 300), rng.randint(1, 80), i * rng.randint(0, 3))
          for i in range(40)]
    return {"config": cfg(blocks=400, mbt=256, seqs=16), "requests": rs}


def fcfs_tight_fullfit():
    # long prompts chunked by a small budget: the first chunk always fits, the whole prompt
    # often does not; scheduler_reserve_full_isl holds those back
    rng = random.Random(102)
    rs = [req(f"t{i}", rng.randint(100, 400), rng.randint(5, 60), i * 4) for i in range(30)]
    return {"config": cfg(blocks=48, mbt=64, seqs=8), "requests": rs}


def null_block_edge():
    # 11 blocks of 16 -> 10 usable. a holds 4 blocks during decode; b's full prompt needs 7:
    # 10 - 4 = 6 free < 7, so b waits for a although 11 - 4 = 7 would have fit.
    rs = [req("a", 60, 30, 0), req("b", 100, 5, 2), req("c", 150, 4, 40), req("d", 8, 2, 41)]
    return {"config": cfg(blocks=11, mbt=32, seqs=4), "requests": rs}


def null_block_exact():
    # a request whose whole sequence needs exactly num_blocks - 1 blocks runs alone
    rs = [req("x", 16 * 7 - 3, 4, 0), req("y", 40, 10, 1), req("z", 16 * 7 - 10, 11, 3)]
    return {"config": cfg(blocks=8, mbt=48, seqs=3), "requests": rs}


def staggered_idle():
    rs = []
    step = 0
    rng = random.Random(104)
    for i in range(24):
        step += rng.choice([0, 1, 5, 30, 60])
        rs.append(req(f"s{i}", rng.randint(4, 120), rng.randint(1, 25), step))
    return {"config": cfg(blocks=40, mbt=64, seqs=4), "requests": rs}


def long_prefill_threshold():
    rng = random.Random(105)
    rs = [req(f"L{i}", rng.randint(50, 900), rng.randint(2, 40), rng.randint(0, 60))
          for i in range(24)]
    return {"config": cfg(blocks=200, mbt=256, seqs=8, thr=48), "requests": rs}


def long_prefill_threshold_tight_prio():
    rng = random.Random(115)
    rs = [req(f"q{i}", rng.randint(30, 500), rng.randint(2, 60), rng.randint(0, 40),
              rng.randint(0, 3)) for i in range(24)]
    return {"config": cfg(blocks=60, mbt=128, seqs=6, thr=40, policy="priority"),
            "requests": rs}


def max_model_len_binding():
    # prompt + output beyond max_model_len=256: the request stops when its length reaches it
    # (prompts stay below max_model_len: the real front end refuses prompt_len >= it)
    rng = random.Random(106)
    rs = [req(f"m{i}", rng.randint(100, 250), rng.randint(20, 300), rng.randint(0, 30))
          for i in range(16)]
    return {"config": cfg(blocks=80, mbt=96, seqs=6, mml=256), "requests": rs}


def fcfs_preempt_storm():
    # decode growth overruns a tight pool; the last running request is the victim, and a lone
    # request at the tail preempts itself
    rng = random.Random(107)
    rs = [req(f"f{i}", rng.randint(10, 60), rng.randint(60, 200), rng.randint(0, 10))
          for i in range(20)]
    return {"config": cfg(blocks=30, mbt=64, seqs=12), "requests": rs}


def prio_preempt_storm():
    # victims by max (priority, arrival): often one already scheduled earlier in the step,
    # sometimes the request being scheduled itself
    rng = random.Random(108)
    rs = [req(f"p{i}", rng.randint(10, 60), rng.randint(60, 200), rng.randint(0, 12),
              rng.randint(0, 4)) for i in range(20)]
    return {"config": cfg(blocks=30, mbt=64, seqs=12, policy="priority"), "requests": rs}


def prio_victim_scheduled_earlier():
    # low-priority (large value) requests are admitted first and sit early in the running
    # list; urgent ones admitted later need blocks and evict them after they were scheduled
    rs = [req("lo1", 40, 120, 0, 5), req("lo2", 40, 120, 0, 4),
          req("hi1", 30, 90, 3, 0), req("hi2", 30, 90, 4, 1), req("mid", 20, 60, 6, 2)]
    return {"config": cfg(blocks=20, mbt=64, seqs=8, policy="priority"), "requests": rs}








def budget_cap_scheduled_tokens():
    # max_num_scheduled_tokens below max_num_batched_tokens is the real per-step budget
    rng = random.Random(113)
    rs = [req(f"k{i}", rng.randint(20, 200), rng.randint(2, 30), rng.randint(0, 30))
          for i in range(16)]
    return {"config": cfg(blocks=120, mbt=128, seqs=8, max_num_scheduled_tokens=40),
            "requests": rs}


def splitwise(n=200, policy="fcfs", blocks=170, seed=None, path=None):
    """First n requests of splitwise_code.csv. arrival_step = floor(arrived_at / 0.25 s);
    prompt_tokens = ceil(num_prefill_tokens / 8); output_tokens = num_decode_tokens."""
    with open(path or SPLITWISE) as f:
        rows = list(csv.DictReader(f))[:n]
    rng = random.Random(seed) if seed is not None else None
    rs = []
    for i, row in enumerate(rows):
        p = -(-int(row["num_prefill_tokens"]) // 8)
        rs.append(req(f"w{i}", p, int(row["num_decode_tokens"]),
                      int(float(row["arrived_at"]) / 0.25), rng.randint(0, 3) if rng else 0))
    return {"config": cfg(blocks=blocks, mbt=512, seqs=32, policy=policy), "requests": rs}




def mooncake(path, start=3000, n=60, blocks=160):
    """n rows of Mooncake's conversation trace from row `start` (timestamps in ms):
    arrival_step = (timestamp - first timestamp) // 45 ms; prompt_tokens = ceil(input_length /
    64); output_tokens = ceil(output_length / 4); FCFS, a 64-token budget, a long-prefill
    threshold of 16, max_model_len 2048."""
    with open(path) as f:
        rows = [json.loads(line) for line in f][start : start + n]
    t0 = rows[0]["timestamp"]
    rs = [
        req(f"m{i}", -(-r["input_length"] // 64), -(-r["output_length"] // 4),
            (r["timestamp"] - t0) // 45)
        for i, r in enumerate(rows)
    ]
    return {"config": cfg(blocks=blocks, mbt=64, seqs=32, thr=16), "requests": rs}


def rand_mix(seed, policy):
    rng = random.Random(seed)
    bs = rng.choice([4, 8, 16, 32])
    n = rng.randint(10, 40)
    rs = []
    for i in range(n):
        rs.append(req(f"x{i}", rng.randint(1, 300), rng.randint(1, 120),
                      rng.randint(0, 80), rng.randint(0, 5)))
    need = max(-(-(r["prompt_tokens"] + r["output_tokens"] - 1) // bs) for r in rs) + 1
    blocks = need + rng.randint(0, 3 * need)
    seqs = rng.randint(1, 12)
    mbt = max(seqs, rng.choice([16, 32, 64, 128, 256]))
    thr = rng.choice([0, 0, 0, 16, 50])
    return {"config": cfg(bs=bs, blocks=blocks, mbt=mbt, seqs=seqs, policy=policy, thr=thr),
            "requests": rs}


def prio_search_refund(seed):
    """Found by searching seeds with proto.py for a trace that catches the ablation
    prio_victim_not_refunded: a victim scheduled earlier in the step gives its tokens back, and
    a running request after it then gets a larger chunk."""
    rng = random.Random(seed)
    rs = []
    for i in range(rng.randint(4, 10)):
        p, o, prio, step = rng.randint(5, 300), rng.randint(5, 80), rng.randint(0, 3), rng.randint(0, 15)
        rs.append(req(f"v{i}", p, o, step, prio))
    need = max(-(-(r["prompt_tokens"] + r["output_tokens"] - 1) // 16) for r in rs) + 1
    return {"config": cfg(blocks=need + rng.randint(0, need), mbt=rng.choice([32, 48, 64]),
                          seqs=8, policy="priority", thr=rng.choice([0, 16, 24, 32])),
            "requests": rs}


def prio_search_only_preempt(seed):
    """Found by searching seeds with proto.py --stats for a step that schedules nothing and
    only preempts (the request being scheduled evicts everyone else, then itself)."""
    rng = random.Random(seed)
    rs = []
    for i in range(rng.randint(3, 8)):
        p, o, prio, step = rng.randint(20, 200), rng.randint(2, 40), rng.randint(0, 3), rng.randint(0, 6)
        rs.append(req(f"e{i}", p, o, step, prio))
    need = max(-(-(r["prompt_tokens"] + r["output_tokens"] - 1) // 16) for r in rs) + 1
    return {"config": cfg(blocks=need + rng.randint(0, 4), mbt=rng.choice([64, 96, 128]),
                          seqs=8, policy="priority"),
            "requests": rs}


def no_fullfit(build):
    def b():
        wl = build()
        wl["config"]["scheduler_reserve_full_isl"] = False
        return wl
    return b


def engine_loop(build):
    def b():
        wl = build()
        wl["config"]["loop"] = "engine"
        return wl
    return b


CORPUS = {
    "fcfs_ample": fcfs_ample,
    "fcfs_tight_fullfit": fcfs_tight_fullfit,
    "fcfs_tight_fullfit_nofit": no_fullfit(fcfs_tight_fullfit),
    "null_block_edge": null_block_edge,
    "null_block_exact": null_block_exact,
    "staggered_idle": staggered_idle,
    "staggered_idle_engineloop": engine_loop(staggered_idle),
    "long_prefill_threshold": long_prefill_threshold,
    "long_prefill_threshold_tight_prio": long_prefill_threshold_tight_prio,
    "max_model_len_binding": max_model_len_binding,
    "fcfs_preempt_storm": fcfs_preempt_storm,
    "prio_preempt_storm": prio_preempt_storm,
    "prio_victim_scheduled_earlier": prio_victim_scheduled_earlier,
    "prio_victim_refund_a": lambda: prio_search_refund(34),
    "prio_only_preempt_a": lambda: prio_search_only_preempt(43),
    "budget_cap_scheduled_tokens": budget_cap_scheduled_tokens,
    "splitwise_fcfs": lambda: splitwise(path=SPLITWISE_CSV),
    "rand_prio_5": lambda: rand_mix(2005, "priority"),
    "mooncake_fcfs": lambda: mooncake(MOONCAKE_JSONL) if MOONCAKE_JSONL else None,
}
SPLITWISE_CSV = None
MOONCAKE_JSONL = None


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    written = 0
    for name, build in CORPUS.items():
        wl = build()
        if wl is None:
            print(f"{name}: not written (name Mooncake's conversation_trace.jsonl)")
            continue
        written += 1
        with open(os.path.join(out_dir, f"{name}.workload.json"), "w") as f:
            json.dump(wl, f, indent=1, sort_keys=True)
            f.write("\n")
    print(written, "workloads in", out_dir)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        SPLITWISE_CSV = sys.argv[2]
    if len(sys.argv) > 3:
        MOONCAKE_JSONL = sys.argv[3]
    main(sys.argv[1])
