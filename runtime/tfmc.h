/*===- tfmc.h - C API of a model compiled by tfmc ------------------------===*
 *
 * A model compiled with `tfmc MODEL -o NAME --emit lib` is libNAME.a plus
 * this header. The model (its kernels and plan) is in the library; the
 * weights are a safetensors file given at run time.
 *
 *   tfmc_model *model;
 *   if (tfmc_create("weights.safetensors", &model) != 0) {
 *     fprintf(stderr, "%s\n", tfmc_last_error());
 *     return 1;
 *   }
 *   int64_t ids[] = {5, 6, 7};
 *   tfmc_input input = {"input_ids", ids, 1, 3};
 *   const float *logits;
 *   int64_t shape[3];
 *   if (tfmc_forward(model, &input, 1, &logits, shape) != 0) ...
 *   tfmc_destroy(model);
 *
 * Every function returns 0 on success and non-zero on failure; the failure's
 * one-line message is then tfmc_last_error(). No function throws, aborts or
 * prints (except one warning line on stderr from tfmc_create when the
 * weights file holds tensors the model does not use).
 *
 * Threads: different models may be used on different threads at the same
 * time; one model must not run two tfmc_forward calls at once.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFMC_H
#define TFMC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A loaded model: kernels, weights (mapped) and its working memory. */
typedef struct tfmc_model tfmc_model;

/** One input tensor, [batch, length] row-major int64: token ids
 *  ("input_ids", "decoder_input_ids") or a 0/1 mask ("attention_mask",
 *  "decoder_attention_mask"; an absent mask means no padding). */
typedef struct tfmc_input {
  const char *name;
  const int64_t *data;
  int64_t batch;
  int64_t length;
} tfmc_input;

/** Loads the weights at `weights_path` (a safetensors file, a Hugging Face
 *  checkpoint directory or a sharded checkpoint's index.json; tensors F32,
 *  BF16 or F16, converted at load to the program's weight dtype, or a file
 *  written by `NAME convert-weights`) and prepares the model. On success
 *  stores it in `*model` and returns 0. */
int tfmc_create(const char *weights_path, tfmc_model **model);

/** Runs the model on `inputs`. On success `*output` points at the output
 *  (`logits` [B, S, V] or `last_hidden_state` [B, S, d], f32, row-major),
 *  `shape` holds its three dims, and 0 is returned. The output belongs to
 *  the model and stays valid until the next tfmc_forward or tfmc_destroy. */
int tfmc_forward(tfmc_model *model, const tfmc_input *inputs, int num_inputs,
                 const float **output, int64_t shape[3]);

/** Another output of the last successful tfmc_forward, by name (BERT's
 *  "pooler_output" [B, d]; the first output, e.g. "last_hidden_state", too).
 *  On success `*output` points at it, `shape` holds its dims (at most 3;
 *  unused ones are 0), `*rank` their number, and 0 is returned; valid as
 *  tfmc_forward's output. */
int tfmc_output(tfmc_model *model, const char *name, const float **output,
                int64_t shape[3], int *rank);

/** Sets how many threads the kernels use (process-wide, threads >= 1). */
int tfmc_set_threads(int threads);

/* Greedy generation with the KV cache (models with a decoder), one
 * sequence. Decoder-only: `prompt` is the prompt and `bos` is ignored.
 * Encoder-decoder: `prompt` is the source and `bos` the decoder's start
 * token. Generation stops after `eos` (pass -1 for none) or
 * `max_new_tokens` tokens; the new ids (eos included when reached) go to
 * `out`, which holds `max_new_tokens` ids, and their number to `*count`.
 * Returns 0, or non-zero with tfmc_last_error() set. */
int tfmc_generate(tfmc_model *model, const int64_t *prompt, int64_t length,
                  int64_t bos, int64_t eos, int64_t max_new_tokens,
                  int64_t *out, int64_t *count);

/* Generation options (Hugging Face generate's, as the CLI's flags).
 * tfmc_generate_options_init sets the defaults: greedy (temperature 0),
 * top_k 0 (off), top_p 1 (off), seed 0, repetition_penalty 1 (off),
 * num_beams 1 (no beam search), length_penalty 1, early_stopping 0, no
 * eos, bos -1; max_new_tokens must then be set. */
typedef struct tfmc_generate_options {
  int64_t max_new_tokens;
  const int64_t *eos;   /* a sequence ends after any of these ids */
  int64_t eos_count;
  int64_t bos;          /* encoder-decoder: the decoder's start token */
  double temperature;   /* 0: greedy */
  int64_t top_k;        /* 0: off */
  double top_p;         /* in (0, 1]; 1: off */
  uint64_t seed;        /* one seed, the same tokens on every run */
  double repetition_penalty;
  int64_t num_beams;    /* > 1: beam search (at most the compiled max batch) */
  double length_penalty;
  int early_stopping;
} tfmc_generate_options;

void tfmc_generate_options_init(tfmc_generate_options *options);

/* What a token callback returns. */
enum {
  TFMC_CONTINUE = 0,      /* go on */
  TFMC_STOP_SEQUENCE = 1, /* end this sequence (the token is kept) */
  TFMC_CANCEL = 2         /* end the whole call (tokens so far are kept) */
};

/* Called with each new token of prompt `sequence` (its index in the call)
 * as soon as it is chosen; with beam search, with each token of a prompt's
 * best hypothesis when its search ends. */
typedef int (*tfmc_token_callback)(void *user, int64_t sequence,
                                   int64_t token);

/* Generation for `count` prompts (decoder-only; sources for an
 * encoder-decoder) of `lengths[i]` ids each, run in batches of up to the
 * compiled max batch. Prompt i's new ids go to
 * out[i * max_new_tokens ...] and their number to out_counts[i]. `callback`
 * may be null. Returns 0 when every sequence ended, TFMC_CANCEL when the
 * callback cancelled (the ids so far are in out), or 1 with
 * tfmc_last_error() set (bad options name the field, e.g. top_p). */
int tfmc_generate_batch(tfmc_model *model, const int64_t *const *prompts,
                        const int64_t *lengths, int64_t count,
                        const tfmc_generate_options *options,
                        tfmc_token_callback callback, void *user,
                        int64_t *out, int64_t *out_counts);

/** Frees the model (null is fine). */
void tfmc_destroy(tfmc_model *model);

/** The message of the last failure on this thread ("" when none); valid
 *  until the next failing call on this thread. */
const char *tfmc_last_error(void);

/** The compiled model's name (from its description), "" if unknown. */
const char *tfmc_model_name(void);

/** The target whose kernels this CPU runs (the widest of the program's
 *  `tfmc --target` list that the CPU has the features of), or "" when it
 *  has none: tfmc_create then fails, naming the missing features. */
const char *tfmc_target(void);

/** How the program stores its linear weights and embedding tables, as
 *  `tfmc --weight-dtype` chose: "f32", "bf16", "int8" or "int4" (norms, biases and
 *  positions are f32 in every program); "" if unknown. The generated NAME.h
 *  also states it as the macro TFMC_WEIGHT_DTYPE. */
const char *tfmc_weight_dtype(void);

/** An int8 or int4 program's group size (consecutive inputs sharing one
 *  scale; int4: 32), else 0. */
int64_t tfmc_weight_group(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TFMC_H */
