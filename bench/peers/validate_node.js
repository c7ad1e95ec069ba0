#!/usr/bin/env node
// Peer: JSON Schema validation of tool-call arguments with ajv 8
// (draft 2020-12 via ajv/dist/2020; strict:false, allErrors:false,
// validateFormats:false).
//
//   node bench/peers/validate_node.js --schemas SCHEMAS.json --calls CALLS.jsonl [--min-seconds S]
//   node bench/peers/validate_node.js --check [--no-inline-refs] --schemas SCHEMAS.json --calls CALLS.jsonl
//
// SCHEMAS.json: one JSON object mapping a tool key to its JSON Schema.
// CALLS.jsonl: one call per non-blank line, {"tool":"<key>","arguments":"<raw JSON text>"}
// (other members, e.g. gen_calls.py's "expect" and "mutation", are ignored).
//
// Every schema is compiled once, before any timing.  Bench mode runs one
// untimed warm-up pass, then times (process.hrtime.bigint) whole passes of
// JSON.parse(arguments) + the tool's compiled validator over all calls until
// >= S seconds (default 1), and prints
//   node-ajv calls=<n> seconds=<s> ns_per_call=<y> valid=<count valid in one pass>
// seconds is the timed total over all passes; ns_per_call = seconds*1e9/(passes*calls).
// Arguments text that JSON.parse rejects counts as invalid (the throw is
// caught inside the timed loop).
//
// --check prints one line per call, in order: {"valid":true} or {"valid":false}.
// --no-inline-refs compiles every $ref target as a function of its own
// (ajv's inlineRefs: false), which the union differential needs (see
// bench/gen_unions.py).
'use strict';

const fs = require('fs');
const Ajv2020 = require('ajv/dist/2020');

function usage (msg) {
  if (msg) process.stderr.write('validate_node: ' + msg + '\n');
  process.stderr.write('usage: validate_node.js [--check] [--no-inline-refs] [--min-seconds S] --schemas FILE --calls FILE\n');
  process.exit(2);
}

function parseArgs (argv) {
  const o = { check: false, inlineRefs: true, minSeconds: 1, schemas: null, calls: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--check') o.check = true;
    else if (a === '--no-inline-refs') o.inlineRefs = false;
    else if (a === '--schemas') o.schemas = argv[++i];
    else if (a === '--calls') o.calls = argv[++i];
    else if (a === '--min-seconds') o.minSeconds = Number(argv[++i]);
    else usage('unknown argument ' + a);
  }
  if (!o.schemas || !o.calls) usage('--schemas and --calls are required');
  if (!(o.minSeconds > 0)) usage('--min-seconds must be > 0');
  return o;
}

function main () {
  const opts = parseArgs(process.argv.slice(2));
  const schemas = JSON.parse(fs.readFileSync(opts.schemas, 'utf8'));
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false, inlineRefs: opts.inlineRefs });
  const validators = new Map();
  for (const key of Object.keys(schemas)) {
    validators.set(key, ajv.compile(schemas[key]));
  }

  const calls = fs.readFileSync(opts.calls, 'utf8').split('\n')
    .filter((l) => l.trim() !== '')
    .map((l, i) => {
      const c = JSON.parse(l);
      const v = validators.get(c.tool);
      if (!v) usage(`call ${i + 1}: no schema for tool ${JSON.stringify(c.tool)}`);
      if (typeof c.arguments !== 'string') usage(`call ${i + 1}: "arguments" must be a string of JSON text`);
      return { validate: v, text: c.arguments };
    });
  if (calls.length === 0) usage('no calls');

  const one = (c) => {
    let obj;
    try {
      obj = JSON.parse(c.text);
    } catch (e) {
      return false;
    }
    return c.validate(obj) === true;
  };

  if (opts.check) {
    process.stdout.write(calls.map((c) => (one(c) ? '{"valid":true}' : '{"valid":false}')).join('\n') + '\n');
    return;
  }

  let valid = 0;
  for (const c of calls) valid += one(c) ? 1 : 0; // warm-up pass, untimed; also the valid count
  const limit = BigInt(Math.round(opts.minSeconds * 1e9));
  let ns = 0n;
  let passes = 0;
  let sink = 0;
  while (ns < limit) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls.length; i++) sink += one(calls[i]) ? 1 : 0;
    ns += process.hrtime.bigint() - t0;
    passes++;
  }
  if (sink !== valid * passes) throw new Error('validation is not deterministic');
  const seconds = Number(ns) / 1e9;
  const nsPerCall = (seconds * 1e9) / (passes * calls.length);
  process.stdout.write(`node-ajv calls=${calls.length} seconds=${seconds.toFixed(6)} ` +
    `ns_per_call=${nsPerCall.toFixed(1)} valid=${valid}\n`);
}

try {
  main();
} catch (e) {
  process.stderr.write('validate_node: ' + (e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
}
