// What issue 44's checks cost (R-53..R-55). Run on demand: `npm run build && node bench/custody.mjs`.
// Prints figures; not a timed test.
//   derive   deriving a build's key from the user's (HKDF-SHA256 + Ed25519), per derivation
//   json     reading a planner answer of ~1 MiB: JSON.parse alone vs the strict reader (scan + parse)
//   git      the audit's tree-and-blob walk over the demo build's git.bundle, vs reading the bundle
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deriveBuildKey, generateSigningKey } from '../dist/adapters/transparency/keys.js';
import { parseUntrustedJson } from '../dist/commands/untrusted-json.js';
import { commitTree, missingInTree, readGitBundle } from '../dist/adapters/audit/git-pack.js';

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = (fn, n) => {
  const out = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    fn(i);
    out.push(performance.now() - t);
  }
  return median(out);
};

// derive
const user = generateSigningKey();
const derive = time((i) => deriveBuildKey(user, `b-${String(i).padStart(16, '0')}`), 2000);
console.log(`derive: ${(derive * 1000).toFixed(1)} µs per build key (median of 2000)`);

// json: a proposal of 2 detailed milestones with many nodes, ~1 MiB
const nodes = Array.from({ length: 2500 }, (_, i) => ({ id: `n${i}`, kind: 'writable', title: `node ${i}`, deps: i > 0 ? [`n${i - 1}`] : [], description: 'x'.repeat(300), acceptance: ['it works', 'it is tested'] }));
const text = JSON.stringify({ detailed: [{ id: 'm1', title: 'one', nodes: nodes.slice(0, 1250) }, { id: 'm2', title: 'two', nodes: nodes.slice(1250) }], coarse: [] });
const parse = time(() => JSON.parse(text), 30);
const strict = time(() => parseUntrustedJson(text, { duplicateKeys: 'refuse' }), 30);
console.log(`json: ${(text.length / 1048576).toFixed(2)} MiB answer: JSON.parse ${parse.toFixed(1)} ms, strict reader ${strict.toFixed(1)} ms (${(strict / parse).toFixed(2)}x; medians of 30)`);

// git: the demo build's bundle
const dir = mkdtempSync(join(tmpdir(), 'lb-bench-custody-'));
const env = { ...process.env, LONGBUILD_CONFIG_DIR: join(dir, 'config') };
const bin = join(import.meta.dirname, '..', 'bin', 'longbuild.js');
execFileSync(process.execPath, [bin, 'demo', join(dir, 'demo'), '--json'], { env, stdio: 'ignore' });
execFileSync(process.execPath, [bin, 'audit', 'export', '--to', join(dir, 'bundle')], { cwd: join(dir, 'demo'), env, stdio: 'ignore' });
const bytes = readFileSync(join(dir, 'bundle', 'git.bundle'));
let objects;
const read = time(() => { objects = readGitBundle(bytes).objects; }, 20);
const commits = [...objects.values()].filter((o) => o.type === 'commit');
let trees = 0;
const walk = time(() => {
  const seen = new Set();
  for (const c of commits) if (missingInTree(objects, commitTree(c), seen) !== null) throw new Error('incomplete bundle');
  trees = seen.size;
}, 20);
console.log(`git: demo bundle ${(bytes.length / 1024).toFixed(0)} KiB, ${objects.size} objects, ${commits.length} commits, ${trees} trees: reading it ${read.toFixed(2)} ms, walking every tree and blob ${walk.toFixed(2)} ms (medians of 20)`);
