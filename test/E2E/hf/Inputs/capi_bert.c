/* BERT through the C library alone (model.h and libmodel.a): both outputs,
 * last_hidden_state from tfmc_forward and pooler_output from tfmc_output.
 *   capi_bert WEIGHTS IDS.txt OUT.safetensors
 * IDS.txt: "B S", then B*S token ids, B*S mask values and B*S token types.
 * Writes both outputs as safetensors for tfmc-compare, and checks that an
 * unknown output name is an error. */
#include "model.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int read_values(FILE *f, int64_t *values, long long count) {
  for (long long i = 0; i < count; ++i) {
    long long v;
    if (fscanf(f, "%lld", &v) != 1)
      return 0;
    values[i] = v;
  }
  return 1;
}

static long long elements(const int64_t *shape, int rank) {
  long long count = 1;
  for (int d = 0; d < rank; ++d)
    count *= shape[d];
  return count;
}

static int shape_json(char *text, size_t size, const int64_t *shape,
                      int rank) {
  int n = snprintf(text, size, "[");
  for (int d = 0; d < rank; ++d)
    n += snprintf(text + n, size - n, "%s%lld", d ? "," : "", (long long)shape[d]);
  return n + snprintf(text + n, size - n, "]");
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s WEIGHTS IDS.txt OUT.safetensors\n", argv[0]);
    return 2;
  }
  FILE *in = fopen(argv[2], "r");
  long long batch = 0, length = 0;
  if (!in || fscanf(in, "%lld %lld", &batch, &length) != 2) {
    fprintf(stderr, "cannot read %s\n", argv[2]);
    return 2;
  }
  int64_t *ids = malloc(sizeof(int64_t) * batch * length);
  int64_t *mask = malloc(sizeof(int64_t) * batch * length);
  int64_t *types = malloc(sizeof(int64_t) * batch * length);
  if (!read_values(in, ids, batch * length) ||
      !read_values(in, mask, batch * length) ||
      !read_values(in, types, batch * length)) {
    fprintf(stderr, "short %s\n", argv[2]);
    return 2;
  }
  fclose(in);

  tfmc_model *model = NULL;
  if (tfmc_create(argv[1], &model) != 0) {
    printf("create failed: %s\n", tfmc_last_error());
    return 1;
  }
  tfmc_input inputs[3] = {{"input_ids", ids, batch, length},
                          {"attention_mask", mask, batch, length},
                          {"token_type_ids", types, batch, length}};
  const float *hidden = NULL, *pooled = NULL;
  int64_t hiddenShape[3], pooledShape[3];
  int pooledRank = 0;
  if (tfmc_output(model, "pooler_output", &pooled, pooledShape, &pooledRank) == 0) {
    printf("an output before any forward\n");
    return 1;
  }
  printf("error: %s\n", tfmc_last_error());
  if (tfmc_forward(model, inputs, 3, &hidden, hiddenShape) != 0 ||
      tfmc_output(model, "pooler_output", &pooled, pooledShape, &pooledRank) != 0) {
    printf("forward failed: %s\n", tfmc_last_error());
    return 1;
  }
  if (tfmc_output(model, "logits", &pooled, pooledShape, &pooledRank) == 0) {
    printf("an unknown output was found\n");
    return 1;
  }
  printf("error: %s\n", tfmc_last_error());
  if (tfmc_output(model, "pooler_output", &pooled, pooledShape, &pooledRank) != 0)
    return 1;

  long long hiddenCount = elements(hiddenShape, 3);
  long long pooledCount = elements(pooledShape, pooledRank);
  char hs[64], ps[64], header[512];
  shape_json(hs, sizeof hs, hiddenShape, 3);
  shape_json(ps, sizeof ps, pooledShape, pooledRank);
  int n = snprintf(header, sizeof header,
                   "{\"last_hidden_state\":{\"dtype\":\"F32\",\"shape\":%s,"
                   "\"data_offsets\":[0,%lld]},\"pooler_output\":{\"dtype\":"
                   "\"F32\",\"shape\":%s,\"data_offsets\":[%lld,%lld]}}",
                   hs, hiddenCount * 4, ps, hiddenCount * 4,
                   (hiddenCount + pooledCount) * 4);
  while (n % 8 != 0)
    header[n++] = ' ';
  uint64_t headerLength = (uint64_t)n;
  FILE *out = fopen(argv[3], "wb");
  if (!out || fwrite(&headerLength, 8, 1, out) != 1 ||
      fwrite(header, 1, (size_t)n, out) != (size_t)n ||
      fwrite(hidden, 4, (size_t)hiddenCount, out) != (size_t)hiddenCount ||
      fwrite(pooled, 4, (size_t)pooledCount, out) != (size_t)pooledCount) {
    fprintf(stderr, "cannot write %s\n", argv[3]);
    return 2;
  }
  fclose(out);
  printf("%s: last_hidden_state %s, pooler_output %s\n", tfmc_model_name(), hs, ps);
  tfmc_destroy(model);
  free(ids);
  free(mask);
  free(types);
  return 0;
}
