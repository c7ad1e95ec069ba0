#!/usr/bin/env node
// An independent check of toolgate's audit records: ajv 8 (draft 2020-12,
// strict about keywords, all errors) validates each line of standard input against
// docs/schemas/decision-record.schema.json and prints one line per record,
// {"valid":true} or {"valid":false,"errors":[...]}.
//   node spec/audit/ajv_records.js ROOT < records.jsonl
'use strict';

const fs = require('fs');
const path = require('path');

const root = process.argv[2];
const Ajv2020 = require(path.join(root, 'bench/node_modules/ajv/dist/2020'));
const schema = JSON.parse(fs.readFileSync(path.join(root, 'docs/schemas/decision-record.schema.json'), 'utf8'));
const validate = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictRequired: false }).compile(schema);

const out = [];
for (const line of fs.readFileSync(0, 'utf8').split('\n')) {
  if (line === '') continue;
  let record;
  try {
    record = JSON.parse(line);
  } catch (e) {
    out.push(JSON.stringify({ valid: false, errors: ['not JSON: ' + e.message] }));
    continue;
  }
  const valid = validate(record);
  out.push(JSON.stringify(valid ? { valid } : { valid, errors: validate.errors }));
}
process.stdout.write(out.join('\n') + (out.length ? '\n' : ''));
