/*
 * filt_int.h - what the filter files share (filters.c, seqfilt.c,
 * format.c).  Not public.
 */
#ifndef STRATA_TMPL_FILT_INT_H
#define STRATA_TMPL_FILT_INT_H

#include "tmpl/tmpl_int.h"

typedef int (*filter_fn)(struct tctx *c, struct tval v, struct targs *a, struct tval *out);

struct filter {
	const char *name;
	filter_fn fn;
};

const struct filter *tmpl_find_filter(const char *name);

int farg_str(struct tctx *c, const struct targs *a, uint32_t i, const char *name,
	     const char *fn, const struct tstr **out);
int farg_bool(const struct targs *a, uint32_t i, const char *name, int dflt);
int farg_int(struct tctx *c, const struct targs *a, uint32_t i, const char *name,
	     const char *fn, int64_t *out);
int fstr(struct tctx *c, struct tval v, const struct tstr **out);
int tmpl_str_case(struct tctx *c, const struct tstr *s, int upper, struct tval *out);
int tmpl_capitalize(struct tctx *c, const struct tstr *s, struct tval *out);
int tmpl_parse_float(const struct tstr *s, double *out);

/* seqfilt.c */
int f_dictsort(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_first(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_last(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_items(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_join(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_list(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_map(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_max(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_min(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_reject(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_rejectattr(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_reverse(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_select(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_selectattr(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_sort(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_sum(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
int f_unique(struct tctx *c, struct tval v, struct targs *a, struct tval *out);

/* format.c: Python's printf-style formatting (the format filter and str % x) */
int f_format(struct tctx *c, struct tval v, struct targs *a, struct tval *out);
/* str.format(*args, **kwargs) */
int tmpl_str_format(struct tctx *c, const struct tstr *fmt, struct targs *a, struct tval *out);

#endif
