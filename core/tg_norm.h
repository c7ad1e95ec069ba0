/*
 * tg_norm.h -- what tg_agree.c needs from a normalization plan
 * (tg_normalize.c) to apply it while it walks documents its own way:
 * stepping the set of rules that still match down a path, and rewriting
 * one string.  Not installed.
 */
#ifndef TG_NORM_H
#define TG_NORM_H

#include "tg_internal.h"

/* Passed as index for a segment that is an object key. */
#define TG_NORM_KEY ((size_t)-1)

/* A walk keeps, for the node it stands on, the list of rules that matched
 * the path so far and still have segments to go (opaque uint32_t entries:
 * which segment each has to match next).  No list is longer than
 * tg_norm_rule_count(n), and none is non-empty deeper than the most
 * segments of any rule. */
size_t tg_norm_rule_count(const tg_norm_t *n);

/* The root's list, written to live (room for tg_norm_rule_count): returns
 * its length and sets *ops to the operations of the rules for "". */
size_t tg_norm_root(const tg_norm_t *n, uint32_t *live, unsigned *ops);

/* From the list of a node to the list of its child named by key (klen
 * bytes) or, when index is not TG_NORM_KEY, by that array index (key is
 * then ignored; matching by the index's decimal text gives the same
 * answer).  Writes the child's list to next (not overlapping live), returns
 * its length and sets *ops to the operations of the rules ending at the
 * child. */
size_t tg_norm_step(const tg_norm_t *n, const uint32_t *live, size_t nlive, const char *key,
                    size_t klen, size_t index, uint32_t *next, unsigned *ops);

/* Scratch for rewritten strings: short ones stay on the stack. */
typedef struct tg_norm_scratch {
    tg_engine_t *engine;
    char *heap;
    size_t cap;
    char small[256];
} tg_norm_scratch;

void tg_norm_scratch_init(tg_norm_scratch *sc, tg_engine_t *e);
void tg_norm_scratch_free(tg_norm_scratch *sc);

/* Applies ops (TG_NORM_* bits) to s (len bytes).  *out / *olen get the
 * result, which points into s, into sc (valid until its next use) or into
 * the plan.  TG_OK, or TG_E_NOMEM (err filled). */
int tg_norm_apply(const tg_norm_t *n, unsigned ops, const char *s, size_t len, tg_norm_scratch *sc,
                  const char **out, size_t *olen, tg_error_t *err);

/* A copy of plan src, from its engine, for adding aliases to (tg_classify:
 * a plan's IDs that a policy function resolved).  NULL and err filled
 * (TG_E_NOMEM) when memory runs out. */
tg_norm_t *tg_norm_copy(const tg_norm_t *src, tg_error_t *err);

#endif /* TG_NORM_H */
