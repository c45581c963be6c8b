#!/usr/bin/env node
// The CLI, bundled by `npm run build` (scripts/bundle.mjs) from src/adapters/cli/entry.ts.
import '../dist/cli/longbuild.mjs';
