// Shared helpers of the peer workloads: the workload's shape, sizes on disk, CPU of other processes.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The workload: N durable steps in milestones of 20 (50 × 20 = 1,000 by default). */
export const GROUP = 20;
export const nodeId = (i) => `m${Math.floor(i / GROUP)}-n${i % GROUP}`;
/** What one step records: the node and its result (the read-only node's decision). */
export const stepResult = (i) => ({ nodeId: nodeId(i), outcome: 'recorded', decision: 'ok' });

/** The workload as a blueprint: N read-only nodes, milestones of 20, each a chain. */
export function blueprint(n) {
  const milestones = [];
  for (let m = 0; m * GROUP < n; m++) {
    const nodes = [];
    for (let k = 0; k < GROUP && m * GROUP + k < n; k++) nodes.push({ id: nodeId(m * GROUP + k), kind: 'read-only', deps: k === 0 ? [] : [nodeId(m * GROUP + k - 1)], decision: 'ok' });
    milestones.push({ id: `m${m}`, title: `Milestone ${m}`, nodes });
  }
  return { request: { title: 'peers bench' }, verify: [], detailedWindow: 2, milestones };
}

/** Bytes of every file under a path. */
export function bytesUnder(path) {
  let st;
  try { st = statSync(path); } catch { return 0; }
  if (!st.isDirectory()) return st.size;
  let sum = 0;
  for (const e of readdirSync(path)) sum += bytesUnder(join(path, e));
  return sum;
}

const TICK = 100; // USER_HZ on Linux
/**
 * CPU milliseconds (user + system) used so far by the processes whose command name matches,
 * with their reaped children's (a PostgreSQL server's exited backends count in the postmaster's).
 */
export function cpuOfProcesses(match) {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (!match(comm)) continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]); // utime, stime, cutime, cstime
    } catch { /* gone */ }
  }
  return (ticks * 1000) / TICK;
}

/** This process's CPU milliseconds (user + system) since it started. */
export function ownCpuMs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** Prints the workload's result as one JSON line (read by run.mjs). */
export function report(result) {
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** CPU milliseconds of this process's reaped children (cutime + cstime of /proc/self/stat). */
export function childrenCpuMs() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[13]) + Number(f[14])) * 1000) / TICK;
}
