// Bundles made after tsc (`npm run build`):
// - dist/verify.mjs: the audit verifier (dist/adapters/audit/verify-entry.js and everything it
//   imports, zod and immer included) in one file that runs on plain Node with nothing installed (R-40).
// - dist/cli.cjs: the CLI in one CommonJS file (src/adapters/cli/bundle-entry.ts), which
//   bin/longbuild.js compiles through V8's code cache (decisions 0018, 0033) and of which
//   `longbuild fuzz` builds a start-up snapshot for its cases' runs (decision 0028).
import { build } from 'rolldown';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';

await build({
  input: 'dist/adapters/audit/verify-entry.js',
  platform: 'node',
  logLevel: 'warn',
  output: { file: 'dist/verify.mjs', format: 'esm', banner: '#!/usr/bin/env node\n// longbuild audit bundle verifier (generated; see src/adapters/audit/verifier.ts)', codeSplitting: false },
});
console.log(`dist/verify.mjs ${Math.round(statSync('dist/verify.mjs').size / 1024)} KiB`);

// The CLI, one CommonJS file (src/adapters/cli/bundle-entry.ts), with our own modules, zod, immer
// and execa inside: bin/longbuild.js compiles it through V8's code cache (decision 0033) and
// `longbuild fuzz` builds a start-up snapshot of it (decision 0028). A module of the CLI is
// evaluated when it is first imported, so a command evaluates its own code only. What cannot be
// in a snapshot is loaded on first use, through a proxy, in the process that runs: the packages
// (pg, the EventStoreDB client (~140 ms) and dagre are not needed by most commands; better-sqlite3's
// native addon, below) and the built-ins Node.js refuses, or does not verify, in a snapshot (http fails;
// child_process, readline, tty, net and worker_threads are "not verified"). Built-ins a short
// command may never use are loaded on first use too (decision 0053: crypto alone is ~3.5 ms of a
// start, fs/promises ~1 ms, zlib ~0.5 ms; decision 0055: v8 ~1.7 ms); a start-up snapshot loads those while it is built
// (bundle-entry.ts), so its processes do not pay for them again.
const LAZY_PACKAGES = ['pg', '@eventstore/db-client', '@dagrejs/dagre'];
const LAZY_BUILTINS = ['child_process', 'crypto', 'fs/promises', 'http', 'https', 'module', 'net', 'os', 'readline', 'timers/promises', 'tty', 'v8', 'worker_threads', 'zlib'];
const CLI = 'dist/cli.cjs';
// What an earlier build left: the chunks of dist/cli/ and the snapshot's own bundle (before decision
// 0033), and code caches (dist/cli.cjs.*cache: they would not fit the new bundle anyway).
for (const stale of ['dist/cli', 'dist/cli-snapshot.cjs', ...readdirSync('dist').filter((f) => f.endsWith('.cache')).map((f) => `dist/${f}`)]) rmSync(stale, { recursive: true, force: true });
// A package's default export is a class or a namespace object (pg, dagre), the
// EventStoreDB client's named exports are read from its namespace where they are used
// (`_eventstore_db_client.START`); a built-in is a namespace object, which the bundle's interop
// copies (it lists its keys).
const lazyPackage = (load) => `new Proxy(function () {}, {
  construct: (_, args) => Reflect.construct(${load}, args),
  apply: (_, self, args) => Reflect.apply(${load}, self, args),
  get: (_, key) => ${load}[key],
  has: (_, key) => key in ${load},
})`;
const lazyBuiltin = (load) => `new Proxy({}, {
  get: (_, key) => ${load}[key],
  has: (_, key) => key in ${load},
  ownKeys: () => Reflect.ownKeys(${load}),
  getOwnPropertyDescriptor: (_, key) => { const d = Reflect.getOwnPropertyDescriptor(${load}, key); if (d) d.configurable = true; return d; },
})`;
// better-sqlite3's JavaScript is in the bundle (compiled from the code cache: requiring its
// eleven files through Node.js's loader was ~6 ms of every command, decision 0053); its addon is
// not, and `bindings`, which finds the addon by walking the caller's stack, would look beside the
// bundle. It is replaced by a loader of better-sqlite3's own build/Release/better_sqlite3.node,
// found from the bundle's place (or, for a process started from a snapshot, the package's), and
// falls back to `bindings` itself when the addon is not there (a build of another layout).
const SQLITE_ADDON = {
  name: 'longbuild-sqlite-addon',
  resolveId: (id, importer) => (id === 'bindings' && importer && /[\\/]better-sqlite3[\\/]/.test(importer) ? '\0longbuild-sqlite-addon' : null),
  load: (id) => (id === '\0longbuild-sqlite-addon' ? `module.exports = function bindings(name) {
  const req = globalThis[Symbol.for('longbuild.snapshot.require')] ?? require;
  const { dirname, join } = require('node:path');
  const root = dirname(req.resolve('better-sqlite3/package.json'));
  const file = join(root, 'build', 'Release', name);
  if (require('node:fs').existsSync(file)) return req(file);
  try {
    return req('bindings')({ bindings: name, module_root: root });
  } catch (err) {
    if (!/Could not locate the bindings file/.test(String(err?.message))) throw err;
    throw Object.assign(new Error(\`better-sqlite3's native addon is not built (no \${name} under \${root}): the install is damaged; run \\\`npm rebuild better-sqlite3\\\` where longbuild is installed\`), { code: 'ERR_LONGBUILD_INSTALL' });
  }
};` : null),
};
const isLazyPackage = (id) => LAZY_PACKAGES.some((p) => id === p || id.startsWith(`${p}/`));
await build({
  input: 'dist/adapters/cli/bundle-entry.js',
  platform: 'node',
  logLevel: 'warn',
  external: (id) => isLazyPackage(id) || /^(pg-native|playwright-core)(\/|$)/.test(id),
  plugins: [SQLITE_ADDON],
  // ASCII (non-ASCII characters escaped): the loader reads it as Latin-1, ~4 ms sooner than
  // decoding UTF-8, and V8 keeps it in one byte a character instead of two.
  output: { file: CLI, format: 'cjs', codeSplitting: false, charset: 'ascii', banner: '// longbuild CLI (generated by scripts/bundle.mjs from dist/adapters/cli/bundle-entry.js)' },
});
let text = readFileSync(CLI, 'utf8');
for (const name of LAZY_PACKAGES) {
  // `let x = require("pkg");` and, for a package imported by default, `x = __toESM(x, 1);` after it.
  const q = JSON.stringify(name).replace(/[/.]/g, (c) => `\\${c}`);
  const re = new RegExp(`^let (\\w+) = require\\(${q}\\);\\n(\\1 = __toESM\\(\\1, 1\\);\\n)?`, 'm');
  const m = re.exec(text);
  if (!m) throw new Error(`scripts/bundle.mjs: ${CLI} does not require ${name} where expected: make it lazy by hand`);
  text = text.replace(re, `let ${m[1]} = __lazyPackage(${JSON.stringify(name)}, ${m[2] ? 'true' : 'false'});\n`);
  if (text.includes(`require(${JSON.stringify(name)})`)) throw new Error(`scripts/bundle.mjs: ${CLI} requires ${name} twice`);
}
for (const m of LAZY_BUILTINS) {
  // `let x = require("node:m");` and, where it is imported by default or as a namespace,
  // `x = __toESM(x, 1);` after it: the interop copies every key, which would load the built-in at
  // once, so the proxy applies it on first use instead.
  const q = JSON.stringify(`node:${m}`).replace(/[/.]/g, (c) => `\\${c}`);
  text = text.replace(new RegExp(`^let (\\w+) = require\\(${q}\\);\\n(\\1 = __toESM\\(\\1, 1\\);\\n)?`, 'gm'), (_, name, esm) => `let ${name} = __lazyBuiltin(${JSON.stringify(`node:${m}`)}${esm ? ', true' : ''});\n`);
  text = text.replaceAll(`require("node:${m}")`, `__lazyBuiltin("node:${m}")`);
}
if (/^let (\w+) = __lazyBuiltin\([^)]*\);\n\1 = __toESM/m.test(text)) throw new Error(`scripts/bundle.mjs: ${CLI} copies a lazy built-in's keys at load: make it lazy by hand`);
// What `charset: 'ascii'` leaves is in comments; an escape means the same in a string, a template or a
// regular expression too.
text = text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
// A snapshot is built from the file as a script, which has no `exports` (a module's are its wrapper's).
text = text.replace(/\n/, `
var exports = typeof exports === 'object' && exports !== null ? exports : {};
const __lazyBuiltin = (id, esm) => { let loaded; return ${lazyBuiltin('(loaded ??= (esm ? __toESM(require(id), 1) : require(id)))')}; };
const __lazyPackage = (id, esm) => { let loaded; const load = () => (loaded ??= ((m) => (esm ? __toESM(m, 1) : m))((globalThis[Symbol.for('longbuild.snapshot.require')] ?? require)(id))); return ${lazyPackage('load()')}; };
`);
writeFileSync(CLI, text);
console.log(`${CLI} ${Math.round(statSync(CLI).size / 1024)} KiB`);
