import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Every test file gets its own longbuild config directory (the signing key lives there, R-35):
// no test writes to the real user's ~/.config, and child processes inherit it.
process.env.LONGBUILD_CONFIG_DIR ??= mkdtempSync(join(tmpdir(), 'lb-config-'));
