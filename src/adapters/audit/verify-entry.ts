// The entry of the standalone `verify.mjs` an audit bundle carries: bundled with every
// module it imports into one file that needs only Node. It verifies the bundle it sits in unless
// given another directory.
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { main } from './verifier.js';

process.exitCode = main(process.argv.slice(2), dirname(fileURLToPath(import.meta.url)), (s) => process.stdout.write(s));
