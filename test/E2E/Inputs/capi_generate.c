/* Greedy generation through the C API alone (model.h + libmodel.a):
 *   capi_generate WEIGHTS MAX_NEW ID...   prints the new ids on one line,
 * then checks that a prompt past max_len is an error, not a crash. */
#include "model.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s WEIGHTS MAX_NEW ID...\n", argv[0]);
    return 2;
  }
  tfmc_model *model = NULL;
  if (tfmc_create(argv[1], &model) != 0) {
    printf("create failed: %s\n", tfmc_last_error());
    return 1;
  }
  int64_t max_new = atoll(argv[2]);
  int64_t length = argc - 3;
  int64_t *prompt = malloc(sizeof(int64_t) * (size_t)length);
  for (int64_t i = 0; i < length; ++i)
    prompt[i] = atoll(argv[3 + i]);
  int64_t *out = malloc(sizeof(int64_t) * (size_t)max_new);
  int64_t count = 0;
  if (tfmc_generate(model, prompt, length, -1, -1, max_new, out, &count) != 0) {
    printf("generate failed: %s\n", tfmc_last_error());
    return 1;
  }
  for (int64_t i = 0; i < count; ++i)
    printf(i ? " %lld" : "%lld", (long long)out[i]);
  printf("\n");
  if (tfmc_generate(model, prompt, length, -1, -1, 100000, out, &count) == 0) {
    printf("an over-long generation was accepted\n");
    return 1;
  }
  printf("error: %s\n", tfmc_last_error());
  tfmc_destroy(model);
  free(prompt);
  free(out);
  return 0;
}
