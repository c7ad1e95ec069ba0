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
    int kind;     /* enum tg_stage_kind */
    int in_host;  /* custom stage, or a gate with the policy's own rule */
    tg_text name; /* shown as "stage" */
    tg_text code; /* custom stages: the code of their rejects */
} tg_pstage;

/* A tool's contract, as the built-in stages read it. */
typedef struct tg_ptool {
    long risk; /* rank in the risk order, -1: none declared */
    tg_text *scopes;
    size_t n_scopes;
    int declares_effects; /* an effects list was given (possibly empty) */
    int has_output;
    tg_text refuse_code; /* .s NULL: calls are not refused at load */
    tg_text refuse_message;
} tg_ptool;

struct tg_policy_t {
    tg_engine_t *e;
    tg_arena arena;
    const tg_registry_t *r;
    tg_text version;
    tg_text registry_hash;
    tg_pstage *stages;
    size_t n_stages;
    tg_text *levels;
    size_t n_levels;
    int report_also, require_contract, requires_approval;
    int on_mismatch, on_error; /* enum tg_verdict */
    tg_ptool *tools;
    size_t n_tools;
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
};

/* Writes d's decision (the call in progress, concluded) into d->out. */
int tg_decision_write(tg_decider_t *d, tg_error_t *err);

#endif /* TG_DECIDE_H */
