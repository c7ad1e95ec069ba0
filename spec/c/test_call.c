/*
 * test_call.c -- tool calls in every shape: what is found, what is refused
 * and with which code.  Nothing malformed, nothing read two ways, and no
 * call toolgate cannot gate may come back as a call.
 *
 * The JSON below is written with ' for " (q() swaps them back) so that it
 * reads as JSON; \' stands for an escaped quote inside a string.
 */
#include "tap.h"
#include "toolgate.h"

static tg_engine_t *E;

/* json with every ' turned into " (one static buffer per argument slot). */
static const char *q(const char *json)
{
    static char bufs[2][8192];
    static int which;
    char *b = bufs[which ^= 1];
    size_t i;
    for (i = 0; json[i] && i + 1 < sizeof bufs[0]; i++)
        b[i] = json[i] == '\'' ? '"' : json[i];
    b[i] = '\0';
    return b;
}

/* What a decoded set holds, as text: one line per call,
 * "server name arguments-canonical", "-" for no server. */
static void describe(const tg_calls_t *s, char *out, size_t cap)
{
    tg_buf_t b;
    size_t used = 0;
    out[0] = '\0';
    tg_buf_init(&b, E);
    for (size_t i = 0; i < tg_calls_count(s); i++) {
        const tg_call_t *c = tg_calls_at(s, i);
        size_t slen, nlen;
        const char *server = tg_call_server(c, &slen), *name = tg_call_name(c, &nlen);
        tg_buf_reset(&b);
        tg_canon_value(tg_call_arguments(c), &b, NULL);
        used += (size_t)snprintf(out + used, cap - used, "%s%.*s %.*s %.*s", i ? "\n" : "",
                                 server ? (int)slen : 1, server ? server : "-", (int)nlen, name,
                                 (int)b.len, b.data);
        if (used >= cap)
            break;
    }
    tg_buf_free(&b);
}

static void reads(const char *json, int format, int want_shape, const char *want, const char *label)
{
    tg_calls_t *s = NULL;
    tg_error_t err;
    char got[2048], what[240];
    int rc = tg_calls_decode(E, json, strlen(json), format, &s, &err);
    if (!tap_ok(rc == TG_OK, label)) {
        printf("#   %s: %s\n", tg_code_name(rc), err.message);
        return;
    }
    snprintf(what, sizeof what, "%s: shape %s", label, tg_call_shape_name(want_shape));
    if (!tap_ok(tg_calls_shape(s) == want_shape, what))
        printf("#   got %s\n", tg_call_shape_name(tg_calls_shape(s)));
    describe(s, got, sizeof got);
    snprintf(what, sizeof what, "%s: calls", label);
    tap_is_mem(got, strlen(got), want, what);
    tg_calls_free(s);
}

/* Refused with code (by both decoders), and the message says needle. */
static void refuses(const char *json, int format, int code, const char *needle, const char *label)
{
    tg_calls_t *s = (tg_calls_t *)1;
    tg_call_t *c = (tg_call_t *)1;
    tg_error_t err, err1;
    int rc = tg_calls_decode(E, json, strlen(json), format, &s, &err);
    int rc1 = tg_call_decode(E, json, strlen(json), format, &c, &err1);
    int ok = rc == code && s == NULL && rc1 == code && c == NULL &&
             (!needle || strstr(err.message, needle) != NULL);
    if (!tap_ok(ok, label))
        printf("#   got %s (%s), want %s with '%s'\n", tg_code_name(rc), rc ? err.message : "",
               tg_code_name(code), needle ? needle : "");
}

