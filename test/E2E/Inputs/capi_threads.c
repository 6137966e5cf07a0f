/* Several threads on one loaded model through the C API (model.h +
 * libmodel.a): capi_threads WEIGHTS THREADS ROUNDS.
 * Each of 8 prompts is first generated alone (greedy, 10 new ids) on the
 * loaded handle; then THREADS threads, each with its own tfmc_share handle,
 * generate ROUNDS times each, prompt (thread + round) % 8, at the same time,
 * and every result must equal the prompt's solo one. The original handle is
 * destroyed before the threads start (the weights live on with the shared
 * handles). Prints "threads: N runs, M differ, K failed". */
#include "model.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kPrompts = 8, kLength = 5, kNew = 10, kMaxThreads = 16 };

static int64_t prompts[kPrompts][kLength];
static int64_t solo[kPrompts][kNew];
static int64_t soloCount[kPrompts];
static int rounds;

struct Worker {
  tfmc_model *model;
  int index;
  int runs, differ, failed;
};

static void *work(void *argument) {
  struct Worker *worker = argument;
  for (int round = 0; round < rounds; ++round) {
    int p = (worker->index + round) % kPrompts;
    int64_t out[kNew], count = 0;
    ++worker->runs;
    if (tfmc_generate(worker->model, prompts[p], kLength, -1, -1, kNew, out,
                      &count) != 0) {
      fprintf(stderr, "thread %d: %s\n", worker->index, tfmc_last_error());
      ++worker->failed;
      continue;
    }
    if (count != soloCount[p] ||
        memcmp(out, solo[p], sizeof(int64_t) * (size_t)count) != 0)
      ++worker->differ;
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s WEIGHTS THREADS ROUNDS\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[2]);
  rounds = atoi(argv[3]);
  if (threads < 1 || threads > kMaxThreads || rounds < 1)
    return 2;
  tfmc_model *model = NULL;
  if (tfmc_create(argv[1], &model) != 0) {
    printf("create failed: %s\n", tfmc_last_error());
    return 1;
  }
  for (int p = 0; p < kPrompts; ++p) {
    for (int i = 0; i < kLength; ++i)
      prompts[p][i] = (p * 7 + i * 3 + 1) % 29;
    if (tfmc_generate(model, prompts[p], kLength, -1, -1, kNew, solo[p],
                      &soloCount[p]) != 0) {
      printf("generate failed: %s\n", tfmc_last_error());
      return 1;
    }
  }
  struct Worker workers[kMaxThreads];
  pthread_t ids[kMaxThreads];
  for (int t = 0; t < threads; ++t) {
    memset(&workers[t], 0, sizeof workers[t]);
    workers[t].index = t;
    if (tfmc_share(model, &workers[t].model) != 0) {
      printf("share failed: %s\n", tfmc_last_error());
      return 1;
    }
  }
  tfmc_destroy(model);
  for (int t = 0; t < threads; ++t)
    pthread_create(&ids[t], NULL, work, &workers[t]);
  int runs = 0, differ = 0, failed = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(ids[t], NULL);
    runs += workers[t].runs;
    differ += workers[t].differ;
    failed += workers[t].failed;
    tfmc_destroy(workers[t].model);
  }
  printf("threads: %d runs, %d differ, %d failed\n", runs, differ, failed);
  return differ || failed;
}
