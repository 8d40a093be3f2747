/*
 * vcache.h - private to core/model: the device's expert cache.
 *
 * A device holds as many routed experts as its slots allow ([gpu]
 * expert_cache = N | auto); the layer loop runs the experts a step routes
 * to on the device when they are resident (hits) and on the CPU otherwise
 * (misses), at the same time (moe.c).  Which experts are resident changes
 * at run time:
 *
 *   - fill: slots are filled hottest-first from a routing profile at load
 *     ([gpu] profile = FILE), else by first use (a routed expert with a
 *     free slot is copied in and runs on the device);
 *   - pcie_frac: that share of a step's misses (those with the most tokens
 *     first) is copied over the link into transfer slots and runs on the
 *     device instead of the CPU;
 *   - adaptive swaps: every adapt_every tokens, up to adapt_swaps experts
 *     routed more often (in the decayed counts since the last rounds) than
 *     the least-routed resident ones replace them;
 *   - lending: a pass of at least lend_min tokens (a batched prompt chunk)
 *     borrows up to lend_frac of the slots, keeping at least lend_keep, as
 *     buffers for the non-resident experts its tokens route to, streamed in
 *     per layer; the slots' own experts are copied back (queued copies, one
 *     sync) before the next shorter pass (a decode step or a verify window),
 *     so those always see the whole cache.
 *
 * Every copy goes host -> device from the model's mapping; an op that reads
 * a slot waits for its copy (events).  A slot is overwritten only when the
 * device is done with its last reader: the host has synchronised with the
 * compute queue (each layer copies its routing back, blocking) before it
 * plans the next layer's copies.
 *
 * The cache lives in the context (c->vc) and is used by its thread only.
 */
#ifndef STRATA_VCACHE_H
#define STRATA_VCACHE_H

#include <stdint.h>

#include "model/model.h"

struct strata_ctx;
struct strata_vcache;
struct strata_tensor;

/*
 * Create c's cache after the device took its layers and output head:
 * slots for the experts of the device's layers, in buffers of about 256
 * MiB each (o->chunk_slots slots, if set), within *budget_left bytes (decreased by what it takes).
 * An allocation the device refuses part way leaves the cache at the slots
 * allocated so far, with a warning.  0 with c->vc NULL when the device holds
 * no MoE layer or no slot fits; -errno for a device failure or a profile
 * that cannot be read (logged).
 */
int strata_vcache_create(struct strata_ctx *c, const struct strata_vcache_opts *o,
			 uint64_t *budget_left);
/* Waits for the device, frees the slots and c->vc; saves the profile when asked. */
void strata_vcache_free(struct strata_ctx *c);

/*
 * Layer l of a pass routes count[x] tokens to expert x (n_expert entries):
 * decide where each runs and queue the copies that needs.  c->run_slot[x]
 * is then the slot expert x runs from on the device, or CTX_NONE (the
 * CPU).  0 or a copy's -errno.
 */
int strata_vcache_plan(struct strata_ctx *c, uint32_t l, const uint32_t *count);

/*
 * 1 when no routed expert of layer l (on the device) can run on the CPU: the
 * cache holds every expert of the device's layers, l's among them.
 */
int strata_vcache_holds_all(const struct strata_ctx *c, uint32_t l);

/* Part q (gate, up, down) of the expert in slot s as a weight tensor of layer l. */
struct strata_tensor strata_vcache_tensor(const struct strata_ctx *c, uint32_t l, uint32_t s,
					  int q);

/*
 * Around a forward pass of n tokens.  begin lends slots (n >= lend_min),
 * or refills lent ones, or runs the adaptive round that is due (shorter
 * passes): 0 or a copy's -errno.  end counts a pass that succeeded (the
 * tokens of passes that did not borrow count towards adapt_every).
 */
int strata_vcache_pass_begin(struct strata_ctx *c, uint32_t n);
void strata_vcache_pass_end(struct strata_ctx *c, uint32_t n);

/* The counters (zeroes without a cache). */
void strata_vcache_stats(const struct strata_ctx *c, struct strata_vcache_stats *st);

/* Test hook: the key (layer * n_expert + expert, or CTX_NONE) of each of the n cache slots. */
uint32_t strata_vcache_keys(const struct strata_ctx *c, uint32_t *keys, uint32_t n);

/* Test hook: called from plan with layer l's counts before deciding. */
typedef void (*strata_vcache_trace_fn)(void *user, uint32_t l, const uint32_t *count,
				       uint32_t n_expert);
void strata_vcache_set_trace(struct strata_ctx *c, strata_vcache_trace_fn fn, void *user);

#endif
