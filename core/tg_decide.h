/*
 * tg_decide.h -- what the compiled policy (tg_policy.c), the check pipeline
 * (tg_decide.c) and the decision writer (tg_decision.c) share.  Not
 * installed.
 */
#ifndef TG_DECIDE_H
#define TG_DECIDE_H

#include "tg_internal.h"

/* A string the policy or a context owns (in its arena), NUL-terminated. */
typedef struct tg_text {
    const char *s;
    size_t len;
} tg_text;

enum tg_stage_kind {
    TG_STAGE_RUNG = 0,
    TG_STAGE_GATE,
    TG_STAGE_VERIFIER,
    TG_STAGE_CONSISTENCY,
    TG_STAGE_CUSTOM
};

typedef struct tg_pstage {
    int kind;            /* enum tg_stage_kind */
    int in_host;         /* custom stage, or a gate with the policy's own rule */
    tg_text name;        /* shown as "stage" */
    tg_text name_json;   /* name as a JSON string (quotes and escapes): what
                          * every decision writes, worked out once */
    size_t ran_json_len; /* the policy's stages_json up to this stage's name */
    tg_text code;        /* custom stages: the code of their rejects */
} tg_pstage;

/* One segment of a resolve rule's pattern, unescaped. */
typedef struct tg_pseg {
    tg_text key;
    size_t index; /* the array index it spells (RFC 6901), or (size_t)-1 */
    int wild;     /* written "*": any member or element */
} tg_pseg;

/* An x-toolgate-canonical "id" rule whose IDs a policy function resolves. */
typedef struct tg_presolve {
    tg_pseg *segs;
    size_t n_segs;
    unsigned pre_ops; /* TG_NORM_* applied before the lookup */
    tg_text resolver;
} tg_presolve;

/* A tool's contract, as the built-in stages read it. */
typedef struct tg_ptool {
    long risk; /* rank in the risk order, -1: none declared */
    tg_text *scopes;
    size_t n_scopes;
    int declares_effects; /* an effects list was given (possibly empty) */
    int has_output;
    tg_text refuse_code; /* .s NULL: calls are not refused at load */
    tg_text refuse_message;
    int deterministic;     /* 1 declared, 0 declared nondeterministic, -1 neither */
    const tg_norm_t *norm; /* its normalization plan (tg_policy_set_norm), or NULL */
    tg_presolve *resolve;  /* the "id" rules a policy function resolves */
    size_t n_resolve;
    tg_text server_json, name_json; /* the registry's names as JSON strings */
} tg_ptool;

struct tg_policy_t {
    tg_engine_t *e;
    tg_arena arena;
    const tg_registry_t *r;
    tg_text version;
    tg_text registry_hash;
    tg_text version_json, registry_hash_json; /* as JSON strings, as name_json */
    /* what every decision writes of the policy, joined once (tg_decision.c
     * copies each in one piece): the members "policy_version":...,
     * "registry_hash":..., and the stage names' name_json, comma-separated
     * (the first n of them are its first stages[n - 1].ran_json_len bytes) */
    tg_text stamp_json, stages_json;
    tg_pstage *stages;
    size_t n_stages;
    tg_text *levels;
    size_t n_levels;
    int report_also, require_contract, requires_approval;
    int on_mismatch, on_error; /* enum tg_verdict */
    tg_ptool *tools;
    size_t n_tools;
    tg_consistency_t consistency;
    int has_resolve;   /* some tool has resolve rules */
    size_t rung_stage; /* index of the rung in stages (0 when there is none) */
};

struct tg_context_t {
    tg_engine_t *e; /* its own: a host may free the policy first */
    const tg_policy_t *p;
    tg_arena arena;
    tg_text *scopes;
    size_t n_scopes;
    long max_risk; /* rank, -1: none given, -2: not a level (max_risk_text says which) */
    tg_text max_risk_text;
    tg_text epoch;  /* canonical JSON of "epoch", .s NULL when absent */
    tg_text server; /* .s NULL when absent */
};

