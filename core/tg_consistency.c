/*
 * tg_consistency.c -- self-consistency's decision table, over a plan's
 * features, and the messages of its rows.
 *
 * The table is DESIGN section 1.2's, in the order its rows are tried:
 * too few samples, an epoch that moved, arguments below arg_reject (a
 * reject only when every tool is verified deterministic), arguments at
 * arg_accept or above (a nondeterministic tool's results carry no signal;
 * a deterministic tool's disagreeing results quarantine it; unstable
 * results defer), and anything else.  It is a pure function of its
 * arguments, so a threshold sweep can run it over a grid of settings on
 * features gathered once.
 *
 * Messages print shares with two decimals.  They are formatted here, not
 * by a binding (Lua 5.4's string.format rounds the binary value half to
 * even, as glibc's printf does; LuaJIT's rounds 0.125 up), by one rule:
 * the double's exact value, rounded to the nearest hundredth, ties to the
 * even hundredth -- what glibc prints, and what the Lua side printed
 * before the table moved into the core.
 */
#include "tg_internal.h"

void tg_consistency_default(tg_consistency_t *out)
{
    out->min_samples = TG_DEFAULT_MIN_SAMPLES;
    out->max_samples = TG_DEFAULT_MAX_SAMPLES;
    out->arg_accept = TG_DEFAULT_ARG_ACCEPT;
    out->arg_reject = TG_DEFAULT_ARG_REJECT;
    out->result_accept = TG_DEFAULT_RESULT_ACCEPT;
    out->result_quarantine = TG_DEFAULT_RESULT_QUARANTINE;
    out->on_invalid = TG_DEFER;
    out->quarantine = 1;
}

static const char *const row_codes[] = {
    "INSUFFICIENT_SAMPLES",
    "EPOCH_NOT_FIXED",
    "ARG_DISAGREE",
    "DETERMINISM_UNVERIFIED",
    "",
    "RESULT_DISAGREE",
    "RESULT_UNSTABLE",
    "",
    "ARG_UNSTABLE",
};

static double share(size_t count, size_t n)
{
    return n ? (double)count / (double)n : 0;
}

int tg_consistency_decide(const tg_consistency_t *s, const tg_plan_features_t *f,
                          tg_consistency_verdict_t *out, tg_error_t *err)
{
    int row, verdict;
    double a, r;

    tg_error_clear(err);
    if (!s || !f || !out)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "settings, features and out are required");
    if (f->arg_modal > f->n || f->result_modal > f->n ||
        (f->n && (f->arg_modal == 0 || f->result_modal == 0)))
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "modal counts must lie in 1..n");
    if (s->on_invalid != TG_DEFER && s->on_invalid != TG_REJECT)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "on_invalid must be TG_DEFER or TG_REJECT");
    a = share(f->arg_modal, f->n);
    r = share(f->result_modal, f->n);
    if (f->n < s->min_samples)
        row = TG_ROW_INSUFFICIENT_SAMPLES;
    else if (!f->epoch_fixed)
        row = TG_ROW_EPOCH_NOT_FIXED;
    else if (a < s->arg_reject)
        row = f->deterministic && f->verified ? TG_ROW_ARG_DISAGREE : TG_ROW_DETERMINISM_UNVERIFIED;
    else if (a >= s->arg_accept) {
        if (f->nondeterministic)
            row = TG_ROW_NONDETERMINISTIC;
        else if (r < s->result_quarantine && f->deterministic)
            row = TG_ROW_RESULT_DISAGREE;
        else if (r < s->result_accept)
            row = TG_ROW_RESULT_UNSTABLE;
        else
            row = TG_ROW_ACCEPT;
    } else
        row = TG_ROW_ARG_UNSTABLE;

    switch (row) {
    case TG_ROW_INSUFFICIENT_SAMPLES:
    case TG_ROW_EPOCH_NOT_FIXED:
    case TG_ROW_DETERMINISM_UNVERIFIED:
        verdict = s->on_invalid;
        break;
    case TG_ROW_ARG_DISAGREE:
        verdict = TG_REJECT;
        break;
    case TG_ROW_NONDETERMINISTIC:
    case TG_ROW_ACCEPT:
        verdict = TG_ACCEPT;
        break;
    default:
        verdict = TG_DEFER;
    }
    out->verdict = verdict;
    out->row = row;
    out->code = row_codes[row];
    out->quarantine = row == TG_ROW_RESULT_DISAGREE && s->quarantine;
    return TG_OK;
}

/* ---- two decimals ---------------------------------------------------------------- */

