/**
 * `longbuild mcp`: a Model Context Protocol server over stdio for one build, through
 * the official SDK. Every tool is a CLI command run as a child process with `--json` (the same
 * checks, the same output, never more than the CLI gives, and a command that fails cannot take
 * the server down); its result is that output as structured content. Control tools (run, retry,
 * cancel, approve, reject, replan) answer only when the server was started with
 * `--allow-control`; each records the operator event the CLI records, naming the MCP client
 * (`--as mcp:<client>`). A `run` is a task handle the client polls, never a call that blocks for
 * hours. Resources: the build's status and the tail of its log, with subscriptions: a new event in
 * the log is a `notifications/resources/updated`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { EventLog } from '../../events/event-log.js';

export interface McpOptions {
  /** The longbuild CLI to run (its bin script) and the build's --repo and --dir. */
  readonly bin: string;
  readonly repo: string;
  readonly dir: string;
  readonly allowControl: boolean;
  readonly version: string;
  readonly env: NodeJS.ProcessEnv;
  /** Opens the build's log (for subscriptions: the head is polled in process). */
  readonly openLog: () => Promise<EventLog>;
}

/** The most a tool's output may be (bytes): more is refused with the CLI command that gives it. */
const MAX_OUTPUT = 4 * 1024 * 1024;
/** The most events the log resource holds (the tail). */
const LOG_TAIL = 500;
const POLL_MS = 400;

const id = z.string().min(1).max(200).regex(/^[A-Za-z0-9_][A-Za-z0-9._:+@-]*$/, 'an id: letters, digits and ._:+@- (not starting with -)');
const rev = z.string().min(1).max(200).regex(/^[A-Za-z0-9_][A-Za-z0-9._/^~@{}-]*$/, 'a commit or revision (not starting with -)');
const text = z.string().max(2000);

interface Ran { readonly code: number | null; readonly stdout: string; readonly stderr: string }