static void one_call_formats(void)
{
    reads(q("{'server':'fs','name':'read','arguments':{'path':'/a'}}"), TG_FORMAT_AUTO,
          TG_SHAPE_NATIVE, "fs read {\"path\":\"/a\"}", "native with server");
    reads(q("{'name':'read','arguments':{}}"), TG_FORMAT_AUTO, TG_SHAPE_NATIVE, "- read {}",
          "native without server");
    reads(q("{'id':'call_1','type':'function','function':{'name':'get_weather',"
            "'arguments':'{\\'city\\':\\'Z\\\\u00fcrich\\',\\'days\\':3}'}}"),
          TG_FORMAT_AUTO, TG_SHAPE_OPENAI, "- get_weather {\"city\":\"Z\xc3\xbcrich\",\"days\":3}",
          "OpenAI tool call, arguments as a JSON string");
    reads(q("{'type':'function','function':{'name':'f','arguments':{'a':1}}}"), TG_FORMAT_AUTO,
          TG_SHAPE_OPENAI, "- f {\"a\":1}", "OpenAI tool call, arguments already an object");
    reads(q("{'type':'tool_use','id':'toolu_1','name':'search','input':{'q':'x'}}"), TG_FORMAT_AUTO,
          TG_SHAPE_ANTHROPIC, "- search {\"q\":\"x\"}", "Anthropic tool_use");
    reads(q("{'type':'tool_use','id':'toolu_2','name':'left_click','input':{},"
            "'toolset_name':'browser','caller':{'type':'direct'}}"),
          TG_FORMAT_AUTO, TG_SHAPE_ANTHROPIC, "browser left_click {}",
          "Anthropic toolset_name is the server");
    reads(q("{'type':'tool_use','id':'t','name':'x','input':{},'toolset_name':null,"
            "'cache_control':{'type':'ephemeral'}}"),
          TG_FORMAT_ANTHROPIC, TG_SHAPE_ANTHROPIC, "- x {}",
          "Anthropic toolset_name null, cache_control allowed");
    reads(q("{'jsonrpc':'2.0','id':7,'method':'tools/call','params':{'name':'read_file',"
            "'arguments':{'path':'/etc/hosts'},'_meta':{'progressToken':1}}}"),
          TG_FORMAT_AUTO, TG_SHAPE_MCP, "- read_file {\"path\":\"/etc/hosts\"}", "MCP tools/call");
    reads(q("{'jsonrpc':'2.0','id':8,'method':'tools/call','params':{'name':'list'}}"),
          TG_FORMAT_MCP, TG_SHAPE_MCP, "- list {}",
          "MCP tools/call without arguments (optional in MCP): {}");
    reads(q("{'type':'function_call','id':'fc_1','call_id':'call_1','name':'get_weather',"
            "'arguments':'{\\'city\\':\\'Paris\\'}','status':'completed'}"),
          TG_FORMAT_AUTO, TG_SHAPE_OPENAI_FUNCTION_CALL, "- get_weather {\"city\":\"Paris\"}",
          "Responses API function_call item");
    reads(q("{'type':'function_call','call_id':'c','name':'lookup','arguments':'{}',"
            "'namespace':'crm','caller':{'type':'direct'}}"),
          TG_FORMAT_OPENAI, TG_SHAPE_OPENAI_FUNCTION_CALL, "crm lookup {}",
          "Responses namespace is the server");
    reads(q("{'name':'read','arguments':{},'context':{'scopes':['a']}}"), TG_FORMAT_AUTO,
          TG_SHAPE_NATIVE, "- read {}", "a line's context passes decoding (the caller judges it)");
}

