#!/usr/bin/env node
// Peer: the JSON Schema `format` checks of ajv-formats 3 in "full" mode, on
// ajv 8 (draft 2020-12 via ajv/dist/2020, strict:false), for the
// differential spec of toolgate's asserted formats
// (spec/differential_formats_spec.lua).
//
//   node bench/peers/formats_node.js CASES.jsonl
//
// CASES.jsonl: one case per non-blank line, {"format":"<name>","data":<any JSON value>},
// read with JSON.parse as any JavaScript user of ajv would read it (so a
// number is a double).  Prints one line per case, in order: {"valid":true}
// or {"valid":false}, the verdict of ajv.compile({format: name}) on data.
// A format ajv-formats does not know is a usage error (exit 2), not a
// verdict.
'use strict';

const fs = require('fs');
const Ajv2020 = require('ajv/dist/2020');
const addFormats = require('ajv-formats');

function usage (msg) {
  process.stderr.write('formats_node: ' + msg + '\nusage: formats_node.js CASES.jsonl\n');
  process.exit(2);
}

function main () {
  const args = process.argv.slice(2);
  if (args.length !== 1) usage('one file of cases expected');
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  addFormats(ajv, { mode: 'full' });
  const validators = new Map();
  const out = [];
  fs.readFileSync(args[0], 'utf8').split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const c = JSON.parse(line);
    if (typeof c.format !== 'string') usage(`case ${i + 1}: "format" must be a string`);
    if (!ajv.formats[c.format]) usage(`case ${i + 1}: ajv-formats has no format ${JSON.stringify(c.format)}`);
    let v = validators.get(c.format);
    if (!v) {
      v = ajv.compile({ format: c.format });
      validators.set(c.format, v);
    }
    out.push(v(c.data) === true ? '{"valid":true}' : '{"valid":false}');
  });
  process.stdout.write(out.join('\n') + '\n');
}

main();
