--- toolgate.inbox: the web inbox on the gateway's admin listener.
-- GET /approvals is one self-contained page (inline CSS and JS allowed by a
-- per-response nonce, nothing fetched from elsewhere) listing the pending
-- approvals and the decided ones; it polls GET /v1/approvals and posts to
-- POST /v1/approvals/ID/grant|deny, the admin API itself.
-- The admin token is typed once into the login form (POST /approvals/login);
-- the browser then holds a random session id in a cookie (HttpOnly,
-- SameSite=Strict), mapped in the shared dict to its CSRF token until it
-- expires: the token itself never leaves the form, never sits in a URL or a
-- cookie.  A request made with the cookie that changes state needs the
-- session's CSRF token (a header, or a form field for logout) and must not
-- come from another site (Origin, Sec-Fetch-Site): else 403.
-- @module toolgate.inbox
local M = {}

M.COOKIE = "toolgate_inbox"
M.SESSION_SECONDS = 8 * 3600
M.DECIDED_BY = "inbox (admin token)"
local KEY = "inbox:session:"

-- n random bytes as hex, from the kernel; nil when it cannot be read (the
-- caller refuses: a guessable session id or nonce is no protection)
local function random_hex(n)
  local f = io.open("/dev/urandom", "rb")
  if not f then return nil end
  local bytes = f:read(n)
  f:close()
  if not bytes or #bytes ~= n then return nil end
  return (bytes:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

local function html_escape(s)
  return (s:gsub("[&<>\"']", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }))
end

