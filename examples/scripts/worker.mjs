#!/usr/bin/env node
// A tiny real worker: reads the work packet (JSON) on stdin and writes the node's module and a
// test into the current directory (the attempt's own worktree). It does not commit: the host
// commits what changed. Exit non-zero to fail the attempt.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';

const packet = JSON.parse(readFileSync(0, 'utf8'));
const name = packet.nodeId.replace(/-module$/, '');
const fn = name.replace(/[^a-z0-9]/g, '_');
mkdirSync('src', { recursive: true });
mkdirSync('test', { recursive: true });
writeFileSync(`src/${name}.js`, `"use strict";\nfunction ${fn}(who) {\n  return "${name} " + who;\n}\nmodule.exports = { ${fn} };\n`);
writeFileSync(
  `test/${name}.test.js`,
  `"use strict";\nconst test = require("node:test");\nconst assert = require("node:assert");\nconst { ${fn} } = require("../src/${name}.js");\ntest("${name}", () => assert.strictEqual(${fn}("Ada"), "${name} Ada"));\n`,
);
process.stdout.write(`wrote src/${name}.js and test/${name}.test.js for ${packet.attemptId} (key ${process.env.LONGBUILD_IDEMPOTENCY_KEY})\n`);
