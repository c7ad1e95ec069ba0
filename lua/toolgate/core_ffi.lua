-- toolgate.core_ffi: the LuaJIT FFI binding of the toolgate core
-- (normally reached through "toolgate.core").
--
-- Mirrors core_c.c function for function over the same libtoolgate.so, as
-- OpenResty does it: the classic C API is never JIT-compiled, FFI calls are.
-- The library is found, in order, at $TOOLGATE_LIB, next to any entry of
-- package.cpath (as libtoolgate.so), then by the system loader.
--
-- Errors: wrong argument types raise; bad data returns
-- nil, message, CODE, byte_offset (offset counts from 0) or, for schema
-- errors, nil, message, CODE, json_pointer.
--
-- Lifetimes: every object keeps what it was made from alive (a node its
-- document, a document its engine), and the C engine itself outlives the
-- last object made from it, so finalizers may run in any order.

local ffi = require "ffi"

-- Keep in step with core/toolgate.h (spec/core_spec.lua checks it).
ffi.cdef [[
typedef struct tg_error_t {
    int code;
    size_t offset;
    char pointer[256];
    char message[200];
} tg_error_t;
typedef struct tg_limits_t {
    size_t max_input_bytes;
    size_t max_depth;
    size_t max_string_bytes;
    size_t max_members;
    size_t max_items;
    size_t regex_match_limit;
    size_t max_validation_steps;
    size_t max_pattern_bytes;
    size_t max_regex_steps;
    size_t max_registry_bytes;
} tg_limits_t;
typedef struct tg_engine_t tg_engine_t;
typedef struct tg_doc_t tg_doc_t;
typedef struct tg_value_t tg_value_t;
typedef struct tg_buf_t {
    char *data;
    size_t len;
    size_t cap;
    tg_engine_t *engine;
} tg_buf_t;
typedef struct tg_hash128_t {
    uint64_t hi;
    uint64_t lo;
} tg_hash128_t;
typedef void *(*tg_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);
typedef struct tg_schema_t tg_schema_t;
typedef struct tg_schema_options_t {
    int closed;
    int assert_formats;
    const char *const *ignore_keywords;
    const char *const *annotation_formats;
} tg_schema_options_t;
typedef struct tg_finding_t {
    int code;
    const char *keyword;
    char pointer[256];
    char schema_pointer[256];
    char message[200];
} tg_finding_t;
typedef struct tg_call_t tg_call_t;
typedef struct tg_registry_t tg_registry_t;
typedef struct tg_rung_result_t {
    int resolution;
    size_t tool;
    size_t n_candidates;
    size_t candidates[16];
    size_t n_findings;
    tg_finding_t findings[16];
    size_t n_also;
    size_t also[16];
} tg_rung_result_t;

const char *tg_code_name(int code);
void tg_limits_default(tg_limits_t *out);
tg_engine_t *tg_engine_new(const tg_limits_t *limits, tg_alloc_fn alloc, void *alloc_ud, tg_error_t *err);
void tg_engine_free(tg_engine_t *e);
void tg_engine_limits(const tg_engine_t *e, tg_limits_t *out);
int tg_engine_set_limits(tg_engine_t *e, const tg_limits_t *limits, tg_error_t *err);
int tg_parse(tg_engine_t *e, const char *json, size_t len, tg_doc_t **out, tg_error_t *err);
int tg_parse_registry(tg_engine_t *e, const char *json, size_t len, tg_doc_t **out, tg_error_t *err);
void tg_doc_free(tg_doc_t *doc);
const tg_value_t *tg_doc_root(const tg_doc_t *doc);
int tg_type_of(const tg_value_t *v);
size_t tg_len(const tg_value_t *v);
const tg_value_t *tg_at(const tg_value_t *v, size_t i);
const char *tg_key_at(const tg_value_t *v, size_t i, size_t *len);
const tg_value_t *tg_get(const tg_value_t *v, const char *key, size_t len);
int tg_has_key(const tg_value_t *v, const char *key, size_t len);
const char *tg_str(const tg_value_t *v, size_t *len);
double tg_num(const tg_value_t *v);
int tg_num_round_trips(const tg_value_t *v);
const char *tg_num_text(const tg_value_t *v, size_t *len);
size_t tg_offset(const tg_value_t *v);
size_t tg_value_layout(int i);
void tg_buf_init(tg_buf_t *b, tg_engine_t *e);
void tg_buf_free(tg_buf_t *b);
void tg_buf_reset(tg_buf_t *b);
int tg_canon_value(const tg_value_t *v, tg_buf_t *out, tg_error_t *err);
int tg_canon(tg_engine_t *e, const char *json, size_t len, tg_buf_t *out, tg_error_t *err);
int tg_canon_value_mode(const tg_value_t *v, int mode, tg_buf_t *out, tg_error_t *err);
size_t tg_number_format(double d, char out[32]);
void tg_schema_options_default(tg_schema_options_t *o);
int tg_schema_compile(tg_engine_t *e, const tg_value_t *v, const tg_schema_options_t *opt, tg_schema_t **out, tg_error_t *err);
void tg_schema_free(tg_schema_t *s);
int tg_validate(tg_engine_t *e, const tg_schema_t *s, const tg_value_t *v, tg_finding_t *findings, size_t max, size_t *count, tg_error_t *err);
typedef struct tg_calls_t tg_calls_t;
int tg_calls_decode(tg_engine_t *e, const char *json, size_t len, int format, tg_calls_t **out, tg_error_t *err);
void tg_calls_free(tg_calls_t *s);
size_t tg_calls_count(const tg_calls_t *s);
const tg_call_t *tg_calls_at(const tg_calls_t *s, size_t i);
int tg_calls_shape(const tg_calls_t *s);
const char *tg_call_shape_name(int shape);
int tg_call_decode(tg_engine_t *e, const char *json, size_t len, int format, tg_call_t **out, tg_error_t *err);
void tg_call_free(tg_call_t *c);
int tg_call_format_of(const tg_call_t *c);
int tg_call_shape(const tg_call_t *c);
const char *tg_call_server(const tg_call_t *c, size_t *len);
const char *tg_call_name(const tg_call_t *c, size_t *len);
const tg_value_t *tg_call_arguments(const tg_call_t *c);
const tg_value_t *tg_call_id(const tg_call_t *c);
const tg_value_t *tg_call_object(const tg_call_t *c);
const tg_value_t *tg_call_context(const tg_call_t *c);
tg_registry_t *tg_registry_new(tg_engine_t *e, tg_error_t *err);
void tg_registry_free(tg_registry_t *r);
int tg_registry_add(tg_registry_t *r, const char *server, size_t server_len, const char *name, size_t name_len, const char *description, size_t description_len, const tg_value_t *input, const tg_value_t *output, const tg_schema_options_t *opt, size_t *index, tg_error_t *err);
size_t tg_registry_count(const tg_registry_t *r);
long tg_registry_find(const tg_registry_t *r, const char *server, size_t server_len, const char *name, size_t name_len);
size_t tg_registry_find_name(const tg_registry_t *r, const char *name, size_t name_len, size_t *indexes, size_t max);
const char *tg_registry_server(const tg_registry_t *r, size_t i, size_t *len);
const char *tg_registry_name(const tg_registry_t *r, size_t i, size_t *len);
const tg_hash128_t *tg_registry_pin(const tg_registry_t *r, size_t i);
const tg_schema_t *tg_registry_output_schema(const tg_registry_t *r, size_t i);
typedef struct tg_image_t tg_image_t;
typedef struct tg_image_source_t {
    const char *text;
    size_t text_len;
    const char *server;
    size_t server_len;
    const char *label;
    size_t label_len;
    const char *path;
    size_t path_len;
    int format;
    int trusted;
    tg_hash128_t hash;
} tg_image_source_t;
int tg_image_write(tg_engine_t *e, const tg_image_source_t *sources, size_t n, tg_buf_t *out, tg_error_t *err);
int tg_image_is(const void *data, size_t len);
int tg_image_open(tg_engine_t *e, const void *data, size_t len, tg_image_t **out, tg_error_t *err);
int tg_image_map(tg_engine_t *e, const char *path, tg_image_t **out, tg_error_t *err);
void tg_image_free(tg_image_t *img);
size_t tg_image_count(const tg_image_t *img);
int tg_image_source(const tg_image_t *img, size_t i, tg_image_source_t *out);
int tg_image_check_sources(const tg_image_t *img, tg_error_t *err);
int tg_rung_check(tg_engine_t *e, const tg_registry_t *r, const char *server, size_t server_len, const char *name, size_t name_len, const tg_value_t *args, int report_also, tg_rung_result_t *out, tg_error_t *err);
void tg_hash128(const void *data, size_t len, tg_hash128_t *out);
void tg_hash128_hex(const tg_hash128_t *h, char out[33]);
typedef struct tg_text_t { const char *p; size_t n; } tg_text_t;
typedef struct tg_decision_record_t {
  tg_text_t route, source, trace_id, span_id;
  double time;
  long long worker;
  tg_text_t phase, decision, outcome, mode;
  int enforced, approved;
  tg_text_t approval_id, principal;
  tg_text_t arguments;
  long long arguments_bytes;
  tg_text_t arguments_digest;
  tg_text_t arguments_redacted;
  int arguments_truncated;
} tg_decision_record_t;
size_t tg_decision_record(const tg_decision_record_t *r, char *out, size_t cap);
typedef struct tg_norm_t tg_norm_t;
tg_norm_t *tg_norm_new(tg_engine_t *e, tg_error_t *err);
void tg_norm_free(tg_norm_t *n);
int tg_norm_add_rule(tg_norm_t *n, const char *pattern, size_t len, unsigned ops, tg_error_t *err);
int tg_norm_add_alias(tg_norm_t *n, const char *from, size_t flen, const char *to, size_t tlen, tg_error_t *err);
int tg_norm_string(const tg_norm_t *n, unsigned ops, const char *s, size_t len, tg_buf_t *out, tg_error_t *err);
int tg_canon_normalized(const tg_norm_t *n, const tg_value_t *v, int mode, tg_buf_t *out, tg_error_t *err);
typedef struct tg_agreement_t {
    size_t n;
    size_t distinct;
    size_t modal_count;
    size_t representative;
} tg_agreement_t;
int tg_agree(tg_engine_t *e, const tg_hash128_t *values, size_t n, tg_agreement_t *out, tg_error_t *err);
typedef struct tg_pointer_agreement_t {
    char pointer[256];
    size_t agree;
    size_t present;
} tg_pointer_agreement_t;
int tg_pointer_agreement(tg_engine_t *e, const tg_value_t *const *docs, size_t n, size_t rep, const tg_norm_t *plan, tg_pointer_agreement_t *out, size_t max, size_t *count, tg_error_t *err);
typedef struct tg_policy_t tg_policy_t;
typedef struct tg_context_t tg_context_t;
typedef struct tg_decider_t tg_decider_t;
typedef struct tg_outcome_t {
    int status;
    int verdict;
    const char *json;
    size_t json_len;
    const char *code;
    const char *stage;
    size_t pending;
} tg_outcome_t;
typedef struct tg_mcp_message_t {
    int kind;
    int id;
    int id_null;
    const char *id_text;
    size_t id_len;
    int method;
    const char *method_name;
    size_t method_len;
    int has_result, has_error;
    int has_cursor;
    const char *protocol_version;
    size_t protocol_version_len;
    const char *name;
    size_t name_len;
    const char *call;
    size_t call_len;
    const char *call_error;
    int checked;
    long tool;
    char args_digest[33];
    tg_error_t error;
} tg_mcp_message_t;
int tg_mcp_read(const tg_value_t *msg, const char *server, size_t server_len, tg_mcp_message_t *m, tg_buf_t *texts, tg_error_t *err);
int tg_model_text(const tg_registry_t *r, long tool, const char *name, int deferred, const char *code, const char *path, const char *message, const char *approval_id, const char *hint, tg_buf_t *out, tg_error_t *err);
int tg_mcp_check(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, const char *text, size_t len, const char *server, size_t server_len, int format, int flags, int decide, tg_mcp_message_t *m, tg_outcome_t *o, tg_error_t *err);
int tg_policy_new(tg_engine_t *e, const tg_registry_t *r, const char *json, size_t len, tg_policy_t **out, tg_error_t *err);
void tg_policy_free(tg_policy_t *p);
int tg_context_new(const tg_policy_t *p, const char *json, size_t len, tg_context_t **out, tg_error_t *err);
void tg_context_free(tg_context_t *c);
tg_decider_t *tg_decider_new(tg_engine_t *e, tg_error_t *err);
void tg_decider_free(tg_decider_t *d);
int tg_check(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, const char *json, size_t len, int format, int flags, size_t line, tg_outcome_t *out, tg_error_t *err);
int tg_check_next(tg_decider_t *d, tg_outcome_t *out, tg_error_t *err);
typedef struct tg_workers_t tg_workers_t;
tg_workers_t *tg_workers_new(tg_engine_t *e, size_t threads, tg_error_t *err);
void tg_workers_free(tg_workers_t *w);
size_t tg_workers_count(const tg_workers_t *w);
size_t tg_cpu_count(void);
int tg_check_lines_parallel(tg_workers_t *w, tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, const char *text, size_t len, int format, int flags, size_t *line, size_t *used, tg_buf_t *out, size_t verdicts[3], tg_outcome_t *o, tg_error_t *err);
typedef struct tg_reader_t tg_reader_t;
tg_reader_t *tg_reader_new(tg_engine_t *e, int fd, tg_error_t *err);
tg_reader_t *tg_reader_open(tg_engine_t *e, const char *path, tg_error_t *err);
void tg_reader_free(tg_reader_t *r);
int tg_reader_lines(tg_reader_t *r, size_t want, const char **text, size_t *len, tg_error_t *err);
void tg_reader_take(tg_reader_t *r, size_t used);
int tg_write_all(int fd, const char *data, size_t len, tg_error_t *err);
int tg_check_reader(tg_workers_t *w, tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, tg_reader_t *r, size_t want, int fd, int format, int flags, size_t *line, tg_buf_t *out, size_t verdicts[3], tg_outcome_t *o, int *end, tg_error_t *err);
int tg_canon_lines(tg_engine_t *e, const char *text, size_t len, int hash, size_t *line, size_t *used, tg_buf_t *out, tg_error_t *err);
int tg_canon_reader(tg_engine_t *e, tg_reader_t *r, size_t want, int fd, int hash, size_t *line, tg_buf_t *out, int *end, tg_error_t *err);
int tg_validate_reader(tg_engine_t *e, const tg_schema_t *schema, tg_reader_t *r, size_t want, int fd, size_t *line, tg_buf_t *out, int *end, tg_error_t *err);
int tg_validate_lines(tg_engine_t *e, const tg_schema_t *schema, const char *text, size_t len, size_t *line, size_t *used, tg_buf_t *out, tg_error_t *err);
int tg_check_lines(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, const char *text, size_t len, int format, int flags, size_t *line, size_t *used, tg_buf_t *out, size_t verdicts[3], tg_outcome_t *o, tg_error_t *err);
int tg_check_answer(tg_decider_t *d, int verdict, const char *code, size_t code_len, const char *message, size_t message_len, tg_outcome_t *out, tg_error_t *err);
const char *tg_check_server(const tg_decider_t *d, size_t *len);
const char *tg_check_name(const tg_decider_t *d, size_t *len);
const tg_value_t *tg_check_arguments(const tg_decider_t *d);
const char *tg_check_args_digest(const tg_decider_t *d);
long tg_check_tool(const tg_decider_t *d);
int tg_check_verdict_so_far(const tg_decider_t *d);
const tg_value_t *tg_check_call_context(const tg_decider_t *d);
typedef struct tg_check_view_t {
    const char *server;
    size_t server_len;
    const char *name;
    size_t name_len;
    const tg_value_t *arguments;
    const char *args_digest;
    long tool;
    const tg_value_t *context;
} tg_check_view_t;
void tg_check_view(const tg_decider_t *d, tg_check_view_t *out);
int tg_policy_set_norm(tg_policy_t *p, size_t tool, const tg_norm_t *norm, tg_error_t *err);
typedef struct tg_store_t tg_store_t;
tg_store_t *tg_store_new(tg_engine_t *e, tg_error_t *err);
void tg_store_free(tg_store_t *s);
typedef struct tg_store_record_t {
    const char *verified_epoch;
    size_t verified_epoch_len;
    int quarantined;
    const char *reason;
    size_t reason_len;
    int64_t since;
    const char *epoch;
    size_t epoch_len;
} tg_store_record_t;
int tg_store_get(const tg_store_t *s, const char *server, size_t server_len, const char *name, size_t name_len, tg_store_record_t *out);
int tg_store_verified(tg_store_t *s, const char *server, size_t server_len, const char *name, size_t name_len, const char *epoch, size_t epoch_len, tg_error_t *err);
int tg_store_quarantine(tg_store_t *s, const char *server, size_t server_len, const char *name, size_t name_len, const char *reason, size_t reason_len, int64_t since, const char *epoch, size_t epoch_len, int *changed, tg_error_t *err);
size_t tg_store_count(const tg_store_t *s);
int tg_store_at(const tg_store_t *s, size_t i, const char **server, size_t *server_len, const char **name, size_t *name_len, tg_store_record_t *out);
int tg_classify(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, tg_store_t *store, const char *json, size_t len, int flags, size_t line, int64_t now, tg_outcome_t *out, tg_error_t *err);
long tg_classify_query(const tg_decider_t *d, const char **resolver, size_t *resolver_len, const char **id, size_t *id_len);
int tg_classify_resolve(tg_decider_t *d, int ok, const char *text, size_t len, tg_outcome_t *out, tg_error_t *err);
long tg_classify_store_tool(const tg_decider_t *d);
int tg_classify_record(tg_decider_t *d, int found, int quarantined, const char *verified_epoch, size_t len, tg_outcome_t *out, tg_error_t *err);
size_t tg_classify_quarantines(const tg_decider_t *d);
long tg_classify_quarantine(const tg_decider_t *d, size_t i, const char **reason, size_t *reason_len, const char **epoch, size_t *epoch_len);
int tg_classify_lines(tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, tg_store_t *store, const char *text, size_t len, int flags, int64_t now, size_t *line, size_t *used, tg_buf_t *out, size_t verdicts[3], tg_outcome_t *o, tg_error_t *err);
int tg_classify_lines_parallel(tg_workers_t *w, tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, tg_store_t *store, const char *text, size_t len, int flags, int64_t now, size_t *line, size_t *used, tg_buf_t *out, size_t verdicts[3], tg_outcome_t *o, tg_error_t *err);
int tg_classify_reader(tg_workers_t *w, tg_decider_t *d, const tg_policy_t *p, const tg_context_t *ctx, tg_store_t *store, tg_reader_t *r, size_t want, int fd, int flags, int64_t now, size_t *line, tg_buf_t *out, size_t verdicts[3], tg_outcome_t *o, int *end, tg_error_t *err);
typedef struct tg_consistency_t {
    size_t min_samples;
    size_t max_samples;
    double arg_accept;
    double arg_reject;
    double result_accept;
    double result_quarantine;
    int on_invalid;
    int quarantine;
} tg_consistency_t;
void tg_consistency_default(tg_consistency_t *out);
typedef struct tg_sweep_t tg_sweep_t;
tg_sweep_t *tg_sweep_new(const tg_policy_t *p, tg_error_t *err);
void tg_sweep_free(tg_sweep_t *s);
int tg_sweep_lines(tg_sweep_t *s, tg_decider_t *d, const tg_context_t *ctx, tg_store_t *store, const char *text, size_t len, int flags, size_t *line, size_t *used, tg_outcome_t *o, tg_error_t *err);
size_t tg_sweep_count(const tg_sweep_t *s);
size_t tg_sweep_tools(const tg_sweep_t *s);
int tg_sweep_tool_label(const tg_sweep_t *s, size_t tool);
typedef struct tg_sweep_counts_t {
    size_t plans[3][4];
    size_t quarantined;
} tg_sweep_counts_t;
int tg_sweep_run(const tg_sweep_t *s, const tg_consistency_t *cs, tg_sweep_counts_t *out, unsigned char *quarantined, unsigned char *verdicts, const char **codes, tg_error_t *err);
typedef struct tg_plan_features_t {
    size_t n;
    size_t arg_modal;
    size_t result_modal;
    int epoch_fixed;
    int deterministic;
    int nondeterministic;
    int verified;
} tg_plan_features_t;
typedef struct tg_sweep_plan_t {
    int label;
    int fixed;
    int verdict;
    const char *code;
    tg_plan_features_t features;
} tg_sweep_plan_t;
int tg_sweep_plan(const tg_sweep_t *s, size_t i, tg_sweep_plan_t *out, tg_error_t *err);
int tg_sweep_run_with(const tg_sweep_t *s, const unsigned char *table, tg_sweep_counts_t *out, unsigned char *verdicts, const char **codes, tg_error_t *err);
]]

