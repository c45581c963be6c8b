/**
 * Issue 18: what `show`, `diff` and the viewer report, against an independent reading of the log
 * (test/support/log-oracle.ts, written apart from src/projections). The recorded logs under
 * test/fixtures/logs/ are real builds: helios (compaction, a renewal), orbit (four milestones,
 * renewals, a revised attempt), batch-split (a batch split). For all pairs of their positions the
 * diff must name exactly the nodes the oracle's live graphs differ by — added, removed, compacted
 * into a summary, dependencies rewired — and the ready wave, horizon and checkpoints that changed.
 */
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../src/events/envelope.js';
import { evolveBuild, initialBuildState, type BuildState } from '../src/projections/build-state.js';
import { diffViews, viewOf, type GraphView, type ViewDiff } from '../src/projections/view.js';
import { ROOT } from './support/cli.js';
import { readLog, type OracleReading } from './support/log-oracle.js';

const DIR = join(ROOT, 'test', 'fixtures', 'logs');
const LOGS = ['helios', 'orbit', 'batch-split'] as const;

function load(name: string): StoredEvent[] {
  return readFileSync(join(DIR, `${name}.ndjson`), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as StoredEvent);
}

interface Recorded {
  readonly events: StoredEvent[];
  /** viewOf the fold at every position (index = position). */
  readonly views: GraphView[];
  /** The fold's node states at every position, for the state column (the fold has its own tests). */
  readonly states: BuildState[];
  /** The oracle's reading of every prefix (index = position). */
  readonly oracle: OracleReading[];
}

const cache = new Map<string, Recorded>();
function recorded(name: string): Recorded {
  const hit = cache.get(name);
  if (hit) return hit;
  const events = load(name);
  const states: BuildState[] = [initialBuildState];
  for (const e of events) states.push(evolveBuild(states.at(-1)!, e));
  const r = { events, states, views: states.map(viewOf), oracle: events.map((_, i) => readLog(events.slice(0, i))).concat([readLog(events)]) };
  cache.set(name, r);
  return r;
}

const sorted = (xs: Iterable<string>): string[] => [...xs].sort();

/** The diff the oracle expects from position i to position j. */
function expectedDiff(r: Recorded, i: number, j: number) {
  const a = r.oracle[i]!;
  const b = r.oracle[j]!;
  const added = sorted([...b.live.keys()].filter((id) => !a.live.has(id)));
  const gone = [...a.live.keys()].filter((id) => !b.live.has(id));
  // Gone into a summary that is new at j (its holder at j was not live at i).
  const compacted = new Map<string, string[]>();
  const removed: string[] = [];
  for (const id of gone) {
    const holder = b.heldBy.get(id);
    if (holder !== undefined && b.live.has(holder) && !a.live.has(holder)) compacted.set(holder, [...(compacted.get(holder) ?? []), id]);
    else removed.push(id);
  }
  const rewired: { id: string; added: string[]; removed: string[] }[] = [];
  for (const [id, deps] of a.live) {
    const now = b.live.get(id);
    if (now === undefined) continue;
    const plus = sorted(now.filter((d) => !deps.includes(d)));
    const minus = sorted(deps.filter((d) => !now.includes(d)));
    if (plus.length + minus.length > 0) rewired.push({ id, added: plus, removed: minus });
  }
  const waveAt = (k: number): string[] => (k === 0 ? [] : r.oracle[r.events.length]!.waves[k - 1]!);
  const statuses = (o: OracleReading): Map<string, string> => {
    const m = new Map<string, string>();
    if (o.horizon === null) return m;
    const active = o.horizon.detailed.find((id) => !o.horizon!.checkpointed.includes(id));
    for (const id of o.horizon.detailed) m.set(id, o.horizon.checkpointed.includes(id) ? 'checkpointed' : id === active ? 'active' : 'planned');
    for (const id of o.horizon.coarse) if (!m.has(id)) m.set(id, 'coarse');
    return m;
  };
  const sa = statuses(a);
  const sb = statuses(b);
  const milestones = sorted(new Set([...sa.keys(), ...sb.keys()])).filter((id) => sa.get(id) !== sb.get(id));
  return {
    added, removed: sorted(removed), rewired: rewired.sort((x, y) => (x.id < y.id ? -1 : 1)),
    compacted: sorted(compacted.keys()).map((s) => ({ summary: s, nodes: sorted(compacted.get(s)!) })),
    readyFrom: waveAt(i), readyTo: waveAt(j),
    milestones,
    checkpointed: sorted((b.horizon?.checkpointed ?? []).filter((c) => !(a.horizon?.checkpointed ?? []).includes(c))),
  };
}

type Differ = (a: GraphView, b: GraphView) => ViewDiff;

