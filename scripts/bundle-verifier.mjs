// Bundle the audit verifier (dist/adapters/audit/verify-entry.js and everything it imports, zod
// and immer included) into dist/verify.mjs: one file that runs on plain Node with nothing
// installed. Run after tsc (`npm run build`).
import { build } from 'rolldown';
import { statSync } from 'node:fs';

await build({
  input: 'dist/adapters/audit/verify-entry.js',
  platform: 'node',
  logLevel: 'warn',
  output: { file: 'dist/verify.mjs', format: 'esm', banner: '#!/usr/bin/env node\n// longbuild audit bundle verifier (generated; see src/adapters/audit/verifier.ts)', codeSplitting: false },
});
console.log(`dist/verify.mjs ${Math.round(statSync('dist/verify.mjs').size / 1024)} KiB`);
