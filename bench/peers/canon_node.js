#!/usr/bin/env node
// Peer: RFC 8785 (JCS) canonicalization in Node with the npm `canonicalize`
// package, optionally followed by SHA-256 of the canonical text.
//
//   node bench/peers/canon_node.js CORPUS.jsonl [--min-seconds S]
//   node bench/peers/canon_node.js --check CORPUS.jsonl > canonical.txt
//
// Bench mode loads every non-blank line into memory, runs one untimed
// warm-up pass, then times (process.hrtime.bigint) whole passes of
// JSON.parse(line) + canonicalize(obj) until >= S seconds (default 1), and
// the same again with crypto.createHash('sha256').update(out).digest('hex')
// added.  It prints two lines:
//   node-canonicalize docs=<n> bytes=<total input bytes> seconds=<s> MB_per_s=<x> ns_per_doc=<y>
//   node-canonicalize+sha256 docs=<n> bytes=<total input bytes> seconds=<s> MB_per_s=<x> ns_per_doc=<y>
// bytes is the UTF-8 size of one pass over the docs (newlines excluded),
// seconds the timed total over all passes, MB_per_s = bytes*passes/1e6/seconds,
// ns_per_doc = seconds*1e9/(passes*docs).  Lines that fail to parse or
// canonicalize are left out of the timing (and counted on stderr).
//
// --check writes, for each non-blank input line in order, its canonical form
// on one line, or the word ERROR if JSON.parse or canonicalize throws.
//
// `canonicalize` 5.x is an ES module only ("type": "module", exports has
// "import" only), so this CommonJS script loads it with dynamic import(),
// which works on Node 18+.  It calls String.prototype.isWellFormed (V8 11.x,
// Node >= 20); on Node 18 a spec-equivalent shim is installed below.
'use strict';

const fs = require('fs');
const crypto = require('crypto');

if (typeof String.prototype.isWellFormed !== 'function') {
  // Node 18: a string is well formed iff it has no lone surrogate; with the
  // u flag a paired surrogate is one astral code point, never \p{Cs}.
  const LONE = /\p{Cs}/u;
  Object.defineProperty(String.prototype, 'isWellFormed', {
    value: function isWellFormed () { return !LONE.test(String(this)); },
    writable: true,
    configurable: true,
  });
}

function usage (msg) {
  if (msg) process.stderr.write('canon_node: ' + msg + '\n');
  process.stderr.write('usage: canon_node.js [--check] [--min-seconds S] CORPUS.jsonl\n');
  process.exit(2);
}

function parseArgs (argv) {
  const o = { check: false, minSeconds: 1, file: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--check') o.check = true;
    else if (a === '--min-seconds') o.minSeconds = Number(argv[++i]);
    else if (a.startsWith('--')) usage('unknown option ' + a);
    else if (o.file === null) o.file = a;
    else usage('more than one file');
  }
  if (o.file === null) usage('no corpus file');
  if (!(o.minSeconds > 0)) usage('--min-seconds must be > 0');
  return o;
}

function readLines (file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '');
}

function timePasses (lines, fn, minSeconds) {
  const limit = BigInt(Math.round(minSeconds * 1e9));
  let sink = 0;
  for (const l of lines) sink += fn(l); // warm-up pass, untimed
  let ns = 0n;
  let passes = 0;
  while (ns < limit) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < lines.length; i++) sink += fn(lines[i]);
    ns += process.hrtime.bigint() - t0;
    passes++;
  }
  return { seconds: Number(ns) / 1e9, passes, sink };
}

function report (label, docs, bytes, t) {
  const mbps = (bytes * t.passes) / 1e6 / t.seconds;
  const nsPerDoc = (t.seconds * 1e9) / (t.passes * docs);
  process.stdout.write(`${label} docs=${docs} bytes=${bytes} seconds=${t.seconds.toFixed(6)} ` +
    `MB_per_s=${mbps.toFixed(3)} ns_per_doc=${nsPerDoc.toFixed(1)}\n`);
}

async function main () {
  const opts = parseArgs(process.argv.slice(2));
  const canonicalize = (await import('canonicalize')).default;
  const lines = readLines(opts.file);

  if (opts.check) {
    const out = lines.map((l) => {
      try {
        return canonicalize(JSON.parse(l));
      } catch (e) {
        return 'ERROR';
      }
    });
    process.stdout.write(out.join('\n') + (out.length ? '\n' : ''));
    return;
  }

  const good = lines.filter((l) => {
    try { canonicalize(JSON.parse(l)); return true; } catch (e) { return false; }
  });
  if (good.length !== lines.length) {
    process.stderr.write(`canon_node: ${lines.length - good.length} line(s) fail and are not timed\n`);
  }
  if (good.length === 0) usage('no usable lines');
  const bytes = good.reduce((s, l) => s + Buffer.byteLength(l, 'utf8'), 0);

  const canonOnly = (l) => canonicalize(JSON.parse(l)).length;
  const canonSha = (l) => {
    const out = canonicalize(JSON.parse(l));
    return crypto.createHash('sha256').update(out).digest('hex').charCodeAt(0);
  };
  report('node-canonicalize', good.length, bytes, timePasses(good, canonOnly, opts.minSeconds));
  report('node-canonicalize+sha256', good.length, bytes, timePasses(good, canonSha, opts.minSeconds));
}

main().catch((e) => {
  process.stderr.write('canon_node: ' + (e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
