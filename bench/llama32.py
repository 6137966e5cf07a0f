"""bench/run.py's `llama32` section (issue 46's goal: "the TinyLlama-shaped figures hold for a
Llama-3.2-1B-shaped model"): section 8's comparison of tfmc with llama.cpp (bench/llama.py's class
Llama: the same checkpoint writer, PyTorch reference, same-ids checks, runners and table) at Llama
3.2 1B's shape: d_model 2048, 16 layers, 32 heads with 8 KV heads, FFN 8192, a vocabulary of 128256
and the output head tied to the embedding table, whose 263 M weights are a fifth of the model's
1.24 G and the largest matrix a decode step reads. Random weights (llama_checkpoint.py --tied --seed 1).

Rows: the quantised pairs the goal names, decode tokens/s and prefill time against llama.cpp at the
same formats: tfmc int8a8 (int8 weights + int8 activations) against llama.cpp Q8_0, tfmc int4 and
int4a8 (Q4_0 blocks) against Q4_0. No f32 or bf16 rows: at this shape an f32 decode step reads 5 GB
(bf16 2.5 GB), a tenth of a second or more per token on the 2-core machines bench runs on, and each
row generates 12 times plus its checks, which would take the section past half an hour. No compile
times either (section 8 measures TinyLlama's).

Files, in bench/out/: llama32_hf/ (the checkpoint: config.json with tie_word_embeddings true, a
4.9 GB f32 model.safetensors without lm_head.weight, the synthetic SentencePiece-style tokenizer at
128256 pieces: the engines are given ids, no text), llama32_check.json (llama_check.py's reference
for this section's formats only), llama32_int8.safetensors and llama32_int4.safetensors (tfmc's
convert-weights), llama32_q8_0.gguf and llama32_q4_0.gguf (gguf_llama.py: no output.weight, as
convert_hf_to_gguf.py writes Llama 3.2, so llama.cpp multiplies by token_embd, and tfmc compiling
such a file reads it as tied; the Q4_0 file's token_embd is Q6_K, as llama-quantize gives a file
without output.weight, and its other matrices Q4_0). About 9 GB in all; the first run writes them
and runs the reference and the own-format checks (46 minutes on a 2-core AMD EPYC), a later run
reuses them (8 minutes on a quiet machine). Rope: θ 10000 without Llama 3's frequency scaling (rope_freqs), which changes no
cost at 160 positions.

Other engineers' work shares the machine, so every measurement (the read bandwidth, the FMA peak,
each row's timing) first waits for a quiet machine (bench/serve.py's Measure: other processes under
0.1 cores, waiting at most QUIET_BUDGET_S in all) and the report lists the cores other
processes used while each ran.
"""

import time

from engines import LLAMA_DTYPES, TFMC_DTYPES
from llama import Llama, render_section, run_engines
from run import note
from serve import QUIET_CORES, Measure

SHAPE = {"d_model": 2048, "layers": 16, "heads": 32, "kv_heads": 8, "d_ff": 8192, "vocab": 128256,
         "max_len": 2048, "tied": True}
PAIRS = [("int8a8", "Q8_0"), ("int4", "Q4_0"), ("int4a8", "Q4_0")]
TFMC_ROWS = [(d, f) for d, f in TFMC_DTYPES if d in {ours for ours, _ in PAIRS}]
LLAMA_ROWS = [(d, a, f) for d, a, f in LLAMA_DTYPES if d in {theirs for _, theirs in PAIRS}]
QUIET_BUDGET_S = 300  # how long the section may wait for a quiet machine, in all

SECTION = {"key": "llama32", "number": 14,
           "title": "Issue 46: a Llama-3.2-1B-shaped model (GQA 32/8, vocab 128256, tied head), "
                    "tfmc vs llama.cpp",
           "label": "Llama-3.2-1B-shaped", "pairs": PAIRS, "compile_goals": False, "file_goal": False,
           "goals": "Issue 46's goal: section 8's targets at the Llama 3.2 1B shape (ratios of this run)",
           "not_goal": " (not one of issue 14's goals)",
           "intro": "Rows: the quantised pairs of issue 46's goal (tfmc int8a8 against llama.cpp Q8_0, tfmc "
                    "int4 and int4a8 against Q4_0). No f32 or bf16 rows: at this shape an f32 decode step "
                    "reads 5 GB (bf16 2.5 GB), too slow for a bounded section on 2 cores. The output head is "
                    "the 128256 × 2048 embedding table, 21 % of the weight elements each decode step reads."}


class Waits(Measure):
    """serve.py's Measure with a budget of time spent waiting, not a deadline: the section writes
    files and runs PyTorch checks for many minutes between its measurements, and each measurement
    may wait for a quiet machine while the section's waits stay under the budget."""

    def __init__(self, budget_s):
        super().__init__(budget_s)
        self.budget_s = budget_s

    def quiet(self):
        while self.waited_s < self.budget_s:
            self.watch.start()
            time.sleep(0.3)
            if self.watch.stop() < QUIET_CORES:
                return
            self.waited_s += 0.3


def run_llama32(h):
    note("llama32: Llama-3.2-1B-shaped generation (tied head, vocab 128256) in tfmc and llama.cpp, "
         "the quantised pairs")
    e = Llama(h, shape=SHAPE, key="llama32", name="llama32", check="llama32_check.json",
              tfmc_rows=TFMC_ROWS, llama_rows=LLAMA_ROWS, measure=Waits(QUIET_BUDGET_S))
    e.res["quiet_budget_s"] = QUIET_BUDGET_S
    run_engines(e, compile_times=False)


def render(rep):
    render_section(rep, SECTION)
