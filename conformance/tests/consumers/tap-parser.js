// Reads a TAP file with npm's tap-parser and prints what it counted as one JSON line.
// Usage: node tap-parser.js NODE_DIR FILE (NODE_DIR holds node_modules/tap-parser).
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const { Parser } = require(path.join(path.resolve(process.argv[2]), 'node_modules', 'tap-parser'));
const messages = {};
const parser = new Parser();
parser.on('assert', point => {
  if (point.diag && typeof point.diag.message === 'string') messages[point.id] = point.diag.message;
});
parser.on('complete', r => {
  console.log(JSON.stringify({
    ok: r.ok, count: r.count, pass: r.pass, fail: r.fail, todo: r.todo, skip: r.skip,
    skip_all: Boolean(r.plan && r.plan.skipAll), bailout: Boolean(r.bailout),
    failed_numbers: r.failures.filter(f => f.id !== undefined).map(f => f.id),
    parse_errors: r.failures.filter(f => f.id === undefined).map(f => f.tapError || String(f.name)),
    messages,
  }));
});
parser.end(fs.readFileSync(process.argv[3]));