local function load_library()
  local tried = {}
  local explicit = os.getenv("TOOLGATE_LIB")
  if explicit and explicit ~= "" then
    local ok, lib = pcall(ffi.load, explicit)
    if ok then return lib end
    error("toolgate: cannot load TOOLGATE_LIB=" .. explicit .. ": " .. tostring(lib), 0)
  end
  for template in package.cpath:gmatch("[^;]+") do
    local path = template:gsub("%?", "libtoolgate")
    local f = io.open(path, "rb")
    if f then
      f:close()
      local ok, lib = pcall(ffi.load, path)
      if ok then return lib end
      tried[#tried + 1] = path .. ": " .. tostring(lib)
    end
  end
  local ok, lib = pcall(ffi.load, "toolgate")
  if ok then return lib end
  tried[#tried + 1] = "system loader: " .. tostring(lib)
  error("toolgate: cannot find libtoolgate.so (set TOOLGATE_LIB)\n  " ..
        table.concat(tried, "\n  "), 0)
end

local C = load_library()

-- Nodes are read in place (Node below): tg_value_t as core/tg_internal.h
-- lays it out -- not part of toolgate.h, so the library is asked
-- (tg_value_layout) and must agree, or nothing it returns can be read.
ffi.cdef [[
struct tg_value_t {
    const char *key;
    uint32_t key_len;
    uint32_t offset;
    uint32_t len;
    uint8_t type;
    uint8_t flags;
    union {
        const char *str;
        const char *text;
        const struct tg_value_t *items;
    } p;
    double num;
};
]]
do
  local fields = { "key", "key_len", "offset", "len", "type", "p", "num" }
  local ok = tonumber(C.tg_value_layout(0)) == ffi.sizeof("tg_value_t")
  for i, f in ipairs(fields) do ok = ok and tonumber(C.tg_value_layout(i)) == ffi.offsetof("tg_value_t", f) end
  if not ok then
    error("toolgate.core_ffi: libtoolgate lays out its values (tg_value_t) otherwise than this binding declares: "
      .. "the library and lua/toolgate are from different versions", 0)
  end
end

local TG_NO_OFFSET = ffi.cast("size_t", -1)
local LIMIT_NAMES = {
  "max_input_bytes", "max_depth", "max_string_bytes", "max_members", "max_items",
  "regex_match_limit", "max_validation_steps", "max_pattern_bytes", "max_regex_steps", "max_registry_bytes",
}
local IS_LIMIT = {}
for _, name in ipairs(LIMIT_NAMES) do IS_LIMIT[name] = true end
local TYPE_NAMES = { [0] = "null", "boolean", "boolean", "number", "string", "array", "object" }
local FORMATS = { auto = 0, native = 1, openai = 2, anthropic = 3, mcp = 4 }
local FORMAT_NAMES = { [1] = "native", [2] = "openai", [3] = "anthropic", [4] = "mcp" }
local RESOLUTIONS = { [0] = "resolved", "unknown", "ambiguous" }

local M = { VERSION = "0.1.0", BINDING = "ffi" }
-- the loaded libtoolgate.so, for the other FFI bindings of it (toolgate.proc_ffi)
M.library = C

local size_box = ffi.new("size_t[1]")
local hex_buf = ffi.new("char[33]")
local hash_buf = ffi.new("tg_hash128_t")
local number_buf = ffi.new("char[32]")

-- Results and messages -------------------------------------------------------

local function error_values(err, with_offset)
  local message, code = ffi.string(err.message), ffi.string(C.tg_code_name(err.code))
  if not with_offset then return nil, message, code end
  if err.offset == TG_NO_OFFSET then return nil, message, code, nil end
  return nil, message, code, tonumber(err.offset)
end

-- Schema errors locate themselves by JSON Pointer, not byte offset.
local function schema_error_values(err)
  local message, code = ffi.string(err.message), ffi.string(C.tg_code_name(err.code))
  return nil, message, code, ffi.string(err.pointer)
end

local function lstring(ptr)
  if ptr == nil then return nil end
  return ffi.string(ptr, size_box[0])
end

local function hex_of(h)
  C.tg_hash128_hex(h, hex_buf)
  return ffi.string(hex_buf, 32)
end

local function finding_table(f)
  return {
    code = f.code == 2 and "H2" or "H3",
    keyword = ffi.string(f.keyword),
    pointer = ffi.string(f.pointer),
    schema_pointer = ffi.string(f.schema_pointer),
    message = ffi.string(f.message),
  }
end

-- Argument checks (misuse raises, as luaL_check* does in core_c.c) ----------

local function check_string(s, n)
  if type(s) ~= "string" then
    error("bad argument #" .. n .. " (string expected, got " .. type(s) .. ")", 3)
  end
end

local function opt_string(s, n)
  if s ~= nil then check_string(s, n) end
end

local function read_limits(t, lim)
  if type(t) ~= "table" then error("limits: table expected, got " .. type(t), 3) end
  for k, v in pairs(t) do
    if type(k) ~= "string" then error("limits: keys must be strings", 3) end
    if not IS_LIMIT[k] then error("limits: unknown limit '" .. k .. "'", 3) end
    if type(v) ~= "number" or v < 0 or v ~= math.floor(v) or v >= 2^63 then
      error("limits: " .. k .. " must be a non-negative integer", 3)
    end
    lim[k] = v
  end
end

local function limits_table(lim)
  local t = {}
  for _, name in ipairs(LIMIT_NAMES) do t[name] = tonumber(lim[name]) end
  return t
end

-- Schema options: {closed = bool, assert_formats = bool, ignore_keywords = {...},
-- annotation_formats = {...}}.  Returns the struct and what keeps the C
-- strings it points to alive (the caller holds it through the C call).
local STRING_LISTS = { "ignore_keywords", "annotation_formats" }

local function schema_options(t)
  local opt = ffi.new("tg_schema_options_t")
  C.tg_schema_options_default(opt)
  if t == nil then return opt end
  if type(t) ~= "table" then error("schema options: table expected, got " .. type(t), 3) end
  if t.closed ~= nil then opt.closed = t.closed and 1 or 0 end
  if t.assert_formats ~= nil then opt.assert_formats = t.assert_formats and 1 or 0 end
  local anchor = {}
  for _, field in ipairs(STRING_LISTS) do
    local list = t[field]
    if list ~= nil then
      if type(list) ~= "table" then error("schema options: " .. field .. " must be a list", 3) end
      local strings = ffi.new("const char *[?]", #list + 1)
      for i, k in ipairs(list) do
        if type(k) ~= "string" then error("schema options: " .. field .. " must hold strings", 3) end
        strings[i - 1] = k
      end
      strings[#list] = nil
      opt[field] = strings
      anchor[field] = strings
    end
  end
  return opt, anchor
end

-- Engine ---------------------------------------------------------------------

local Engine, Doc, Node, Call, Calls, Registry, Schema, Norm = {}, {}, {}, {}, {}, {}, {}, {}
Engine.__index, Doc.__index, Node.__index, Calls.__index = Engine, Doc, Node, Calls
Call.__index, Registry.__index, Schema.__index, Norm.__index = Call, Registry, Schema, Norm

-- One allocation holds the engine pointer, its reusable output buffer and
-- the scratch structs every call uses.
local state_t = ffi.typeof [[
struct {
    tg_engine_t *e;
    tg_buf_t out;
    tg_error_t err;
    tg_limits_t lim;
    tg_rung_result_t rung;
    tg_finding_t findings[16];
    tg_agreement_t agreement;
}
]]

local function free_state(st)
  if st.e ~= nil then
    C.tg_buf_free(st.out)
    C.tg_engine_free(st.e)
    st.e = nil
  end
end

function M.new_engine(limits)
  local st = state_t()
  C.tg_limits_default(st.lim)
  if limits ~= nil then read_limits(limits, st.lim) end
  st.e = C.tg_engine_new(st.lim, nil, nil, st.err)
  if st.e == nil then return error_values(st.err, false) end
  C.tg_buf_init(st.out, st.e)
  ffi.gc(st, free_state)
  return setmetatable({ st = st }, Engine)
end

local function check_engine(self)
  if getmetatable(self) ~= Engine then error("toolgate engine expected", 3) end
  if self.st.e == nil then error("toolgate engine already freed", 3) end
  return self.st
end

function Engine:limits()
  local st = check_engine(self)
  C.tg_engine_limits(st.e, st.lim)
  return limits_table(st.lim)
end

function Engine:set_limits(t)
  local st = check_engine(self)
  C.tg_engine_limits(st.e, st.lim)
  read_limits(t, st.lim)
  if C.tg_engine_set_limits(st.e, st.lim, st.err) ~= 0 then return error_values(st.err, false) end
  return true
end

function Engine:canon(text)
  local st = check_engine(self)
  check_string(text, 1)
  C.tg_buf_reset(st.out)
  if C.tg_canon(st.e, text, #text, st.out, st.err) ~= 0 then return error_values(st.err, true) end
  return ffi.string(st.out.data, st.out.len)
end

function Engine:hash(text)
  local st = check_engine(self)
  check_string(text, 1)
  C.tg_buf_reset(st.out)
  if C.tg_canon(st.e, text, #text, st.out, st.err) ~= 0 then return error_values(st.err, true) end
  C.tg_hash128(st.out.data, st.out.len, hash_buf)
  return hex_of(hash_buf)
end

-- Documents and nodes --------------------------------------------------------

local doc_box = ffi.new("tg_doc_t *[1]")

function Engine:parse(text)
  local st = check_engine(self)
  check_string(text, 1)
  if C.tg_parse(st.e, text, #text, doc_box, st.err) ~= 0 then return error_values(st.err, true) end
  local d = ffi.gc(doc_box[0], C.tg_doc_free)
  return setmetatable({ engine = self, d = d }, Doc)
end

function Engine:parse_registry(text)
  local st = check_engine(self)
  check_string(text, 1)
  if C.tg_parse_registry(st.e, text, #text, doc_box, st.err) ~= 0 then return error_values(st.err, true) end
  local d = ffi.gc(doc_box[0], C.tg_doc_free)
  return setmetatable({ engine = self, d = d }, Doc)
end

local function node(owner, engine, ptr)
  if ptr == nil then return nil end
  return setmetatable({ owner = owner, engine = engine, p = ptr }, Node)
end

function Doc:root()
  if self.d == nil then error("toolgate document used after it was freed", 2) end
  return node(self, self.engine, C.tg_doc_root(self.d))
end

-- free() releases the C memory now rather than at the next garbage
-- collection (which knows nothing of its size); the document and its nodes
-- are unusable afterwards.
function Doc:free()
  if self.d ~= nil then
    C.tg_doc_free(ffi.gc(self.d, nil))
    self.d = nil
  end
end

-- A node is usable while what owns its memory (its document, its call, or
-- the set of calls it came from) has not been freed.
local function P(self)
  local o = self.owner
  if o.d == nil and o.c == nil and o.s == nil then error("toolgate node used after its document was freed", 3) end
  return self.p
end

-- A node is read in place: the binding declares tg_value_t as the core lays
-- it out (checked when the library loads), so walking a document makes no
-- call into the core a node.  What the accessors in tg_dom.c answer, field
-- for field: type, len (of strings, arrays and objects; 0 otherwise), the
-- items of arrays and objects, the keys of objects.
function Node:type() return TYPE_NAMES[P(self).type] end

function Node:len()
  local v = P(self)
  local t = v.type
  return (t == 4 or t == 5 or t == 6) and v.len or 0
end

function Node:offset() return P(self).offset end

function Node:at(i)
  if type(i) ~= "number" then error("bad argument #1 to 'at' (number expected)", 2) end
  local v = P(self)
  local t = v.type
  if i < 1 or (t ~= 5 and t ~= 6) or i > v.len then return nil end
  return node(self.owner, self.engine, v.p.items + (i - 1))
end

function Node:key(i)
  if type(i) ~= "number" then error("bad argument #1 to 'key' (number expected)", 2) end
  local v = P(self)
  if i < 1 or v.type ~= 6 or i > v.len then return nil end
  local m = v.p.items[i - 1]
  return ffi.string(m.key, m.key_len)
end

function Node:get(key)
  check_string(key, 1)
  return node(self.owner, self.engine, C.tg_get(P(self), key, #key))
end

function Node:has_key(key)
  check_string(key, 1)
  return C.tg_has_key(P(self), key, #key) ~= 0
end

-- The Lua value of a scalar: nil for null and for containers.
function Node:value()
  local v = P(self)
  local t = v.type
  if t == 1 then return false end
  if t == 2 then return true end
  if t == 3 then return v.num end
  if t == 4 then return ffi.string(v.p.str, v.len) end
  return nil
end

function Node:text()
  local v = P(self)
  if v.type ~= 3 then return nil end
  return ffi.string(v.p.text, v.len)
end

-- An MCP message as tg_mcp_read says it is, a table (the same fields under
-- both bindings):
--   kind        "message", "not_object"; from Decider:mcp also "not_json"
--               (why: the parse error) and "batch" (an array, not read)
--   id          the id's canonical text when it is a string or an integer
--               within +-(2^53 - 1); bad_id = true for any other id member;
--               id_text its canonical text either way, id_null = true for null
--   method      the method when a string; bad_method = true for another type
--   result, error, cursor   true for a "result", an "error" member, a
--               params.cursor
--   protocol_version  the era a request claims: params._meta's
--               "io.modelcontextprotocol/protocolVersion" when a string
--   name, call, call_error  a tools/call's params.name, and the call text
--               on the server given ({"server", "name", "arguments"}) or
--               why there is none
--   checked, tool, digest   (Decider:mcp) the call was checked; what its
--               rung resolved, when the core decided it alone
local MCP_KINDS = { [0] = "not_json", "batch", "not_object", "message" }
local mcp_box = ffi.new("tg_mcp_message_t")

local function mcp_frame(m)
  local kind = MCP_KINDS[m.kind]
  if m.kind == 0 then return { kind = kind, why = ffi.string(m.error.message) } end
  if m.kind ~= 3 then return { kind = kind } end
  local f = { kind = kind, id_null = m.id_null ~= 0, result = m.has_result ~= 0, error = m.has_error ~= 0,
    cursor = m.has_cursor ~= 0 }
  if m.id_text ~= nil then
    f.id_text = ffi.string(m.id_text, m.id_len)
    if m.id == 1 then f.id = f.id_text else f.bad_id = true end
  end
  if m.method == 1 then f.method = ffi.string(m.method_name, m.method_len) elseif m.method == 2 then f.bad_method = true end
  if m.protocol_version ~= nil then f.protocol_version = ffi.string(m.protocol_version, m.protocol_version_len) end
  if m.name ~= nil then f.name = ffi.string(m.name, m.name_len) end
  if m.call ~= nil then f.call = ffi.string(m.call, m.call_len) end
  if m.call_error ~= nil then f.call_error = ffi.string(m.call_error) end
  return f
end

-- mcp([server]) -> the message's frame (above) | nil, message, code; with a
-- server, a tools/call's call is written for it.
function Node:mcp(server)
  opt_string(server, 1)
  local st = self.engine.st
  C.tg_buf_reset(st.out)
  if C.tg_mcp_read(P(self), server, server and #server or 0, mcp_box, st.out, st.err) ~= 0 then
    return error_values(st.err, false)
  end
  return mcp_frame(mcp_box)
end

-- A normalization plan argument (nil: none); see Engine:norm below.
local function opt_norm(n, i)
  if n == nil then return nil end
  if getmetatable(n) ~= Norm then error("bad argument #" .. i .. " (toolgate norm expected)", 3) end
  return n.n
end

local MODES = { rfc8785 = 0, exact = 1 } -- enum tg_canon_mode

-- A canonical mode argument (nil: "rfc8785"), as luaL_checkoption reads it.
local function check_mode(mode, i)
  local m = MODES[mode == nil and "rfc8785" or mode]
  if not m then error("bad argument #" .. i .. " (invalid option '" .. tostring(mode) .. "')", 3) end
  return m
end

-- Writes node p's canonical form into the engine's buffer; true when it did.
local function write_canon(st, plan, p, mode)
  C.tg_buf_reset(st.out)
  return C.tg_canon_normalized(plan, p, mode, st.out, st.err) == 0
end

-- canon([norm[, mode]]) -> canonical form (normalized by norm; mode
-- "rfc8785", the default, or "exact": TG_CANON_EXACT) | nil, message, code, offset
function Node:canon(norm, mode)
  local st, plan, m = self.engine.st, opt_norm(norm, 1), check_mode(mode, 2)
  if not write_canon(st, plan, P(self), m) then return error_values(st.err, true) end
  return ffi.string(st.out.data, st.out.len)
end

-- digest([norm[, mode]]) -> XXH3-128 of the canonical form as a 16-byte token
-- (the hash's in-memory bytes: compare tokens, do not print them; for
-- engine:agree without hex round trips) | nil, ...
function Node:digest(norm, mode)
  local st, plan, m = self.engine.st, opt_norm(norm, 1), check_mode(mode, 2)
  if not write_canon(st, plan, P(self), m) then return error_values(st.err, true) end
  C.tg_hash128(st.out.data, st.out.len, hash_buf)
  return ffi.string(hash_buf, 16)
end

-- hash([norm[, mode]]) -> 32 hex digits of XXH3-128(canonical form) | nil, ...
function Node:hash(norm, mode)
  local st, plan, m = self.engine.st, opt_norm(norm, 1), check_mode(mode, 2)
  if not write_canon(st, plan, P(self), m) then return error_values(st.err, true) end
  C.tg_hash128(st.out.data, st.out.len, hash_buf)
  return hex_of(hash_buf)
end

-- exact() -> a number's exact form (TG_CANON_EXACT) when its double does
-- not spell it; false when it does (value() is then exact); nil for
-- anything else | nil, message, code, offset
function Node:exact()
  local p = P(self)
  if p.type ~= 3 then return nil end
  if C.tg_num_round_trips(p) ~= 0 then return false end
  local st = self.engine.st
  C.tg_buf_reset(st.out)
  if C.tg_canon_value_mode(p, MODES.exact, st.out, st.err) ~= 0 then return error_values(st.err, true) end
  return ffi.string(st.out.data, st.out.len)
end

local function check_node(n, i)
  if getmetatable(n) ~= Node then error("bad argument #" .. i .. " (toolgate node expected)", 3) end
  return P(n)
end

local function opt_node(n, i)
  if n == nil then return nil end
  return check_node(n, i)
end

-- Calls ------------------------------------------------------------------------

local call_box = ffi.new("tg_call_t *[1]")
local calls_box = ffi.new("tg_calls_t *[1]")

local function call_format(format)
  local f = FORMATS[format or "auto"]
  if not f then error("bad argument #2 (unknown call format '" .. tostring(format) .. "')", 3) end
  return f
end

function Engine:decode_call(text, format)
  local st = check_engine(self)
  check_string(text, 1)
  if C.tg_call_decode(st.e, text, #text, call_format(format), call_box, st.err) ~= 0 then
    return error_values(st.err, true)
  end
  return setmetatable({ engine = self, c = ffi.gc(call_box[0], C.tg_call_free) }, Call)
end

function Engine:decode_calls(text, format)
  local st = check_engine(self)
  check_string(text, 1)
  if C.tg_calls_decode(st.e, text, #text, call_format(format), calls_box, st.err) ~= 0 then
    return error_values(st.err, true)
  end
  return setmetatable({ engine = self, s = ffi.gc(calls_box[0], C.tg_calls_free) }, Calls)
end

local function live_calls(self)
  if self.s == nil then error("toolgate calls used after they were freed", 3) end
  return self.s
end

function Calls:count() return tonumber(C.tg_calls_count(live_calls(self))) end
function Calls:shape() return ffi.string(C.tg_call_shape_name(C.tg_calls_shape(live_calls(self)))) end

-- calls:at(i) (i from 1): a view of call i that lives as long as the set.
function Calls:at(i)
  local s = live_calls(self)
  if type(i) ~= "number" then error("bad argument #1 to 'at' (number expected)", 2) end
  if i < 1 then return nil end
  local c = C.tg_calls_at(s, i - 1)
  if c == nil then return nil end
  return setmetatable({ engine = self.engine, c = c, set = self }, Call)
end

function Calls:free()
  if self.s ~= nil then
    C.tg_calls_free(ffi.gc(self.s, nil))
    self.s = nil
  end
end

local function live_call(self)
  if self.set and self.set.s == nil then self.c = nil end
  if self.c == nil then error("toolgate call used after it was freed", 3) end
  return self.c
end

-- A view's nodes belong to its set.
local function call_node(self, ptr) return node(self.set or self, self.engine, ptr) end

function Call:format() return FORMAT_NAMES[C.tg_call_format_of(live_call(self))] end
function Call:shape() return ffi.string(C.tg_call_shape_name(C.tg_call_shape(live_call(self)))) end
function Call:server() return lstring(C.tg_call_server(live_call(self), size_box)) end
function Call:name() return lstring(C.tg_call_name(live_call(self), size_box)) end
function Call:arguments() return call_node(self, C.tg_call_arguments(live_call(self))) end
function Call:id() return call_node(self, C.tg_call_id(live_call(self))) end
function Call:context() return call_node(self, C.tg_call_context(live_call(self))) end

-- A view's free() only makes the view unusable: its set owns it.
function Call:free()
  if self.c ~= nil then
    if not self.set then C.tg_call_free(ffi.gc(self.c, nil)) end
    self.c = nil
  end
end

-- Schemas ------------------------------------------------------------------------

local schema_box = ffi.new("tg_schema_t *[1]")

function Engine:compile_schema(n, opts)
  local st = check_engine(self)
  local p = check_node(n, 1)
  local opt, anchor = schema_options(opts)
  local rc = C.tg_schema_compile(st.e, p, opt, schema_box, st.err)
  local _ = anchor -- the option strings must live through the compile
  if rc ~= 0 then return schema_error_values(st.err) end
  return setmetatable({ engine = self, s = ffi.gc(schema_box[0], C.tg_schema_free) }, Schema)
end

-- validate(node) -> list of findings (empty when valid) | nil, message, code
function Schema:validate(n)
  local st = self.engine.st
  local p = check_node(n, 1)
  if C.tg_validate(st.e, self.s, p, st.findings, 16, size_box, st.err) ~= 0 then
    return error_values(st.err, false)
  end
  local out = {}
  for i = 0, tonumber(size_box[0]) - 1 do out[#out + 1] = finding_table(st.findings[i]) end
  return out
end

-- Registries ---------------------------------------------------------------------

function Engine:registry()
  local st = check_engine(self)
  local r = C.tg_registry_new(st.e, st.err)
  if r == nil then return error_values(st.err, false) end
  return setmetatable({ engine = self, r = ffi.gc(r, C.tg_registry_free) }, Registry)
end

-- Registry images (core/tg_image.c) -----------------------------------------

local Image = {}
Image.__index = Image
local IMAGE_FORMATS = { [0] = "auto", "native", "openai", "anthropic", "mcp" }
local IMAGE_FORMAT_NUMBERS = { auto = 0, native = 1, openai = 2, anthropic = 3, mcp = 4 }
local image_box = ffi.new("tg_image_t *[1]")
local image_source = ffi.new("tg_image_source_t")

-- image_write({{text=, server=, label=, path=, format=, trusted=}, ...}) -> bytes | nil, message, code
function Engine:image_write(sources)
  local st = check_engine(self)
  if type(sources) ~= "table" then error("bad argument #1 (table expected, got " .. type(sources) .. ")", 2) end
  local n = #sources
  local src = ffi.new("tg_image_source_t[?]", n > 0 and n or 1)
  for i, s in ipairs(sources) do
    if type(s) ~= "table" then error("bad argument #1 (sources must be tables)", 2) end
    check_string(s.text, 1)
    opt_string(s.server, 1)
    opt_string(s.label, 1)
    opt_string(s.path, 1)
    local format = IMAGE_FORMAT_NUMBERS[s.format or "auto"]
    if not format then error("bad argument #1 (invalid option '" .. tostring(s.format) .. "')", 2) end
    local d = src[i - 1]
    d.text, d.text_len = s.text, #s.text
    if s.server then d.server, d.server_len = s.server, #s.server end
    if s.label then d.label, d.label_len = s.label, #s.label end
    if s.path then d.path, d.path_len = s.path, #s.path end
    d.format, d.trusted = format, (s.trusted == nil or s.trusted) and 1 or 0
  end
  C.tg_buf_reset(st.out)
  -- (the strings the sources point to are held by the sources table until the call returns)
  if C.tg_image_write(st.e, src, n, st.out, st.err) ~= 0 then return error_values(st.err, false) end
  return ffi.string(st.out.data, st.out.len)
end

function Engine:image_map(path)
  local st = check_engine(self)
  check_string(path, 1)
  if C.tg_image_map(st.e, path, image_box, st.err) ~= 0 then return error_values(st.err, false) end
  return setmetatable({ engine = self, img = ffi.gc(image_box[0], C.tg_image_free) }, Image)
end

-- the image reads bytes in place: it holds the string while it lives
function Engine:image_open(bytes)
  local st = check_engine(self)
  check_string(bytes, 1)
  if C.tg_image_open(st.e, bytes, #bytes, image_box, st.err) ~= 0 then return error_values(st.err, true) end
  return setmetatable({ engine = self, bytes = bytes, img = ffi.gc(image_box[0], C.tg_image_free) }, Image)
end

local function check_image(self)
  if getmetatable(self) ~= Image then error("registry image expected", 3) end
  if self.img == nil then error("registry image used after free", 3) end
  return self.img
end

local function image_index(img, i)
  if type(i) ~= "number" or i < 1 or i > tonumber(C.tg_image_count(img)) or i % 1 ~= 0 then
    error("bad argument #1 (no such source)", 3)
  end
  C.tg_image_source(img, i - 1, image_source)
  return image_source
end

function Image:count()
  return tonumber(C.tg_image_count(check_image(self)))
end

function Image:source(i)
  local s = image_index(check_image(self), i)
  return {
    server = s.server ~= nil and ffi.string(s.server, s.server_len) or nil,
    label = ffi.string(s.label, s.label_len),
    path = ffi.string(s.path, s.path_len),
    format = IMAGE_FORMATS[s.format],
    trusted = s.trusted ~= 0,
    hash = hex_of(s.hash),
  }
end

function Image:parse(i)
  local s = image_index(check_image(self), i)
  local st = self.engine.st
  if C.tg_parse_registry(st.e, s.text, s.text_len, doc_box, st.err) ~= 0 then return error_values(st.err, true) end
  return setmetatable({ engine = self.engine, d = ffi.gc(doc_box[0], C.tg_doc_free) }, Doc)
end

function Image:check_sources()
  local img = check_image(self)
  local st = self.engine.st
  if C.tg_image_check_sources(img, st.err) ~= 0 then return error_values(st.err, false) end
  return true
end

function Image:free()
  if self.img ~= nil then
    C.tg_image_free(ffi.gc(self.img, nil))
    self.img = nil
  end
end

-- add(server, name, description, input_node, output_node, opts)
--   -> index (from 1) | nil, message, code, json_pointer
function Registry:add(server, name, description, input, output, opts)
  local st = self.engine.st
  check_string(server, 1)
  check_string(name, 2)
  opt_string(description, 3)
  local ip, op = opt_node(input, 4), opt_node(output, 5)
  local opt, anchor = schema_options(opts)
  local rc = C.tg_registry_add(self.r, server, #server, name, #name, description,
    description and #description or 0, ip, op, opt, size_box, st.err)
  local _ = anchor
  if rc ~= 0 then return schema_error_values(st.err) end
  return tonumber(size_box[0]) + 1
end

function Registry:count() return tonumber(C.tg_registry_count(self.r)) end

function Registry:find(server, name)
  check_string(server, 1)
  check_string(name, 2)
  local i = C.tg_registry_find(self.r, server, #server, name, #name)
  if i < 0 then return nil end
  return tonumber(i) + 1
end

local index_buf = ffi.new("size_t[16]")

-- find_name(name) -> list of indexes (from 1) of the tools with that name
function Registry:find_name(name)
  check_string(name, 1)
  local n = tonumber(C.tg_registry_find_name(self.r, name, #name, nil, 0))
  local out = {}
  if n == 0 then return out end
  local buf = n <= 16 and index_buf or ffi.new("size_t[?]", n)
  C.tg_registry_find_name(self.r, name, #name, buf, n)
  for i = 0, n - 1 do out[#out + 1] = tonumber(buf[i]) + 1 end
  return out
end

-- tool(i) -> {server =, name =, pin = hex} | nil
function Registry:tool(i)
  if type(i) ~= "number" then error("bad argument #1 to 'tool' (number expected)", 2) end
  local pin = i >= 1 and C.tg_registry_pin(self.r, i - 1) or nil
  if pin == nil then return nil end
  return {
    server = lstring(C.tg_registry_server(self.r, i - 1, size_box)),
    name = lstring(C.tg_registry_name(self.r, i - 1, size_box)),
    pin = hex_of(pin),
  }
end

-- model_text(i|nil, name, deferred, code, path, message, approval_id, hint)
-- -> the text a model reads about a refused or deferred call (tg_model_text;
-- path, message, approval_id and hint may be nil)
function Registry:model_text(i, name, deferred, code, path, message, approval_id, hint)
  local st = self.engine.st
  if i ~= nil and type(i) ~= "number" then error("bad argument #1 to 'model_text' (number expected)", 2) end
  check_string(name, 2)
  check_string(code, 4)
  opt_string(path, 5)
  opt_string(message, 6)
  opt_string(approval_id, 7)
  opt_string(hint, 8)
  C.tg_buf_reset(st.out)
  if C.tg_model_text(self.r, i and i - 1 or -1, name, deferred and 1 or 0, code, path, message, approval_id, hint,
      st.out, st.err) ~= 0 then
    return error_values(st.err, false)
  end
  return ffi.string(st.out.data, st.out.len)
end

-- validate_output(i, node) -> findings (empty when valid)
--   | nil, message, code (NO_OUTPUT_SCHEMA when the tool declares none)
function Registry:validate_output(i, n)
  local st = self.engine.st
  if type(i) ~= "number" then error("bad argument #1 to 'validate_output' (number expected)", 2) end
  local p = check_node(n, 2)
  local s = i >= 1 and C.tg_registry_output_schema(self.r, i - 1) or nil
  if s == nil then return nil, "the tool declares no output schema", "NO_OUTPUT_SCHEMA" end
  if C.tg_validate(st.e, s, p, st.findings, 16, size_box, st.err) ~= 0 then
    return error_values(st.err, false)
  end
  local out = {}
  for k = 0, tonumber(size_box[0]) - 1 do out[#out + 1] = finding_table(st.findings[k]) end
  return out
end

-- check(server|nil, name, args_node, report_also) -> result | nil, message, code
-- result = {resolution =, tool =, n_candidates =, candidates =, findings =, also =}
-- (candidates, findings and also only when not empty)
function Registry:check(server, name, args, report_also)
  local st = self.engine.st
  opt_string(server, 1)
  check_string(name, 2)
  local ap = check_node(args, 3)
  local res = st.rung
  if C.tg_rung_check(st.e, self.r, server, server and #server or 0, name, #name, ap,
                     report_also and 1 or 0, res, st.err) ~= 0 then
    return error_values(st.err, false)
  end
  -- the lists are present only when not empty: no tables built for nothing
  local out = { resolution = RESOLUTIONS[res.resolution] }
  if res.resolution == 0 then out.tool = tonumber(res.tool) + 1 end
  local n = tonumber(res.n_candidates)
  out.n_candidates = n
  if n > 0 then
    local list = {}
    for i = 0, math.min(n, 16) - 1 do list[i + 1] = tonumber(res.candidates[i]) + 1 end
    out.candidates = list
  end
  n = tonumber(res.n_findings)
  if n > 0 then
    local list = {}
    for i = 0, n - 1 do list[i + 1] = finding_table(res.findings[i]) end
    out.findings = list
  end
  n = tonumber(res.n_also)
  if n > 0 then
    local list = {}
    for i = 0, n - 1 do list[i + 1] = tonumber(res.also[i]) + 1 end
    out.also = list
  end
  return out
end

-- Normalization plans and agreement ------------------------------------------------

local OPS = { trim = 1, lower = 2, path = 4, id = 8 } -- enum tg_norm_op

-- norm() -> norm | nil, message, code
function Engine:norm()
  local st = check_engine(self)
  local n = C.tg_norm_new(st.e, st.err)
  if n == nil then return error_values(st.err, false) end
  return setmetatable({ engine = self, n = ffi.gc(n, C.tg_norm_free) }, Norm)
end

-- The bits of a list of operation names; misuse raises (level 3: the caller's caller).
local function op_bits(ops, fname)
  if type(ops) ~= "table" then
    error("bad argument #2 to '" .. fname .. "' (table expected, got " .. type(ops) .. ")", 3)
  end
  local bits, seen = 0, {}
  for i = 1, #ops do
    local name = ops[i]
    if type(name) ~= "string" then
      error("bad argument #2 to '" .. fname .. "' (operation " .. i .. " is not a string)", 3)
    end
    if not OPS[name] then error("bad argument #2 to '" .. fname .. "' (unknown operation '" .. name .. "')", 3) end
    if not seen[name] then -- a set of bits, summed without bitwise operators
      seen[name] = true
      bits = bits + OPS[name]
    end
  end
  return bits
end

-- add_rule(pattern, {"trim", "lower", "path", "id"...}) -> true | nil, message, code
-- (an unknown operation name is misuse and raises)
function Norm:add_rule(pattern, ops)
  check_string(pattern, 1)
  local bits = op_bits(ops, "add_rule")
  local st = self.engine.st
  if C.tg_norm_add_rule(self.n, pattern, #pattern, bits, st.err) ~= 0 then return error_values(st.err, false) end
  return true
end

-- apply(s, {"trim", "lower", "path", "id"...}) -> s as those operations
-- leave it ("id" with this plan's aliases) | nil, message, code
function Norm:apply(str, ops)
  check_string(str, 1)
  local bits = op_bits(ops, "apply")
  local st = self.engine.st
  C.tg_buf_reset(st.out)
  if C.tg_norm_string(self.n, bits, str, #str, st.out, st.err) ~= 0 then return error_values(st.err, false) end
  return ffi.string(st.out.data, st.out.len)
end

-- add_alias(from, to) -> true | nil, message, code
function Norm:add_alias(from, to)
  check_string(from, 1)
  check_string(to, 2)
  local st = self.engine.st
  if C.tg_norm_add_alias(self.n, from, #from, to, #to, st.err) ~= 0 then return error_values(st.err, false) end
  return true
end

local TWO32 = ffi.new("uint64_t", 4294967296)
local small_values = ffi.new("tg_hash128_t[32]")

-- agree({hex, ...}) -> {n =, distinct =, modal_count =, representative = (from 1)}
--   | nil, message, code
function Engine:agree(list)
  local st = check_engine(self)
  if type(list) ~= "table" then
    error("bad argument #1 to 'agree' (table expected, got " .. type(list) .. ")", 2)
  end
  local n = #list
  local v = n <= 32 and small_values or ffi.new("tg_hash128_t[?]", n)
  for i = 1, n do
    local s = list[i]
    if type(s) == "string" and #s == 16 then -- a node:digest() token
      ffi.copy(v + (i - 1), s, 16)
    else
      if type(s) ~= "string" or #s ~= 32 or not s:find("^%x+$") then
        error("bad argument #1 to 'agree' (item " .. i .. " is not 32 hex digits)", 2)
      end
      -- 64-bit halves from 32-bit pieces: a Lua number holds those exactly
      v[i - 1].hi = TWO32 * tonumber(s:sub(1, 8), 16) + tonumber(s:sub(9, 16), 16)
      v[i - 1].lo = TWO32 * tonumber(s:sub(17, 24), 16) + tonumber(s:sub(25, 32), 16)
    end
  end
  local a = st.agreement
  if C.tg_agree(st.e, v, n, a, st.err) ~= 0 then return error_values(st.err, false) end
  return {
    n = tonumber(a.n), distinct = tonumber(a.distinct), modal_count = tonumber(a.modal_count),
    representative = tonumber(a.representative) + 1,
  }
end

-- The first call asks for this many pointers; a caller that wants more and
-- has more gets a second call sized to the answer (as core_c.c does).
local POINTERS_FIRST = 64

-- pointer_agreement({node, ...}, rep (from 1), norm | nil, max)
--   -> {{pointer =, agree =, present =}, ...} (lowest agreement first), total
--   | nil, message, code
function Engine:pointer_agreement(list, rep, norm, max)
  local st = check_engine(self)
  if type(list) ~= "table" then
    error("bad argument #1 to 'pointer_agreement' (table expected, got " .. type(list) .. ")", 2)
  end
  local n = #list
  if type(rep) ~= "number" or rep ~= math.floor(rep) or rep < 1 or rep > n then
    error("bad argument #2 to 'pointer_agreement' (representative out of range)", 2)
  end
  local plan = opt_norm(norm, 3)
  if type(max) ~= "number" or max ~= math.floor(max) or max < 0 then
    error("bad argument #4 to 'pointer_agreement' (max must be a non-negative integer)", 2)
  end
  local docs = ffi.new("const tg_value_t *[?]", n)
  for i = 1, n do
    local nd = list[i]
    if getmetatable(nd) ~= Node then
      error("bad argument #1 to 'pointer_agreement' (item " .. i .. " is not a toolgate node)", 2)
    end
    docs[i - 1] = P(nd) -- the list keeps the node, and so its document, alive
  end
  local asked = math.min(max, POINTERS_FIRST)
  local out = ffi.new("tg_pointer_agreement_t[?]", math.max(asked, 1))
  if C.tg_pointer_agreement(st.e, docs, n, rep - 1, plan, out, asked, size_box, st.err) ~= 0 then
    return error_values(st.err, false)
  end
  local count = tonumber(size_box[0])
  if count > asked and max > asked then
    asked = math.min(max, count)
    out = ffi.new("tg_pointer_agreement_t[?]", asked)
    if C.tg_pointer_agreement(st.e, docs, n, rep - 1, plan, out, asked, size_box, st.err) ~= 0 then
      return error_values(st.err, false)
    end
  end
  local result = {}
  for i = 0, math.min(count, asked) - 1 do
    local e = out[i]
    result[i + 1] = { pointer = ffi.string(e.pointer), agree = tonumber(e.agree), present = tonumber(e.present) }
  end
  return result, count
end

-- Compiled policies, contexts and checks -------------------------------------------

local Policy, Context = {}, {}
Policy.__index, Context.__index = Policy, Context
local policy_box = ffi.new("tg_policy_t *[1]")
local context_box = ffi.new("tg_context_t *[1]")

-- policy(json) -> policy | nil, message, code: the policy's built-in parts
-- compiled for this registry (core/toolgate.h, tg_policy_new).
function Registry:policy(json)
  local st = self.engine.st
  check_string(json, 1)
  if C.tg_policy_new(st.e, self.r, json, #json, policy_box, st.err) ~= 0 then return error_values(st.err, false) end
  return setmetatable({ registry = self, p = ffi.gc(policy_box[0], C.tg_policy_free) }, Policy)
end

-- set_norm(tool (from 1), norm) -> true: the tool's normalization plan,
-- kept alive by the policy.
function Policy:set_norm(tool, norm)
  if type(tool) ~= "number" then error("bad argument #1 to 'set_norm' (number expected)", 2) end
  if getmetatable(norm) ~= Norm then error("bad argument #2 to 'set_norm' (toolgate norm expected)", 2) end
  if tool < 1 or C.tg_policy_set_norm(self.p, tool - 1, norm.n, self.registry.engine.st.err) ~= 0 then
    error("bad argument #1 to 'set_norm' (no such tool in the policy)", 2)
  end
  self.norms = self.norms or {}
  self.norms[tool] = norm
  return true
end

-- context(json) -> context | nil, message, code
function Policy:context(json)
  local st = self.registry.engine.st
  check_string(json, 1)
  if C.tg_context_new(self.p, json, #json, context_box, st.err) ~= 0 then return error_values(st.err, false) end
  return setmetatable({ policy = self, c = ffi.gc(context_box[0], C.tg_context_free) }, Context)
end

-- A decider: the work space of checks.  A check that pauses in the host
-- (a custom stage, an observe hook that yields) holds its decider until it
-- is done, so a host running checks side by side needs one per check in
-- flight (toolgate.engine keeps a pool).
local Decider = {}
Decider.__index = Decider

function Engine:decider()
  local st = check_engine(self)
  local d = C.tg_decider_new(st.e, st.err)
  if d == nil then return error_values(st.err, false) end
  -- the batch's memory is the engine's: it goes with the decider, which
  -- holds the engine, never after it (finalizers run in any order)
  local batch = ffi.new("tg_buf_t")
  C.tg_buf_init(batch, st.e)
  local function free(p)
    C.tg_buf_free(batch)
    C.tg_decider_free(p)
  end
  return setmetatable({ engine = self, d = ffi.gc(d, free), out = ffi.new("tg_outcome_t"), batch = batch },
    Decider)
end

-- What each check step returns: status (0 decided, 1 a stage for the host,
-- 2 no more calls, 3 an ID to resolve, 4 a record), verdict (0 accept, 1
-- reject, 2 defer), the decision's JSON, code (nil for none: an accept),
-- stage, and the pending stage (from 1) | nil, message, code.  (The code's
-- nil is made here, not in toolgate.decision: a guard on it there, after
-- the decision table is allocated, made LuaJIT's side trace for rejects
-- fail to compile, so every reject ran interpreted.)
local function outcome(self, rc)
  if rc ~= 0 then return error_values(self.engine.st.err, false) end
  local o = self.out
  if o.status == 0 then
    return 0, o.verdict, ffi.string(o.json, o.json_len), o.code[0] ~= 0 and ffi.string(o.code) or nil,
      ffi.string(o.stage)
  end
  if o.status == 1 then return 1, nil, nil, nil, nil, tonumber(o.pending) + 1 end
  return tonumber(o.status)
end

-- check(policy, context|nil, text, format, flags, line) -> see outcome()
function Decider:check(policy, context, text, format, flags, line)
  if getmetatable(policy) ~= Policy then error("bad argument #1 to 'check' (toolgate policy expected)", 2) end
  if context ~= nil and getmetatable(context) ~= Context then
    error("bad argument #2 to 'check' (toolgate context expected)", 2)
  end
  check_string(text, 3)
  -- the nodes of the previous check die with it
  if self.pending then self.pending.c = nil; self.pending = nil end
  return outcome(self, C.tg_check(self.d, policy.p, context and context.c, text, #text, format or 0, flags or 0,
    line or 0, self.out, self.engine.st.err))
end

-- mcp(policy, context|nil, text, server, format, flags, decide) -> frame
-- (Node:mcp's) | frame, outcome() of its call's check when it was checked
-- (frame.checked) | nil, message, code: a gateway's message read, and
-- its tools/call decided, in one call into the core.
function Decider:mcp(policy, context, text, server, format, flags, decide)
  if getmetatable(policy) ~= Policy then error("bad argument #1 to 'mcp' (toolgate policy expected)", 2) end
  if context ~= nil and getmetatable(context) ~= Context then
    error("bad argument #2 to 'mcp' (toolgate context expected)", 2)
  end
  check_string(text, 3)
  check_string(server, 4)
  if self.pending then self.pending.c = nil; self.pending = nil end
  local m = mcp_box
  local rc = C.tg_mcp_check(self.d, policy.p, context and context.c, text, #text, server, #server, format or 0,
    flags or 0, decide and 1 or 0, m, self.out, self.engine.st.err)
  if m.checked == 0 then
    if rc ~= 0 then return error_values(self.engine.st.err, false) end
    return mcp_frame(m)
  end
  local f = mcp_frame(m)
  f.checked = true
  if rc == 0 and self.out.status == 0 then
    f.tool = m.tool >= 0 and tonumber(m.tool) + 1 or nil
    f.digest = m.args_digest[0] ~= 0 and ffi.string(m.args_digest, 32) or nil
  end
  return f, outcome(self, rc)
end

local line_box, used_box = ffi.new("size_t[1]"), ffi.new("size_t[1]")
local verdict_counts = ffi.new("size_t[3]")

local Workers = {}
Workers.__index = Workers

-- workers(threads) -> workers | nil, message, code: threads that decide
-- the lines of a chunk together (check_lines' last argument).
function Engine:workers(threads)
  local st = check_engine(self)
  if type(threads) ~= "number" then error("bad argument #1 to 'workers' (number expected)", 2) end
  local w = C.tg_workers_new(st.e, threads < 1 and 0 or threads, st.err)
  if w == nil then return error_values(st.err, false) end
  return setmetatable({ engine = self, w = ffi.gc(w, C.tg_workers_free) }, Workers)
end

function Workers:count() return tonumber(C.tg_workers_count(self.w)) end

-- check_lines(policy, context|nil, text, pos, format, flags, line[, workers])
--   -> status (2 every complete line done, 1 a stage for the host), the
--   position after what was read, the last line number, the decisions
--   written (JSON Lines), accepts, rejects, defers, the pending stage
--   (from 1) | nil, message, code, the position after the failed line,
--   its number
-- The chunk calls' frame: the counters cleared, the core's call(base,
-- len) on text from pos, then rc, the position after what was read and
-- the last line number.
local function chunk(self, text, pos, line, call)
  if self.pending then self.pending.c = nil; self.pending = nil end
  line_box[0], used_box[0] = line or 0, 0
  verdict_counts[0], verdict_counts[1], verdict_counts[2] = 0, 0, 0
  C.tg_buf_reset(self.batch)
  local rc = call(ffi.cast("const char *", text) + (pos - 1), #text - pos + 1)
  return rc, pos + tonumber(used_box[0]), tonumber(line_box[0])
end

local function counts()
  return tonumber(verdict_counts[0]), tonumber(verdict_counts[1]), tonumber(verdict_counts[2])
end

function Decider:check_lines(policy, context, text, pos, format, flags, line, workers)
  if getmetatable(policy) ~= Policy then error("bad argument #1 to 'check_lines' (toolgate policy expected)", 2) end
  check_string(text, 3)
  local st, c = self.engine.st, context and context.c
  local rc, next_pos, last = chunk(self, text, pos, line, function(base, len)
    if workers then
      return C.tg_check_lines_parallel(workers.w, self.d, policy.p, c, base, len, format or 0, flags or 0,
        line_box, used_box, self.batch, verdict_counts, self.out, st.err)
    end
    return C.tg_check_lines(self.d, policy.p, c, base, len, format or 0, flags or 0, line_box, used_box,
      self.batch, verdict_counts, self.out, st.err)
  end)
  local a, r, d = counts()
  if rc ~= 0 then
    local _, message, code = error_values(st.err, false)
    -- the decisions of the lines before the one that failed stand
    return nil, message, code, next_pos, last, ffi.string(self.batch.data, self.batch.len), a, r, d
  end
  return self.out.status == 1 and 1 or 2, next_pos, last, ffi.string(self.batch.data, self.batch.len), a, r, d,
    self.out.status == 1 and tonumber(self.out.pending) + 1 or nil
end

-- Sampled plans -----------------------------------------------------------------------

local Store = {}
Store.__index = Store

local function opt_store(store, i, fname)
  if store == nil then return nil end
  if getmetatable(store) ~= Store then
    error("bad argument #" .. i .. " to '" .. fname .. "' (toolgate store expected)", 3)
  end
  return store.s
end

-- classify(policy, context|nil, store|nil, text, flags, line, now) -> see
-- outcome() (status 3: an ID to resolve, 4: a record from the host's store)
function Decider:classify(policy, context, store, text, flags, line, now)
  if getmetatable(policy) ~= Policy then error("bad argument #1 to 'classify' (toolgate policy expected)", 2) end
  if context ~= nil and getmetatable(context) ~= Context then
    error("bad argument #2 to 'classify' (toolgate context expected)", 2)
  end
  local s = opt_store(store, 3, "classify")
  check_string(text, 4)
  if self.pending then self.pending.c = nil; self.pending = nil end
  return outcome(self, C.tg_classify(self.d, policy.p, context and context.c, s, text, #text, flags or 0,
    line or 0, now or 0, self.out, self.engine.st.err))
end

-- classify_lines(policy, context|nil, store|nil, text, pos, flags, line,
--   now[, workers]) -> status (2 every complete line done, 0 a plan decided
--   whose quarantines the host writes, 1 a stage, 3 an ID, 4 a record), the
--   position after what was read, the last line number, the decisions
--   written, accepts, rejects, defers, then for 0 verdict, json, code,
--   stage, for 1 the pending stage | nil, message, code, the position after
--   the failed line, its number, the decisions of the plans before it and
--   their accepts, rejects, defers
function Decider:classify_lines(policy, context, store, text, pos, flags, line, now, workers)
  if getmetatable(policy) ~= Policy then
    error("bad argument #1 to 'classify_lines' (toolgate policy expected)", 2)
  end
  local s = opt_store(store, 3, "classify_lines")
  check_string(text, 4)
  local st, c = self.engine.st, context and context.c
  local rc, next_pos, last = chunk(self, text, pos, line, function(base, len)
    if workers then
      return C.tg_classify_lines_parallel(workers.w, self.d, policy.p, c, s, base, len, flags or 0, now or 0,
        line_box, used_box, self.batch, verdict_counts, self.out, st.err)
    end
    return C.tg_classify_lines(self.d, policy.p, c, s, base, len, flags or 0, now or 0, line_box, used_box,
      self.batch, verdict_counts, self.out, st.err)
  end)
  local out = ffi.string(self.batch.data, self.batch.len)
  local a, r, d = counts()
  if rc ~= 0 then
    local _, message, code = error_values(st.err, false)
    return nil, message, code, next_pos, last, out, a, r, d
  end
  local o = self.out
  if o.status == 0 then
    return 0, next_pos, last, out, a, r, d, o.verdict, ffi.string(o.json, o.json_len), ffi.string(o.code),
      ffi.string(o.stage)
  end
  if o.status == 1 then return 1, next_pos, last, out, a, r, d, tonumber(o.pending) + 1 end
  return tonumber(o.status), next_pos, last, out, a, r, d
end

-- JSON Lines read into the core's own buffer, decisions written from it -----------------

local Reader = {}
Reader.__index = Reader

local function check_fd(fd, i, fname)
  if type(fd) ~= "number" or fd < 0 or fd > 0x7fffffff or fd % 1 ~= 0 then
    error("bad argument #" .. i .. " to '" .. fname .. "' (file descriptor out of range)", 3)
  end
  return fd
end

-- reader(fd | path) -> reader | nil, message, code (a path is opened here
-- and closed with the reader; a descriptor stays the caller's)
function Engine:reader(source)
  local st = check_engine(self)
  local r
  if type(source) == "number" then
    r = C.tg_reader_new(st.e, check_fd(source, 1, "reader"), st.err)
  else
    check_string(source, 1)
    r = C.tg_reader_open(st.e, source, st.err)
  end
  if r == nil then return error_values(st.err, false) end
  return setmetatable({ engine = self, r = ffi.gc(r, C.tg_reader_free) }, Reader)
end

-- reader:close() closes what it opened now rather than at collection
function Reader:close()
  if self.r ~= nil then
    C.tg_reader_free(ffi.gc(self.r, nil))
    self.r = nil
  end
end

-- reader:lines(want[, max]) -> the complete lines held (at least want
-- bytes of them when the input has that many; "" at its end), at most max
-- bytes of them, left held | nil, message, code
local text_box = ffi.new("const char *[1]")

function Reader:lines(want, max)
  if getmetatable(self) ~= Reader then error("bad argument #1 to 'lines' (toolgate reader expected)", 2) end
  if self.r == nil then error("toolgate reader already freed", 2) end
  if type(want) ~= "number" or want < 0 or want % 1 ~= 0 then
    error("bad argument #1 to 'lines' (want must not be negative)", 2)
  end
  if max ~= nil and (type(max) ~= "number" or max < 0 or max % 1 ~= 0) then
    error("bad argument #2 to 'lines' (max must not be negative)", 2)
  end
  local st = self.engine.st
  if C.tg_reader_lines(self.r, want, text_box, size_box, st.err) ~= 0 then return error_values(st.err, false) end
  local len = tonumber(size_box[0])
  return ffi.string(text_box[0], max and max < len and max or len)
end

-- reader:take(n): the first n bytes of the lines held were read
function Reader:take(n)
  if getmetatable(self) ~= Reader then error("bad argument #1 to 'take' (toolgate reader expected)", 2) end
  if self.r == nil then error("toolgate reader already freed", 2) end
  if type(n) ~= "number" or n < 0 or n % 1 ~= 0 then error("bad argument #1 to 'take' (n must not be negative)", 2) end
  C.tg_reader_take(self.r, n)
end

-- write_fd(fd, text) -> true | nil, message, code
function Engine:write_fd(fd, text)
  local st = check_engine(self)
  check_fd(fd, 1, "write_fd")
  check_string(text, 2)
  if C.tg_write_all(fd, text, #text, st.err) ~= 0 then return error_values(st.err, false) end
  return true
end

local end_box = ffi.new("int[1]")

-- The core's reader of a reader object, for the reader steps.
local function open_reader(reader)
  if getmetatable(reader) ~= Reader then error("bad argument (toolgate reader expected)", 3) end
  if reader.r == nil then error("toolgate reader already freed", 3) end
  return reader.r
end

-- A stream that stopped (reading or writing failed): false, message, code.
local function stopped(st)
  local _, message, code = error_values(st.err, false)
  return false, message, code
end

-- The frame of check_reader and classify_reader: call(r) runs the core's
-- step; returns rc, or true (the end), or false, message, code.
local function reader_step(self, reader, line, call)
  local r = open_reader(reader)
  if self.pending then self.pending.c = nil; self.pending = nil end
  line_box[0] = line or 0
  verdict_counts[0], verdict_counts[1], verdict_counts[2] = 0, 0, 0
  C.tg_buf_reset(self.batch)
  end_box[0] = 0
  local rc = call(r)
  if end_box[0] == 1 then return true end
  if end_box[0] == -1 then return stopped(self.engine.st) end
  return rc
end

-- check_reader(policy, context|nil, reader, want, format, flags, line, fd[, workers])
--   -> true (the end of the input) | 2 (every line held done) or 1 (a
--   stage for the host), the last line number, accepts, rejects, defers[,
--   the pending stage (from 1)] | nil, message, code, the failed line's
--   number, accepts, rejects, defers (the decisions before it written,
--   the line read) | false, message, code (reading or writing failed: the
--   stream stops)
function Decider:check_reader(policy, context, reader, want, format, flags, line, fd, workers)
  if getmetatable(policy) ~= Policy then error("bad argument #1 to 'check_reader' (toolgate policy expected)", 2) end
  check_fd(fd, 8, "check_reader")
  local st, c = self.engine.st, context and context.c
  local rc, message, code = reader_step(self, reader, line, function(r)
    return C.tg_check_reader(workers and workers.w, self.d, policy.p, c, r, want, fd, format or 0, flags or 0,
      line_box, self.batch, verdict_counts, self.out, end_box, st.err)
  end)
  if rc == true or rc == false then return rc, message, code end
  local last = tonumber(line_box[0])
  local a, r, d = counts()
  if rc ~= 0 then
    local _, m, k = error_values(st.err, false)
    return nil, m, k, last, a, r, d
  end
  if self.out.status == 1 then return 1, last, a, r, d, tonumber(self.out.pending) + 1 end
  return 2, last, a, r, d
end

-- classify_reader(policy, context|nil, store|nil, reader, want, flags, line, now, fd[, workers])
--   -> as check_reader, the statuses and what follows them those of
--   classify_lines
function Decider:classify_reader(policy, context, store, reader, want, flags, line, now, fd, workers)
  if getmetatable(policy) ~= Policy then
    error("bad argument #1 to 'classify_reader' (toolgate policy expected)", 2)
  end
  local s = opt_store(store, 3, "classify_reader")
  check_fd(fd, 9, "classify_reader")
  local st, c = self.engine.st, context and context.c
  local rc, message, code = reader_step(self, reader, line, function(r)
    return C.tg_classify_reader(workers and workers.w, self.d, policy.p, c, s, r, want, fd, flags or 0, now or 0,
      line_box, self.batch, verdict_counts, self.out, end_box, st.err)
  end)
  if rc == true or rc == false then return rc, message, code end
  local last = tonumber(line_box[0])
  local a, r, d = counts()
  if rc ~= 0 then
    local _, m, k = error_values(st.err, false)
    return nil, m, k, last, a, r, d
  end
  local o = self.out
  if o.status == 0 then
    return 0, last, a, r, d, o.verdict, ffi.string(o.json, o.json_len), ffi.string(o.code), ffi.string(o.stage)
  end
  if o.status == 1 then return 1, last, a, r, d, tonumber(o.pending) + 1 end
  return tonumber(o.status), last, a, r, d
end

local query_r, query_id = ffi.new("const char *[1]"), ffi.new("const char *[1]")
local query_rlen, query_idlen = ffi.new("size_t[1]"), ffi.new("size_t[1]")

-- query() -> tool (from 1), resolver, id | nil: the ID waiting
function Decider:query()
  local tool = tonumber(C.tg_classify_query(self.d, query_r, query_rlen, query_id, query_idlen))
  if tool < 0 then return nil end
  return tool + 1, ffi.string(query_r[0], query_rlen[0]), ffi.string(query_id[0], query_idlen[0])
end

-- resolve(ok, text) -> see outcome()
function Decider:resolve(ok, text)
  opt_string(text, 2)
  return outcome(self, C.tg_classify_resolve(self.d, ok and 1 or 0, text, text and #text or 0, self.out,
    self.engine.st.err))
end

-- store_tool() -> tool (from 1) | nil: whose record is waiting
function Decider:store_tool()
  local tool = tonumber(C.tg_classify_store_tool(self.d))
  return tool >= 0 and tool + 1 or nil
end

-- record(found, quarantined, verified_epoch|nil) -> see outcome()
function Decider:record(found, quarantined, epoch)
  opt_string(epoch, 3)
  return outcome(self, C.tg_classify_record(self.d, found and 1 or 0, quarantined and 1 or 0, epoch,
    epoch and #epoch or 0, self.out, self.engine.st.err))
end

-- quarantines() -> {{tool = (from 1), reason =, epoch = |nil}, ...}
function Decider:quarantines()
  local list = {}
  for i = 0, tonumber(C.tg_classify_quarantines(self.d)) - 1 do
    local tool = tonumber(C.tg_classify_quarantine(self.d, i, query_r, query_rlen, query_id, query_idlen))
    list[i + 1] = { tool = tool + 1, reason = ffi.string(query_r[0], query_rlen[0]),
                    epoch = query_id[0] ~= nil and ffi.string(query_id[0], query_idlen[0]) or nil }
  end
  return list
end

-- Threshold sweeps ----------------------------------------------------------------------

local Sweep = {}
Sweep.__index = Sweep

-- sweep() -> sweep | nil, message, code: an empty sweep for this policy
-- (core/toolgate.h, tg_sweep_new)
function Policy:sweep()
  local st = self.registry.engine.st
  local s = C.tg_sweep_new(self.p, st.err)
  if s == nil then return error_values(st.err, false) end
  return setmetatable({ policy = self, s = ffi.gc(s, C.tg_sweep_free), settings = ffi.new("tg_consistency_t"),
                        counts = ffi.new("tg_sweep_counts_t") }, Sweep)
end

-- sweep_lines(sweep, context|nil, store|nil, text, pos, flags, line) ->
--   status (2 every complete line is in, 1 a stage, 3 an ID, 4 a record),
--   the position after what was read, the last line number, then for 1 the
--   pending stage | nil, message, code
function Decider:sweep_lines(sweep, context, store, text, pos, flags, line)
  if getmetatable(sweep) ~= Sweep then error("bad argument #1 to 'sweep_lines' (toolgate sweep expected)", 2) end
  if context ~= nil and getmetatable(context) ~= Context then
    error("bad argument #2 to 'sweep_lines' (toolgate context expected)", 2)
  end
  local s = opt_store(store, 3, "sweep_lines")
  check_string(text, 4)
  if pos < 1 or pos > #text + 1 then error("bad argument #5 to 'sweep_lines' (position out of range)", 2) end
  local st = self.engine.st
  local rc, next_pos, last = chunk(self, text, pos, line, function(base, len)
    return C.tg_sweep_lines(sweep.s, self.d, context and context.c, s, base, len, flags or 0, line_box, used_box,
      self.out, st.err)
  end)
  if rc ~= 0 then return error_values(st.err, false) end
  local o = self.out
  if o.status == 1 then return 1, next_pos, last, tonumber(o.pending) + 1 end
  return tonumber(o.status), next_pos, last
end

-- count() -> the plans gathered
function Sweep:count()
  return tonumber(C.tg_sweep_count(self.s))
end

-- tool_label(tool from 1) -> -1 none, 0, 1, 2 conflicting
function Sweep:tool_label(tool)
  if type(tool) ~= "number" then error("bad argument #1 to 'tool_label' (number expected)", 2) end
  return tool >= 1 and tonumber(C.tg_sweep_tool_label(self.s, tool - 1)) or -1
end

-- A run's counts (12: verdict * 4 + label + 1), and its plans' verdicts
-- and codes when asked for.
local function sweep_counts(c)
  local out = {}
  for v = 0, 2 do
    for l = 0, 3 do out[v * 4 + l + 1] = tonumber(c.plans[v][l]) end
  end
  return out
end

local function sweep_plans(verdicts, codes, n)
  local vs, cds = {}, {}
  for i = 0, n - 1 do
    vs[i + 1] = verdicts[i]
    cds[i + 1] = ffi.string(codes[i])
  end
  return vs, cds
end

local function setting(settings, key)
  local v = settings[key]
  if type(v) ~= "number" then error("sweep:run: settings." .. key .. " must be a number", 3) end
  return v
end

-- run(settings, per_plan) -> counts (12: verdict * 4 + label + 1),
--   quarantined tools (from 1)[, verdicts (0 accept, 1 reject, 2 defer),
--   codes] | nil, message, code (see core_c.c's sweep:run)
function Sweep:run(settings, per_plan)
  if type(settings) ~= "table" then error("bad argument #1 to 'run' (table expected)", 2) end
  local cs, st = self.settings, self.policy.registry.engine.st
  C.tg_consistency_default(cs)
  local ms = setting(settings, "min_samples")
  cs.min_samples = (ms >= 1 and ms <= 2147483647) and math.floor(ms) or 0
  cs.arg_accept = setting(settings, "arg_accept")
  cs.arg_reject = setting(settings, "arg_reject")
  cs.result_accept = setting(settings, "result_accept")
  cs.result_quarantine = setting(settings, "result_quarantine")
  cs.on_invalid = settings.on_invalid == "reject" and 1 or 2
  cs.quarantine = (settings.quarantine == nil or settings.quarantine) and 1 or 0
  local n, nt = self:count(), tonumber(C.tg_sweep_tools(self.s))
  local q = ffi.new("unsigned char[?]", nt > 0 and nt or 1)
  local verdicts = per_plan and ffi.new("unsigned char[?]", n > 0 and n or 1) or nil
  local codes = per_plan and ffi.new("const char *[?]", n > 0 and n or 1) or nil
  if C.tg_sweep_run(self.s, cs, self.counts, q, verdicts, codes, st.err) ~= 0 then
    return error_values(st.err, false)
  end
  local quarantined = {}
  for t = 0, nt - 1 do
    if q[t] ~= 0 then quarantined[#quarantined + 1] = t + 1 end
  end
  if not per_plan then return sweep_counts(self.counts), quarantined end
  local vs, cds = sweep_plans(verdicts, codes, n)
  return sweep_counts(self.counts), quarantined, vs, cds
end

local sweep_plan = ffi.new("tg_sweep_plan_t")

-- plan(i from 1) -> {label, fixed, verdict, code} or {label, fixed = false,
--   n, arg_modal, result_modal, epoch_fixed, deterministic,
--   nondeterministic, verified} | nil, message, code
function Sweep:plan(i)
  if type(i) ~= "number" then error("bad argument #1 to 'plan' (number expected)", 2) end
  local st = self.policy.registry.engine.st
  -- 0 and below: an index no sweep has, which the core refuses
  if C.tg_sweep_plan(self.s, i >= 1 and i - 1 or -1, sweep_plan, st.err) ~= 0 then
    return error_values(st.err, false)
  end
  local p = sweep_plan
  if p.fixed ~= 0 then
    return { label = tonumber(p.label), fixed = true, verdict = tonumber(p.verdict), code = ffi.string(p.code) }
  end
  local f = p.features
  return { label = tonumber(p.label), fixed = false, n = tonumber(f.n), arg_modal = tonumber(f.arg_modal),
           result_modal = tonumber(f.result_modal), epoch_fixed = f.epoch_fixed ~= 0,
           deterministic = f.deterministic ~= 0, nondeterministic = f.nondeterministic ~= 0,
           verified = f.verified ~= 0 }
end

-- run_with(table verdicts) -> counts (12), verdicts, codes | nil, message,
-- code (see core_c.c's sweep:run_with)
function Sweep:run_with(list)
  if type(list) ~= "table" then error("bad argument #1 to 'run_with' (table expected)", 2) end
  local st, n = self.policy.registry.engine.st, self:count()
  local table_ = ffi.new("unsigned char[?]", n > 0 and n or 1)
  local verdicts = ffi.new("unsigned char[?]", n > 0 and n or 1)
  local codes = ffi.new("const char *[?]", n > 0 and n or 1)
  for i = 1, n do
    local v = list[i]
    table_[i - 1] = (v == 0 or v == 1 or v == 2) and v or 255
  end
  if C.tg_sweep_run_with(self.s, table_, self.counts, verdicts, codes, st.err) ~= 0 then
    return error_values(st.err, false)
  end
  local vs, cds = sweep_plans(verdicts, codes, n)
  return sweep_counts(self.counts), vs, cds
end

-- The determinism store ----------------------------------------------------------------

-- store() -> store | nil, message, code
function Engine:store()
  local st = check_engine(self)
  local s = C.tg_store_new(st.e, st.err)
  if s == nil then return error_values(st.err, false) end
  return setmetatable({ engine = self, s = ffi.gc(s, C.tg_store_free), rec = ffi.new("tg_store_record_t") },
    Store)
end

local function record_table(r)
  local t = {}
  if r.verified_epoch ~= nil then t.verified_epoch = ffi.string(r.verified_epoch, r.verified_epoch_len) end
  if r.quarantined ~= 0 then
    t.quarantined = { reason = ffi.string(r.reason, r.reason_len), since = tonumber(r.since),
                      epoch = r.epoch ~= nil and ffi.string(r.epoch, r.epoch_len) or nil }
  end
  return t
end

-- get(server|nil, name) -> record | nil
function Store:get(server, name)
  opt_string(server, 1)
  check_string(name, 2)
  if C.tg_store_get(self.s, server, server and #server or 0, name, #name, self.rec) == 0 then return nil end
  return record_table(self.rec)
end

-- verified(server|nil, name, epoch|nil) -> true | nil, message, code
function Store:verified(server, name, epoch)
  opt_string(server, 1)
  check_string(name, 2)
  opt_string(epoch, 3)
  local st = self.engine.st
  if C.tg_store_verified(self.s, server, server and #server or 0, name, #name, epoch, epoch and #epoch or 0,
      st.err) ~= 0 then
    return error_values(st.err, false)
  end
  return true
end

local changed_box = ffi.new("int[1]")

-- quarantine(server|nil, name, reason, epoch|nil, since) -> true, newly quarantined | nil, message, code
function Store:quarantine(server, name, reason, epoch, since)
  opt_string(server, 1)
  check_string(name, 2)
  check_string(reason, 3)
  opt_string(epoch, 4)
  if type(since) ~= "number" then error("bad argument #5 to 'quarantine' (number expected)", 2) end
  local st = self.engine.st
  if C.tg_store_quarantine(self.s, server, server and #server or 0, name, #name, reason, #reason, since, epoch,
      epoch and #epoch or 0, changed_box, st.err) ~= 0 then
    return error_values(st.err, false)
  end
  return true, changed_box[0] ~= 0
end

local rec_server, rec_name = ffi.new("const char *[1]"), ffi.new("const char *[1]")
local rec_slen, rec_nlen = ffi.new("size_t[1]"), ffi.new("size_t[1]")

-- records() -> {{server =, name =, record =}, ...} in the order tools were first written
function Store:records()
  local list = {}
  for i = 0, tonumber(C.tg_store_count(self.s)) - 1 do
    C.tg_store_at(self.s, i, rec_server, rec_slen, rec_name, rec_nlen, self.rec)
    list[i + 1] = { server = ffi.string(rec_server[0], rec_slen[0]), name = ffi.string(rec_name[0], rec_nlen[0]),
                    record = record_table(self.rec) }
  end
  return list
end

function Decider:next()
  return outcome(self, C.tg_check_next(self.d, self.out, self.engine.st.err))
end

-- answer(verdict (-1 pass, 1 reject, 2 defer, -2 run in the core), code, message) -> see outcome()
function Decider:answer(verdict, code, message)
  opt_string(code, 2)
  opt_string(message, 3)
  return outcome(self, C.tg_check_answer(self.d, verdict, code, code and #code or 0, message,
    message and #message or 0, self.out, self.engine.st.err))
end

-- resolved() -> tool index (from 1) | nil, args_digest | nil: what the
-- rung of the last check found.
function Decider:resolved()
  local tool, digest = tonumber(C.tg_check_tool(self.d)), C.tg_check_args_digest(self.d)
  return tool >= 0 and tool + 1 or nil, digest ~= nil and ffi.string(digest, 32) or nil
end

-- verdict_so_far() -> 0 accept, 1 reject, 2 defer: what the stages that
-- ran so far make of the call in progress.
function Decider:verdict_so_far()
  return tonumber(C.tg_check_verdict_so_far(self.d))
end

-- call() -> server, name, arguments node, args_digest, tool index (from 1)
-- | nil, context node: the call of the check in progress (its nodes live
-- until the next check on this decider).
local view_box = ffi.new("tg_check_view_t")

function Decider:call()
  local d = self.d
  if not self.pending then self.pending = { c = d } end
  local owner, v = self.pending, view_box
  C.tg_check_view(d, v) -- one call into the core, not one a field
  local tool = tonumber(v.tool)
  return v.server ~= nil and ffi.string(v.server, v.server_len) or nil,
    v.name ~= nil and ffi.string(v.name, v.name_len) or nil, node(owner, self.engine, v.arguments),
    v.args_digest ~= nil and ffi.string(v.args_digest, 32) or nil, tool >= 0 and tool + 1 or nil,
    node(owner, self.engine, v.context)
end

-- The JSON Lines commands, one core call per chunk ------------------------------------

local chunk_line, chunk_used = ffi.new("size_t[1]"), ffi.new("size_t[1]")

-- What canon_lines and validate_lines return: true (every complete line
-- done) | nil, message, code, offset, then the position after what was
-- read, the last line number, and the output of the lines done.
local function chunk_result(st, rc, pos)
  local next_pos, line, out = pos + tonumber(chunk_used[0]), tonumber(chunk_line[0]),
    ffi.string(st.out.data, st.out.len)
  if rc == 0 then return true, nil, nil, nil, next_pos, line, out end
  local _, message, code, offset = error_values(st.err, true)
  return nil, message, code, offset, next_pos, line, out
end

-- canon_lines(text, pos, hash, line) -> see chunk_result
function Engine:canon_lines(text, pos, hash, line)
  local st = check_engine(self)
  check_string(text, 1)
  chunk_line[0], chunk_used[0] = line or 0, 0
  C.tg_buf_reset(st.out)
  local rc = C.tg_canon_lines(st.e, ffi.cast("const char *", text) + (pos - 1), #text - pos + 1, hash and 1 or 0,
    chunk_line, chunk_used, st.out, st.err)
  return chunk_result(st, rc, pos)
end

-- validate_lines(text, pos, line) -> see chunk_result
function Schema:validate_lines(text, pos, line)
  local st = self.engine.st
  check_string(text, 1)
  chunk_line[0], chunk_used[0] = line or 0, 0
  C.tg_buf_reset(st.out)
  local rc = C.tg_validate_lines(st.e, self.s, ffi.cast("const char *", text) + (pos - 1), #text - pos + 1,
    chunk_line, chunk_used, st.out, st.err)
  return chunk_result(st, rc, pos)
end

-- The values of canon_reader and validate_reader (core_c.c push_reader_chunk):
-- true (every line held done) | nil, message, code, offset (a line failed),
-- then the last line number and whether the input is done | false,
-- message, code (reading or writing failed: the stream stops).
local function reader_chunk(st, rc)
  if end_box[0] == -1 then return stopped(st) end
  local line, done = tonumber(chunk_line[0]), end_box[0] == 1
  if rc == 0 then return true, nil, nil, nil, line, done end
  local _, message, code, offset = error_values(st.err, true)
  return nil, message, code, offset, line, done
end

-- canon_reader(reader, want, hash, line, fd) -> see reader_chunk
function Engine:canon_reader(reader, want, hash, line, fd)
  local st = check_engine(self)
  local r = open_reader(reader)
  check_fd(fd, 5, "canon_reader")
  chunk_line[0], end_box[0] = line or 0, 0
  C.tg_buf_reset(st.out)
  return reader_chunk(st, C.tg_canon_reader(st.e, r, want, fd, hash and 1 or 0, chunk_line, st.out, end_box,
    st.err))
end

-- validate_reader(reader, want, line, fd) -> see reader_chunk
function Schema:validate_reader(reader, want, line, fd)
  local st = self.engine.st
  local r = open_reader(reader)
  check_fd(fd, 4, "validate_reader")
  chunk_line[0], end_box[0] = line or 0, 0
  C.tg_buf_reset(st.out)
  return reader_chunk(st, C.tg_validate_reader(st.e, self.s, r, want, fd, chunk_line, st.out, end_box, st.err))
end

-- Plain functions ------------------------------------------------------------------

function M.format_number(x)
  if type(x) ~= "number" then
    error("bad argument #1 to 'format_number' (number expected, got " .. type(x) .. ")", 2)
  end
  local n = C.tg_number_format(x, number_buf)
  if n == 0 then return nil, "NaN and Infinity have no JSON form", "NONFINITE_NUMBER" end
  return ffi.string(number_buf, n)
end

function M.cpu_count() return tonumber(C.tg_cpu_count()) end

function M.hash_bytes(s)
  check_string(s, 1)
  C.tg_hash128(s, #s, hash_buf)
  return hex_of(hash_buf)
end

-- decision_record(t) -> the line of a decision's record (tg_decision_record;
-- t as core_c's decision_record takes it).  One struct and buffer reused:
-- the strings t holds stay alive through the call.
local record = ffi.new("tg_decision_record_t")
local RECORD_BYTES = 4096
local record_buf = ffi.new("char[?]", RECORD_BYTES)

-- (a field each, by its name: LuaJIT compiles a constant cdata key, not a variable one)
local function record_text(field, v, name)
  if v then
    if type(v) ~= "string" then error("decision_record: " .. name .. " must be a string", 3) end
    field.p, field.n = v, #v
  else
    field.p, field.n = nil, 0
  end
end

function M.decision_record(t)
  local r = record
  record_text(r.route, t.route, "route")
  record_text(r.source, t.source, "source")
  record_text(r.trace_id, t.trace_id, "trace_id")
  record_text(r.span_id, t.span_id, "span_id")
  record_text(r.phase, t.phase, "phase")
  record_text(r.decision, t.decision, "decision")
  record_text(r.outcome, t.outcome, "outcome")
  record_text(r.mode, t.mode, "mode")
  record_text(r.approval_id, t.approval_id, "approval_id")
  record_text(r.principal, t.principal, "principal")
  record_text(r.arguments, t.arguments, "arguments")
  record_text(r.arguments_digest, t.arguments_digest, "arguments_digest")
  record_text(r.arguments_redacted, t.arguments_redacted, "arguments_redacted")
  if not (t.source and t.decision and t.outcome and t.mode) then
    error("decision_record: source, decision, outcome and mode are required", 2)
  end
  if type(t.time) ~= "number" then error("decision_record: time must be a number", 2) end
  r.time = t.time
  r.worker = t.worker or -1
  r.arguments_bytes = t.arguments_bytes or -1
  r.enforced, r.approved = t.enforced and 1 or 0, t.approved and 1 or 0
  if t.arguments_truncated == nil then r.arguments_truncated = -1
  else r.arguments_truncated = t.arguments_truncated and 1 or 0 end
  local n = tonumber(C.tg_decision_record(r, record_buf, RECORD_BYTES))
  -- (the line in a local, not a tail call of ffi.string: LuaJIT cannot
  -- record a return to a lower frame from one, and the caller's trace aborts)
  local line
  if n <= RECORD_BYTES then
    line = ffi.string(record_buf, n)
  else
    local big = ffi.new("char[?]", n)
    C.tg_decision_record(r, big, n)
    line = ffi.string(big, n)
  end
  return line
end

function M.is_image(s)
  check_string(s, 1)
  return C.tg_image_is(s, #s) ~= 0
end

function M.default_limits()
  local lim = ffi.new("tg_limits_t")
  C.tg_limits_default(lim)
  return limits_table(lim)
end

return M
