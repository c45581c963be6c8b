import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from './support/cli.js';

// Issue 17, fault 1: two controllers started at the same instant on a SQLite build could both
// exit 3 ("another controller is running") and nobody ran the build. Two real processes, released
// at once by one file each round, race for the lease; exactly one must win every round.

const ROUNDS = 200;

describe('the controller lease under a race (R-3)', () => {
  it(`two controllers released at the same instant: exactly one takes the lease, ${ROUNDS} rounds in a row; the other is told another controller runs`, async () => {
    const build = tempDir('longbuild-race-');
    const sync = tempDir('longbuild-race-sync-');
    const racers = ['a', 'b'].map((name) => spawn(process.execPath, [join(ROOT, 'test', 'fixtures', 'lease-racer.mjs'), join(ROOT, 'dist'), build, sync, String(ROUNDS), name], { stdio: 'inherit' }));
    const outcomes: string[][] = [];
    try {
      for (let k = 1; k <= ROUNDS; k++) {
        writeFileSync(join(sync, `go-${k}`), '');
        const files = ['a', 'b'].map((n) => join(sync, `res-${k}-${n}`));
        const deadline = Date.now() + 60_000;
        while (!files.every((f) => existsSync(f))) {
          if (Date.now() > deadline) throw new Error(`round ${k}: a racer did not answer`);
          await new Promise((r) => setTimeout(r, 2));
        }
        outcomes.push(files.map((f) => readFileSync(f, 'utf8')));
      }
    } finally {
      for (const r of racers) r.kill();
    }
    const bad = outcomes.map((o, i) => ({ round: i + 1, o })).filter(({ o }) => o.filter((x) => x === 'won').length !== 1);
    expect(bad.slice(0, 3).map((b) => `round ${b.round}: ${b.o.join(" | ")}`), `${bad.length} of ${ROUNDS} rounds without exactly one winner`).toEqual([]);
    for (const o of outcomes) expect(o.find((x) => x !== 'won')).toMatch(/^busy: another controller is running on the build/);
  }, 180_000);
});