/* Reads a context's members from the object v into c (which the caller
 * zeroed, with p and arena set); members override what c held. */
int tg_context_read(tg_context_t *c, const tg_value_t *v, tg_error_t *err);

/* A stage that did not pass.  Its code (NUL-terminated) and message are
 * in the decider's text buffer, by offset (the buffer may move as it
 * grows). */
typedef struct tg_objection {
    size_t stage; /* index in the policy's stages; TG_DECODE_STAGE: decode */
    int verdict;  /* TG_REJECT or TG_DEFER */
    size_t code, code_len;
    size_t message, message_len;
} tg_objection;

#define TG_DECODE_STAGE ((size_t)-1)

struct tg_decider_t {
    tg_engine_t *e;
    tg_buf_t out;     /* the decision, canonical JSON */
    tg_buf_t texts;   /* this call's messages and answered codes */
    tg_buf_t scratch; /* canonical arguments for the digest */

    /* the call in progress */
    const tg_policy_t *p;
    const tg_context_t *ctx; /* the base context, or merged */
    tg_context_t merged;     /* base + the call's own context (trusted input) */
    int merged_live;
    tg_calls_t *calls;     /* the text's calls (NULL when it did not decode) */
    const tg_call_t *call; /* the one in progress, NULL before and after */
    size_t call_index;     /* its index in calls */
    size_t line;
    const char *server;
    size_t server_len;
    const char *name;
    size_t name_len;
    const tg_value_t *args;
    long tool; /* registry index once resolved, else -1 */
    char digest[TG_HASH_HEX];
    int has_digest;
    int rung_ran; /* rung is this call's rung result */
    tg_rung_result_t rung;
    size_t next_stage; /* the stage to run next */
    int flags;         /* tg_check's */
    size_t paused_at;  /* TG_CHECK_PAUSE: the stage the host was shown */
    size_t n_ran;      /* stages[0 .. n_ran) ran */
    tg_objection *obj; /* what did not pass, in order */
    size_t n_obj, cap_obj;
    int decode_failed;    /* the objection is the decoder's */
    size_t decode_offset; /* its byte offset, TG_NO_OFFSET when none */
    int lines_pending;    /* tg_check_lines paused inside a text of several calls */

    /* a plan's step checked by its policy (tg_classify): the rung ran on
     * the plan already, so it only takes what it found */
    int rung_known;
    struct tg_plan *plan; /* tg_classify's state, made on first use */

    /* tg_mcp_check's message: its document and the texts read from it */
    tg_doc_t *mcp_doc;
    tg_buf_t mcp_texts;
};

/* Writes d's decision (the call in progress, concluded) into d->out. */
int tg_decision_write(tg_decider_t *d, tg_error_t *err);

/* The check pipeline's pieces tg_classify runs a plan's calls through. */
/* Starts a call on d (what tg_check does before decoding). */
void tg_decide_begin(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, int flags,
                     size_t line);
/* Runs the stages from d->next_stage, as tg_check does after decoding. */
int tg_decide_run(tg_decider_t *d, tg_outcome_t *out, tg_error_t *err);
/* The rung alone on the call d was given (server, name, args), its
 * objection (if any) recorded as stage's. */
int tg_decide_rung(tg_decider_t *d, size_t stage, tg_error_t *err);
/* The objection that decides d's call (the first reject, else the first
 * defer), NULL for an accept. */
const tg_objection *tg_decide_deciding(const tg_decider_t *d);

/* Appends s (n bytes) to b with every byte that is not part of a
 * well-formed UTF-8 sequence dropped (text a host gave). */
int tg_append_utf8(tg_buf_t *b, const char *s, size_t n, tg_error_t *err);

/* ---- tg_classify's state (tg_classify.c), which tg_decision.c writes ---- */