-- Strings compared in a time that depends on given's length alone.
local function same(given, expected)
  local diff = #given == #expected and 0 or 1
  for i = 1, #given do
    if given:byte(i) ~= expected:byte((i - 1) % #expected + 1) then diff = 1 end
  end
  return diff == 0
end

--- cross_site(): why this request comes from another site, or nil.  A
-- browser names the initiator in Sec-Fetch-Site and, on a POST, sends
-- Origin; a request with neither (curl) is judged by its CSRF token alone.
function M.cross_site()
  local site = ngx.var.http_sec_fetch_site
  if site and site ~= "same-origin" and site ~= "none" then return "Sec-Fetch-Site: " .. site end
  local origin = ngx.var.http_origin
  if origin and origin ~= ngx.var.scheme .. "://" .. tostring(ngx.var.http_host) then return "Origin: " .. origin end
  return nil
end

-- the session's id and CSRF token from the cookie, or nil
local function session(dict)
  local sid = ngx.var["cookie_" .. M.COOKIE]
  if not sid or not sid:match("^" .. string.rep("%x", 32) .. "$") then return nil end
  local csrf = dict:get(KEY .. sid)
  if not csrf then return nil end
  return sid, csrf
end

local function cookie(value, max_age)
  return M.COOKIE .. "=" .. value .. "; Path=/; Max-Age=" .. max_age .. "; HttpOnly; SameSite=Strict"
    .. (ngx.var.https == "on" and "; Secure" or "")
end

--- authorized(dict) -> who | nil, status, message: an admin API request made
-- by the inbox page, with its session cookie; a POST also needs the
-- session's CSRF token in X-CSRF-Token and must not come from another site.
function M.authorized(dict)
  local _, csrf = session(dict)
  if not csrf then return nil, 401, "a valid bearer token or inbox session is needed" end
  local why = M.cross_site()
  if why then return nil, 403, "a cross-site request is refused (" .. why .. ")" end
  if ngx.req.get_method() ~= "GET" then
    local given = ngx.var.http_x_csrf_token
    if not given or not same(given, csrf) then return nil, 403, "the inbox session's CSRF token is needed" end
  end
  return M.DECIDED_BY
end

-- The pages ------------------------------------------------------------------

local function csp(nonce)
  return "default-src 'none'; script-src 'nonce-" .. nonce .. "'; style-src 'nonce-" .. nonce .. "'; "
    .. "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
end

local function send_page(status, nonce, body)
  ngx.status = status
  ngx.header["Content-Type"] = "text/html; charset=utf-8"
  ngx.header["Content-Security-Policy"] = csp(nonce)
  ngx.header["X-Content-Type-Options"] = "nosniff"
  ngx.header["X-Frame-Options"] = "DENY"
  ngx.header["Referrer-Policy"] = "same-origin" -- (no-referrer would make a form's Origin "null")
  ngx.header["Cache-Control"] = "no-store"
  ngx.print(body)
  return ngx.exit(status)
end

local function send_text(status, text, extra)
  ngx.status = status
  ngx.header["Content-Type"] = "text/plain; charset=utf-8"
  ngx.header["Cache-Control"] = "no-store"
  for k, v in pairs(extra or {}) do ngx.header[k] = v end
  ngx.print(text .. "\n")
  return ngx.exit(status)
end

local function fill(template, values)
  return (template:gsub("{{(%w+)}}", function(k) return values[k] end))
end

local STYLE = [==[
:root { color-scheme: light dark; --bg: #f6f7f9; --fg: #1b1f24; --card: #ffffff; --line: #d0d7de; --muted: #57606a;
  --accent: #0b5cad; --accent-fg: #ffffff; --deny: #b42318; --code: #eef1f4; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0f1217; --fg: #e6edf3; --card: #171b22; --line: #30363d; --muted: #9aa4ae; --accent: #4493f8;
    --accent-fg: #0b0f14; --deny: #f47067; --code: #0b0e13; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 15px/1.45 system-ui, -apple-system, "Segoe UI",
  Roboto, "DejaVu Sans", sans-serif; }
header.top { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; justify-content: space-between;
  padding: 12px 16px; border-bottom: 1px solid var(--line); background: var(--card); }
header.top h1 { font-size: 18px; margin: 0; }
main { max-width: 960px; margin: 0 auto; padding: 12px; }
h2 { font-size: 16px; margin: 20px 4px 8px; }
.status { color: var(--muted); font-size: 13px; margin: 0; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px; margin: 0 0 12px; }
.card h3 { font-size: 16px; margin: 0 0 6px; overflow-wrap: anywhere; }
dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 12px; margin: 0 0 8px; font-size: 14px; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
code, pre { font: 13px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
pre.args { background: var(--code); border: 1px solid var(--line); border-radius: 6px; padding: 8px; margin: 0 0 8px;
  white-space: pre-wrap; overflow-wrap: anywhere; max-height: 24em; overflow-y: auto; }
.cut { color: var(--deny); font-size: 14px; margin: 0 0 8px; }
form.decide { display: flex; flex-wrap: wrap; gap: 8px 12px; align-items: flex-end; }
label { display: flex; flex-direction: column; font-size: 13px; color: var(--muted); gap: 2px; }
label.note { flex: 1 1 200px; }
input, select, button { font: inherit; font-size: 15px; color: var(--fg); background: var(--bg);
  border: 1px solid var(--line); border-radius: 6px; padding: 6px 8px; min-height: 36px; }
input[type=number] { width: 6em; }
button { cursor: pointer; background: var(--accent); color: var(--accent-fg); border-color: var(--accent); font-weight: 600; }
button.deny { background: transparent; color: var(--deny); border-color: var(--deny); }
button.plain { background: transparent; color: var(--fg); border-color: var(--line); font-weight: 400; }
.msg { font-size: 14px; margin: 6px 0 0; }
.empty { color: var(--muted); margin: 0 4px 12px; }
.history .card { padding: 8px 12px; }
.verdict { font-weight: 600; }
.verdict.denied { color: var(--deny); }
details summary { cursor: pointer; font-size: 14px; color: var(--muted); }
.login { max-width: 420px; margin: 48px auto; }
.login form { display: flex; flex-direction: column; gap: 12px; }
.error { color: var(--deny); margin: 0; }
]==]

local LOGIN = [[<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>toolgate approvals: log in</title><style nonce="{{nonce}}">{{style}}</style></head>
<body><main class="login"><div class="card">
<h1>toolgate approvals</h1>
{{error}}
<form method="post" action="/approvals/login">
<label for="token">Admin token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Log in</button>
</form></div></main></body></html>
]]

local PAGE = [[<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="{{csrf}}">
<title>toolgate approvals</title><style nonce="{{nonce}}">{{style}}</style></head>
<body>
<header class="top"><h1>toolgate approvals</h1>
<p class="status" id="status" role="status">loading</p>
<form method="post" action="/approvals/logout"><input type="hidden" name="csrf" value="{{csrf}}">
<button class="plain" type="submit">Log out</button></form></header>
<main>
<h2>Pending</h2><p class="empty" id="none">No call waits for a person.</p><section id="pending"></section>
<h2>Decided</h2><p class="empty" id="nohistory">Nothing decided yet.</p><section id="history" class="history"></section>
</main>
<script nonce="{{nonce}}">{{script}}</script>
</body></html>
]]

local SCRIPT = [==[
"use strict";
const csrf = document.querySelector('meta[name="csrf-token"]').content;
const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};
// Re-indents canonical JSON text without parsing it: every string and
// number stays byte for byte what the approval is bound to (a parse would
// round 2^53 + 1); a cut text is indented as far as it goes.
function pretty(text) {
  let out = "", depth = 0, inString = false;
  const pad = () => "\n" + "  ".repeat(depth);
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === "\\" && i + 1 < text.length) out += text[++i];
      else if (c === '"') inString = false;
    } else if (c === '"') { inString = true; out += c; }
    else if (c === "{" || c === "[") {
      const close = c === "{" ? "}" : "]";
      if (text[i + 1] === close) { out += c + close; i++; } else { depth++; out += c + pad(); }
    } else if (c === "}" || c === "]") { depth = Math.max(0, depth - 1); out += pad() + c; }
    else if (c === ",") out += "," + pad();
    else if (c === ":") out += ": ";
    else out += c;
  }
  return out;
}
function age(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return s + " s ago";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return Math.floor(s / 86400) + " d ago";
}
let skew = 0; // the server's clock minus ours, from the Date header
const now = () => Date.now() / 1000 + skew;
function facts(rows) {
  const dl = el("dl");
  for (const [k, v] of rows) {
    if (v === undefined || v === null || v === "") continue;
    dl.append(el("dt", null, k), el("dd", null, String(v)));
  }
  return dl;
}
function argsBlock(r) {
  const frag = document.createDocumentFragment();
  const pre = el("pre", "args", pretty(r.arguments || ""));
  pre.setAttribute("aria-label", "arguments");
  frag.append(pre);
  if (r.arguments_truncated) {
    frag.append(el("p", "cut", "Cut: the first " + (r.arguments || "").length + " characters of " +
      r.arguments_bytes + " bytes are shown; the digest covers them all."));
  }
  return frag;
}
function who(r) { return r.principal || "unknown (no principal recorded)"; }
async function decide(r, verb, form, msg) {
  const body = { note: form.note.value || undefined };
  if (verb === "grant") { body.uses = Number(form.uses.value); body.expires_in = Number(form.expires.value); }
  for (const b of form.querySelectorAll("button")) b.disabled = true;
  msg.textContent = verb === "grant" ? "granting" : "denying";
  try {
    const res = await fetch("/v1/approvals/" + encodeURIComponent(r.id) + "/" + verb, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf }, body: JSON.stringify(body) });
    const answer = await res.json().catch(() => ({}));
    if (res.status === 401) { location.reload(); return; }
    msg.textContent = res.ok ? (answer.status || verb) : ("refused: " + (answer.error || res.status));
  } catch (e) {
    msg.textContent = "failed: " + e;
  }
  for (const b of form.querySelectorAll("button")) b.disabled = false;
  refresh();
}
function pendingCard(r) {
  const card = el("article", "card");
  card.dataset.id = r.id;
  card.append(el("h3", null, r.server + " / " + r.tool));
  card.append(facts([["Asked", age(now() - r.created)], ["Who asked", who(r)], ["Reason", r.message],
    ["Stage", r.stage], ["Code", r.code], ["Approval", r.id], ["Digest", r.args_digest]]));
  card.querySelector("dd").classList.add("age");
  card.append(argsBlock(r));
  const form = el("form", "decide");
  form.innerHTML = '<label>Uses<input name="uses" type="number" min="1" max="1000" value="1" required></label>' +
    '<label>Expires in<select name="expires"><option value="600">10 minutes</option>' +
    '<option value="3600" selected>1 hour</option><option value="86400">1 day</option></select></label>' +
    '<label class="note">Note<input name="note" maxlength="500" autocomplete="off"></label>' +
    '<button type="submit" value="grant">Grant</button><button type="button" class="deny" value="deny">Deny</button>';
  const msg = el("p", "msg");
  msg.setAttribute("role", "status");
  form.addEventListener("submit", (e) => { e.preventDefault(); decide(r, "grant", form, msg); });
  form.querySelector("button.deny").addEventListener("click", () => decide(r, "deny", form, msg));
  card.append(form, msg);
  return card;
}
function historyCard(r) {
  const card = el("article", "card");
  card.dataset.id = r.id;
  const h = el("h3");
  h.append(el("span", "verdict " + r.status, r.status), document.createTextNode(" " + r.server + " / " + r.tool));
  card.append(h);
  card.append(facts([["Asked", age(now() - r.created)], ["Who asked", who(r)], ["Decided by", r.decided_by],
    ["Decided", r.decided_at ? age(now() - r.decided_at) : undefined], ["Note", r.note],
    ["Uses left", r.status === "granted" ? r.uses : undefined], ["Approval", r.id], ["Digest", r.args_digest]]));
  const d = el("details");
  d.append(el("summary", null, "Arguments"), argsBlock(r));
  card.append(d);
  return card;
}
let lastHistory = "";
async function refresh() {
  let res;
  try {
    res = await fetch("/v1/approvals", { credentials: "same-origin", headers: { Accept: "application/json" } });
  } catch (e) { $("status").textContent = "the gateway does not answer; retrying"; return; }
  if (res.status === 401) { location.reload(); return; }
  if (!res.ok) { $("status").textContent = "the gateway answered " + res.status + "; retrying"; return; }
  const date = Date.parse(res.headers.get("Date"));
  if (!Number.isNaN(date)) skew = date / 1000 - Date.now() / 1000;
  const all = (await res.json()).approvals || [];
  all.sort((a, b) => (b.created - a.created) || (a.id < b.id ? -1 : 1));
  const pending = all.filter((r) => r.status === "pending");
  const decided = all.filter((r) => r.status !== "pending")
    .sort((a, b) => ((b.decided_at || b.created) - (a.decided_at || a.created)));
  // pending cards stay in place while someone types a note (moving a card
  // would take the focus away): only new ones are built and inserted
  const list = $("pending"), seen = new Set();
  let prev = null;
  for (const r of pending) {
    seen.add(r.id);
    let card = list.querySelector('[data-id="' + CSS.escape(r.id) + '"]');
    if (card) card.querySelector(".age").textContent = age(now() - r.created);
    else {
      card = pendingCard(r);
      if (prev) prev.after(card); else list.prepend(card);
    }
    prev = card;
  }
  for (const card of [...list.children]) if (!seen.has(card.dataset.id)) card.remove();
  $("none").hidden = pending.length > 0;
  const key = JSON.stringify(decided.map((r) => [r.id, r.status, r.uses]));
  if (key !== lastHistory) {
    lastHistory = key;
    $("history").replaceChildren(...decided.map(historyCard));
  }
  $("nohistory").hidden = decided.length > 0;
  $("status").textContent = pending.length + " pending; updated " + new Date().toLocaleTimeString();
}
refresh();
setInterval(refresh, 2000);
]==]

