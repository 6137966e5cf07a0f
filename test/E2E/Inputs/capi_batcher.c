/* tfmc_batcher (continuous batching) against tfmc_generate_batch alone:
 * app WEIGHTS VOCAB MAX_LEN submits 16 sequences at once (greedy and
 * sampled, random prompt lengths and budgets; one stops itself after 3
 * tokens, one cancels after 2), waits for every done callback, and checks
 * each sequence's tokens against the same prompt and options generated
 * alone on another handle. Then bad options: each a message naming the
 * field. */
#include "model.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define COUNT 16

typedef struct {
  int64_t prompt[16];
  int64_t length;
  tfmc_generate_options options;
  int64_t tokens[64];
  int64_t count;
  int64_t stop_after, cancel_after;
  int reason;
} Sequence;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ended = PTHREAD_COND_INITIALIZER;
static int finished;

static int on_token(void *user, int64_t token) {
  Sequence *s = user;
  s->tokens[s->count++] = token;
  if (s->count == s->cancel_after)
    return TFMC_CANCEL;
  return s->count == s->stop_after ? TFMC_STOP_SEQUENCE : TFMC_CONTINUE;
}

static void on_done(void *user, int reason, const char *error) {
  Sequence *s = user;
  if (error)
    fprintf(stderr, "error: %s\n", error);
  pthread_mutex_lock(&lock);
  s->reason = reason;
  ++finished;
  pthread_cond_broadcast(&ended);
  pthread_mutex_unlock(&lock);
}

static uint64_t state = 12345;
static int64_t next(int64_t bound) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return (int64_t)((state >> 33) % (uint64_t)bound);
}

int main(int argc, char **argv) {
  if (argc != 4)
    return 2;
  int64_t vocab = 0, max_len = 0;
  sscanf(argv[2], "%lld", (long long *)&vocab);
  sscanf(argv[3], "%lld", (long long *)&max_len);
  tfmc_model *model, *alone;
  tfmc_batcher *batcher;
  if (tfmc_create(argv[1], &model) || tfmc_share(model, &alone) ||
      tfmc_batcher_create(model, 64, &batcher) ||
      tfmc_batcher_set_prefill_chunk(batcher, 2)) {
    printf("error: %s\n", tfmc_last_error());
    return 1;
  }
  static Sequence sequences[COUNT];
  for (int i = 0; i < COUNT; ++i) {
    Sequence *s = &sequences[i];
    s->length = 1 + next(max_len / 2);
    for (int64_t t = 0; t < s->length; ++t)
      s->prompt[t] = next(vocab);
    tfmc_generate_options_init(&s->options);
    s->options.max_new_tokens = 1 + next(max_len - s->length);
    if (i % 2) {
      s->options.temperature = 0.9;
      s->options.top_p = 0.9;
      s->options.seed = (uint64_t)i;
    }
    s->stop_after = i == 4 ? 3 : 0;
    s->cancel_after = i == 7 ? 2 : 0;
    if (i == 4 || i == 7)
      s->options.max_new_tokens = max_len - s->length;
  }
  for (int i = 0; i < COUNT; ++i) {
    Sequence *s = &sequences[i];
    if (tfmc_batcher_submit(batcher, s->prompt, s->length, &s->options,
                            on_token, on_done, s) != 0) {
      printf("error: %s\n", tfmc_last_error());
      return 1;
    }
  }
  pthread_mutex_lock(&lock);
  while (finished < COUNT)
    pthread_cond_wait(&ended, &lock);
  pthread_mutex_unlock(&lock);

  int differ = 0;
  for (int i = 0; i < COUNT; ++i) {
    Sequence *s = &sequences[i];
    const int64_t *prompts[1] = {s->prompt};
    int64_t out[64], counts[1];
    if (tfmc_generate_batch(alone, prompts, &s->length, 1, &s->options, NULL,
                            NULL, out, counts) != 0) {
      printf("error: %s\n", tfmc_last_error());
      return 1;
    }
    int64_t expected = counts[0];
    int reason = expected == s->options.max_new_tokens ? TFMC_FINISH_LENGTH
                                                        : TFMC_FINISH_STOP;
    if (s->stop_after && s->stop_after < expected) {
      expected = s->stop_after;
      reason = TFMC_FINISH_STOP;
    }
    if (s->cancel_after && s->cancel_after < expected) {
      expected = s->cancel_after;
      reason = TFMC_FINISH_CANCELLED;
    }
    if (s->count != expected || s->reason != reason ||
        memcmp(s->tokens, out, (size_t)expected * sizeof(int64_t)) != 0) {
      ++differ;
      printf("sequence %d: %lld tokens, reason %d; alone %lld, reason %d\n", i,
             (long long)s->count, s->reason, (long long)expected, reason);
    }
  }
  printf("batcher: %d sequences, %d differ (stopped at 3: %lld tokens, "
         "cancelled at 2: %lld tokens, reason %d)\n",
         COUNT, differ, (long long)sequences[4].count,
         (long long)sequences[7].count, sequences[7].reason);

  tfmc_generate_options bad;
  int64_t prompt[1] = {1};
  int rc;
  tfmc_generate_options_init(&bad);
  bad.max_new_tokens = 2;
  bad.num_beams = 2;
  rc = tfmc_batcher_submit(batcher, prompt, 1, &bad, NULL, NULL, NULL);
  printf("beams: %d %s\n", rc, tfmc_last_error());
  bad.num_beams = 1;
  bad.top_p = 0;
  rc = tfmc_batcher_submit(batcher, prompt, 1, &bad, NULL, NULL, NULL);
  printf("top_p: %d %s\n", rc, tfmc_last_error());
  bad.top_p = 1;
  bad.max_new_tokens = max_len;
  rc = tfmc_batcher_submit(batcher, prompt, 1, &bad, NULL, NULL, NULL);
  printf("budget: %d %s\n", rc, tfmc_last_error());
  rc = tfmc_batcher_set_prefill_chunk(batcher, -1);
  printf("chunk: %d %s\n", rc, tfmc_last_error());
  tfmc_batcher_destroy(batcher, 5);
  tfmc_destroy(model);
  tfmc_destroy(alone);
  return differ != 0;
}
