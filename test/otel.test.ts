/**
 * OpenTelemetry traces from the log (issue 48): `longbuild otel export` on a real build (orbit
 * blueprint: renewals, a revised attempt, SQLite, git), checked against `log --json` as the oracle
 * — one span per planner call, attempt, integration job and verification command, each under its
 * milestone or the build, with the log's outcomes, exit codes and ids; the file export is the same
 * bytes every time; an OTLP/HTTP receiver (plain node:http) gets exactly those bytes at /v1/traces;
 * a collector that refuses, is down or hangs is one line and exit 1; a build killed (real SIGKILL)
 * and resumed exports the spans of an uninterrupted one.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliAsync, cliJson, runCli, tempDir } from './support/cli.js';
import { events } from './support/outcomes.js';
import { build } from './support/spend-build.js';

const ORBIT = join(import.meta.dirname, 'fixtures', 'orbit.json');
const root = tempDir('longbuild-otel-');
const repo = join(root, 'repo');

interface Span { traceId: string; spanId: string; parentSpanId?: string; name: string; startTimeUnixNano: string; endTimeUnixNano: string; attributes: { key: string; value: Record<string, unknown> }[]; status: { code: number } }
const spansOf = (file: string): Span[] => JSON.parse(readFileSync(file, 'utf8')).resourceSpans[0].scopeSpans[0].spans;
const attr = (s: Span, key: string): unknown => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v === undefined ? undefined : Object.values(v)[0];
};

const servers: Server[] = [];
/** An OTLP/HTTP receiver answering `status`, or never answering (null); it keeps what it got. */
async function receiver(status: number | null): Promise<{ url: string; got: { path: string; type: string; body: string }[] }> {
  const got: { path: string; type: string; body: string }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      got.push({ path: req.url ?? '', type: req.headers['content-type'] ?? '', body });
      if (status !== null) res.writeHead(status, { 'content-type': 'application/json' }).end(status === 200 ? '{}' : 'collector says no');
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got };
}

beforeAll(() => {
  cliJson(['init', '--blueprint', ORBIT, '--repo', repo], { cwd: root });
  expect(runCli(['run', '--repo', repo], { cwd: root }).code).toBe(0);
}, 120_000);
afterAll(() => {
  for (const s of servers) s.closeAllConnections?.(), s.close();
});