local function login_page(status, nonce, message)
  return send_page(status, nonce, fill(LOGIN, { nonce = nonce, style = STYLE,
    error = message and ('<p class="error" role="alert">' .. html_escape(message) .. "</p>") or "" }))
end

--- serve(dict, check): the inbox's own routes, GET /approvals, POST
-- /approvals/login and /approvals/logout; check(given) says whether given
-- is the admin token.
function M.serve(dict, check)
  local uri, method = ngx.var.uri, ngx.req.get_method()
  local nonce = random_hex(16)
  if not nonce then return send_text(503, "no randomness: /dev/urandom cannot be read") end
  if uri == "/approvals" and method == "GET" then
    local _, csrf = session(dict)
    if not csrf then return login_page(200, nonce) end
    return send_page(200, nonce, fill(PAGE, { nonce = nonce, csrf = csrf, style = STYLE, script = SCRIPT }))
  end
  if (uri == "/approvals/login" or uri == "/approvals/logout") and method == "POST" then
    local why = M.cross_site()
    if why then return send_text(403, "a cross-site request is refused (" .. why .. ")") end
    ngx.req.read_body()
    local args = ngx.req.get_post_args(4) or {}
    if uri == "/approvals/logout" then
      local sid, csrf = session(dict)
      if sid then
        if type(args.csrf) ~= "string" or not same(args.csrf, csrf) then
          return send_text(403, "the inbox session's CSRF token is needed")
        end
        dict:delete(KEY .. sid)
      end
      return send_text(303, "logged out", { Location = "/approvals", ["Set-Cookie"] = cookie("", 0) })
    end
    if type(args.token) ~= "string" or not check(args.token) then
      ngx.log(ngx.WARN, "toolgate: inbox login refused: a wrong admin token")
      return login_page(401, nonce, "That is not the admin token.")
    end
    local sid, csrf = random_hex(16), random_hex(16)
    if not sid or not csrf then return send_text(503, "no randomness: /dev/urandom cannot be read") end
    local ok, err = dict:set(KEY .. sid, csrf, M.SESSION_SECONDS)
    if not ok then return send_text(503, "the session cannot be kept: " .. tostring(err)) end
    return send_text(303, "logged in", { Location = "/approvals", ["Set-Cookie"] = cookie(sid, M.SESSION_SECONDS) })
  end
  return send_text(404, "no such page: " .. method .. " " .. uri)
end

return M
