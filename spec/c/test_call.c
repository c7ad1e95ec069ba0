/*
 * test_call.c -- tool calls in every format: what is found, what is refused
 * and with which code.  Nothing malformed may come back as a call.
 */
#include "tap.h"
#include "toolgate.h"

static tg_engine_t *E;

static void decodes(const char *json, int format, int want_format, const char *server,
                    const char *name, const char *args_canon, const char *label)
{
    tg_call_t *c;
    tg_error_t err;
    int rc = tg_call_decode(E, json, strlen(json), format, &c, &err);
    char what[200];
    if (!tap_ok(rc == TG_OK, label)) {
        printf("#   %s: %s\n", tg_code_name(rc), err.message);
        return;
    }
    {
        size_t len;
        const char *s = tg_call_server(c, &len);
        tg_buf_t b;
        snprintf(what, sizeof what, "%s: format", label);
        tap_ok(tg_call_format_of(c) == want_format, what);
        snprintf(what, sizeof what, "%s: server", label);
        if (server)
            tap_is_mem(s, len, server, what);
        else
            tap_ok(s == NULL, what);
        s = tg_call_name(c, &len);
        snprintf(what, sizeof what, "%s: name", label);
        tap_is_mem(s, len, name, what);
        tg_buf_init(&b, E);
        tg_canon_value(tg_call_arguments(c), &b, NULL);
        snprintf(what, sizeof what, "%s: arguments", label);
        tap_is_mem(b.data, b.len, args_canon, what);
        tg_buf_free(&b);
    }
    tg_call_free(c);
}

static void refuses(const char *json, int format, int code, const char *label)
{
    tg_call_t *c = (tg_call_t *)1;
    tg_error_t err;
    int rc = tg_call_decode(E, json, strlen(json), format, &c, &err);
    if (!tap_ok(rc == code && c == NULL, label))
        printf("#   got %s (%s), want %s\n", tg_code_name(rc), err.message, tg_code_name(code));
}

