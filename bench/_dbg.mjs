import { SqliteEventLog } from '../dist/adapters/log/sqlite-log.js';
import { evolveBuild, evolveBuildInPlace, initialBuildState } from '../dist/projections/build-state.js';
import { canonicalJson, stripUndefined } from '../dist/events/canonical.js';
const log = new SqliteEventLog({ path: process.argv[2], readonly: true });
const events = log.readAllSync();
let a = initialBuildState; const b = structuredClone(initialBuildState);
for (const e of events) {
  a = evolveBuild(a, e); evolveBuildInPlace(b, e);
  const x = canonicalJson(stripUndefined(a)), y = canonicalJson(stripUndefined(b));
  if (x !== y) { console.log('differ at', e.position, e.type); for (const k of Object.keys(a)) if (canonicalJson(stripUndefined(a[k]??null)) !== canonicalJson(stripUndefined(b[k]??null))) console.log(k, JSON.stringify(a[k]).slice(0,300), '\n  vs', JSON.stringify(b[k]).slice(0,300)); break; }
}
