/**
 * `longbuild mcp` (issue 48) through the official SDK's own client over stdio, on real builds
 * (orbit blueprint, SQLite, git): every read tool's result is the CLI's `--json` output for the
 * same question; control tools are refused without --allow-control; hostile input (an unknown
 * tool, a flag smuggled as an id, a huge or deeply nested argument) is an MCP error and the server
 * goes on answering; with --allow-control a `run` is a handle the client polls while a
 * subscription to the log delivers its events as resources/updated notifications.
 */
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliJson, runCli, tempDir } from './support/cli.js';
import { events } from './support/outcomes.js';
import { build } from './support/spend-build.js';

const ORBIT = join(import.meta.dirname, 'fixtures', 'orbit.json');
const root = tempDir('longbuild-mcp-');
const repo = join(root, 'repo');
const clients: Client[] = [];

async function connect(dir: string, ...extra: string[]): Promise<Client> {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  // The test's environment (its signing-key setting): the SDK passes only a few variables by default.
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp', '--repo', dir, ...extra], stderr: 'pipe', env: { ...process.env, NO_COLOR: '1' } as Record<string, string> }));
  clients.push(client);
  return client;
}
const structured = (r: unknown): any => (r as { structuredContent?: unknown }).structuredContent;
const textOf = (r: unknown): string => ((r as { content: { text: string }[] }).content[0]?.text ?? '');

beforeAll(() => {
  cliJson(['init', '--blueprint', ORBIT, '--repo', repo], { cwd: root });
  expect(runCli(['run', '--repo', repo], { cwd: root }).code).toBe(0);
}, 120_000);
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
});