/* One call of one sample. */
typedef struct tg_pstep {
    const char *server; /* NULL: the call names none */
    size_t server_len;
    const char *name;
    size_t name_len;
    const tg_value_t *args; /* NULL: the call has none */
    long tool;              /* the registry index it resolved to, or -1 */
    int ok;                 /* it passes the rung */
    tg_hash128_t digest;    /* its normalized exact arguments (a stand-in without) */
    tg_hash128_t key;       /* of (server, name, digest): the call as a step compares */
} tg_pstep;

typedef struct tg_psample {
    size_t first, count;       /* its calls: steps[first .. first + count) */
    const tg_value_t *results; /* "results", NULL when absent */
} tg_psample;

typedef struct tg_phex {
    char s[TG_HASH_HEX];
} tg_phex;

/* A sample other than the representative that fails the rung. */
typedef struct tg_pfailure {
    size_t sample, step; /* from 1; step 0 in a single-tool plan */
    size_t code, code_len, message, message_len, path, path_len; /* in texts */
    int has_path;
} tg_pfailure;

/* An argument pointer that disagrees with the representative's. */
typedef struct tg_pptr {
    size_t pointer, pointer_len; /* in texts */
    size_t agree;
} tg_pptr;

/* Per-step agreement of a plan of several calls. */
typedef struct tg_pstat {
    size_t arg_modal, result_modal;
} tg_pstat;

/* An objection of a later stage on one of the representative's calls. */
typedef struct tg_pobjection {
    size_t step; /* from 1 */
    int verdict;
    size_t code, code_len, message, message_len; /* in texts */
    const char *stage;
    size_t n_ran; /* the check ran stages[0 .. n_ran) */
    char digest[TG_HASH_HEX];
    long tool;
} tg_pobjection;

/* One of the representative's calls as the table's determinism features
 * read it (tg_plan_determinism): what classify finds, and what a sweep
 * keeps to find it again under other settings. */
typedef struct tg_pdet {
    long tool;
    signed char det;           /* the declaration in force: 1 deterministic, 0
                                * nondeterministic, 2 neither (a string or number
                                * inline), -1 none */
    signed char inline_ver;    /* the plan's "verified": 1, 0, -1 none */
    unsigned char verified;    /* the store's record: verified in the plan's epoch */
    unsigned char quarantined; /* the store's record, or a quarantine since */
} tg_pdet;

/* The determinism features of a plan whose representative makes calls
 * steps[0..n): f's deterministic, nondeterministic and verified. */
void tg_plan_determinism(tg_plan_features_t *f, const tg_pdet *steps, size_t n);

/* Whether a RESULT_DISAGREE quarantines the declaration of a call's tool
 * (contract_det: its contract's declaration, as tg_ptool's) whose results
 * agree result_modal of n. */
int tg_plan_quarantines(int contract_det, size_t result_modal, size_t n, const tg_consistency_t *s);

/* Which later-stage objection decides a judged plan whose table said
 * table_verdict: the last reject of o[0..n), else, when the table accepts,
 * the first objection; -1: the table decides. */
long tg_plan_deciding(const struct tg_pobjection *o, size_t n, int table_verdict);

/* A quarantine the plan decided (its epoch is the plan's). */
typedef struct tg_pquarantine {
    long tool;
    size_t reason, reason_len; /* in texts */
} tg_pquarantine;

/* A quarantine a worker keeps for the merge (tg_workers.c). */
typedef struct tg_plog {
    long tool;
    size_t reason, reason_len, epoch, epoch_len; /* in log_texts */
    int has_epoch;
} tg_plog;

/* Where a plan of a piece of JSON Lines starts: what to keep of the piece
 * when it is classified again from there. */
typedef struct tg_pcheck {
    size_t at;          /* its line's offset in the piece */
    size_t line;        /* the number of the line before it */
    size_t out_len;     /* the piece's decisions before it */
    size_t log;         /* the piece's quarantines before it */
    size_t verdicts[3]; /* and their verdicts */
} tg_pcheck;

