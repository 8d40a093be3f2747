/*
 * load_int.h - the model loader's helpers, shared by model.c (every
 * architecture's common parts) and qwen4exp.c (that architecture's own
 * tensors).  Private to core/model.
 *
 * Every helper checks what it reads against the metadata and logs one error
 * naming the file and the key or tensor; they return 0 or a negative errno
 * (-EINVAL for a missing or ill-shaped key or tensor, -ENOTSUP for a type
 * strata cannot compute with).
 */
#ifndef STRATA_LOAD_INT_H
#define STRATA_LOAD_INT_H

#include <stdint.h>

#include "model/model.h"

struct strata_gguf_tensor;

struct loader {
	struct strata_model *m;
	const char *path;
	char key[160];
};

/* "<arch>.<suffix>" in l->key. */
const char *strata_ld_key(struct loader *l, const char *suffix);
/* A required u32 hyperparameter, > 0. */
int strata_ld_u32(struct loader *l, const char *suffix, uint32_t *out);
/* An optional u32 hyperparameter (> 0 when present): *out keeps its default when absent. */
int strata_ld_u32_opt(struct loader *l, const char *suffix, uint32_t *out);
/* An optional positive f32 hyperparameter. */
int strata_ld_f32_opt(struct loader *l, const char *suffix, float *out);
/* A tensor by name; NULL (logged when required) when absent. */
const struct strata_gguf_tensor *strata_ld_find(struct loader *l, const char *name,
						int required);
/* A matrix of `rows` rows of `cols` values (GGUF shape [cols, rows]). */
int strata_ld_mat(struct loader *l, const char *name, int64_t cols, int64_t rows,
		  struct strata_mat *out);
/* An F32 array of ne0 x ne1 values; *out NULL when absent and not required. */
int strata_ld_f32(struct loader *l, const char *name, int64_t ne0, int64_t ne1, int required,
		  const float **out);
/* A vector of n F32 values. */
int strata_ld_vec(struct loader *l, const char *name, int64_t n, int required,
		  const float **out);
/* Layer i's Gated DeltaNet mixer (qwen3next's or qwen4exp's form). */
int strata_ld_deltanet(struct loader *l, uint32_t i);
/* Layer i's routed experts and shared expert (qwen3next's and qwen4exp's gated one). */
int strata_ld_moe(struct loader *l, uint32_t i);

/* qwen4exp.c: its hyperparameters (after the common and ssm ones), globals, layers. */
int strata_q4x_load_hparams(struct loader *l);
int strata_q4x_load_globals(struct loader *l);
int strata_q4x_load_layer(struct loader *l, uint32_t i);

#endif