static void envelopes(void)
{
    reads(q("{'id':'chatcmpl-1','object':'chat.completion','created':1,'model':'gpt-4o',"
            "'choices':[{'index':0,'finish_reason':'tool_calls','logprobs':null,"
            "'message':{'role':'assistant','content':null,'refusal':null,'tool_calls':["
            "{'id':'c1','type':'function','function':{'name':'a','arguments':'{\\'x\\':1}'}},"
            "{'id':'c2','type':'function','function':{'name':'b','arguments':'{}'}}]}},"
            "{'index':1,'finish_reason':'tool_calls','logprobs':null,'message':{'role':"
            "'assistant','content':null,'refusal':null,'tool_calls':[{'id':'c3','type':"
            "'function','function':{'name':'c','arguments':'{}'}}]}}],'usage':{}}"),
          TG_FORMAT_AUTO, TG_SHAPE_OPENAI_CHAT, "- a {\"x\":1}\n- b {}\n- c {}",
          "chat.completion: every choice's calls, in order");
    reads(q("{'role':'assistant','content':'Hello','refusal':null}"), TG_FORMAT_AUTO,
          TG_SHAPE_OPENAI_MESSAGE, "", "a text-only OpenAI message: zero calls");
    reads(q("{'role':'assistant','content':null,'tool_calls':[{'id':'c','type':'function',"
            "'function':{'name':'a','arguments':'{}'}}]}"),
          TG_FORMAT_AUTO, TG_SHAPE_OPENAI_MESSAGE, "- a {}", "an OpenAI message");
    reads(q("[{'id':'c','type':'function','function':{'name':'a','arguments':'{}'}},"
            "{'id':'d','type':'function','function':{'name':'b','arguments':'{}'}}]"),
          TG_FORMAT_AUTO, TG_SHAPE_OPENAI_TOOL_CALLS, "- a {}\n- b {}", "a bare tool_calls array");
    reads("[]", TG_FORMAT_OPENAI, TG_SHAPE_OPENAI_TOOL_CALLS, "",
          "an empty tool_calls array under --format openai: zero calls");
    reads(q("{'id':'resp_1','object':'response','status':'completed','output':["
            "{'type':'reasoning','id':'rs_1','summary':[]},"
            "{'type':'message','id':'msg_1','role':'assistant','content':[]},"
            "{'type':'function_call','id':'fc_1','call_id':'call_1','name':'a',"
            "'arguments':'{\\'k\\':true}'},"
            "{'type':'function_call_output','call_id':'call_0','output':'x'},"
            "{'type':'function_call','id':'fc_2','call_id':'call_2','name':'b',"
            "'arguments':'{}','namespace':'ns'}],'tools':[],'input':'ignored metadata'}"),
          TG_FORMAT_OPENAI, TG_SHAPE_OPENAI_RESPONSES, "- a {\"k\":true}\nns b {}",
          "Responses API response: function_call items, others skipped");
    reads(q("{'id':'msg_1','type':'message','role':'assistant','model':'claude',"
            "'content':[{'type':'thinking','thinking':'hm','signature':'s'},"
            "{'type':'text','text':'Let me look.'},"
            "{'type':'tool_use','id':'toolu_1','name':'get_weather','input':{'city':'Oslo'},"
            "'caller':{'type':'direct'}},{'type':'redacted_thinking','data':'x'},"
            "{'type':'tool_use','id':'toolu_2','name':'now','input':{}}],"
            "'stop_reason':'tool_use','stop_sequence':null,'usage':{}}"),
          TG_FORMAT_AUTO, TG_SHAPE_ANTHROPIC_MESSAGE, "- get_weather {\"city\":\"Oslo\"}\n- now {}",
          "Anthropic message: tool_use blocks");
    reads(q("{'id':'msg_2','type':'message','role':'assistant','content':[{'type':'text',"
            "'text':'Hi'}],'stop_reason':'end_turn'}"),
          TG_FORMAT_AUTO, TG_SHAPE_ANTHROPIC_MESSAGE, "",
          "a text-only Anthropic message: zero calls");
    reads(q("[{'jsonrpc':'2.0','id':1,'method':'tools/call','params':{'name':'a',"
            "'arguments':{'n':1}}},{'jsonrpc':'2.0','id':2,'method':'tools/call','params':"
            "{'name':'b'}}]"),
          TG_FORMAT_AUTO, TG_SHAPE_MCP_BATCH, "- a {\"n\":1}\n- b {}", "an MCP batch");
}