int main(void)
{
    E = tg_engine_new(NULL, NULL, NULL, NULL);

    decodes("{\"server\":\"fs\",\"name\":\"read\",\"arguments\":{\"path\":\"/a\"}}", TG_FORMAT_AUTO,
            TG_FORMAT_NATIVE, "fs", "read", "{\"path\":\"/a\"}", "native with server");
    decodes("{\"name\":\"read\",\"arguments\":{}}", TG_FORMAT_AUTO, TG_FORMAT_NATIVE, NULL, "read",
            "{}", "native without server");
    decodes("{\"name\":\"now\"}", TG_FORMAT_NATIVE, TG_FORMAT_NATIVE, NULL, "now", "{}",
            "native without arguments means {}");
    decodes("{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
            "\"arguments\":\"{\\\"city\\\":\\\"Z\\\\u00fcrich\\\",\\\"days\\\":3}\"}}",
            TG_FORMAT_AUTO, TG_FORMAT_OPENAI, NULL, "get_weather",
            "{\"city\":\"Z\xc3\xbcrich\",\"days\":3}",
            "OpenAI tool call, arguments as a JSON string");
    decodes("{\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}",
            TG_FORMAT_AUTO, TG_FORMAT_OPENAI, NULL, "f", "{\"a\":1}",
            "OpenAI tool call, arguments already an object");
    decodes(
        "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"search\",\"input\":{\"q\":\"x\"}}",
        TG_FORMAT_AUTO, TG_FORMAT_ANTHROPIC, NULL, "search", "{\"q\":\"x\"}", "Anthropic tool_use");
    decodes(
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"read_file\","
        "\"arguments\":{\"path\":\"/etc/hosts\"}}}",
        TG_FORMAT_AUTO, TG_FORMAT_MCP, NULL, "read_file", "{\"path\":\"/etc/hosts\"}",
        "MCP tools/call");
    decodes(
        "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"list\"}}",
        TG_FORMAT_MCP, TG_FORMAT_MCP, NULL, "list", "{}", "MCP tools/call without arguments");

    /* ids */
    {
        tg_call_t *c;
        const char *j =
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}";
        tg_call_decode(E, j, strlen(j), TG_FORMAT_AUTO, &c, NULL);
        tap_ok(tg_num(tg_call_id(c)) == 7.0, "MCP id is kept");
        tg_call_free(c);
        j = "{\"name\":\"x\"}";
        tg_call_decode(E, j, strlen(j), TG_FORMAT_AUTO, &c, NULL);
        tap_ok(tg_call_id(c) == NULL, "no id: NULL");
        tg_call_free(c);
    }

    /* refused, each with its code */
    refuses("[1]", TG_FORMAT_AUTO, TG_E_BAD_CALL, "a call must be an object");
    refuses("{\"tool\":\"x\"}", TG_FORMAT_AUTO, TG_E_BAD_CALL, "no recognizable format");
    refuses("{\"name\":\"\"}", TG_FORMAT_AUTO, TG_E_BAD_CALL, "empty name");
    refuses("{\"name\":42}", TG_FORMAT_AUTO, TG_E_BAD_CALL, "name not a string");
    refuses("{\"name\":\"x\",\"server\":1}", TG_FORMAT_AUTO, TG_E_BAD_CALL, "server not a string");
    refuses("{\"name\":\"x\",\"arguments\":[1]}", TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS,
            "arguments an array");
    refuses("{\"name\":\"x\",\"arguments\":null}", TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS,
            "arguments null");
    refuses(
        "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1,\\\"a\\\":2}\"}}",
        TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS, "OpenAI arguments with a duplicate key");
    refuses("{\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\"}}",
            TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS, "OpenAI arguments truncated");
    refuses("{\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}",
            TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS, "OpenAI arguments empty string");
    refuses("{\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"[1,2]\"}}",
            TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS, "OpenAI arguments not an object");
    refuses("{\"type\":\"function\",\"function\":{\"name\":\"f\"}}", TG_FORMAT_AUTO,
            TG_E_BAD_ARGUMENTS, "OpenAI arguments missing");
    refuses("{\"type\":\"function\",\"function\":\"f\"}", TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "OpenAI function not an object");
    refuses("{\"jsonrpc\":\"2.0\",\"method\":\"tools/list\"}", TG_FORMAT_AUTO, TG_E_BAD_CALL,
            "MCP method other than tools/call");
    refuses("{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":[]}", TG_FORMAT_AUTO,
            TG_E_BAD_CALL, "MCP params not an object");
    refuses(
        "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":\"{}\"}}",
        TG_FORMAT_AUTO, TG_E_BAD_ARGUMENTS, "MCP arguments as a string");
    refuses("{\"type\":\"tool_use\",\"name\":\"x\",\"input\":\"{}\"}", TG_FORMAT_AUTO,
            TG_E_BAD_ARGUMENTS, "Anthropic input not an object");
    refuses("{\"name\":\"x\",\"arguments\":{}}", TG_FORMAT_MCP, TG_E_BAD_CALL,
            "explicit format that does not fit");
    refuses("{\"name\":\"x\",\"name\":\"y\"}", TG_FORMAT_AUTO, TG_E_DUPLICATE_KEY,
            "malformed envelope keeps its JSON code");
    refuses("{\"name\":\"x\"}", 99, TG_E_ARG, "unknown format number");

    /* the OpenAI arguments string obeys the engine's limits */
    {
        tg_limits_t lim;
        tg_engine_t *small;
        tg_call_t *c;
        tg_error_t err;
        const char *j =
            "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"[[[[1]]]]\"}}";
        tg_limits_default(&lim);
        lim.max_depth = 3;
        small = tg_engine_new(&lim, NULL, NULL, NULL);
        tap_ok(tg_call_decode(small, j, strlen(j), TG_FORMAT_AUTO, &c, &err) ==
                       TG_E_BAD_ARGUMENTS &&
                   strstr(err.message, "TOO_DEEP") != NULL,
               "limits apply inside the arguments string (and the message names the inner code)");
        tg_engine_free(small);
    }

    tg_engine_free(E);
    return tap_done();
}
