import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { logContract } from './contract/log-contract.js';

logContract('SQLite file (synchronous=FULL)', async (catalogue) => {
  const dir = mkdtempSync(join(tmpdir(), 'lb-log-'));
  return { log: new SqliteEventLog({ path: join(dir, 'events.db'), catalogue }), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
});

logContract('SQLite in memory (synchronous=NORMAL)', async (catalogue) => ({
  log: new SqliteEventLog({ path: ':memory:', synchronous: 'NORMAL', catalogue }),
  cleanup: async () => {},
}));