/* What a piece of plans did to one tool. */
typedef struct tg_ptrack {
    unsigned char read;  /* its record was read from the store */
    unsigned char fresh; /* it was quarantined, not having been before */
    unsigned char held;  /* it is quarantined in this piece's log */
    tg_pcheck first;     /* where the plan that first read it starts */
} tg_ptrack;

/* An ID for the host's resolver. */
typedef struct tg_pquery {
    long tool;
    const tg_presolve *rule;
    size_t id, id_len; /* in texts */
    uint64_t hash;
} tg_pquery;

/* A tool's normalization plan for this plan: its own and the IDs a
 * policy function resolved. */
typedef struct tg_pnorm {
    long tool;
    tg_norm_t *norm;
} tg_pnorm;

/* A determinism record as the decision reads it. */
typedef struct tg_precord {
    long tool;
    int known; /* read (or, from the host's store, answered) */
    int quarantined;
    int verified; /* its verified epoch is the plan's */
} tg_precord;

enum tg_plan_phase {
    TG_PLAN_IDLE = 0,
    TG_PLAN_RESOLVE, /* waiting for the host's resolver (queries[waiting]) */
    TG_PLAN_STORE,   /* waiting for a record (records[waiting]) */
    TG_PLAN_STAGES,  /* the representative's call `waiting` in the policy's stages */
    TG_PLAN_DONE
};

/* Where a plan's determinism records come from and its quarantines go. */
enum tg_store_mode {
    TG_STORE_DIRECT = 0, /* the in-process store, written at once */
    TG_STORE_HOST,       /* asked of the host, written by the host */
    TG_STORE_OVERLAY,    /* a worker's: the store only read, writes kept in log */
    TG_STORE_READ        /* a sweep's features pass: the store only read */
};

/* A growable array of a plan's (reused plan after plan). */
#define TG_PLAN_ARRAY(T, name)                                                                     \
    T *name;                                                                                       \
    size_t n_##name, cap_##name

typedef struct tg_plan {
    tg_engine_t *e;
    tg_buf_t texts;   /* messages, codes, IDs, reasons, pointers, the epoch */
    tg_buf_t scratch; /* canonical forms */
    tg_doc_t *doc;
    int phase; /* enum tg_plan_phase */
    size_t waiting;
    int in_loop; /* next_step is running the later stages */

    /* what the caller gave */
    const tg_policy_t *p;
    const tg_context_t *ctx;
    tg_store_t *store;
    int store_mode; /* enum tg_store_mode */
    int flags;
    size_t line;
    int64_t now;

    /* the plan */
    const tg_value_t *root, *samples, *plan_id, *epoch_fixed;
    int single;
    size_t n;
    long tool;                                 /* single: the tool, -1 */
    int usable;                                /* single: resolved and not refused */
    const tg_value_t *inline_det, *inline_ver; /* single: the plan's declarations */
    tg_plan_summary_t sum;                     /* single */
    TG_PLAN_ARRAY(tg_pstep, steps);            /* several calls */
    TG_PLAN_ARRAY(tg_psample, samp);           /* several calls */
    TG_PLAN_ARRAY(tg_hash128_t, hashes);       /* scratch for tg_agree */
    TG_PLAN_ARRAY(tg_pstat, stats);            /* several calls: per step */
    TG_PLAN_ARRAY(tg_pfailure, failures);
    TG_PLAN_ARRAY(tg_pptr, ptrs);
    TG_PLAN_ARRAY(const tg_value_t *, nodes);
    TG_PLAN_ARRAY(tg_pquery, queries);
    TG_PLAN_ARRAY(tg_pnorm, norms);
    TG_PLAN_ARRAY(tg_precord, records);
    TG_PLAN_ARRAY(tg_pobjection, objections);
    TG_PLAN_ARRAY(tg_pquarantine, quarantines);
    TG_PLAN_ARRAY(uint32_t, seen); /* the queries' hash set (n_seen: its slots) */
    TG_PLAN_ARRAY(tg_phex, hex);   /* the representative's exact digests */
    TG_PLAN_ARRAY(tg_pdet, dets);  /* the representative's determinism */
    size_t max_steps;
    tg_agreement_t args, results;
    int epochs_equal, fixed;
    const tg_value_t *epoch;      /* the first sample's */
    size_t epoch_text, epoch_len; /* its canonical form, in texts, when fixed */
    int has_epoch;
    size_t rep, rep_steps; /* the representative (from 0) and its calls */
    tg_plan_features_t features;
    tg_consistency_verdict_t verdict;
    int has_features; /* the table was reached */
    char args_digest[TG_HASH_HEX];
    size_t message, message_len; /* the deciding message, in texts */
    int has_message;
    size_t code, code_len; /* a refusal's code, in texts */
    int refused;           /* refused before the table */
    int refusal_verdict;
    const char *refusal_stage;
    int refusal_fields; /* TG_PF_* */
    int rung_failed;    /* the representative failed the rung: d holds its check */
    int rung_no_args;   /* ... because the call has no arguments */
    size_t rung_step;   /* from 1 */
    int has_offset;
    size_t offset;
    /* what the decision writer concluded */
    int verdict_out;
    const char *code_out, *stage_out;

    /* threads (tg_workers.c): what a piece of plans did to each tool, where
     * the plan in progress starts, and the piece's quarantines */
    struct tg_sweep_t *sweep; /* a sweep's features pass (tg_sweep_lines): the
                               * plan is kept there, not quarantined, and its
                               * later stages run whatever the table says */
    tg_ptrack *track;         /* n_track of them, one per registry tool */
    size_t n_track;
    tg_pcheck cp;
    TG_PLAN_ARRAY(tg_plog, log);
    tg_buf_t log_texts;
} tg_plan;

