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
 * A model with a decoder also has the generation functions
 * (runtime/generate/tfmc_generate.h, which tfmc appends to NAME.h for such
 * a model, and whose code only such a model's library holds).
 *
 * Every function returns 0 on success and non-zero on failure; the failure's
 * one-line message is then tfmc_last_error(). No function throws, aborts or
 * prints (except one warning line on stderr from tfmc_create when the
 * weights file holds tensors the model does not use).
 *
 * Threads: one handle runs one call at a time. For several threads, load
 * once and give each thread its own handle from tfmc_share: the handles
 * share the kernels and weights (read-only, not copied), each has its own
 * working memory and KV cache, and they may run at the same time.
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

/** Another handle on `model`'s kernels and weights, which it shares
 *  (read-only; they are freed with the last handle, in any order), with its
 *  own working memory and an empty KV cache: for another thread, which may
 *  run it while `model` runs. On success stores it in `*shared` (destroy it
 *  with tfmc_destroy) and returns 0. */
int tfmc_share(const tfmc_model *model, tfmc_model **shared);

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
