/*
 * io-faulty - a test-only io plugin: it wraps another io plugin and breaks
 * its reads on purpose, by a seeded schedule, so the tests can show that the
 * PLE reader survives what a failing disk does: reads that fail with EIO,
 * reads that come back short, slow reads and reads that stall.
 *
 * [io-faulty] keys:
 *   inner = NAME       the io plugin that really reads (default io-pread),
 *                      loaded through the core (host table version 2), so
 *                      the same search path, checks and [NAME] section apply
 *   seed = N           seed of the schedule (default 1)
 *   eio_rate = P       chance (0..1) that a read fails with EIO
 *   short_rate = P     chance that a read that did not fail comes back short:
 *                      a count below what was read, the bytes past it
 *                      overwritten, as if an error had cut the read off
 *   delay_us = N       no read completes sooner than N us after its submit
 *   stall_rate = P     chance that a read is held back stall_ms longer
 *   stall_ms = N       (default 1000); longer than the reader's timeout is a
 *                      disk that stopped answering
 *   fail_at = A,B,...  the A-th, B-th, ... read submitted on each handle
 *                      (counting from 1, retries included) fails with EIO,
 *                      unless it reads again an offset whose last read the
 *                      schedule failed: scheduled failures are transient
 *
 * The chances are drawn from a hash of (seed, file offset, how often this
 * handle has read that offset), never from the order reads are issued in.
 * The core retries a read on the handle that issued it, so a chunk read by
 * a fresh reader meets the same faults whatever its number of reader threads
 * or its timing; a retried read draws again, so an error is transient with
 * chance 1 - P (P = 1: every read of every page fails).
 *
 * Faults are applied when the inner read completes: its result is replaced
 * (and the buffer overwritten with 0xA5 where the data is not valid), then
 * the completion is held until its delay or stall is over; reap() honours its
 * timeout meanwhile, so a stall shows as a slow disk, never as a hang.
 *
 * Each handle logs one info line when it closes: the reads it saw, the faults
 * it injected, and how many accepted reads were never reaped (the core gave
 * up on them).  Probe score 1: it is never the best io plugin, and it lives
 * apart from the shipped plugins (build/plugins/test) anyway.
 *
 * Threading: like every io plugin, a handle is used by one thread at a time.
 */
#include "strata/io_helpers.h" /* first: it sets _GNU_SOURCE */

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata/plugin.h"

#define FAULTY_SCORE 1
#define FAIL_AT_MAX 64
#define STALL_MS_DEFAULT 1000u
#define DELAY_US_MAX 10000000u    /* 10 s */
#define STALL_MS_MAX 3600000u     /* 1 hour: "for ever" in a test */
#define INNER_DEFAULT "io-pread"
#define POISON 0xA5

enum fate { FATE_OK, FATE_EIO, FATE_SHORT };

struct fcfg {
	const char *inner;
	uint64_t seed;
	double eio_rate, short_rate, stall_rate;
	uint32_t delay_us, stall_ms;
	uint32_t n_fail_at;
	uint64_t fail_at[FAIL_AT_MAX]; /* ascending */
};

/* A read accepted by submit() and not yet handed back by reap(). */
struct pend {
	struct strata_io_req *req;
	uint64_t t_sub;     /* us */
	uint64_t hold_us;   /* delay, plus the stall */
	uint64_t t_release; /* once landed: when reap() may hand it back */
	uint64_t cut;       /* draw for the length of a short read */
	uint8_t fate, stall, landed;
};

/* How often each offset was read on a handle: open addressing, linear probing. */
struct amap {
	uint64_t *key; /* offset + 1; 0 = empty */
	uint32_t *val; /* reads so far (SEEN_COUNT), SEEN_SCHED: fail_at failed the last */
	uint64_t cap, n;
};

#define SEEN_SCHED 0x80000000u
#define SEEN_COUNT 0x7fffffffu

struct faulty {
	const struct strata_host *host;
	const struct strata_io_ops *in;
	const char *in_name;
	void *ih;
	char *path;
	struct fcfg c;
	uint32_t depth;
	uint32_t n_p;      /* entries of p in use */
	uint32_t n_flying; /* of them still with the inner plugin */
	struct pend *p;
	struct strata_io_req **tmp;
	struct amap seen;
	uint64_t seq;
	uint64_t n_reads, n_eio, n_short, n_stall, n_delay;
};

