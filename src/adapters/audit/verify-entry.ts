// The entry of the standalone `verify.mjs` an audit bundle carries: bundled with every
// module it imports into one file that needs only Node. It verifies the bundle it sits in unless
// given another directory.
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';
import { main } from './verifier.js';

// The graph check's worker runs this same file (graph-audit.ts); only the main thread verifies.
if (isMainThread) {
  const self = fileURLToPath(import.meta.url);
  process.exitCode = await main(process.argv.slice(2), dirname(self), (s) => process.stdout.write(s), readFileSync(self));
}
