/* A C application using a tfmc-compiled model through its library alone:
 * model.h and libmodel.a, no other tfmc file.
 *   capi_main WEIGHTS IDS.txt OUT.safetensors
 * IDS.txt: "B S", then B*S token ids, then B*S mask values; for an
 * encoder-decoder then "B T", B*T decoder ids and B*T decoder mask values.
 * Writes the logits as safetensors for tfmc-compare, and checks an error
 * path. */
#include "model.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_values(FILE *f, int64_t *values, long long count) {
  for (long long i = 0; i < count; ++i) {
    long long v;
    if (fscanf(f, "%lld", &v) != 1)
      return 0;
    values[i] = v;
  }
  return 1;
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
  if (!read_values(in, ids, batch * length) ||
      !read_values(in, mask, batch * length)) {
    fprintf(stderr, "short %s\n", argv[2]);
    return 2;
  }
  /* The decoder's ids and mask, when the file has them. */
  long long decoderBatch = 0, decoderLength = 0;
  int64_t *decoderIds = NULL, *decoderMask = NULL;
  if (fscanf(in, "%lld %lld", &decoderBatch, &decoderLength) == 2) {
    decoderIds = malloc(sizeof(int64_t) * decoderBatch * decoderLength);
    decoderMask = malloc(sizeof(int64_t) * decoderBatch * decoderLength);
    if (!read_values(in, decoderIds, decoderBatch * decoderLength) ||
        !read_values(in, decoderMask, decoderBatch * decoderLength)) {
      fprintf(stderr, "short decoder part in %s\n", argv[2]);
      return 2;
    }
  }
  fclose(in);

  tfmc_model *model = NULL;
  if (tfmc_create(argv[1], &model) != 0) {
    printf("create failed: %s\n", tfmc_last_error());
    return 1;
  }
  tfmc_input inputs[4] = {
      {"input_ids", ids, batch, length},
      {"attention_mask", mask, batch, length},
      {"decoder_input_ids", decoderIds, decoderBatch, decoderLength},
      {"decoder_attention_mask", decoderMask, decoderBatch, decoderLength}};
  int numInputs = decoderIds ? 4 : 2;

  /* An error comes back as a code and a message, not a crash. */
  tfmc_input wrong = {"nope", ids, batch, length};
  const float *output = NULL;
  int64_t shape[3];
  if (tfmc_forward(model, &wrong, 1, &output, shape) == 0) {
    printf("an unknown input was accepted\n");
    return 1;
  }
  printf("error: %s\n", tfmc_last_error());

  if (tfmc_forward(model, inputs, numInputs, &output, shape) != 0) {
    printf("forward failed: %s\n", tfmc_last_error());
    return 1;
  }
  long long count = shape[0] * shape[1] * shape[2];
  char header[256];
  int n = snprintf(header, sizeof header,
                   "{\"logits\":{\"dtype\":\"F32\",\"shape\":[%lld,%lld,%lld],"
                   "\"data_offsets\":[0,%lld]}}",
                   (long long)shape[0], (long long)shape[1],
                   (long long)shape[2], count * 4);
  while (n % 8 != 0)
    header[n++] = ' ';
  uint64_t headerLength = (uint64_t)n;
  FILE *out = fopen(argv[3], "wb");
  if (!out || fwrite(&headerLength, 8, 1, out) != 1 ||
      fwrite(header, 1, (size_t)n, out) != (size_t)n ||
      fwrite(output, 4, (size_t)count, out) != (size_t)count) {
    fprintf(stderr, "cannot write %s\n", argv[3]);
    return 2;
  }
  fclose(out);
  tfmc_destroy(model);
  printf("%s: logits [%lld, %lld, %lld]\n", tfmc_model_name(),
         (long long)shape[0], (long long)shape[1], (long long)shape[2]);
  free(ids);
  free(mask);
  free(decoderIds);
  free(decoderMask);
  return 0;
}
