// inbox.mjs: the web inbox in a real browser, for spec/inbox_spec.lua.
// node inbox.mjs ADMIN_URL MCP_URL TOKEN_FILE OUT_DIR DOCS_PNG PRINCIPAL
// Debian's chromium, driven by puppeteer-core, logs in to the inbox on the
// gateway's admin listener; the SDK client (client.mjs) makes deferred
// calls through the gateway; the page shows them, grants one and denies
// another; a page on another origin (served here) forges a POST; the page
// is photographed at 1280 px and 360 px, light and dark, and each layout
// checked in the page (no overlapping text, nothing clipped or off-screen,
// no text under 12 px).  Prints one JSON line per step ({"step", ...}); any
// failure ends with exit code 1 and {"fail": message}.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";

// (the SDK client asks as PRINCIPAL: the gateway reads X-Principal)
const [adminUrl, mcpUrl, tokenFile, outDir, docsPng, principal] = process.argv.slice(2);
const token = readFileSync(tokenFile, "utf8").trim();
const here = dirname(fileURLToPath(import.meta.url));
const out = (v) => process.stdout.write(JSON.stringify(v) + "\n");
function check(ok, what) { if (!ok) throw new Error(what); }

// the SDK client's one call through the gateway -> its tool result
function call(args) {
  const steps = JSON.stringify([{ op: "call", name: "write_note", arguments: args }]);
  return new Promise((resolve, reject) => {
    const env = { ...process.env, HEADERS: JSON.stringify({ "X-Principal": principal }) };
    execFile("node", [join(here, "client.mjs"), mcpUrl, steps], { cwd: here, env, timeout: 20000 }, (err, stdout) => {
      if (err) return reject(new Error("client.mjs: " + err.message + stdout));
      const lines = stdout.trim().split("\n").map((l) => JSON.parse(l));
      resolve(lines[1].ok);
    });
  });
}
const approvalOf = (result) => result && result._meta && result._meta["toolgate/approval_id"];

async function bearer(path) {
  const res = await fetch(adminUrl + path, { headers: { Authorization: "Bearer " + token } });
  return res.json();
}

// Everything wrong with the page's layout, measured in the page.
function layoutProblems() {
  const problems = [], boxes = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.textContent.trim();
    if (!text) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
    const p = n.parentElement, style = getComputedStyle(p);
    // not rendered: hidden, or in a closed details (laid out, under content-visibility: hidden)
    if (rects.length === 0 || !p.checkVisibility({ visibilityProperty: true })) continue;
    const label = text.slice(0, 40);
    if (parseFloat(style.fontSize) < 12) problems.push("font " + style.fontSize + ": " + label);
    // what shows of each line: a scrolling box (the arguments) hides what is scrolled away
    let clip = { left: -Infinity, top: -Infinity, right: Infinity, bottom: Infinity };
    for (let e = p; e && e !== document.body; e = e.parentElement) {
      if (getComputedStyle(e).overflowY === "visible") continue;
      const b = e.getBoundingClientRect();
      clip = { left: Math.max(clip.left, b.left), top: Math.max(clip.top, b.top),
        right: Math.min(clip.right, b.right), bottom: Math.min(clip.bottom, b.bottom) };
    }
    for (const whole of rects) {
      if (whole.left < -0.5 || whole.right > innerWidth + 0.5) problems.push("off-screen: " + label);
      const r = { left: Math.max(whole.left, clip.left), top: Math.max(whole.top, clip.top),
        right: Math.min(whole.right, clip.right), bottom: Math.min(whole.bottom, clip.bottom) };
      if (r.right > r.left && r.bottom > r.top) boxes.push({ r, label, node: n });
    }
    for (let e = p; e && e !== document.body; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.overflowX !== "visible" && e.scrollWidth > e.clientWidth + 1) problems.push("cut across: " + label);
      if (s.overflowY === "hidden" && e.scrollHeight > e.clientHeight + 1) problems.push("cut down: " + label);
    }
  }
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.node === b.node) continue;
      const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
      const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
      if (w > 1 && h > 1) problems.push("overlap: " + a.label + " / " + b.label);
    }
  }
  if (document.documentElement.scrollWidth > innerWidth + 1) problems.push("the page is wider than the window");
  return [...new Set(problems)];
}

