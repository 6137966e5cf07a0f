/* Which of its variants a --emit lib program runs on this CPU, and whether
 * tfmc_create accepts this CPU:
 *   capi_target WEIGHTS
 * prints "target: T" (tfmc_target(), "" when none runs here), then
 * "created"; or, on stderr, tfmc_last_error()'s line (exit 1). */
#include "model.h"

#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s WEIGHTS\n", argv[0]);
    return 2;
  }
  printf("target: %s\n", tfmc_target());
  tfmc_model *model = NULL;
  if (tfmc_create(argv[1], &model) != 0) {
    fprintf(stderr, "%s\n", tfmc_last_error());
    return 1;
  }
  tfmc_destroy(model);
  printf("created\n");
  return 0;
}
