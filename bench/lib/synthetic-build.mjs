// A synthetic build directory for benchmarks (bench/audit.mjs, bench/ui.mjs): a real repository
// and integrator, a driver file, and a log of n domain events written as the controller writes them.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteEventLog } from '../../dist/adapters/log/sqlite-log.js';
import { buildPaths } from '../../dist/adapters/build-dir.js';
import { Notary } from '../../dist/adapters/transparency/notary.js';
import { buildVerifierKey, generateSigningKey } from '../../dist/adapters/transparency/keys.js';
import { canonicalJson } from '../../dist/events/canonical.js';
import { sha256Hex } from '../../dist/events/hash.js';
import { parseVerifierKey } from '../../dist/events/signed-note.js';
import { ProjectionStore } from '../../dist/projections/engine.js';
import { allProjections } from '../../dist/projections/all-projections.js';
import { initialBuildState, evolveBuild } from '../../dist/projections/build-state.js';
import { graphRecords } from '../../dist/projections/graph-record.js';

const NODES = 30;

/**
 * A synthetic build directory: a real repository and integrator, a driver file, and a log of
 * `n` domain events (a horizon of NODES read-only nodes, then attempts on them round robin),
 * every graph change recorded as the controller records it. Returns the paths and the key.
 */
export async function syntheticBuild(root, name, n, { signEvery = 1000, snapshotEvery = 0 } = {}) {
  const repo = join(root, name);
  mkdirSync(repo, { recursive: true });
  execFileSync('git', ['init', '-q', repo]);
  execFileSync('git', ['-C', repo, '-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '--allow-empty', '-m', 'base']);
  const head = execFileSync('git', ['-C', repo, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  const paths = buildPaths({ repo });
  mkdirSync(paths.dir, { recursive: true });
  execFileSync('git', ['clone', '-q', '--bare', repo, paths.integrator]);
  // A valid blueprint of the same nodes, so commands that open the build's driver (the viewer) can.
  const blueprint = { request: {}, verify: [], detailedWindow: 1, milestones: [{ id: 'm1', title: 'M1', nodes: Array.from({ length: NODES }, (_, i) => ({ id: `n${i}`, kind: 'read-only', deps: i === 0 ? [] : [`n${i - 1}`], decision: 'bench' })) }] };
  const driver = canonicalJson({ kind: 'blueprint', blueprint });
  writeFileSync(paths.driver, driver);
  const key = generateSigningKey();
  const buildId = `b-bench${name}`;
  const vkey = buildVerifierKey(buildId, key);
  const log = new SqliteEventLog({ path: paths.events, synchronous: 'NORMAL' });
  const notary = Notary.open(paths, log, buildId, parseVerifierKey(vkey), key);
  const nodes = Array.from({ length: NODES }, (_, i) => ({ id: `n${i}`, kind: 'read-only', deps: i === 0 ? [] : [`n${i - 1}`], milestone: 'm1' }));
  const pins = { requestSha256: 'a'.repeat(64), graphRevision: 0, integrationHead: head, contracts: [], foundations: [], createdAt: '2026-01-01T00:00:00.000Z', plannerRoute: 'bench' };
  const first = [
    { type: 'BuildInitialized', data: { buildId, request: {}, requestSha256: 'a'.repeat(64), integrationRef: 'refs/heads/longbuild/integration', baseHead: head, verify: [['true']], settings: { detailedWindow: 1, coarseWindow: 0, maxBatch: 1, maxAttempts: 100, compaction: false, plannerRoute: 'bench' }, driver: { kind: 'blueprint', sourceSha256: sha256Hex(driver) }, signing: { vkey } } },
    { type: 'HorizonSealed', data: { horizonId: 'h', revision: 1, planSha256: 'b'.repeat(64), detailed: [{ id: 'm1', title: 'M1' }], coarse: [], nodes, pins, callId: 'c', graphRevision: 0 } },
  ];
  let state = initialBuildState;
  let position = 0;
  const store = snapshotEvery > 0 ? ProjectionStore.open(paths.projections, allProjections(), { snapshotEvery, eventIndex: true }) : null;
  const append = (events) => {
    const { records } = graphRecords(state, events, '2026-01-01T00:00:00.000Z');
    const r = log.appendSync(`build-${buildId}`, events.map((e, i) => ({ ...e, metadata: { recordedAt: '2026-01-01T00:00:00.000Z', correlationId: buildId, ...(records[i] ? { graph: records[i] } : {}) } })), 'any');
    for (const e of r.events) state = evolveBuild(state, e);
    if (store) store.catchUp(r.events);
    position = r.position;
  };
  append(first);
  let k = 0;
  while (position < n) {
    const batch = [];
    for (let j = 0; j < 500 && position + batch.length < n; j += 2, k++) {
      const node = `n${k % NODES}`;
      const attempt = Math.floor(k / NODES) + 1;
      batch.push({ type: 'AttemptStarted', data: { attemptId: `${node}.${attempt}`, nodeId: node, attempt, baseHead: head, branch: `refs/heads/a/${node}.${attempt}`, graphRevision: state.graphRevision } });
      batch.push({ type: 'AttemptFinished', data: { attemptId: `${node}.${attempt}`, nodeId: node, outcome: 'failed', reason: 'bench', evidenceSha256: 'c'.repeat(64), adopted: false, graphRevision: state.graphRevision } });
    }
    append(batch.slice(0, n - position));
    if (signEvery > 0 && Math.floor(position / signEvery) !== Math.floor((position - batch.length) / signEvery)) await notary.sign();
  }
  await notary.sign();
  notary.close();
  store?.close();
  await log.close();
  return { repo, paths, vkey, state };
}