const profile = mkdtempSync(join(tmpdir(), "toolgate-inbox-chromium-"));
let browser, foreign;
try {
  browser = await puppeteer.launch({
    executablePath: "/usr/bin/chromium", headless: true, userDataDir: profile, timeout: 30000,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = await browser.newPage();
  page.setDefaultTimeout(15000);
  const violations = [];
  page.on("console", (m) => { if (/Content Security Policy|Refused/.test(m.text())) violations.push(m.text()); });
  page.on("pageerror", (e) => violations.push("page error: " + e.message));
  const foreignRequests = [];
  page.on("request", (r) => { if (!r.url().startsWith(adminUrl) && !r.url().startsWith("http://127.0.0.1:" + foreign?.port)) foreignRequests.push(r.url()); });
  await page.setViewport({ width: 1280, height: 900 });

  // a wrong token: refused, the login form again with the reason
  let res = await page.goto(adminUrl + "/approvals");
  check(res.status() === 200 && (await page.$("input[name=token]")), "the login form expected");
  await page.type("input[name=token]", token.slice(0, -1) + "x");
  [res] = await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  const wrong = { status: res.status(), alert: await page.evaluate(() => document.body.innerText) };
  check(wrong.status === 401 && (await page.cookies()).length === 0, "a wrong token must be refused: " + JSON.stringify(wrong));
  out({ step: "wrong token", ...wrong });

  // the right token: a session cookie (random id, HttpOnly, SameSite=Strict), the inbox
  await page.type("input[name=token]", token);
  [res] = await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  check(res.url() === adminUrl + "/approvals" && !res.url().includes(token), "the inbox at /approvals expected");
  const cookies = await page.cookies();
  check(cookies.length === 1 && cookies[0].httpOnly && cookies[0].sameSite === "Strict" &&
    /^[0-9a-f]{32}$/.test(cookies[0].value) && !cookies[0].value.includes(token), "the session cookie: " +
    JSON.stringify(cookies));
  out({ step: "login", cookie: { name: cookies[0].name, httpOnly: cookies[0].httpOnly, sameSite: cookies[0].sameSite,
    secure: cookies[0].secure, path: cookies[0].path } });

  // a deferred call appears without a reload, its arguments exact
  const args = { text: "ship it <b>now</b> \"quoted\" ✓\nline 2" };
  const first = await call(args);
  const id = approvalOf(first);
  check(first.isError && id, "the write is deferred: " + JSON.stringify(first));
  const card = `#pending article[data-id="${id}"]`;
  await page.waitForSelector(card, { timeout: 10000 });
  const shown = await page.$eval(card, (c) => ({
    title: c.querySelector("h3").textContent, args: c.querySelector("pre.args").textContent,
    facts: Object.fromEntries([...c.querySelectorAll("dt")].map((dt) => [dt.textContent, dt.nextElementSibling.textContent])),
  }));
  const record = await bearer("/v1/approvals/" + id);
  out({ step: "pending", id, shown, arguments: record.arguments, args_digest: record.args_digest, stage: record.stage });

  // screenshots: 1280 px and 360 px, light and dark, each layout checked
  const shots = {};
  for (const [width, height] of [[1280, 900], [360, 780]]) {
    for (const scheme of ["light", "dark"]) {
      await page.setViewport({ width, height });
      await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: scheme }]);
      await new Promise((r) => setTimeout(r, 200));
      const problems = await page.evaluate(layoutProblems);
      const file = join(outDir, `inbox-${width}-${scheme}.png`);
      await page.screenshot({ path: file, fullPage: true });
      shots[`${width}-${scheme}`] = { file, problems };
      if (width === 1280 && scheme === "light") {
        await page.screenshot({ path: docsPng, clip: { x: 0, y: 0, width: 1280, height: 640 } });
      }
    }
  }
  await page.setViewport({ width: 1280, height: 900 });
  await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "light" }]);
  out({ step: "screenshots", shots });

  // grant it (2 uses, 10 minutes): the client's retry passes
  await page.$eval(card + " input[name=uses]", (e) => { e.value = "2"; });
  await page.select(card + " select[name=expires]", "600");
  // typed slower than the page polls (2 s): a refresh must not take the focus away
  await page.type(card + " input[name=note]", "looks right", { delay: 250 });
  await page.click(card + " button[type=submit]");
  await page.waitForSelector(`#history article[data-id="${id}"]`, { timeout: 10000 });
  await page.waitForFunction((sel) => !document.querySelector(sel), { timeout: 10000 }, card);
  const granted = await bearer("/v1/approvals/" + id);
  const retry = await call(args);
  out({ step: "granted", status: granted.status, decided_by: granted.decided_by, note: granted.note,
    uses: granted.uses, retry_is_error: retry.isError === true, retry_text: retry.content?.[0]?.text });

  // deny another: the client's retry is refused
  const other = { text: "drop the table" };
  const second = approvalOf(await call(other));
  check(second, "the second write is deferred");
  const card2 = `#pending article[data-id="${second}"]`;
  await page.waitForSelector(card2, { timeout: 10000 });
  await page.type(card2 + " input[name=note]", "not this one");
  await page.click(card2 + " button.deny");
  await page.waitForSelector(`#history article[data-id="${second}"] .verdict.denied`, { timeout: 10000 });
  const denied = await bearer("/v1/approvals/" + second);
  const again = await call(other);
  out({ step: "denied", status: denied.status, decided_by: denied.decided_by, note: denied.note,
    retry_is_error: again.isError === true, retry_text: again.content?.[0]?.text });

  // a forged POST from a page on another origin (the browser holds the session cookie)
  const third = approvalOf(await call({ text: "forged" }));
  check(third, "the third write is deferred");
  foreign = createServer((req, resp) => {
    resp.writeHead(200, { "Content-Type": "text/html" });
    resp.end(`<!doctype html><form id=f method=post action="${adminUrl}/v1/approvals/${third}/grant"
      enctype="text/plain"><input name='{"uses":5,"x":"' value='"}'></form><script>f.submit()</script>`);
  });
  await new Promise((r) => foreign.listen(0, "127.0.0.1", r));
  foreign.port = foreign.address().port;
  const evil = await browser.newPage();
  const answered = evil.waitForResponse((r) => r.url().endsWith("/" + third + "/grant"), { timeout: 10000 });
  await evil.goto(`http://127.0.0.1:${foreign.port}/`);
  const forgedAnswer = await answered;
  const forged = { status: forgedAnswer.status(), body: await forgedAnswer.text() };
  const pendingAfter = (await bearer("/v1/approvals/" + third)).status;
  out({ step: "forged", ...forged, status_after: pendingAfter });
  await evil.close();

  // arguments too long to keep whole: the page says they are cut
  const long = approvalOf(await call({ text: "x".repeat(70000) }));
  check(long, "the long write is deferred");
  const card4 = `#pending article[data-id="${long}"]`;
  await page.waitForSelector(card4, { timeout: 10000 });
  out({ step: "cut", cut: await page.$eval(card4, (c) => c.querySelector(".cut")?.textContent ?? null),
    problems: await page.evaluate(layoutProblems) });

  // log out: the session is gone from the server too
  const sid = cookies[0].value;
  [res] = await Promise.all([page.waitForNavigation(), page.click("header form button")]);
  const after = await fetch(adminUrl + "/v1/approvals", { headers: { Cookie: "toolgate_inbox=" + sid } });
  out({ step: "logout", login_form: !!(await page.$("input[name=token]")), cookies: (await page.cookies()).length,
    old_session_status: after.status });
  out({ step: "browser", csp_violations: violations, foreign_requests: foreignRequests });
} catch (e) {
  out({ fail: String(e && e.stack || e) });
  process.exitCode = 1;
} finally {
  if (browser) await browser.close();
  if (foreign) foreign.close();
  rmSync(profile, { recursive: true, force: true });
}