export async function serveMcp(o: McpOptions): Promise<void> {
  const server = new McpServer({ name: 'longbuild', version: o.version }, { capabilities: { resources: { subscribe: true, listChanged: false }, tools: {} } });
  const where = ['--repo', o.repo, '--dir', o.dir];
  const cli = (args: readonly string[]): Promise<Ran> => new Promise((resolve) => {
    const child = spawn(process.execPath, [o.bin, ...args, ...where, '--json'], { cwd: o.repo, env: { ...o.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    child.stdout.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_OUTPUT) out.push(c);
    });
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', (e) => resolve({ code: 1, stdout: '', stderr: `longbuild: ${e.message}` }));
    child.on('close', (code) => resolve({ code: size > MAX_OUTPUT ? -2 : code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
  });
  /** A CLI command's --json output as the tool's result (NDJSON: `{ events: [...] }`). */
  const asResult = (args: readonly string[], r: Ran): CallToolResult => {
    if (r.code === -2) return failed(`the output of \`longbuild ${args.join(' ')}\` is larger than ${MAX_OUTPUT / 1024 / 1024} MiB: ask for less (filters, a position), or run the CLI`);
    const parsed = parseJsonOutput(r.stdout);
    if (r.code !== 0) {
      const line = r.stderr.trim().split('\n')[0] ?? `exit ${r.code}`;
      return { isError: true, content: [{ type: 'text', text: line }], ...(parsed !== undefined && isObject(parsed) ? { structuredContent: parsed } : {}) };
    }
    if (parsed === undefined) return failed(`\`longbuild ${args.join(' ')}\` printed no JSON`);
    const structured = isObject(parsed) ? parsed : { events: parsed };
    return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
  };
  const tool = (name: string, description: string, input: z.ZodObject, args: (a: any) => string[], control = false, post?: (r: CallToolResult, a: any) => CallToolResult): void => {
    server.registerTool(name, { description, inputSchema: input, outputSchema: OUTPUTS[name] ?? z.looseObject({}), annotations: { readOnlyHint: !control } }, async (a: unknown): Promise<CallToolResult> => {
      if (control && !o.allowControl) return failed(`${name} changes the build: refused (start the server with \`longbuild mcp --allow-control\`)`);
      const argv = [...args(a), ...(control ? ['--as', clientName()] : [])];
      const r = asResult(argv, await cli(argv));
      return post !== undefined && r.isError !== true ? post(r, a) : r;
    });
  };
  const clientName = (): string => `mcp:${(server.server.getClientVersion()?.name ?? 'client').replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 60)}`;
  const strict = <T extends z.ZodRawShape>(shape: T) => z.strictObject(shape);

  tool('status', 'The build\'s status (`longbuild status --json`): nodes, horizon, what is blocked and why, spend.', strict({}), () => ['status']);
  tool('show', 'The graph at a log position, a graph revision or a checkpoint (`longbuild show --json`); the present without arguments.',
    strict({ at: z.number().int().positive().optional(), revision: z.number().int().nonnegative().optional(), checkpoint: id.optional() }),
    (a) => ['show', ...(a.at !== undefined ? ['--at', String(a.at)] : []), ...(a.revision !== undefined ? ['--revision', String(a.revision)] : []), ...(a.checkpoint !== undefined ? ['--checkpoint', a.checkpoint] : [])]);
  tool('diff', 'What changed between two log positions (or graph revisions, or checkpoints) (`longbuild diff A B --json`).',
    strict({ from: id, to: id, by: z.enum(['position', 'revision', 'checkpoint']).optional() }),
    (a) => ['diff', a.from, a.to, ...(a.by === 'revision' ? ['--revision'] : a.by === 'checkpoint' ? ['--checkpoint'] : [])]);
  tool('log', 'Events of the log from a position, of some types (`longbuild log --json`), at most `limit` of them.',
    strict({ from: z.number().int().positive().optional(), types: z.array(id).max(50).optional(), limit: z.number().int().positive().max(5000).optional() }),
    (a) => ['log', ...(a.from !== undefined ? ['--from', String(a.from)] : []), ...(a.types ?? []).flatMap((t: string) => ['--type', t])], false,
    (r, a) => {
      // A page: the first `limit` (default 1000) events, and where the next page starts.
      const events = ((r.structuredContent as { events?: { position: number }[] }).events ?? []);
      const limit = a.limit ?? 1000;
      const page = { events: events.slice(0, limit), ...(events.length > limit ? { next: events[limit]!.position } : {}) };
      return { content: [{ type: 'text', text: JSON.stringify(page) }], structuredContent: page };
    });
  tool('evidence', 'What an attempt, an integration job or an acceptance run printed, and its commands (`longbuild evidence ID --json`).', strict({ id }), (a) => ['evidence', a.id]);
  tool('verify', 'Check the log, its signed checkpoints, the projections and the refs (`longbuild verify --json`).', strict({}), () => ['verify']);
  tool('provenance', 'The in-toto/SLSA attestation of an integrated commit, its record in the log and inclusion proof (`longbuild provenance COMMIT --json`).', strict({ commit: rev }), (a) => ['provenance', a.commit]);
  const field = (key: string) => (r: CallToolResult): CallToolResult => {
    const picked = { [key]: (r.structuredContent as Record<string, unknown>)[key] ?? null };
    return { content: [{ type: 'text', text: JSON.stringify(picked) }], structuredContent: picked };
  };
  tool('spend', 'What the build spent: tokens and USD, per node, milestone and in total (`status --json`\'s spend).', strict({}), () => ['status'], false, field('spend'));
  tool('critical_path', 'The chain of unfinished nodes that bounds the build\'s end, with its estimate (`status --json`\'s criticalPath).', strict({}), () => ['status'], false, field('criticalPath'));
  tool('otel', 'The build as OpenTelemetry traces (OTLP/JSON), derived from the log (`longbuild otel export --json`).', strict({}), () => ['otel', 'export']);

  // Control: refused unless --allow-control; each names the client as the operator.
  const runs = new Map<string, { child: ChildProcess; out: string; err: string; code: number | null | undefined }>();
  server.registerTool('run', {
    description: 'Start `longbuild run` (optionally at most maxSteps steps) in the background; returns a handle to poll with run_status. Needs --allow-control.',
    inputSchema: strict({ maxSteps: z.number().int().positive().max(100_000).optional() }), outputSchema: z.strictObject({ handle: z.string(), pid: z.number().int().nullable(), state: z.literal('running') }), annotations: { readOnlyHint: false },
  }, async (a: { maxSteps?: number }): Promise<CallToolResult> => {
    if (!o.allowControl) return failed('run changes the build: refused (start the server with `longbuild mcp --allow-control`)');
    if ([...runs.values()].some((r) => r.code === undefined)) return failed('a run started here is still going: poll it with run_status');
    const handle = `run-${runs.size + 1}`;
    const child = spawn(process.execPath, [o.bin, 'run', ...where, '--json', '--progress', 'off', ...(a.maxSteps !== undefined ? ['--max-steps', String(a.maxSteps)] : [])], { cwd: o.repo, env: { ...o.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    const entry: { child: ChildProcess; out: string; err: string; code: number | null | undefined } = { child, out: '', err: '', code: undefined };
    child.stdout!.on('data', (c: Buffer) => { entry.out = (entry.out + c.toString('utf8')).slice(-MAX_OUTPUT); });
    child.stderr!.on('data', (c: Buffer) => { entry.err = (entry.err + c.toString('utf8')).slice(-64 * 1024); });
    child.on('close', (code) => { entry.code = code; });
    runs.set(handle, entry);
    const started = { handle, pid: child.pid ?? null, state: 'running' };
    return { content: [{ type: 'text', text: JSON.stringify(started) }], structuredContent: started };
  });
  server.registerTool('run_status', {
    description: 'Where a run started with `run` stands: running, or exited with its exit code and `longbuild run --json` output.',
    inputSchema: strict({ handle: id }), outputSchema: z.looseObject({ handle: z.string(), state: z.enum(['running', 'exited']), exitCode: z.number().int().nullable().optional() }), annotations: { readOnlyHint: true },
  }, async (a: { handle: string }): Promise<CallToolResult> => {
    const r = runs.get(a.handle);
    if (r === undefined) return failed(`no run '${a.handle}' was started by this server`);
    const result = r.code === undefined ? { handle: a.handle, state: 'running' } : {
      handle: a.handle, state: 'exited', exitCode: r.code, ...(parseJsonOutput(r.out) !== undefined ? { result: parseJsonOutput(r.out) } : {}),
      ...(r.code !== 0 ? { error: r.err.trim().split('\n').at(-1) ?? '' } : {}),
    };
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  });
  tool('retry', 'Give a blocked node more attempts (`longbuild retry NODE`). Needs --allow-control.', strict({ node: id, attempts: z.number().int().positive().max(100).optional() }),
    (a) => ['retry', a.node, ...(a.attempts !== undefined ? ['--attempts', String(a.attempts)] : [])], true);
  tool('cancel', 'Cancel a node and what depends on it (`longbuild cancel NODE`). Needs --allow-control.', strict({ node: id, reason: text.optional() }),
    (a) => ['cancel', a.node, ...(a.reason !== undefined ? ['--reason', a.reason] : [])], true);
  tool('approve', 'Approve what the build waits on: a proposal, a checkpoint or the final head (`longbuild approve`). Needs --allow-control.', strict({ reason: text.optional() }),
    (a) => ['approve', ...(a.reason !== undefined ? ['--reason', a.reason] : [])], true);
  tool('reject', 'Reject what the build waits on, with the reason the planner is told (`longbuild reject`). Needs --allow-control.', strict({ reason: text.min(1) }), (a) => ['reject', '--reason', a.reason], true);
  tool('replan', 'Give a build blocked in planning more asks of its planner (`longbuild replan`). Needs --allow-control.', strict({ reason: text.optional(), asks: z.number().int().positive().max(100).optional() }),
    (a) => ['replan', ...(a.reason !== undefined ? ['--reason', a.reason] : []), ...(a.asks !== undefined ? ['--asks', String(a.asks)] : [])], true);

  // Resources, with subscriptions (the log's head polled in process).
  server.registerResource('status', 'longbuild://status', { description: 'The build\'s status (status --json)', mimeType: 'application/json' }, async (uri) => {
    const r = await cli(['status']);
    return { contents: [{ uri: uri.href, mimeType: 'application/json', text: r.stdout.trim() }] };
  });
  server.registerResource('log', 'longbuild://log', { description: `The last ${LOG_TAIL} events of the log (NDJSON, log --json)`, mimeType: 'application/x-ndjson' }, async (uri) => {
    const r = await cli(['log', '--tail', String(LOG_TAIL)]);
    return { contents: [{ uri: uri.href, mimeType: 'application/x-ndjson', text: r.stdout }] };
  });
  const subscribed = new Set<string>();
  let log: EventLog | null = null;
  let seen = -1;
  let timer: NodeJS.Timeout | null = null;
  /** The log's head position: one read of its head, however long the log (it read every event once). */
  const headPosition = async (): Promise<number> => {
    log ??= await o.openLog();
    return (await log.head())?.position ?? 0;
  };
  const poll = async (): Promise<void> => {
    try {
      const head = await headPosition();
      if (seen >= 0 && head > seen) for (const uri of subscribed) await server.server.sendResourceUpdated({ uri });
      seen = head;
    } catch {
      // a log being written may be busy for a moment: the next poll sees it
    }
  };
  server.server.setRequestHandler(SubscribeRequestSchema, async (req) => {
    if (req.params.uri !== 'longbuild://status' && req.params.uri !== 'longbuild://log') throw new Error(`no resource ${req.params.uri.slice(0, 100)} (longbuild://status, longbuild://log)`);
    subscribed.add(req.params.uri);
    if (timer === null) {
      await poll();
      timer = setInterval(() => void poll(), POLL_MS);
    }
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
    subscribed.delete(req.params.uri);
    if (subscribed.size === 0 && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
    return {};
  });

  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.on('end', () => resolve());
  });
  await server.connect(transport);
  await closed;
  if (timer !== null) clearInterval(timer);
  for (const r of runs.values()) if (r.code === undefined) r.child.kill('SIGTERM'); // an interrupted run resumes exactly
  await (log as EventLog | null)?.close();
  await server.close();
}

/** Each tool's structured output (the CLI's --json shape: the keys a client can count on; the rest passes). */
const event = z.looseObject({ position: z.number().int(), type: z.string(), data: z.unknown() });
const OUTPUTS: Record<string, z.ZodObject> = {
  status: z.looseObject({ position: z.number().int(), graphRevision: z.number().int(), integrationHead: z.string().nullable() }),
  show: z.looseObject({ nodes: z.array(z.looseObject({ id: z.string(), state: z.string() })) }),
  log: z.strictObject({ events: z.array(event), next: z.number().int().optional() }),
  verify: z.looseObject({ ok: z.boolean() }),
  provenance: z.looseObject({ action: z.literal('show'), commit: z.string(), statement: z.looseObject({}), envelope: z.looseObject({}).nullable() }),
  otel: z.looseObject({ action: z.literal('export'), spans: z.number().int(), traceId: z.string().nullable() }),
  spend: z.strictObject({ spend: z.unknown() }),
  critical_path: z.strictObject({ criticalPath: z.unknown() }),
};

const failed = (message: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text: message }] });
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A command's --json output: one JSON value, or NDJSON (an array of its lines); undefined when it is neither. */
function parseJsonOutput(stdout: string): unknown {
  const t = stdout.trim();
  if (t === '') return undefined;
  try {
    return JSON.parse(t);
  } catch {
    try {
      return t.split('\n').map((l) => JSON.parse(l) as unknown);
    } catch {
      return undefined;
    }
  }
}
