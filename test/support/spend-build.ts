/** A command build whose planner and worker report usage and keep their own ledger (issue 46 tests). */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliJson, tempDir, userRepo } from './cli.js';

export interface Report { model?: string; inputTokens: number; outputTokens: number; cachedTokens?: number; costUsd?: number }

/**
 * A command build of `milestones` × `perMilestone` independent nodes. The planner and the worker
 * report `plannerUsage` / `workerUsage` (a worker's may depend on its node) and append each report
 * to `ledger` (outside the repository: the sandbox is off). `workerExtra`: more of the worker's script.
 */
export function build(o: { budget?: unknown; prices?: unknown; perMilestone?: number; milestones?: number; workerUsage?: string; plannerUsage?: Report | null; workerExtra?: string; maxAttempts?: number; concurrency?: number; compaction?: boolean; approve?: string[] } = {}) {
  const cfg = tempDir('longbuild-spend-cfg-');
  const ledger = join(cfg, 'ledger.ndjson');
  const plannerUsage = o.plannerUsage === undefined ? { model: 'planner-model', inputTokens: 1000, outputTokens: 200 } : o.plannerUsage;
  writeFileSync(join(cfg, 'planner.mjs'), `import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
readFileSync(0, 'utf8');
const usage = ${JSON.stringify(plannerUsage)};
if (usage !== null) { writeFileSync(process.env.LONGBUILD_USAGE_FILE, JSON.stringify(usage)); appendFileSync(${JSON.stringify(ledger)}, JSON.stringify({ role: 'planner', ...usage }) + '\\n'); }
const nodes = (m) => Array.from({ length: ${o.perMilestone ?? 2} }, (_, i) => ({ id: m + '-n' + i, kind: 'writable', deps: [] }));
process.stdout.write(JSON.stringify({ detailed: ${JSON.stringify(Array.from({ length: o.milestones ?? 2 }, (_, i) => `m${i + 1}`))}.map((id) => ({ id, title: id, nodes: nodes(id) })), coarse: [] }));
`);
  writeFileSync(join(cfg, 'worker.mjs'), `import { appendFileSync, existsSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
const packet = JSON.parse(readFileSync(0, 'utf8'));
const usage = ${o.workerUsage ?? "({ model: 'worker-model', inputTokens: 5000, outputTokens: 700, cachedTokens: 1000, costUsd: 0.25 })"};
writeFileSync(process.env.LONGBUILD_USAGE_FILE, JSON.stringify(usage));
appendFileSync(${JSON.stringify(ledger)}, JSON.stringify({ role: 'worker', node: packet.nodeId, ...usage }) + '\\n');
writeFileSync(packet.nodeId + '.txt', 'done\\n');
${o.workerExtra ?? ''}
`);
  writeFileSync(join(cfg, 'request.json'), JSON.stringify({ goal: 'spend' }));
  writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({
    planner: { command: ['node', join(cfg, 'planner.mjs')] }, worker: { command: ['node', join(cfg, 'worker.mjs')] }, verify: [['true']], sandbox: 'off',
    ...(o.budget !== undefined ? { budget: o.budget } : {}), ...(o.prices !== undefined ? { prices: o.prices } : {}), ...(o.maxAttempts !== undefined ? { maxAttempts: o.maxAttempts } : {}), ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}), ...(o.compaction !== undefined ? { compaction: o.compaction } : {}), ...(o.approve !== undefined ? { approve: o.approve } : {}),
  }));
  const repo = userRepo();
  cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
  return { repo, cfg, ledger };
}

/** The drivers' own ledger: every report they made. */
export function reported(ledger: string): (Report & { role: string; node?: string })[] {
  return existsSync(ledger) ? readFileSync(ledger, 'utf8').trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l)) : [];
}

export const sum = (rs: readonly Report[], k: 'inputTokens' | 'outputTokens' | 'cachedTokens') => rs.reduce((n, r) => n + (r[k] ?? 0), 0);

