/*===- tfmc_generate.h - C API of generation (models with a decoder) -----===*
 *
 * Part of a compiled model's NAME.h: tfmc appends it, after tfmc.h's
 * declarations, when the model has a decoder (prefill and decode_step
 * entry points); an encoder-only model's library holds neither these
 * declarations nor their code (runtime/generate/GenerateCApi.cpp).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFMC_GENERATE_H
#define TFMC_GENERATE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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

/* Continuous batching (what `NAME serve` runs): sequences submitted at any
 * time, from any thread, join one running batch between its decode steps
 * (up to the compiled max batch) and leave it when they end, each with its
 * own options. A sequence's tokens are those tfmc_generate_batch gives for
 * its prompt alone with the same options, whatever else is in the batch.
 * Decoder-only models whose decode step takes attention_mask and
 * position_ids batch so; encoder-decoders run one sequence at a time. The
 * batcher has its own thread and uses `model` (and a second handle it
 * makes with tfmc_share) until tfmc_batcher_destroy: use another handle
 * for other work meanwhile. */
typedef struct tfmc_batcher tfmc_batcher;

/* How a submitted sequence ended: its done callback's `reason`. */
enum {
  TFMC_FINISH_STOP = 0,      /* an eos, or TFMC_STOP_SEQUENCE from on_token */
  TFMC_FINISH_LENGTH = 1,    /* max_new_tokens */
  TFMC_FINISH_CANCELLED = 2, /* TFMC_CANCEL from on_token, or destroyed */
  TFMC_FINISH_ERROR = 3      /* the model failed: `error` says why */
};

/* tfmc_batcher_submit's result when `max_queue` sequences already wait. */
#define TFMC_QUEUE_FULL 3

/* Called on the batcher's thread, so keep them short: each new token as it
 * is chosen (return TFMC_CONTINUE, TFMC_STOP_SEQUENCE or TFMC_CANCEL), then
 * once when the sequence ends (`error` null unless TFMC_FINISH_ERROR). */
typedef int (*tfmc_sequence_token_callback)(void *user, int64_t token);
typedef void (*tfmc_sequence_done_callback)(void *user, int reason,
                                            const char *error);

/* A batcher over `model` in which up to `max_queue` (>= 1) sequences may
 * wait for a row. Returns 0, or 1 with tfmc_last_error() set. */
int tfmc_batcher_create(tfmc_model *model, int64_t max_queue,
                        tfmc_batcher **batcher);

/* Sequences that join running ones have their prompts run at most `tokens`
 * in all between two of their steps (default 64), so that each step waits
 * at most one chunk's time; 0 runs whole prompts, one per step. Takes effect
 * from the next step. Returns 0, or 1 with tfmc_last_error() set. */
int tfmc_batcher_set_prefill_chunk(tfmc_batcher *batcher, int64_t tokens);

/* Queues one sequence (decoder-only: the prompt; encoder-decoder: the
 * source, with options->bos). The options are tfmc_generate_batch's but
 * num_beams, which must be 1. Returns 0 (the callbacks will come),
 * TFMC_QUEUE_FULL, or 1 with tfmc_last_error() set (bad options name the
 * field, e.g. top_p); the callbacks are not called unless it returns 0. */
int tfmc_batcher_submit(tfmc_batcher *batcher, const int64_t *prompt,
                        int64_t length, const tfmc_generate_options *options,
                        tfmc_sequence_token_callback on_token,
                        tfmc_sequence_done_callback on_done, void *user);

/* Stops taking sequences, lets those running and waiting finish for up to
 * `grace_seconds`, ends the rest (TFMC_FINISH_CANCELLED), and frees the
 * batcher; every done callback has returned when it returns. */
void tfmc_batcher_destroy(tfmc_batcher *batcher, double grace_seconds);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TFMC_GENERATE_H */
