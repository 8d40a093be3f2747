/*
 * mtp.cpp - peer-mtp: llama.cpp's own MTP (nextn) head on given tokens, as
 * a .mtp.slog (the layout of ../shared/golden/README.md), for
 * tools/peer/mtpcmp.sh to hold strata's block against.
 *
 *   peer-mtp MODEL.gguf OUT.mtp.slog ID ID ...
 *
 * The trunk reads the n tokens in one batch with its next-n embeddings
 * unmasked (h_nextn: the final-normed hidden state of every row); then an
 * MTP context (LLAMA_CONTEXT_TYPE_MTP, the graph draft-mtp runs) reads n-1
 * rows: row i is token i+1 with h_nextn of row i at position i, every row's
 * logits kept.  That is strata's row convention (llama.cpp's speculative
 * driver puts row i at position i+1 after a row of zeros; the block's RoPE
 * attention is the same at any shift, the zero row is not): the same
 * inputs, so the two blocks' logits must agree.  The file's tokens are
 * ids 1..n-1, its logits rows 0..n-2.  C++ for llama.cpp's staging header
 * (src/llama-ext.h); built by tools/peer/build.sh.
 */
#include "llama.h"
#include "llama-ext.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

static void quiet(enum ggml_log_level level, const char *text, void *user)
{
	(void)user;
	if (level == GGML_LOG_LEVEL_ERROR)
		fputs(text, stderr);
}

static int fail(const char *what)
{
	fprintf(stderr, "peer-mtp: %s\n", what);
	return 1;
}

static llama_context *context(llama_model *m, int n, bool mtp)
{
	llama_context_params cp = llama_context_default_params();

	cp.n_ctx = (uint32_t)(n + 16);
	cp.n_batch = cp.n_ubatch = (uint32_t)n;
	cp.n_threads = cp.n_threads_batch = 1;
	cp.type_k = cp.type_v = GGML_TYPE_F32;
	cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
	if (mtp)
		cp.ctx_type = LLAMA_CONTEXT_TYPE_MTP;
	return llama_init_from_model(m, cp);
}

int main(int argc, char **argv)
{
	const int n = argc - 3;
	std::vector<int32_t> ids;

	if (argc < 5)
		return fail("usage: peer-mtp MODEL.gguf OUT.mtp.slog ID ID ... (two ids or more)");
	for (int i = 3; i < argc; i++)
		ids.push_back((int32_t)strtol(argv[i], NULL, 10));
	llama_log_set(quiet, NULL);
	llama_backend_init();
	llama_model_params mp = llama_model_default_params();
	mp.n_gpu_layers = 0;
	mp.load_mtp = true;
	llama_model *m = llama_model_load_from_file(argv[1], mp);
	if (!m)
		return fail("cannot load the model");
	if (llama_model_n_layer_nextn(m) < 1)
		return fail("the model has no nextn block");
	const int e = llama_model_n_embd(m), nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
	llama_context *tgt = context(m, n, false), *dft = context(m, n, true);
	if (!tgt || !dft)
		return fail("cannot make the contexts");
	llama_set_embeddings_nextn(tgt, true, false);

	llama_batch b = llama_batch_init(n, 0, 1);
	for (int i = 0; i < n; i++) {
		b.token[i] = ids[i], b.pos[i] = i, b.n_seq_id[i] = 1, b.seq_id[i][0] = 0;
		b.logits[i] = 1;
	}
	b.n_tokens = n;
	if (llama_decode(tgt, b))
		return fail("the trunk's decode failed");
	std::vector<float> h((size_t)n * e);
	for (int i = 0; i < n; i++) {
		const float *row = llama_get_embeddings_nextn_ith(tgt, i);

		if (!row)
			return fail("no next-n embedding rows");
		memcpy(&h[(size_t)i * e], row, (size_t)e * sizeof(float));
	}

	/* both token and embd: llama_batch_init allocates one, as common/speculative.cpp says */
	llama_batch d = llama_batch_init(n, e, 1);
	d.token = (llama_token *)malloc(sizeof(llama_token) * (size_t)n);
	for (int i = 0; i + 1 < n; i++) {
		d.token[i] = ids[i + 1], d.pos[i] = i, d.n_seq_id[i] = 1, d.seq_id[i][0] = 0;
		d.logits[i] = 1;
		memcpy(d.embd + (size_t)i * e, &h[(size_t)i * e], (size_t)e * sizeof(float));
	}
	d.n_tokens = n - 1;
	if (llama_decode(dft, d))
		return fail("the MTP head's decode failed");

	FILE *f = fopen(argv[2], "wb");
	const uint32_t hdr[5] = { 0x474F4C53u, 2, (uint32_t)(n - 1), (uint32_t)nv, 0 };
	if (!f || fwrite(hdr, sizeof(hdr), 1, f) != 1 ||
	    fwrite(&ids[1], sizeof(int32_t), (size_t)(n - 1), f) != (size_t)(n - 1))
		return fail("cannot write the output");
	for (int i = 0; i + 1 < n; i++)
		if (fwrite(llama_get_logits_ith(dft, i), sizeof(float), (size_t)nv, f) != (size_t)nv)
			return fail("cannot write the output");
	if (fclose(f))
		return fail("cannot write the output");
	free(d.token);
	d.token = NULL;
	llama_batch_free(d);
	llama_batch_free(b);
	llama_free(dft);
	llama_free(tgt);
	llama_model_free(m);
	llama_backend_free();
	return 0;
}