function check(r: Recorded, i: number, j: number, differ: Differ = diffViews): void {
  const d: ViewDiff = differ(r.views[i]!, r.views[j]!);
  const want = expectedDiff(r, i, j);
  expect(sorted(d.added), 'added').toEqual(want.added);
  expect(sorted(d.removed), 'removed').toEqual(want.removed);
  expect(d.compacted.map((c) => ({ summary: c.summary, nodes: sorted(c.nodes) })), 'compacted').toEqual(want.compacted);
  expect(d.rewired.map((x) => ({ id: x.id, added: sorted(x.added), removed: sorted(x.removed) })).sort((x, y) => (x.id < y.id ? -1 : 1)), 'rewired').toEqual(want.rewired);
  // The ready wave (R-10's ranking, the oracle's own) on each side; reported exactly when it differs.
  expect(d.ready === null ? [want.readyFrom, want.readyFrom] : [d.ready.from, d.ready.to], 'ready').toEqual([want.readyFrom, want.readyTo]);
  expect(d.ready === null, 'ready reported only when it changed').toBe(JSON.stringify(want.readyFrom) === JSON.stringify(want.readyTo));
  expect(sorted((d.horizon?.milestones ?? []).map((m) => m.id)), 'horizon').toEqual(want.milestones);
  expect(sorted(d.checkpointed), 'checkpointed').toEqual(want.checkpointed);
  // State changes: exactly the nodes on both sides whose state the fold moved.
  const si = r.states[i]!.nodes;
  const sj = r.states[j]!.nodes;
  const moved = sorted(Object.keys(si).filter((id) => sj[id] !== undefined && si[id]!.state !== sj[id]!.state));
  expect(sorted(d.changed.map((c) => c.id)), 'changed').toEqual(moved);
}

describe('issue 18 show and diff against an independent reading of recorded logs', () => {
  it.each(LOGS)('R-6 (property) %s: for all pairs of positions, the diff names what the oracle\'s live graphs, ready waves, horizons and checkpoints differ by', (name) => {
    const r = recorded(name);
    const n = r.events.length;
    fc.assert(fc.property(fc.integer({ min: 0, max: n }), fc.integer({ min: 0, max: n }), (i, j) => check(r, i, j)), { numRuns: 300 });
    // Every consecutive pair as well: each event's own change.
    for (let k = 1; k <= n; k++) check(r, k - 1, k);
  });

  it('R-21 a compaction is reported as compaction, with the dependencies it moved to the summary; a renewal as a horizon change', () => {
    const r = recorded('helios');
    const at = r.events.findIndex((e) => e.type === 'MilestoneCompacted') + 1;
    expect(at).toBeGreaterThan(0);
    const d = diffViews(r.views[at - 1]!, r.views[at]!);
    const summaryId = (r.events[at - 1]!.data as { summaryId: string }).summaryId;
    expect(d.added).toEqual([summaryId]);
    expect(d.removed).toEqual([]);
    expect(d.compacted).toHaveLength(1);
    expect(d.compacted[0]!.summary).toBe(summaryId);
    expect(d.compacted[0]!.nodes.length).toBeGreaterThan(0);
    for (const w of d.rewired) expect(w.added).toEqual([summaryId]);
    const renewal = r.events.findIndex((e) => e.type === 'HorizonRenewed') + 1;
    expect(renewal).toBeGreaterThan(0);
    const h = diffViews(r.views[renewal - 1]!, r.views[renewal]!).horizon;
    expect(h?.milestones.length).toBeGreaterThan(0);
  });

  it('the property catches a diff broken on purpose: compaction called removal, rewiring missed, absorbed summaries\' nodes not followed', () => {
    const asRemoval: Differ = (a, b) => {
      const d = diffViews(a, b);
      return { ...d, removed: [...d.removed, ...d.compacted.flatMap((c) => c.nodes)], compacted: [] };
    };
    const noRewiring: Differ = (a, b) => ({ ...diffViews(a, b), rewired: [] });
    const direct: Differ = (a, b) => diffViews(a, {
      ...b, nodes: b.nodes.map((n) => (n.summary === undefined ? n : { ...n, summary: { ...n.summary, holds: [...n.summary.compacted, ...n.summary.absorbed] } })),
    });
    for (const [what, broken] of [['compaction as removal', asRemoval], ['no rewiring', noRewiring], ['absorption not followed', direct]] as const) {
      const caught = LOGS.some((name) => {
        const r = recorded(name);
        const n = r.events.length;
        return fc.check(fc.property(fc.integer({ min: 0, max: n }), fc.integer({ min: 0, max: n }), (i, j) => check(r, i, j, broken)), { numRuns: 300, seed: 7 }).failed;
      });
      expect(caught, `a diff with ${what} passed`).toBe(true);
    }
  });

  it('show: the view carries the horizon with each milestone\'s status, summaries with what they compacted, attempts', () => {
    const r = recorded('orbit');
    const last = r.views.at(-1)!;
    expect(last.horizon).not.toBeNull();
    expect(last.horizon!.detailed.every((m) => ['checkpointed', 'active', 'planned'].includes(m.status))).toBe(true);
    const summaries = last.nodes.filter((n) => n.summary !== undefined);
    expect(summaries.length).toBeGreaterThan(0);
    const o = r.oracle[r.events.length]!;
    for (const s of summaries) {
      for (const id of [...s.summary!.compacted, ...s.summary!.absorbed]) expect(o.heldBy.get(id)).toBe(s.id);
    }
    // orbit's revised attempt, while its node is live
    expect(r.views.some((v) => v.nodes.some((n) => n.attempts > 1 && n.summary === undefined))).toBe(true);
  });
});