describe('otel export (issue 48)', () => {
  it('the spans are the log\'s planner calls, attempts, jobs and commands, in one tree under the build, with the log\'s outcomes; two exports are the same bytes', () => {
    const a = join(root, 'a.json');
    const b = join(root, 'b.json');
    expect(cliJson(['otel', 'export', '--to', a], { cwd: repo })).toMatchObject({ action: 'export', to: a });
    runCli(['otel', 'export', '--to', b], { cwd: repo });
    expect(readFileSync(b, 'utf8')).toBe(readFileSync(a, 'utf8'));
    expect(runCli(['otel', 'export'], { cwd: repo }).stdout).toBe(readFileSync(a, 'utf8'));
    const spans = spansOf(a);
    const log = events(repo);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    // One trace; one root (the build); every parent is a span of the export; no id twice.
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([createHash('sha256').update(`longbuild-trace\n${log[0]!.data.buildId}`).digest('hex').slice(0, 32)]));
    expect(byId.size).toBe(spans.length);
    const roots = spans.filter((s) => s.parentSpanId === undefined);
    expect(roots.map((s) => [s.name, attr(s, 'longbuild.build.outcome')])).toEqual([['longbuild build', 'completed']]);
    for (const s of spans) {
      if (s.parentSpanId !== undefined) expect(byId.has(s.parentSpanId), s.name).toBe(true);
      expect(BigInt(s.startTimeUnixNano) <= BigInt(s.endTimeUnixNano), s.name).toBe(true);
    }
    // The oracle: the log itself.
    const milestoneOf = new Map<string, string>();
    for (const e of log) if (e.type === 'HorizonSealed' || e.type === 'HorizonRenewed') for (const n of e.data.nodes) milestoneOf.set(n.id, n.milestone);
    const started = log.filter((e) => e.type === 'AttemptStarted');
    const attempts = spans.filter((s) => s.name.startsWith('attempt '));
    expect(attempts.map((s) => attr(s, 'longbuild.attempt.id')).sort()).toEqual(started.map((e) => e.data.attemptId).sort());
    for (const e of log.filter((x) => x.type === 'AttemptFinished')) {
      const s = attempts.find((x) => attr(x, 'longbuild.attempt.id') === e.data.attemptId)!;
      expect([attr(s, 'longbuild.node.id'), attr(s, 'longbuild.attempt.outcome'), s.status.code]).toEqual([e.data.nodeId, e.data.outcome, e.data.outcome === 'failed' ? 2 : 1]);
      const parent = byId.get(s.parentSpanId!)!;
      expect([parent.name, attr(parent, 'longbuild.milestone.id')]).toEqual([`milestone ${milestoneOf.get(e.data.nodeId)}`, milestoneOf.get(e.data.nodeId)]);
    }
    expect(spans.filter((s) => s.name.startsWith('planner ')).length).toBe(log.filter((e) => e.type === 'PlannerInvoked').length);
    const jobs = spans.filter((s) => s.name.startsWith('integrate '));
    expect(jobs.map((s) => attr(s, 'longbuild.job.id')).sort()).toEqual(log.filter((e) => e.type === 'IntegrationStarted').map((e) => e.data.jobId).sort());
    for (const e of log.filter((x) => x.type === 'IntegrationPromoted')) {
      expect(attr(jobs.find((s) => attr(s, 'longbuild.job.id') === e.data.jobId)!, 'longbuild.job.outcome')).toBe('promoted');
    }
    const failed = log.filter((x) => x.type === 'IntegrationFailed');
    expect(failed.length).toBeGreaterThan(0); // orbit's first attempt at one node fails its verification
    for (const e of failed) {
      const s = jobs.find((x) => attr(x, 'longbuild.job.id') === e.data.jobId)!;
      expect([attr(s, 'longbuild.job.outcome'), s.status.code]).toEqual(['failed', 2]);
    }
    const commands = log.filter((e) => e.type === 'VerificationFinished').flatMap((e) => e.data.evidence.map((c: { argv: string[]; exitCode: number }) => [e.data.jobId, c.argv.join(' '), c.exitCode]));
    const commandSpans = spans.filter((s) => s.name.startsWith('verify ')).map((s) => [attr(byId.get(s.parentSpanId!)!, 'longbuild.job.id'), attr(s, 'process.command_line'), Number(attr(s, 'process.exit.code'))]);
    expect(commandSpans.sort()).toEqual(commands.sort());
  });

  it('posts the same bytes to an OTLP/HTTP collector at /v1/traces; a collector that refuses, is down or hangs is one line and exit 1', async () => {
    const ok = await receiver(200);
    const r = await cliAsync(['otel', 'export', '--endpoint', ok.url, '--json'], repo);
    expect(r.code, r.stderr).toBe(0);
    expect(ok.got).toHaveLength(1);
    expect(ok.got[0]!.path).toBe('/v1/traces');
    expect(ok.got[0]!.type).toBe('application/json');
    const file = join(root, 'posted.json');
    runCli(['otel', 'export', '--to', file], { cwd: repo });
    expect(ok.got[0]!.body).toBe(readFileSync(file, 'utf8'));
    const refusing = await receiver(500);
    const no = await cliAsync(['otel', 'export', '--endpoint', `${refusing.url}/custom/path`], repo);
    expect([no.code, no.stderr.trim().split('\n').length]).toEqual([1, 1]);
    expect(no.stderr).toMatch(/refused the traces \(HTTP 500: collector says no\)/);
    expect(refusing.got[0]!.path).toBe('/custom/path');
    const hanging = await receiver(null);
    const hung = await cliAsync(['otel', 'export', '--endpoint', hanging.url, '--timeout-seconds', '1'], repo);
    expect([hung.code, hung.stderr.trim().split('\n').length]).toEqual([1, 1]);
    expect(hung.stderr).toMatch(/could not be reached \(no answer within 1 s\)/);
    const down = runCli(['otel', 'export', '--endpoint', 'http://127.0.0.1:9'], { cwd: repo });
    expect([down.code, down.stderr.trim().split('\n').length]).toEqual([1, 1]);
    expect(down.stderr).toMatch(/could not be reached .*is it running\?/);
    const bad = runCli(['otel', 'export', '--endpoint', 'ftp://x'], { cwd: repo });
    expect([bad.code, bad.stderr.split('\n')[0]]).toEqual([2, 'longbuild: otel export: --endpoint must be http:// or https://, not ftp:']);
  }, 60_000);

  it('run --otel streams the spans to a collector as the build goes: what it received is what otel export gives; a collector that hangs is skipped with one line and the run ends', async () => {
    const ok = await receiver(200);
    const other = join(tempDir('longbuild-otel-stream-'), 'repo');
    cliJson(['init', '--blueprint', ORBIT, '--repo', other], { cwd: root });
    const r = await cliAsync(['run', '--otel', ok.url], other);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/collector/);
    expect(ok.got.length).toBeGreaterThan(1); // streamed in several posts, not one at the end
    const received = new Map<string, Span>();
    for (const g of ok.got) {
      expect(g.path).toBe('/v1/traces');
      for (const s of JSON.parse(g.body).resourceSpans[0].scopeSpans[0].spans as Span[]) received.set(s.spanId, s);
    }
    const file = join(root, 'streamed.json');
    runCli(['otel', 'export', '--to', file], { cwd: other });
    const exported = spansOf(file);
    expect([...received.values()].sort((a, b) => (a.spanId < b.spanId ? -1 : 1))).toEqual([...exported].sort((a, b) => (a.spanId < b.spanId ? -1 : 1)));
    // A collector that never answers: the run still ends, saying where the spans did not go.
    const hanging = await receiver(null);
    const slow = join(tempDir('longbuild-otel-hang-'), 'repo');
    cliJson(['init', '--blueprint', ORBIT, '--repo', slow], { cwd: root });
    const h = await cliAsync(['run', '--otel', hanging.url], slow);
    expect(h.code, h.stderr).toBe(0);
    expect(h.stderr).toMatch(new RegExp(`the OpenTelemetry collector at ${hanging.url}/v1/traces did not take the last spans within 10 s|spans? did not reach the OpenTelemetry collector`));
    expect(events(slow).some((e) => e.type === 'BuildCompleted')).toBe(true);
  }, 120_000);

  it('a command worker is given TRACEPARENT naming its attempt\'s span, and the span carries what the call used (GenAI conventions)', () => {
    const seen = join(tempDir('longbuild-otel-tp-'), 'traceparents.ndjson');
    const { repo: cmd } = build({ milestones: 1, perMilestone: 2, workerExtra: `appendFileSync(${JSON.stringify(seen)}, JSON.stringify({ attemptId: packet.attemptId, traceparent: process.env.TRACEPARENT }) + '\\n');` });
    expect(runCli(['run'], { cwd: cmd }).code).toBe(0);
    const file = join(root, 'cmd.json');
    runCli(['otel', 'export', '--to', file], { cwd: cmd });
    const spans = spansOf(file);
    const calls = readFileSync(seen, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { attemptId: string; traceparent: string });
    expect(calls).toHaveLength(2);
    for (const c of calls) {
      const span = spans.find((x) => attr(x, 'longbuild.attempt.id') === c.attemptId)!;
      expect(c.traceparent).toBe(`00-${span.traceId}-${span.spanId}-01`);
      expect([attr(span, 'gen_ai.request.model'), attr(span, 'gen_ai.usage.input_tokens'), attr(span, 'gen_ai.usage.output_tokens'), attr(span, 'longbuild.cost.usd')]).toEqual(['worker-model', '5000', '700', 0.25]);
    }
    const planner = spans.find((x) => x.name === 'planner seal')!;
    expect([attr(planner, 'gen_ai.request.model'), attr(planner, 'gen_ai.usage.input_tokens')]).toEqual(['planner-model', '1000']);
  }, 60_000);

  it('a build killed (real SIGKILL) in the middle and resumed exports the spans of an uninterrupted one: the same names, tree, statuses and attributes', () => {
    const other = join(tempDir('longbuild-otel-kill-'), 'repo');
    cliJson(['init', '--blueprint', ORBIT, '--repo', other], { cwd: root });
    expect(runCli(['run', '--repo', other], { cwd: root, env: { LONGBUILD_CRASH_AT: 'after-effect:worker:3' } }).signal).toBe('SIGKILL');
    expect(runCli(['run', '--repo', other], { cwd: root }).code).toBe(0);
    expect(events(other).some((e) => e.type === 'EffectReinvoked')).toBe(true); // the kill left a call in doubt
    const shape = (dir: string): unknown[] => {
      const f = join(root, `${Math.random()}.json`);
      runCli(['otel', 'export', '--to', f], { cwd: dir });
      const spans = spansOf(f);
      const name = new Map(spans.map((s) => [s.spanId, s.name]));
      // Times and durations are the machine's, commits name the build (trailers); the tree and the rest are the log's.
      const mine = new Set(['longbuild.build.id', 'vcs.ref.head.revision', 'longbuild.job.base']);
      return spans.map((s) => ({ name: s.name, parent: s.parentSpanId === undefined ? null : name.get(s.parentSpanId), status: s.status.code, attributes: s.attributes.filter((a) => !mine.has(a.key)) }))
        .sort((x, y) => (x.name < y.name ? -1 : 1));
    };
    expect(shape(other)).toEqual(shape(repo));
  }, 120_000);
});
