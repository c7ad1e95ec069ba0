/*
 * tg_rung.c -- the Resolution Rung: a closed-world check of one call
 * (server, name, arguments) against a registry.  No model, no contract.
 *
 *   H1  (server, name) is not in the registry, or a bare name is exposed by
 *       several servers (never a guess);
 *   H2  a key the schema does not declare, or a required key missing;
 *   H3  a value failing its check;
 *   H5  (reported, never a verdict) other tools whose input schemas also
 *       accept these arguments.
 */
#include "tg_internal.h"

/* H5: every other tool whose schema accepts args.  A tool whose validation
 * errors out (a limit) is simply not listed: H5 is a signal, not a verdict. */
static void also_accepted(tg_engine_t *e, const tg_registry_t *r, const tg_value_t *args,
                          tg_rung_result_t *out)
{
    size_t n = tg_registry_count(r);
    tg_finding_t probe;
    for (size_t i = 0; i < n; i++) {
        size_t count = 0;
        if (i == out->tool)
            continue;
        if (tg_validate(e, tg_registry_input_schema(r, i), args, &probe, 1, &count, NULL) != TG_OK)
            continue;
        if (count == 0) {
            if (out->n_also < TG_RUNG_MAX_FINDINGS)
                out->also[out->n_also] = i;
            out->n_also++;
        }
    }
    if (out->n_also > TG_RUNG_MAX_FINDINGS)
        out->n_also = TG_RUNG_MAX_FINDINGS;
}

int tg_rung_check(tg_engine_t *e, const tg_registry_t *r, const char *server, size_t server_len,
                  const char *name, size_t name_len, const tg_value_t *args, int report_also,
                  tg_rung_result_t *out, tg_error_t *err)
{
    int rc;

    tg_error_clear(err);
    out->resolution = TG_UNKNOWN;
    out->tool = 0;
    out->n_candidates = 0;
    out->n_findings = 0;
    out->n_also = 0;
    if (!name || !args)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "a call needs a name and arguments");

    if (server) {
        long i = tg_registry_find(r, server, server_len, name, name_len);
        if (i < 0)
            return TG_OK; /* H1: unknown on that server */
        out->tool = (size_t)i;
    } else {
        size_t n = tg_registry_find_name(r, name, name_len, out->candidates, TG_RUNG_MAX_FINDINGS);
        out->n_candidates = n;
        if (n == 0)
            return TG_OK; /* H1: unknown anywhere */
        if (n > 1) {
            out->resolution = TG_AMBIGUOUS;
            return TG_OK;
        }
        out->n_candidates = 0;
        out->tool = out->candidates[0];
    }
    out->resolution = TG_RESOLVED;

    rc = tg_validate(e, tg_registry_input_schema(r, out->tool), args, out->findings,
                     TG_RUNG_MAX_FINDINGS, &out->n_findings, err);
    if (rc != TG_OK)
        return rc;
    if (report_also && out->n_findings == 0)
        also_accepted(e, r, args, out);
    return TG_OK;
}