size_t tg_format_fixed2(double x, char out[TG_NUMBER_BUF])
{
    uint64_t bits, m, q;
    int e, neg;
    char *w = out;
    memcpy(&bits, &x, sizeof bits);
    neg = (int)(bits >> 63);
    e = (int)((bits >> 52) & 0x7ff);
    m = bits & (((uint64_t)1 << 52) - 1);
    if (e == 0x7ff || !(x < 9007199254740992.0 && x > -9007199254740992.0))
        return tg_number_format(x, out); /* no share or threshold is ever one of these */
    if (e == 0)
        e = 1; /* subnormal */
    else
        m |= (uint64_t)1 << 52;
    e -= 1075; /* |x| = m * 2^e */
    if (e >= 0) {
        q = (m << e) * 100;
    } else if (-e > 60) {
        q = 0; /* m * 100 < 2^60: below half a hundredth */
    } else {
        /* q = m * 100 / 2^k, rounded half to even, exactly */
        int k = -e;
        uint64_t p = m * 100, rem = p & (((uint64_t)1 << k) - 1), half = (uint64_t)1 << (k - 1);
        q = p >> k;
        if (rem > half || (rem == half && (q & 1)))
            q++;
    }
    if (neg)
        *w++ = '-';
    w += tg_u64_text(q / 100, w);
    *w++ = '.';
    *w++ = (char)('0' + q % 100 / 10);
    *w++ = (char)('0' + q % 10);
    *w = '\0';
    return (size_t)(w - out);
}

/* ---- the rows' messages ------------------------------------------------------------ */

typedef struct msg {
    tg_buf_t *b;
    int rc;
} msg;

static void put(msg *m, const char *s)
{
    if (m->rc == TG_OK)
        m->rc = tg_buf_append(m->b, s, strlen(s), NULL);
}

static void put_share(msg *m, double x)
{
    char digits[TG_NUMBER_BUF];
    tg_format_fixed2(x, digits);
    put(m, digits);
}

static void put_count(msg *m, size_t v)
{
    char digits[21];
    digits[tg_u64_text(v, digits)] = '\0';
    put(m, digits);
}

int tg_consistency_message(const tg_consistency_t *s, const tg_plan_features_t *f, int row,
                           tg_buf_t *out, tg_error_t *err)
{
    msg m = {out, TG_OK};
    double a = share(f->arg_modal, f->n), r = share(f->result_modal, f->n);
    switch (row) {
    case TG_ROW_INSUFFICIENT_SAMPLES:
        if (f->n == 0) {
            put(&m, "no samples");
            break;
        }
        put_count(&m, f->n);
        put(&m, " samples; agreement needs at least ");
        put_count(&m, s->min_samples);
        break;
    case TG_ROW_EPOCH_NOT_FIXED:
        put(&m, "the samples do not share one epoch: tool nondeterminism would leak into the "
                "argument signal");
        break;
    case TG_ROW_ARG_DISAGREE:
        put(&m, "argument agreement ");
        put_share(&m, a);
        put(&m, " is below ");
        put_share(&m, s->arg_reject);
        put(&m, " on a verified-deterministic tool: the fabricated-argument signature");
        break;
    case TG_ROW_DETERMINISM_UNVERIFIED:
        put(&m, "argument agreement ");
        put_share(&m, a);
        put(&m, " is below ");
        put_share(&m, s->arg_reject);
        put(&m, ", but the tool's determinism is not verified in this epoch, so the disagreement "
                "may come from its results");
        break;
    case TG_ROW_NONDETERMINISTIC:
        put(&m, "arguments agree; the tool is nondeterministic by contract, so results carry no "
                "signal");
        break;
    case TG_ROW_RESULT_DISAGREE:
        put(&m, "arguments agree (");
        put_share(&m, a);
        put(&m, ") but results do not (");
        put_share(&m, r);
        put(&m, s->quarantine ? ") on a tool declared deterministic: the tool is suspect, not "
                                "the plan; its declaration is quarantined"
                              : ") on a tool declared deterministic: the tool is suspect, not "
                                "the plan (quarantine is off)");
        break;
    case TG_ROW_RESULT_UNSTABLE:
        put(&m, "arguments agree (");
        put_share(&m, a);
        put(&m, ") but results are unstable (");
        put_share(&m, r);
        put(&m, "): re-sample in a fresh epoch");
        break;
    case TG_ROW_ARG_UNSTABLE:
        put(&m, "argument agreement ");
        put_share(&m, a);
        put(&m, " is between ");
        put_share(&m, s->arg_reject);
        put(&m, " and ");
        put_share(&m, s->arg_accept);
        break;
    default: /* an accept says nothing */
        break;
    }
    if (m.rc != TG_OK)
        return tg_fail(err, m.rc, TG_NO_OFFSET, "out of memory");
    return TG_OK;
}
