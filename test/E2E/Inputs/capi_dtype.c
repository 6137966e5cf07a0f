/* Prints what the C API says of the weights' storage. */
#include <stdio.h>

#include "model.h"

int main(void) {
  printf("%s %s %lld\n", TFMC_WEIGHT_DTYPE, tfmc_weight_dtype(),
         (long long)tfmc_weight_group());
  return 0;
}