/* Which of the plan's fields a refusal carries. */
#define TG_PF_PLAN_ID 1
#define TG_PF_N 2

/* Grows the array at *pp (of *cap elements of elem bytes, allocated from
 * e) to hold need, geometrically.  TG_OK or TG_E_NOMEM (*pp and *cap are
 * then unchanged). */
int tg_grow(tg_engine_t *e, void *pp, size_t *cap, size_t need, size_t elem);

/* Writes the plan's decision into d->out. */
int tg_plan_decision_write(tg_decider_t *d, tg_error_t *err);
/* What the rung finds of a plan's call (d->rung_known): the tool, its
 * server and name, the digest. */
void tg_classify_known_rung(tg_decider_t *d);
/* What finish() hands tg_classify when a plan's call has been checked. */
int tg_classify_step_done(tg_decider_t *d, tg_outcome_t *out, tg_error_t *err);
/* tg_classify_lines with the store used as mode says (enum tg_store_mode). */
int tg_classify_lines_mode(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx,
                           tg_store_t *store, int mode, const char *text, size_t len, int flags,
                           int64_t now, size_t *line, size_t *used, tg_buf_t *out,
                           size_t verdicts[3], tg_outcome_t *o, tg_error_t *err);
/* tg_classify_lines_mode as a sweep's features pass (mode TG_STORE_READ):
 * each plan's features go to sweep, no decision is written to out. */
int tg_classify_lines_sweep(tg_decider_t *d, struct tg_sweep_t *sweep, const tg_policy_t *p,
                            const tg_context_t *ctx, tg_store_t *store, const char *text,
                            size_t len, int flags, size_t *line, size_t *used, tg_outcome_t *o,
                            tg_error_t *err);
/* Keeps the plan just concluded on d in its sweep (tg_sweep.c).  TG_OK or
 * TG_E_NOMEM. */
int tg_sweep_take(struct tg_sweep_t *s, const tg_decider_t *d, tg_error_t *err);
/* Starts the bookkeeping of a piece of plans (tg_workers.c): every tool's
 * flags cleared, the log emptied.  TG_OK or TG_E_NOMEM. */
int tg_plan_track(tg_decider_t *d, size_t n_tools);
/* Frees d's plan state. */
void tg_plan_free(tg_plan *pl);

#endif /* TG_DECIDE_H */
