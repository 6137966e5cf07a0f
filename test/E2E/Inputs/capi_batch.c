/* tfmc_generate_batch through the C API alone (model.h + libmodel.a):
 *   capi_batch WEIGHTS
 * Prints, one line each: the ids of three prompts generated as one call
 * (greedy), the same prompts one call each, the order the callback saw
 * tokens in (sequence:token), a call cancelled by its callback after 4
 * tokens, a 2-beam search of prompt 0, and the error of a bad option. */
#include "model.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_NEW 6

static const int64_t p0[] = {5, 9, 13, 2, 7};
static const int64_t p1[] = {3, 1};
static const int64_t p2[] = {40, 41, 42, 43};
static const int64_t *const prompts[] = {p0, p1, p2};
static const int64_t lengths[] = {5, 2, 4};
/* A prompt whose 2-beam result differs from greedy's (the others' do not:
 * a beam search that fell back to greedy would pass on them). */
static const int64_t pb[] = {12, 34, 56, 43, 40};
static const int64_t *const beamPrompts[] = {pb};
static const int64_t beamLengths[] = {5};

static void print_ids(const int64_t *out, const int64_t *counts, int64_t n) {
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t i = 0; i < counts[s]; ++i)
      printf(i ? " %lld" : "%lld", (long long)out[s * MAX_NEW + i]);
    printf("\n");
  }
}

struct seen {
  int count;
  int cancel_after;
};

static int record(void *user, int64_t sequence, int64_t token) {
  struct seen *seen = user;
  ++seen->count;
  printf("%s%lld:%lld", seen->count > 1 ? " " : "", (long long)sequence,
         (long long)token);
  if (seen->cancel_after && seen->count == seen->cancel_after)
    return TFMC_CANCEL;
  return TFMC_CONTINUE;
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  tfmc_model *model = NULL;
  if (tfmc_create(argv[1], &model) != 0) {
    printf("create failed: %s\n", tfmc_last_error());
    return 1;
  }
  tfmc_generate_options options;
  tfmc_generate_options_init(&options);
  options.max_new_tokens = MAX_NEW;
  int64_t out[3 * MAX_NEW], counts[3];
  if (tfmc_generate_batch(model, prompts, lengths, 3, &options, NULL, NULL,
                          out, counts) != 0) {
    printf("batch failed: %s\n", tfmc_last_error());
    return 1;
  }
  printf("batch:\n");
  print_ids(out, counts, 3);
  printf("alone:\n");
  for (int s = 0; s < 3; ++s) {
    if (tfmc_generate_batch(model, prompts + s, lengths + s, 1, &options,
                            NULL, NULL, out, counts) != 0) {
      printf("alone failed: %s\n", tfmc_last_error());
      return 1;
    }
    print_ids(out, counts, 1);
  }
  struct seen seen = {0, 0};
  printf("callback: ");
  tfmc_generate_batch(model, prompts, lengths, 2, &options, record, &seen, out,
                      counts);
  printf("\n");
  struct seen cancel = {0, 4};
  printf("cancel: ");
  int status = tfmc_generate_batch(model, prompts, lengths, 3, &options, record,
                                   &cancel, out, counts);
  printf("\ncancel status %d, counts %lld %lld %lld\n", status,
         (long long)counts[0], (long long)counts[1], (long long)counts[2]);
  options.num_beams = 2;
  if (tfmc_generate_batch(model, beamPrompts, beamLengths, 1, &options, NULL,
                          NULL, out, counts) != 0) {
    printf("beams failed: %s\n", tfmc_last_error());
    return 1;
  }
  printf("beams:\n");
  print_ids(out, counts, 1);
  options.num_beams = 1;
  options.top_p = 1.5;
  if (tfmc_generate_batch(model, prompts, lengths, 1, &options, NULL, NULL,
                          out, counts) == 0) {
    printf("top_p 1.5 was accepted\n");
    return 1;
  }
  printf("error: %s\n", tfmc_last_error());
  tfmc_destroy(model);
  return 0;
}