describe('longbuild mcp (issue 48)', () => {
  it('every read tool answers what the CLI answers with --json, for the same question', async () => {
    const client = await connect(repo);
    const tools = (await client.listTools()).tools;
    expect(tools.map((t) => t.name).sort()).toEqual(['approve', 'cancel', 'critical_path', 'diff', 'evidence', 'log', 'otel', 'provenance', 'reject', 'replan', 'retry', 'run', 'run_status', 'show', 'spend', 'status', 'verify'].sort());
    for (const t of tools) expect([t.name, t.inputSchema.type, t.outputSchema?.type]).toEqual([t.name, 'object', 'object']);
    const same = async (tool: string, args: Record<string, unknown>, cli: string[]): Promise<void> => {
      const r = await client.callTool({ name: tool, arguments: args });
      expect(r.isError, `${tool}: ${textOf(r)}`).not.toBe(true);
      expect(structured(r), tool).toEqual(cliJson(cli, { cwd: repo }));
    };
    await same('status', {}, ['status']);
    await same('show', { at: 12 }, ['show', '--at', '12']);
    await same('diff', { from: '10', to: '30' }, ['diff', '10', '30']);
    await same('verify', {}, ['verify']);
    const status = cliJson(['status'], { cwd: repo });
    expect(structured(await client.callTool({ name: 'spend', arguments: {} }))).toEqual({ spend: status.spend ?? null });
    expect(structured(await client.callTool({ name: 'critical_path', arguments: {} }))).toEqual({ criticalPath: status.criticalPath ?? null });
    const log = events(repo);
    const attempt = log.find((e) => e.type === 'AttemptFinished')!.data.attemptId as string;
    await same('evidence', { id: attempt }, ['evidence', attempt]);
    const commit = log.find((e) => e.type === 'IntegrationPromoted')!.data.receipt.resultCommit as string;
    await same('provenance', { commit }, ['provenance', commit]);
    // The log, paged: the CLI's events, `limit` at a time, and where the next page starts.
    const page = structured(await client.callTool({ name: 'log', arguments: { from: 3, limit: 5 } }));
    const cliLog = runCli(['log', '--json', '--from', '3'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(page).toEqual({ events: cliLog.slice(0, 5), next: 8 });
    const typed = structured(await client.callTool({ name: 'log', arguments: { types: ['IntegrationPromoted'] } }));
    expect(typed.events.map((e: { position: number }) => e.position)).toEqual(log.filter((e) => e.type === 'IntegrationPromoted').map((e) => e.position));
    // A failing question is the CLI's one line, as an error result.
    const none = await client.callTool({ name: 'evidence', arguments: { id: 'no-such-attempt.9' } });
    expect([none.isError, textOf(none)]).toEqual([true, runCli(['evidence', 'no-such-attempt.9'], { cwd: repo }).stderr.trim().split('\n')[0]]);
  }, 120_000);

  it('control tools are refused without --allow-control; hostile input is an MCP error and the server goes on', async () => {
    const client = await connect(repo);
    const before = events(repo).length;
    for (const [name, args] of [['approve', {}], ['reject', { reason: 'no' }], ['retry', { node: 'x' }], ['cancel', { node: 'x' }], ['replan', {}], ['run', {}]] as const) {
      const r = await client.callTool({ name, arguments: args });
      expect([r.isError, textOf(r)], name).toEqual([true, expect.stringContaining('refused (start the server with `longbuild mcp --allow-control`)')]);
    }
    expect(events(repo).length).toBe(before); // nothing recorded
    const unknown = await client.callTool({ name: 'rm-rf', arguments: {} });
    expect([unknown.isError, textOf(unknown)]).toEqual([true, expect.stringMatching(/Tool rm-rf not found/)]);
    // A flag smuggled as an id, a path, an extra key (a directory), a huge and a deeply nested argument.
    let nested: unknown = 'x';
    for (let i = 0; i < 3000; i++) nested = { a: nested };
    for (const args of [{ id: '--raw' }, { id: '../../etc/passwd' }, { id: 'a', dir: '/etc' }, { id: 'a'.repeat(1_000_000) }, { id: nested }]) {
      const r = await client.callTool({ name: 'evidence', arguments: args as Record<string, unknown> });
      expect([r.isError, textOf(r)]).toEqual([true, expect.stringMatching(/Input validation error/)]);
    }
    // Still answering.
    expect(structured(await client.callTool({ name: 'status', arguments: {} }))).toEqual(cliJson(['status'], { cwd: repo }));
  }, 120_000);

  it('with --allow-control, a control tool records the operator event the CLI records, naming the MCP client', async () => {
    const { repo: gated } = build({ approve: ['plan'], milestones: 1, perMilestone: 1 });
    expect(cliJson(['run'], { cwd: gated }).outcome).toBe('awaiting_approval');
    const client = await connect(gated, '--allow-control');
    const r = await client.callTool({ name: 'approve', arguments: { reason: 'looks right' } });
    expect(r.isError, textOf(r)).not.toBe(true);
    const approved = events(gated).find((e) => e.type === 'ProposalApproved')!;
    expect(approved.data.operator).toEqual({ action: 'approve', user: 'mcp:mcp-test' });
    expect(approved.data.reason).toBe('looks right');
    // Nothing waits any more: the CLI's refusal, as an error result.
    const again = await client.callTool({ name: 'approve', arguments: {} });
    expect([again.isError, textOf(again)]).toEqual([true, runCli(['approve'], { cwd: gated }).stderr.trim().split('\n')[0]]);
  }, 120_000);

  it('with --allow-control, run is a handle polled to its end while a subscription to the log is told of every append', async () => {
    const fresh = join(tempDir('longbuild-mcp-run-'), 'repo');
    cliJson(['init', '--blueprint', ORBIT, '--repo', fresh], { cwd: root });
    const client = await connect(fresh, '--allow-control');
    let updates = 0;
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      if (n.params.uri === 'longbuild://log') updates += 1;
    });
    await client.subscribeResource({ uri: 'longbuild://log' });
    const started = structured(await client.callTool({ name: 'run', arguments: {} }));
    expect(started).toMatchObject({ handle: 'run-1', state: 'running' });
    let status: any = started;
    for (let i = 0; i < 1200 && status.state === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = structured(await client.callTool({ name: 'run_status', arguments: { handle: 'run-1' } }));
    }
    expect(status, JSON.stringify(status)).toMatchObject({ state: 'exited', exitCode: 0, result: { outcome: 'horizon_complete' } });
    expect(events(fresh).some((e) => e.type === 'BuildCompleted')).toBe(true);
    // Appends were told while it ran (polled: at least one notification, never more than one per append).
    await new Promise((r) => setTimeout(r, 1000));
    expect(updates).toBeGreaterThan(0);
    expect(updates).toBeLessThanOrEqual(events(fresh).length);
    const tail = await client.readResource({ uri: 'longbuild://log' });
    const lines = (tail.contents[0] as { text: string }).text.trim().split('\n').map((l) => JSON.parse(l) as { position: number });
    expect(lines.at(-1)!.position).toBe(events(fresh).length);
  }, 180_000);
});
