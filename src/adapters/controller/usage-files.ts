/**
 * Usage files: where a command planner or worker reports what its call used
 * (`LONGBUILD_USAGE_FILE`). One directory per invocation of a call, under the build directory,
 * made before the call starts and bound writable into its sandbox (nothing else of the build
 * directory is). The file outlives a crash: a call made again after one records what the lost
 * invocation reported (EffectReinvoked.usage), so the ledger counts what the provider billed.
 */
import { mkdirSync } from 'node:fs';
import { readUntrustedFile } from '../untrusted-file.js';
import { join } from 'node:path';
import type { Usage } from '../../events/catalogue.js';
import { sha256Hex } from '../../events/hash.js';
import { parseUntrustedJson } from '../../commands/untrusted-json.js';
import { pricedUsage, type Prices } from '../../commands/spend.js';
import { readUsageReport } from '../../commands/usage-report.js';

/** The largest usage file read (a report is a few hundred bytes). */
const MAX_REPORT_BYTES = 64 * 1024;

export interface UsageRead {
  readonly usage?: Usage;
  /** Why a file that exists was not taken (one line). */
  readonly problem?: string;
}

export class UsageFiles {
  constructor(private readonly dir: string, private readonly prices?: Prices) {}

  /** The usage file of one invocation of a call; its directory exists (made now, mode 0700). */
  prepare(key: string, invocation: number): string {
    const dir = this.dirOf(key, invocation);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return join(dir, 'usage.json');
  }

  /** What the invocation reported, priced; nothing when it wrote no file. */
  read(key: string, invocation: number): UsageRead {
    const path = join(this.dirOf(key, invocation), 'usage.json');
    const read = readUntrustedFile(path, MAX_REPORT_BYTES);
    if (read.kind === 'missing') return {};
    if (read.kind === 'refused') return { problem: `${path} is not a usage report: ${read.why}` };
    const text = read.bytes.toString('utf8');
    const parsed = parseUntrustedJson(text, { duplicateKeys: 'refuse' });
    if (!parsed.ok) return { problem: `${path} is not a usage report: ${parsed.problem}` };
    const report = readUsageReport(parsed.value);
    if (!report.ok) return { problem: `${path} is not a usage report: ${report.problem}` };
    return { usage: this.price(report.usage) };
  }

  /** A report with its cost: the agent's own, else priced from the config's `prices`, else unknown. */
  price(report: Usage): Usage {
    return pricedUsage(report, this.prices);
  }

  private dirOf(key: string, invocation: number): string {
    return join(this.dir, `${sha256Hex(Buffer.from(key)).slice(0, 32)}.${invocation}`);
  }
}
