"""Readers for peers' result files, so `compare-results` applies its comparability rules to
them too: `vllm bench serve --save-result` JSON, GuideLLM benchmark reports, pyperf JSON.

Each module is one format: a `detect(data)` predicate on keys only that format writes and a
`build(doc)` that returns sample sets, refusing malformed files with located `COMPARE.PEER.*`
errors (exit 2). `PEER_ADAPTERS` lists them for the adapter registry in `results.samples`.
"""

from cbaudit.results.peers import guidellm, pyperf, vllm_bench
from cbaudit.results.sample_model import Adapter

PEER_ADAPTERS: tuple[Adapter, ...] = (
    Adapter(vllm_bench.NAME, vllm_bench.detect, vllm_bench.build),
    Adapter(guidellm.NAME, guidellm.detect, guidellm.build),
    Adapter(pyperf.NAME, pyperf.detect, pyperf.build),
)

__all__ = ["PEER_ADAPTERS"]
