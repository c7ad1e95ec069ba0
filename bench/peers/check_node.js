#!/usr/bin/env node
// Peer of `toolgate check` as a whole process: ajv 8 (draft 2020-12) over a
// file of native call lines {"server","name","arguments"}, one verdict line
// out per call line in.
//
//   node bench/peers/check_node.js --schemas SCHEMAS.json CALLS.jsonl > verdicts.jsonl
//
// SCHEMAS.json maps "server/name" to the (closed) input schema
// (bench/gen_mcp_calls.py --schemas-out writes it).  Each line is read as
// a user of ajv would: JSON.parse, look the tool up, run its compiled
// validator, write {"line":N,"server":..,"tool":..,"verdict":"accept"|"reject"}
// (a line that does not parse, or names no known tool, is a reject).
'use strict';

const fs = require('fs');
const Ajv2020 = require('ajv/dist/2020');

function usage (msg) {
  process.stderr.write('check_node: ' + msg + '\n' +
    'usage: check_node.js --schemas SCHEMAS.json CALLS.jsonl\n');
  process.exit(2);
}

const argv = process.argv.slice(2);
let schemasPath = null;
let callsPath = null;
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--schemas') schemasPath = argv[++i];
  else if (callsPath === null) callsPath = argv[i];
  else usage('unexpected argument ' + argv[i]);
}
if (!schemasPath || !callsPath) usage('--schemas and a calls file are required');

const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
const schemas = JSON.parse(fs.readFileSync(schemasPath, 'utf8'));
const validators = new Map();
for (const key of Object.keys(schemas)) validators.set(key, ajv.compile(schemas[key]));

// The whole file at once: faster than a line stream in node, and the peer
// should be the fastest a user would write.
const lines = fs.readFileSync(callsPath, 'utf8').split('\n');
if (lines.length && lines[lines.length - 1] === '') lines.pop();
const out = [];
for (let i = 0; i < lines.length; i++) {
  const line = lines[i];
  if (line.trim() === '') continue;
  let verdict = 'reject';
  let server = null;
  let tool = null;
  try {
    const c = JSON.parse(line);
    server = c.server;
    tool = c.name;
    const v = validators.get(server + '/' + tool);
    if (v && v(c.arguments) === true) verdict = 'accept';
  } catch (e) { /* not JSON: a reject */ }
  out.push(JSON.stringify({ line: i + 1, server, tool, verdict }));
  if (out.length >= 8192) {
    process.stdout.write(out.join('\n') + '\n');
    out.length = 0;
  }
}
if (out.length) process.stdout.write(out.join('\n') + '\n');
