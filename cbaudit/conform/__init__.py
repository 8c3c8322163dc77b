"""Conformance with the real vLLM: `vllm-v1`'s decisions against vLLM v0.23.0's, step by step.

`inputs` reads the three formats (a driver workload and its trace, the records of
`cbaudit.integrations.vllm_recorder`), `sides` replays a workload under `vllm-v1` and writes
its steps in vLLM's trace vocabulary, `compare` compares the two step by step, `playback`
turns vLLM's recorded decisions into contract records, and `core` ties them together for the
CLI (`cbaudit conform`) and the gate. Nothing here imports vLLM.
"""