static void class3_unknown_shapes(void)
{
    /* the cases: both decoded as native calls with {} before */
    refuses(q("{'name':'get-resource-links','args':{'count':999},'type':'tool_call','id':'x'}"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL, "unknown member \"args\" in a native call",
            "a LangChain tool call is not a native call");
    refuses(q("{'type':'mcp_tool_use','id':'mcptoolu_1','name':'get-resource-links',"
              "'server_name':'everything','input':{'count':999}}"),
            TG_FORMAT_AUTO, TG_E_UNSUPPORTED_CALL, "mcp_tool_use",
            "an Anthropic mcp_tool_use block (Anthropic runs it) is refused");
    refuses(q("{'type':'server_tool_use','id':'srvtoolu_1','name':'web_search',"
              "'input':{'query':'x'}}"),
            TG_FORMAT_ANTHROPIC, TG_E_UNSUPPORTED_CALL, "server_tool_use",
            "an Anthropic server_tool_use block is refused");
    refuses(q("{'name':'x','arguments':{},'extra':1}"), TG_FORMAT_NATIVE, TG_E_BAD_CALL,
            "unknown member \"extra\" in a native call", "a native call's unknown member");
    refuses(q("{'name':'now'}"), TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "a native call must have \"arguments\"", "a native call must carry arguments");
    refuses(q("{'type':'tool_use','id':'t','name':'x'}"), TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "must have \"input\"", "an Anthropic tool_use must carry input (the SDK type)");
    refuses(q("{'type':'function','function':{'name':'f'}}"), TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "must have \"arguments\"", "an OpenAI call must carry function.arguments");
    refuses(q("{'type':'function_call','call_id':'c','name':'f'}"), TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "must have \"arguments\"", "a function_call item must carry arguments");
    refuses(q("{'type':'function_call','name':'f','arguments':'{}'}"), TG_FORMAT_AUTO,
            TG_E_BAD_CALL, "call_id", "a function_call item must carry call_id");
    refuses(q("{'type':'function','function':{'name':'f','arguments':'{}','strict':true}}"),
            TG_FORMAT_OPENAI, TG_E_BAD_CALL, "unknown member \"strict\"",
            "function's members are strict too");
    /* the SDK's parse helpers add parsed_arguments: one reading, or none */
    refuses(q("{'type':'function','function':{'name':'f','arguments':'{\\'a\\':1}',"
              "'parsed_arguments':{'a':2}}}"),
            TG_FORMAT_OPENAI, TG_E_BAD_CALL, "refusing to guess",
            "parsed_arguments that differ from arguments");
    refuses(q("{'type':'function_call','call_id':'c','name':'f','arguments':{'a':1},"
              "'parsed_arguments':{}}"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL, "parsed_arguments",
            "... beside arguments given as an object too");
    reads(q("{'type':'function','function':{'name':'f','arguments':'{\\'a\\':1.0}',"
            "'parsed_arguments':{'a':1}}}"),
          TG_FORMAT_AUTO, TG_SHAPE_OPENAI, "- f {\"a\":1}", "parsed_arguments equal to arguments");
    reads(q("{'type':'function_call','call_id':'c','name':'f','arguments':'{}',"
            "'parsed_arguments':null}"),
          TG_FORMAT_AUTO, TG_SHAPE_OPENAI_FUNCTION_CALL, "- f {}",
          "parsed_arguments null (what ResponseStream writes)");
    refuses(q("{'jsonrpc':'2.0','id':1,'method':'tools/call','params':{'name':'f','args':{}}}"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL, "unknown member \"args\" in an MCP request",
            "MCP params are strict");
    refuses(q("{'method':'tools/call','params':{'name':'f'}}"), TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "jsonrpc", "an MCP request must say jsonrpc 2.0");
    refuses(q("{'type':'custom','id':'c','custom':{'name':'grep','input':'-r x /'}}"),
            TG_FORMAT_AUTO, TG_E_UNSUPPORTED_CALL, "custom tool call",
            "a Chat Completions custom tool call (free text) is refused");
    refuses(q("{'\\u0000':1,'name':'x','arguments':{}}"), TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "not plain ASCII", "an unprintable unknown key is not quoted");
}

static void class4_mixed_formats(void)
{
    /* the case: read as MCP (read_text_file) and accepted before,
     * while an OpenAI executor would run write_file */
    refuses(q("{'type':'function','function':{'name':'write_file','arguments':"
              "'{\\'path\\':\\'/etc/passwd\\'}'},'jsonrpc':'2.0','method':'tools/call',"
              "'params':{'name':'read_text_file','arguments':{'path':'/a'}}}"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "members of both an OpenAI tool call (\"function\") and an MCP request",
            "OpenAI function + MCP method/params: refused under auto");
    refuses(q("{'type':'tool_use','id':'t','name':'x','input':{},'arguments':{'a':1}}"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL, "refusing to guess",
            "Anthropic input + native arguments");
    refuses(q("{'type':'tool_use','id':'t','name':'x','input':{},'function':{'name':'y',"
              "'arguments':'{}'}}"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL, "refusing to guess", "type tool_use + function");
    refuses(q("{'name':'x','arguments':{},'method':'tools/call'}"), TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "refusing to guess", "native + MCP method");
    refuses(q("{'object':'chat.completion','choices':[],'type':'message','content':[]}"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL, "refusing to guess",
            "a chat.completion that is also an Anthropic message");
    refuses(q("[{'type':'function','function':{'name':'a','arguments':'{}'}},"
              "{'jsonrpc':'2.0','id':1,'method':'tools/call','params':{'name':'b'}}]"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL, "refusing to guess",
            "an array of an OpenAI call and an MCP request");
    /* an explicit format reads only itself: the other format's members are
     * unknown members there */
    refuses(q("{'type':'function','function':{'name':'write_file','arguments':'{}'},"
              "'jsonrpc':'2.0','method':'tools/call','params':{'name':'read_text_file'}}"),
            TG_FORMAT_MCP, TG_E_BAD_CALL, "unknown member \"function\" in an MCP request",
            "--format mcp: an OpenAI member is unknown");
    refuses(q("{'type':'function','function':{'name':'write_file','arguments':'{}'},"
              "'jsonrpc':'2.0','method':'tools/call','params':{'name':'read_text_file'}}"),
            TG_FORMAT_OPENAI, TG_E_BAD_CALL, "unknown member \"jsonrpc\" in an OpenAI tool call",
            "--format openai: an MCP member is unknown");
}

static void envelope_refusals(void)
{
    refuses(q("{'object':'chat.completion','choices':[{'message':{'role':'assistant',"
              "'tool_calls':[{'type':'function','function':{'name':'a','arguments':'{}'},"
              "'index':0}]}}]}"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "unknown member \"index\" in choices[0].message.tool_calls[0] (an OpenAI tool call)",
            "a call inside a chat.completion is strict and located");
    refuses(q("{'object':'chat.completion.chunk','choices':[]}"), TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "chunk", "a stream chunk is refused");
    refuses(q("{'object':'chat.completion'}"), TG_FORMAT_AUTO, TG_E_BAD_CALL, "\"choices\"",
            "a chat.completion without choices");
    refuses(q("{'object':'chat.completion','choices':[{'index':0}]}"), TG_FORMAT_AUTO,
            TG_E_BAD_CALL, "\"message\"", "a choice without a message");
    refuses(q("{'role':'assistant','content':[{'type':'tool_use','id':'t','name':'x',"
              "'input':{}}],'tool_calls':[]}"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL, "\"content\"",
            "an OpenAI message whose content is an array (could hold blocks) is refused");
    refuses(q("{'role':'assistant','content':null,'function_call':{'name':'f','arguments':'{}'}}"),
            TG_FORMAT_AUTO, TG_E_UNSUPPORTED_CALL, "function_call",
            "a message with a deprecated function_call is refused");
    refuses(q("{'role':'user','content':'hi','tool_calls':[]}"), TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "assistant", "a user message is no model output");
    refuses(q("{'role':'assistant','tool_calls':[{'type':'custom','id':'c','custom':{'name':'g',"
              "'input':'x'}}]}"),
            TG_FORMAT_AUTO, TG_E_UNSUPPORTED_CALL, "tool_calls[0]",
            "a custom tool call inside a message");
    refuses(q("{'object':'response','output':[{'type':'web_search_call','id':'ws','status':"
              "'completed'},{'type':'function_call','call_id':'c','name':'a','arguments':'{}'}]}"),
            TG_FORMAT_AUTO, TG_E_UNSUPPORTED_CALL, "output[0] is of type web_search_call",
            "a hosted call in a response is refused");
    refuses(q("{'object':'response','output':[{'type':'computer_call','id':'cc','call_id':'c',"
              "'action':{'type':'click'}}]}"),
            TG_FORMAT_AUTO, TG_E_UNSUPPORTED_CALL, "computer_call",
            "a client call without JSON arguments is refused");
    refuses(q("{'object':'response','output':[{'type':'teleport_call','id':'x'}]}"), TG_FORMAT_AUTO,
            TG_E_BAD_CALL, "unknown type \"teleport_call\"", "an unknown output item type");
    refuses(q("{'object':'response','output':[{'id':'x'}]}"), TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "string \"type\"", "an output item without a type");
    refuses(q("{'object':'response','output':[{'type':'function_call','call_id':'c','name':'a',"
              "'arguments':'{\\'a\\':'}]}"),
            TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS, "not valid JSON",
            "a function_call item's arguments must be JSON");
    refuses(q("{'type':'message','role':'assistant','content':[{'type':'text','text':'x'},"
              "{'type':'server_tool_use','id':'s','name':'web_search','input':{}}]}"),
            TG_FORMAT_AUTO, TG_E_UNSUPPORTED_CALL, "content[1] is of type server_tool_use",
            "a server tool call in a message is refused");
    refuses(q("{'type':'message','role':'assistant','content':[{'type':'image','source':{}}]}"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL, "unknown type \"image\"", "an unknown block type");
    refuses(q("{'type':'message','role':'assistant','content':[{'type':'tool_use','id':'t',"
              "'name':'x','input':{},'server_name':'s'}]}"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL, "unknown member \"server_name\" in content[0]",
            "a tool_use block inside a message is strict");
    refuses(q("{'type':'message','content':'hi'}"), TG_FORMAT_AUTO, TG_E_BAD_CALL, "\"content\"",
            "an Anthropic message's content must be an array");
    refuses(q("[{'jsonrpc':'2.0','id':1,'method':'tools/call','params':{'name':'a'}},"
              "{'jsonrpc':'2.0','id':2,'method':'tools/list'}]"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "[1] (an MCP request) must have \"method\": "
            "\"tools/call\"",
            "a non-tools/call request in a batch");
    refuses("[]", TG_FORMAT_AUTO, TG_E_BAD_CALL, "empty array", "an empty array under auto");
    refuses("[]", TG_FORMAT_MCP, TG_E_BAD_CALL, "empty JSON-RPC batch", "an empty batch");
    refuses(q("[{'name':'a','arguments':{}}]"), TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "OpenAI tool calls or MCP requests", "an array of native calls");
    refuses(q("[{'name':'a','arguments':{}}]"), TG_FORMAT_NATIVE, TG_E_BAD_CALL, "array",
            "an array under --format native");
    refuses(q("[1]"), TG_FORMAT_AUTO, TG_E_BAD_CALL, "must be an object",
            "an array of non-objects");
}

/* What users hand over that is no call at all is named, with where its
 * calls or tools are (issue 36). */
static void not_calls_named(void)
{
    refuses(q("{'model':'gpt-4o','messages':[{'role':'user','content':'hi'}],'tools':[{'type':"
              "'function','function':{'name':'f','parameters':{}}}]}"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "a request to a model (it has \"messages\"), not a tool call: the calls are in its "
            "response; its tools (.tools) are a registry (jq .tools FILE > tools.json; "
            "--registry tools.json)",
            "an OpenAI request body is named");
    refuses(q("{'model':'claude','max_tokens':9,'messages':[]}"), TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "a request to a model", "an Anthropic request body is named");
    refuses(q("[{'id':'c1','object':'chat.completion','choices':[]},"
              "{'id':'c2','object':'chat.completion','choices':[]}]"),
            TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "[0] is an OpenAI chat.completion: an array of responses or messages (as jq -s "
            "makes) is not one call shape; give one per line (jq -c '.[]')",
            "an array of chat.completion responses is named");
    refuses(q("[{'id':'c1','object':'chat.completion','choices':[]}]"), TG_FORMAT_OPENAI,
            TG_E_BAD_CALL, "[0] is an OpenAI chat.completion", "... under --format openai too");
    refuses(q("[{'type':'function','id':'a','function':{'name':'a','arguments':'{}'}},"
              "{'id':'r','object':'response','output':[]}]"),
            TG_FORMAT_OPENAI, TG_E_BAD_CALL, "[1] is an OpenAI Responses API response",
            "a response anywhere in the array");
    refuses(q("[{'id':'m','type':'message','role':'assistant','content':[]}]"), TG_FORMAT_AUTO,
            TG_E_BAD_CALL, "[0] is an Anthropic message", "an array of Anthropic messages");
    refuses(q("[{'role':'assistant','content':null,'tool_calls':[]}]"), TG_FORMAT_AUTO,
            TG_E_BAD_CALL, "[0] is a chat message", "a conversation's messages");
}

static void old_refusals(void)
{
    refuses("\"x\"", TG_FORMAT_AUTO, TG_E_BAD_CALL, NULL, "a call must be an object or array");
    refuses(q("{'tool':'x'}"), TG_FORMAT_AUTO, TG_E_BAD_CALL, "not a tool call",
            "no recognizable format");
    refuses(q("{'name':'','arguments':{}}"), TG_FORMAT_AUTO, TG_E_BAD_CALL, NULL, "empty name");
    refuses(q("{'name':42,'arguments':{}}"), TG_FORMAT_AUTO, TG_E_BAD_CALL, NULL,
            "name not a string");
    refuses(q("{'name':'x','server':1,'arguments':{}}"), TG_FORMAT_AUTO, TG_E_BAD_CALL, NULL,
            "server not a string");
    refuses(q("{'name':'x','arguments':[1]}"), TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS, NULL,
            "arguments an array");
    refuses(q("{'name':'x','arguments':null}"), TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS, NULL,
            "arguments null");
    refuses(q("{'type':'function','function':{'name':'f','arguments':'{\\'a\\':1,\\'a\\':2}'}}"),
            TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS, "DUPLICATE_KEY",
            "OpenAI arguments with a duplicate key");
    refuses(q("{'type':'function','function':{'name':'f','arguments':'{\\'a\\':'}}"),
            TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS, NULL, "OpenAI arguments truncated");
    refuses(q("{'type':'function','function':{'name':'f','arguments':''}}"), TG_FORMAT_AUTO,
            TG_E_BAD_ARGUMENTS, NULL, "OpenAI arguments empty string");
    refuses(q("{'type':'function','function':{'name':'f','arguments':'[1,2]'}}"), TG_FORMAT_AUTO,
            TG_E_BAD_ARGUMENTS, NULL, "OpenAI arguments not an object");
    refuses(q("{'type':'function','function':'f'}"), TG_FORMAT_AUTO, TG_E_BAD_CALL, NULL,
            "OpenAI function not an object");
    refuses(q("{'jsonrpc':'2.0','method':'tools/list'}"), TG_FORMAT_AUTO, TG_E_BAD_CALL, NULL,
            "MCP method other than tools/call");
    refuses(q("{'jsonrpc':'2.0','method':'tools/call','params':[]}"), TG_FORMAT_AUTO, TG_E_BAD_CALL,
            NULL, "MCP params not an object");
    refuses(q("{'jsonrpc':'2.0','method':'tools/call','params':{'name':'x','arguments':'{}'}}"),
            TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS, NULL, "MCP arguments as a string");
    refuses(q("{'type':'tool_use','name':'x','input':'{}'}"), TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS,
            NULL, "Anthropic input not an object");
    refuses(q("{'name':'x','arguments':{}}"), TG_FORMAT_MCP, TG_E_BAD_CALL, NULL,
            "explicit format that does not fit");
    refuses(q("{'name':'x','name':'y'}"), TG_FORMAT_AUTO, TG_E_DUPLICATE_KEY, NULL,
            "malformed envelope keeps its JSON code");
    refuses(q("{'name':'x','arguments':{}}"), 99, TG_E_ARG, NULL, "unknown format number");
    refuses(q("{'name':'x','arguments':{}}"), -1, TG_E_ARG, NULL, "negative format number");
}

static void accessors(void)
{
    tg_call_t *c;
    tg_calls_t *s;
    tg_error_t err;
    size_t len;
    const char *j = q("{'jsonrpc':'2.0','id':7,'method':'tools/call','params':{'name':'x'}}");

    tap_ok(tg_call_decode(E, j, strlen(j), TG_FORMAT_AUTO, &c, NULL) == TG_OK &&
               tg_num(tg_call_id(c)) == 7.0 && tg_call_format_of(c) == TG_FORMAT_MCP &&
               tg_call_shape(c) == TG_SHAPE_MCP && tg_call_context(c) == NULL,
           "MCP id is kept; format and shape; no context");
    tap_ok(tg_call_object(c) == tg_call_object(c) && tg_get(tg_call_object(c), "params", 6),
           "the call object is the request");
    tg_call_free(c);
    j = q("{'name':'x','arguments':{},'context':{'scopes':['s']}}");
    tg_call_decode(E, j, strlen(j), TG_FORMAT_AUTO, &c, NULL);
    tap_ok(tg_call_id(c) == NULL && tg_type_of(tg_call_context(c)) == TG_OBJECT,
           "no id: NULL; the context member is reported");
    tg_call_free(c);
    j = q("{'type':'function_call','id':'fc_1','call_id':'call_9','name':'a','arguments':'{}'}");
    tg_call_decode(E, j, strlen(j), TG_FORMAT_AUTO, &c, NULL);
    {
        const char *id = tg_str(tg_call_id(c), &len);
        tap_is_mem(id, len, "call_9", "a function_call item's id is call_id");
    }
    tg_call_free(c);

    /* one call inside an envelope: tg_call_decode reads it */
    j = q("{'type':'message','content':[{'type':'text','text':'x'},{'type':'tool_use','id':'t',"
          "'name':'a','input':{'k':1}}],'context':{}}");
    tap_ok(tg_call_decode(E, j, strlen(j), TG_FORMAT_AUTO, &c, &err) == TG_OK &&
               tg_call_shape(c) == TG_SHAPE_ANTHROPIC_MESSAGE &&
               tg_call_format_of(c) == TG_FORMAT_ANTHROPIC && tg_call_context(c) != NULL,
           "tg_call_decode reads the one call of a message");
    tg_call_free(c);
    j = q("{'type':'message','content':[{'type':'tool_use','id':'t','name':'a','input':{}},"
          "{'type':'tool_use','id':'u','name':'b','input':{}}]}");
    tap_ok(tg_call_decode(E, j, strlen(j), TG_FORMAT_AUTO, &c, &err) == TG_E_BAD_CALL &&
               c == NULL && strstr(err.message, "holds 2 calls") != NULL,
           "tg_call_decode refuses a line of two calls, saying so");
    j = q("{'role':'assistant','content':'hi','refusal':null}");
    tap_ok(tg_call_decode(E, j, strlen(j), TG_FORMAT_AUTO, &c, &err) == TG_E_BAD_CALL &&
               strstr(err.message, "holds 0 calls") != NULL,
           "tg_call_decode refuses a line of no call");

    /* views: tg_call_free does nothing to them (ASan sees a double free) */
    j = q("[{'type':'function','function':{'name':'a','arguments':'{\\'x\\':[1]}'}},"
          "{'type':'function','function':{'name':'b','arguments':'{}'}}]");
    tg_calls_decode(E, j, strlen(j), TG_FORMAT_AUTO, &s, NULL);
    {
        const tg_call_t *view = tg_calls_at(s, 0);
        memcpy(&c, &view, sizeof c); /* a caller that frees a view by mistake */
        tg_call_free(c);
    }
    tap_ok(tg_calls_count(s) == 2 && tg_calls_at(s, 2) == NULL &&
               tg_type_of(tg_get(tg_call_arguments(tg_calls_at(s, 0)), "x", 1)) == TG_ARRAY,
           "a view outlives tg_call_free; out of range is NULL");
    tg_calls_free(s);
    tg_calls_free(NULL);
    tg_call_free(NULL);

    tap_ok(strcmp(tg_call_shape_name(TG_SHAPE_OPENAI_RESPONSES), "openai-responses") == 0 &&
               strcmp(tg_call_shape_name(TG_SHAPE_MCP_BATCH), "mcp-batch") == 0 &&
               strcmp(tg_call_shape_name(99), "unknown") == 0 &&
               strcmp(tg_call_shape_name(-1), "unknown") == 0,
           "shape names");
    tap_ok(strcmp(tg_code_name(TG_E_UNSUPPORTED_CALL), "UNSUPPORTED_CALL") == 0,
           "UNSUPPORTED_CALL has its name");
}

/* Limits apply inside the arguments strings of every call of a line. */
static void limits(void)
{
    tg_limits_t lim;
    tg_engine_t *small;
    tg_calls_t *s;
    tg_error_t err;
    const char *j = q("{'type':'function','function':{'name':'f','arguments':'[[[[[1]]]]]'}}");
    tg_limits_default(&lim);
    lim.max_depth = 4;
    small = tg_engine_new(&lim, NULL, NULL, NULL);
    tap_ok(tg_calls_decode(small, j, strlen(j), TG_FORMAT_AUTO, &s, &err) == TG_E_BAD_ARGUMENTS &&
               strstr(err.message, "TOO_DEEP") != NULL,
           "limits apply inside the arguments string (and the message names the inner code)");
    j = q("{'role':'assistant','tool_calls':[{'type':'function','function':{'name':'f',"
          "'arguments':'{}'}},{'type':'function','function':{'name':'g','arguments':"
          "'[[[[[1]]]]]'}}]}");
    tap_ok(tg_calls_decode(small, j, strlen(j), TG_FORMAT_AUTO, &s, &err) == TG_E_BAD_ARGUMENTS &&
               strstr(err.message, "TOO_DEEP") != NULL,
           "... in the second call of a message too (and the first call is freed)");
    tg_engine_free(small);
}

int main(void)
{
    E = tg_engine_new(NULL, NULL, NULL, NULL);
    one_call_formats();
    envelopes();
    class3_unknown_shapes();
    class4_mixed_formats();
    envelope_refusals();
    not_calls_named();
    old_refusals();
    accessors();
    limits();
    tg_engine_free(E);
    return tap_done();
}