/* ---- time and draws ------------------------------------------------------------ */

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_us(uint64_t us)
{
	struct timespec ts = { .tv_sec = (time_t)(us / 1000000u),
			       .tv_nsec = (long)(us % 1000000u) * 1000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* splitmix64's finaliser: every input bit moves every output bit. */
static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* Uniform in [0, 1): a chance of 1 always hits, 0 never does. */
static double unit(uint64_t x)
{
	return (double)(x >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- configuration --------------------------------------------------------------- */

static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

static int key_rate(const struct strata_host *host, const char *key, double *out)
{
	const char *v = host->config_get(host, NULL, key);
	char *end;
	double d;

	if (!v)
		return 0;
	errno = 0;
	d = strtod(v, &end);
	if (end == v || *end || errno || !(d >= 0.0 && d <= 1.0)) {
		host->log(host, STRATA_LOG_ERROR,
			  "%s = '%s' is invalid: expected a chance from 0 to 1", key, v);
		return -EINVAL;
	}
	*out = d;
	return 1;
}

/* "3, 17,40" -> ascending read numbers. */
static int parse_fail_at(const char *v, struct fcfg *c)
{
	const char *p = v;

	c->n_fail_at = 0;
	while (*p) {
		char num[24];
		size_t n = 0;
		uint64_t x;
		uint32_t i;

		while (*p == ' ' || *p == '\t')
			p++;
		while (*p >= '0' && *p <= '9' && n < sizeof(num) - 1)
			num[n++] = *p++;
		num[n] = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		if (parse_u64(num, &x) || x == 0 || c->n_fail_at == FAIL_AT_MAX ||
		    (*p && *p != ','))
			return -EINVAL;
		if (*p == ',' && !*++p)
			return -EINVAL; /* a trailing comma */
		for (i = c->n_fail_at; i > 0 && c->fail_at[i - 1] > x; i--)
			c->fail_at[i] = c->fail_at[i - 1];
		c->fail_at[i] = x;
		c->n_fail_at++;
	}
	return c->n_fail_at ? 0 : -EINVAL;
}

static int read_config(const struct strata_host *host, struct fcfg *c)
{
	const char *v;
	int rc;

	memset(c, 0, sizeof(*c));
	c->seed = 1;
	c->stall_ms = STALL_MS_DEFAULT;
	c->inner = host->config_get(host, NULL, "inner");
	if (!c->inner || !*c->inner)
		c->inner = INNER_DEFAULT;
	v = host->config_get(host, NULL, "seed");
	if (v && parse_u64(v, &c->seed)) {
		host->log(host, STRATA_LOG_ERROR, "seed = '%s' is invalid: expected 0..%llu", v,
			  (unsigned long long)UINT64_MAX);
		return -EINVAL;
	}
	if ((rc = key_rate(host, "eio_rate", &c->eio_rate)) < 0 ||
	    (rc = key_rate(host, "short_rate", &c->short_rate)) < 0 ||
	    (rc = key_rate(host, "stall_rate", &c->stall_rate)) < 0 ||
	    (rc = strata_ioh_key_u32(host, "delay_us", 0, DELAY_US_MAX, &c->delay_us)) < 0 ||
	    (rc = strata_ioh_key_u32(host, "stall_ms", 1, STALL_MS_MAX, &c->stall_ms)) < 0)
		return rc;
	v = host->config_get(host, NULL, "fail_at");
	if (v && parse_fail_at(v, c)) {
		host->log(host, STRATA_LOG_ERROR, "fail_at = '%s' is invalid: expected read "
			  "numbers from 1 up, separated by commas (at most %d)", v, FAIL_AT_MAX);
		return -EINVAL;
	}
	return 0;
}

static int in_fail_at(const struct fcfg *c, uint64_t seq)
{
	for (uint32_t i = 0; i < c->n_fail_at && c->fail_at[i] <= seq; i++)
		if (c->fail_at[i] == seq)
			return 1;
	return 0;
}

/* ---- reads per offset -------------------------------------------------------------- */

static int amap_init(struct amap *m, uint64_t cap)
{
	m->key = calloc(cap, sizeof(*m->key));
	m->val = calloc(cap, sizeof(*m->val));
	m->cap = cap;
	m->n = 0;
	if (!m->key || !m->val) {
		free(m->key);
		free(m->val);
		memset(m, 0, sizeof(*m));
		return -ENOMEM;
	}
	return 0;
}

static void amap_free(struct amap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

static uint64_t *amap_slot(const struct amap *m, uint64_t key, uint64_t *ix)
{
	uint64_t i = mix(key) & (m->cap - 1);

	while (m->key[i] && m->key[i] != key)
		i = (i + 1) & (m->cap - 1);
	*ix = i;
	return &m->key[i];
}

/* Double the table; on failure the old one stays (never full: see amap_entry). */
static void amap_grow(struct amap *m)
{
	struct amap big;

	if (amap_init(&big, m->cap * 2))
		return;
	for (uint64_t i = 0; i < m->cap; i++) {
		uint64_t ix;

		if (!m->key[i])
			continue;
		*amap_slot(&big, m->key[i], &ix) = m->key[i];
		big.val[ix] = m->val[i];
		big.n++;
	}
	amap_free(m);
	*m = big;
}

/* The entry of offset (made when new), or NULL when out of memory and nearly full. */
static uint32_t *amap_entry(struct amap *m, uint64_t offset)
{
	uint64_t key = offset + 1, ix, *k;

	if (2 * (m->n + 1) > m->cap)
		amap_grow(m);
	if (8 * (m->n + 1) > 7 * m->cap)
		return NULL; /* then reads of new offsets count as first reads */
	k = amap_slot(m, key, &ix);
	if (!*k) {
		*k = key;
		m->n++;
	}
	return &m->val[ix];
}

/* ---- the ops ------------------------------------------------------------------------ */

static int faulty_probe(const struct strata_host *host)
{
	/* Without load_plugin there is no inner plugin to wrap. */
	return host && host->version >= 2 ? FAULTY_SCORE : 0;
}

static void faulty_close(void *handle)
{
	struct faulty *h = handle;

	if (!h)
		return;
	if (h->ih)
		h->in->close(h->ih);
	if (h->ih && h->host)
		h->host->log(h->host, STRATA_LOG_INFO,
			     "%s: %llu reads through %s; injected %llu EIO, %llu short, %llu "
			     "stalls of %u ms, %llu delays of %u us; %u not reaped",
			     h->path, (unsigned long long)h->n_reads, h->in_name,
			     (unsigned long long)h->n_eio, (unsigned long long)h->n_short,
			     (unsigned long long)h->n_stall, (unsigned)h->c.stall_ms,
			     (unsigned long long)h->n_delay, (unsigned)h->c.delay_us,
			     (unsigned)h->n_p);
	free(h->p);
	free(h->tmp);
	free(h->path);
	amap_free(&h->seen);
	free(h);
}

/* Load the inner plugin and open the file with it; sizes the tables to its depth. */
static int open_inner(struct faulty *h, const char *path, uint32_t flags, uint32_t depth)
{
	const struct strata_plugin_desc *d;
	const struct strata_host *ihost;
	struct strata_io_caps caps;
	int rc;

	rc = h->host->load_plugin(h->host, STRATA_PLUGIN_IO, h->c.inner, &d, &ihost);
	if (rc)
		return rc; /* the core said why, with the file */
	h->in = d->ops;
	h->in_name = d->name;
	rc = h->in->open(ihost, path, flags, depth, &h->ih);
	if (rc) {
		h->ih = NULL;
		return rc; /* -EINVAL for a refused O_DIRECT must reach the core as it is */
	}
	memset(&caps, 0, sizeof(caps));
	if ((rc = h->in->caps(h->ih, &caps)))
		return rc;
	h->depth = caps.depth ? caps.depth : depth ? depth : STRATA_IOH_DEFAULT_DEPTH;
	h->p = calloc(h->depth, sizeof(*h->p));
	h->tmp = calloc(h->depth, sizeof(*h->tmp));
	h->path = strdup(path);
	if (!h->p || !h->tmp || !h->path || amap_init(&h->seen, 1024))
		return -ENOMEM;
	return 0;
}

static int faulty_open(const struct strata_host *host, const char *path, uint32_t flags,
		       uint32_t depth, void **handle)
{
	struct faulty *h;
	int rc;

	*handle = NULL;
	/* load_plugin is a version-2 field: an older host table ends before it. */
	if (!host || host->version < 2) {
		if (host && host->version >= 1 && host->log)
			host->log(host, STRATA_LOG_ERROR, "needs host table version 2 "
				  "(load_plugin) to load its inner plugin; this core lends "
				  "version %u", (unsigned)host->version);
		return -ENOTSUP;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->host = host;
	if ((rc = read_config(host, &h->c)) || (rc = open_inner(h, path, flags, depth))) {
		faulty_close(h);
		return rc;
	}
	*handle = h;
	return 0;
}

static int faulty_caps(void *handle, struct strata_io_caps *caps)
{
	struct faulty *h = handle;
	int rc = h->in->caps(h->ih, caps);

	if (!rc)
		caps->depth = h->depth;
	return rc;
}

static int64_t faulty_size(void *handle)
{
	struct faulty *h = handle;

	return h->in->size(h->ih);
}

/* Decide what happens to a read when it is submitted. */
static void plan(struct faulty *h, struct strata_io_req *req, uint64_t t)
{
	struct pend *e = &h->p[h->n_p++];
	uint64_t seq = ++h->seq;
	uint32_t *seen = amap_entry(&h->seen, req->offset);
	uint32_t before = seen ? *seen & SEEN_COUNT : 0;
	int sched = in_fail_at(&h->c, seq) && !(seen && (*seen & SEEN_SCHED));
	uint64_t x = mix(mix(mix(h->c.seed) ^ req->offset) ^ before);

	if (seen)
		*seen = (before < SEEN_COUNT ? before + 1 : before) | (sched ? SEEN_SCHED : 0);
	memset(e, 0, sizeof(*e));
	e->req = req;
	e->t_sub = t;
	e->hold_us = h->c.delay_us;
	e->cut = mix(x ^ 4);
	if (sched || unit(mix(x ^ 1)) < h->c.eio_rate)
		e->fate = FATE_EIO;
	else if (unit(mix(x ^ 2)) < h->c.short_rate)
		e->fate = FATE_SHORT;
	if (unit(mix(x ^ 3)) < h->c.stall_rate) {
		e->stall = 1;
		e->hold_us += (uint64_t)h->c.stall_ms * 1000u;
	}
	h->n_flying++;
	h->n_reads++;
}

static int faulty_submit(void *handle, struct strata_io_req *const *reqs, uint32_t n)
{
	struct faulty *h = handle;
	uint64_t t = now_us();
	int k;

	if (n && !reqs[0])
		return -EINVAL;
	if (n > h->depth - h->n_p)
		n = h->depth - h->n_p;
	if (!n)
		return 0;
	k = h->in->submit(h->ih, reqs, n);
	if (k <= 0)
		return k;
	if ((uint32_t)k > n)
		k = (int)n;
	for (int i = 0; i < k; i++)
		plan(h, reqs[i], t);
	return k;
}

/* The inner plugin finished req: apply its fate, start its hold. */
static void land(struct faulty *h, struct strata_io_req *req, uint64_t now)
{
	struct pend *e = NULL;
	int32_t res = req->result;

	for (uint32_t i = 0; i < h->n_p && !e; i++)
		if (h->p[i].req == req && !h->p[i].landed)
			e = &h->p[i];
	if (!e)
		return; /* not one of ours: the inner plugin broke its contract */
	e->landed = 1;
	h->n_flying--;
	if (res >= 0 && req->len > 0 && e->fate == FATE_EIO) {
		memset(req->buf, POISON, req->len);
		req->result = -EIO;
		h->n_eio++;
	} else if (res > 0 && e->fate == FATE_SHORT) {
		uint32_t cut = (uint32_t)(e->cut % (uint64_t)res);

		memset((uint8_t *)req->buf + cut, POISON, req->len - cut);
		req->result = (int32_t)cut;
		h->n_short++;
	}
	h->n_stall += e->stall;
	h->n_delay += h->c.delay_us > 0;
	e->t_release = e->t_sub + e->hold_us > now ? e->t_sub + e->hold_us : now;
}

/* Collect what the inner plugin finished, waiting as reap() does; 0, or -errno. */
static int pull(struct faulty *h, uint32_t min_done, int timeout_ms)
{
	uint64_t now;
	int k;

	if (!h->n_flying)
		return 0;
	k = h->in->reap(h->ih, h->tmp, min_done, h->n_flying, timeout_ms);
	if (k < 0)
		return k;
	now = now_us();
	for (int i = 0; i < k; i++)
		land(h, h->tmp[i], now);
	return 0;
}

/* Hand back up to max landed reads whose hold is over. */
static uint32_t release(struct faulty *h, struct strata_io_req **done, uint32_t max)
{
	uint64_t now = now_us();
	uint32_t n = 0, i = 0;

	while (i < h->n_p && n < max) {
		if (h->p[i].landed && h->p[i].t_release <= now) {
			done[n++] = h->p[i].req;
			h->p[i] = h->p[--h->n_p];
			continue;
		}
		i++;
	}
	return n;
}

/* When the next held read may go, or UINT64_MAX when none has landed. */
static uint64_t next_release(const struct faulty *h)
{
	uint64_t t = UINT64_MAX;

	for (uint32_t i = 0; i < h->n_p; i++)
		if (h->p[i].landed && h->p[i].t_release < t)
			t = h->p[i].t_release;
	return t;
}

static int faulty_reap(void *handle, struct strata_io_req **done, uint32_t min_done,
		       uint32_t max_done, int timeout_ms)
{
	struct faulty *h = handle;
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : now_us() + (uint64_t)timeout_ms * 1000u;
	uint32_t got = 0;

	if (min_done > h->n_p)
		min_done = h->n_p;
	if (min_done > max_done)
		min_done = max_done;
	for (;;) {
		uint64_t now, wake, wait;
		int rc = pull(h, 0, 0);

		if (rc < 0)
			return got ? (int)got : rc;
		got += release(h, done + got, max_done - got);
		now = now_us();
		if (got >= min_done || now >= deadline)
			return (int)got;
		wake = next_release(h);
		if (deadline < wake)
			wake = deadline;
		wait = wake == UINT64_MAX ? UINT64_MAX : wake > now ? wake - now : 0;
		if (h->n_flying && wait >= 1000) {
			/* The inner plugin's own wait, cut short when a held read is due. */
			int ms = wait == UINT64_MAX ? -1 : wait / 1000 > INT_MAX ? INT_MAX
										: (int)(wait / 1000);

			if ((rc = pull(h, 1, ms)) < 0)
				return got ? (int)got : rc;
		} else if (wait) {
			sleep_us(wait < 1000 || !h->n_flying ? wait : 1000);
		}
	}
}

static int faulty_register_buffers(void *handle, void *const *bufs, const size_t *lens,
				   uint32_t n)
{
	struct faulty *h = handle;

	if (!h->in->register_buffers)
		return -ENOTSUP;
	return h->in->register_buffers(h->ih, bufs, lens, n);
}

static const struct strata_io_ops faulty_ops = {
	.version = 1,
	.open = faulty_open,
	.close = faulty_close,
	.caps = faulty_caps,
	.size = faulty_size,
	.submit = faulty_submit,
	.reap = faulty_reap,
	.register_buffers = faulty_register_buffers,
};

static const char *const faulty_keys[] = { "inner", "seed", "eio_rate", "short_rate",
					   "delay_us", "stall_rate", "stall_ms", "fail_at",
					   NULL };

static const struct strata_plugin_desc faulty_desc = {
	.abi = STRATA_PLUGIN_ABI_NEEDS(1),
	.kind = STRATA_PLUGIN_IO,
	.name = "io-faulty",
	.version = "1.0.0",
	.description = "test only: another io plugin's reads with injected EIO, short reads, "
		       "delays and stalls",
	.probe = faulty_probe,
	.ops = &faulty_ops,
	.config_keys = faulty_keys,
};

STRATA_PLUGIN_DEFINE(faulty_desc)
