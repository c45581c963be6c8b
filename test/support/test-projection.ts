import { produce, type Draft } from 'immer';
import type { StoredEvent } from '../../src/events/envelope.js';
import { immerProjection, type Projection } from '../../src/projections/projection.js';

/** A small projection with two tables, used to prove engine rules without the domain. */
export interface CounterState {
  readonly counters: Readonly<Record<string, { readonly n: number; readonly updates: number; readonly label: string | null }>>;
  readonly tags: Readonly<Record<string, { readonly stream: string; readonly rev: number; readonly tag: string }>>;
  readonly total: number;
}

function countRecipe(d: Draft<CounterState>, event: StoredEvent): void {
  const data = event.data as Record<string, unknown>;
  d.total += 1;
  switch (event.type) {
    case 'TestAdded': {
      const key = String(data.key);
      const prev = d.counters[key];
      d.counters[key] = { n: (prev?.n ?? 0) + Number(data.n ?? 1), updates: (prev?.updates ?? 0) + 1, label: typeof data.label === 'string' ? data.label : (prev?.label ?? null) };
      break;
    }
    case 'TestRemoved':
      delete d.counters[String(data.key)];
      break;
    case 'TestTagged':
      d.tags[`${event.streamId}\u0000${String(data.tag)}`] = { stream: event.streamId, rev: event.revision, tag: String(data.tag) };
      break;
    case 'TestUntagged':
      delete d.tags[`${event.streamId}\u0000${String(data.tag)}`];
      break;
    default:
      break;
  }
}

const counterTables: Projection<CounterState>['tables'] = [
  {
    name: 'test_counter',
    columns: ['key', 'n', 'updates', 'label'],
    keyColumns: 1,
    entities: (s) => s.counters,
    toRow: (key, e) => {
      const c = e as CounterState['counters'][string];
      return [key, c.n, c.updates, c.label];
    },
  },
  {
    name: 'test_tag',
    columns: ['stream', 'tag', 'rev'],
    keyColumns: 2,
    entities: (s) => s.tags,
    toRow: (_key, e) => {
      const t = e as CounterState['tags'][string];
      return [t.stream, t.tag, t.rev];
    },
  },
];

/** The counter projection as one immer recipe: the engine folds runs of events in one `produce`. */
export const counterProjection: Projection<CounterState> = immerProjection({
  name: 'test_counters',
  initialState: { counters: {}, tags: {}, total: 0 },
  recipe: countRecipe,
  tables: counterTables,
});

/** The same fold with `evolve` only (one `produce` per event): the engine's other path. */
export const counterProjectionPerEvent: Projection<CounterState> = {
  name: 'test_counters',
  initialState: counterProjection.initialState,
  evolve: (state, event) => produce(state, (d) => countRecipe(d, event)),
  tables: counterTables,
};
