/**
 * Issue 15: golden logs. Logs recorded by real builds (`longbuild log --json`) are kept under
 * test/fixtures/logs/ — the seed shape with compaction and a renewal (helios), four milestones with
 * renewals and a revised attempt (orbit), a batch with splits (batch-split) — and replayed here the
 * way a workflow engine replays its histories: every event must still parse under the current
 * catalogue (a schema change old logs no longer satisfy fails here), the chain must recompute, and
 * the projections folded from it must have the recorded SHA-256. An edited copy of each must be
 * refused. A deliberate change of what the folds produce updates the recorded SHAs with
 * LONGBUILD_UPDATE_GOLDEN=1 (and is then visible in review).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { domainCatalogue } from '../src/events/catalogue.js';
import type { StoredEvent } from '../src/events/envelope.js';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { ProjectionStore } from '../src/projections/engine.js';
import { allProjections } from '../src/projections/all-projections.js';
import { ROOT } from './support/cli.js';
import { readLog } from './support/log-oracle.js';
import { evolveBuild, initialBuildState } from '../src/projections/build-state.js';
import { rankReadyWave } from '../src/projections/graph.js';
import { replayThroughDecider } from './support/replay-decider.js';

const DIR = join(ROOT, 'test', 'fixtures', 'logs');
const GOLDEN = join(DIR, 'golden.json');
const LOGS = ['helios', 'orbit', 'batch-split'] as const;
const recorded = JSON.parse(readFileSync(GOLDEN, 'utf8')) as Record<string, { events: number; types: Record<string, number>; projectionsSha256: string }>;

function load(name: string): StoredEvent[] {
  return readFileSync(join(DIR, `${name}.ndjson`), 'utf8').trim().split('\n').map((l) => {
    const e = JSON.parse(l);
    return { position: e.position, streamId: e.streamId, revision: e.revision, type: e.type, schemaVersion: e.schemaVersion, data: e.data, metadata: e.metadata, prevHash: e.prevHash, hash: e.hash } as StoredEvent;
  });
}

/** Import (chain checked link by link, every hash recomputed), parse every event, fold every projection. */
async function replay(events: readonly StoredEvent[]): Promise<{ projectionsSha256: string; types: Record<string, number> }> {
  const log = new SqliteEventLog({ path: ':memory:' });
  try {
    await log.importVerbatim(events);
    const types: Record<string, number> = {};
    for (const e of events) {
      domainCatalogue.validate(e.type, e.schemaVersion, e.data);
      types[e.type] = (types[e.type] ?? 0) + 1;
    }
    const store = ProjectionStore.open(':memory:', allProjections(), { snapshotEvery: 0 });
    try {
      store.catchUp(await log.readAll({ from: 1 }));
      return { projectionsSha256: store.dumpSha256(), types };
    } finally {
      store.close();
    }
  } finally {
    await log.close();
  }
}

describe('golden logs (issue 15)', () => {
  it.each(LOGS)('R-5 %s: every recorded event parses under today\'s catalogue, the chain recomputes, and the folds give the recorded projections', async (name) => {
    const events = load(name);
    const got = await replay(events);
    if (process.env.LONGBUILD_UPDATE_GOLDEN === '1') {
      recorded[name] = { events: events.length, types: got.types, projectionsSha256: got.projectionsSha256 };
      writeFileSync(GOLDEN, `${JSON.stringify(recorded, null, 2)}\n`);
    }
    expect({ events: events.length, ...got }).toEqual(recorded[name]);
  });

  it.each(LOGS)('R-4 %s: an edited copy is refused (one byte of one event\'s data), and so is one with an event left out', async (name) => {
    const events = load(name);
    const at = Math.floor(events.length / 2);
    const edited = events.map((e, i) => (i === at ? { ...e, data: JSON.parse(JSON.stringify(e.data).replace(/"graphRevision":(\d+)/, (_, n) => `"graphRevision":${Number(n) + 1}`)) } : e));
    expect(JSON.stringify(edited[at]!.data)).not.toBe(JSON.stringify(events[at]!.data));
    await expect(replay(edited)).rejects.toThrow(`hash of the event at position ${at + 1} does not recompute`);
    await expect(replay([...events.slice(0, at), ...events.slice(at + 1)])).rejects.toThrow(`expected position ${at + 1}, got ${at + 2}`);
  });

  it('the golden logs cover what they are for: compaction, renewal, a revised attempt, batch splits', () => {
    expect(recorded.helios!.types).toMatchObject({ MilestoneCompacted: 3, HorizonRenewed: 1 });
    expect(recorded.orbit!.types).toMatchObject({ HorizonRenewed: 3, IntegrationFailed: 1 });
    expect(recorded['batch-split']!.types).toMatchObject({ BatchSplit: 2 });
  });
});

describe('golden logs replayed through today\'s decider (issue 49: Temporal\'s replay check)', () => {
  it.each(LOGS)('R-19 %s: decideStep/settle, hosted by the controller\'s interpreter and given the recorded effect results, append exactly the recorded events, and nothing after them', (name) => {
    const events = load(name);
    const r = replayThroughDecider(events);
    expect(r.divergence).toBeNull();
    const count = (type: string) => events.filter((e) => e.type === type).length;
    // Every recorded call was answered from the log, once: the replay made the decisions, it did not skip them.
    expect(r.effects.planner).toBe(count('PlannerReturned'));
    expect(r.effects.worker).toBe(count('AttemptFinished'));
    expect(r.effects.verify).toBe(count('VerificationFinished'));
    expect(r.effects.promote).toBe(count('IntegrationPromoted'));
  });

  it('a recorded event today\'s decider would not append is named with its position (a checkpoint\'s data, a dropped event)', () => {
    const events = load('orbit');
    const at = events.findIndex((e) => e.type === 'CheckpointWritten');
    const edited = events.map((e, i) => (i === at ? { ...e, data: { ...(e.data as object), createdAt: '2030-01-01T00:00:00.000Z' } } : e)) as StoredEvent[];
    const r = replayThroughDecider(edited);
    expect(r.divergence?.position).toBe(at + 1);
    expect(r.divergence?.recorded?.type).toBe('CheckpointWritten');
    expect((r.divergence?.decided?.data as { createdAt: string }).createdAt).toBe((events[at]!.data as { createdAt: string }).createdAt);
    const dropped = replayThroughDecider([...events.slice(0, at), ...events.slice(at + 1)]);
    expect(dropped.divergence?.position).toBe(at + 1);
    expect(dropped.divergence?.decided?.type).toBe('CheckpointWritten');
  });
});

describe('R-10 the ready wave at every position of the golden logs, against an independent oracle (issue 15)', () => {
  it.each(LOGS)('%s: the product\'s ranked ready wave at every log position equals the oracle\'s over the uncompacted graph the log describes', (name) => {
    const events = load(name);
    const oracle = readLog(events);
    let state = initialBuildState;
    const differences: string[] = [];
    events.forEach((e, i) => {
      state = evolveBuild(state, e);
      const want = oracle.waves[i];
      const got = rankReadyWave(state);
      if (JSON.stringify(got) !== JSON.stringify(want)) differences.push(`position ${e.position} (${e.type}): product ${JSON.stringify(got)}, oracle ${JSON.stringify(want)}`);
    });
    expect(differences).toEqual([]);
  });
});
