/**
 * TEST DOUBLE of a model provider (there is no model API on this machine): an HTTP server on
 * 127.0.0.1 that speaks the wire protocols the real agent CLIs use — Anthropic's Messages API
 * (Claude Code, `ANTHROPIC_BASE_URL`), OpenAI's Responses API (Codex CLI, a custom
 * `model_providers` entry) and OpenAI-compatible Chat Completions (opencode's
 * `@ai-sdk/openai-compatible` provider) — and answers from a script instead of a model. Everything else in a
 * canary build is real: the agent binaries, their tool execution, the sandbox, git, the tests.
 *
 * A script rule matches a call by the text of longbuild's prompt (which names the call's
 * idempotency key and the agent's working directory) and answers by conversation step: step 0 is
 * the first request of a call, step N the request after N tool results. Answers are a function of
 * (prompt, step) only, so a repeated request gets the same answer. Every request is recorded in
 * the ledger with a key (the call's idempotency key, and the step): the same key twice is a
 * repeated model request.
 */
import { createHash } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** What the scripted model does at one step of a call. */
export type ScriptAnswer =
  | { readonly kind: 'shell'; readonly command: string }
  | { readonly kind: 'text'; readonly text: string };

export interface ScriptRule {
  readonly name: string;
  /** Does this rule answer the call whose prompt this is? */
  matches(prompt: string): boolean;
  answer(o: { readonly prompt: string; readonly step: number; readonly cwd: string }): ScriptAnswer;
}

export interface LedgerEntry {
  readonly seq: number;
  readonly protocol: 'anthropic' | 'openai' | 'chat';
  readonly rule: string;
  /** The call's longbuild key (from the prompt), or '' for a request that is not a longbuild call. */
  readonly callId: string;
  readonly step: number;
  readonly key: string;
  /** The answer was never sent (the request was held and the connection died). */
  held: boolean;
}

export interface ScriptedModelServer {
  readonly url: string;
  readonly ledger: LedgerEntry[];
  /** Resolves at the first request matching `when`, which is then held (never answered). */
  holdNext(when: (e: LedgerEntry, prompt: string) => boolean): Promise<LedgerEntry>;
  /** Keys requested more than once, with their entries. */
  repeats(): Map<string, LedgerEntry[]>;
  close(): Promise<void>;
}

/** Shell command writing `files` (paths relative to the working directory), base64 so nothing needs quoting. */
export function writeFilesCommand(files: Readonly<Record<string, string>>): string {
  return Object.entries(files).map(([path, content]) => {
    const dir = path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
    const b64 = Buffer.from(content).toString('base64');
    return `${dir ? `mkdir -p '${dir}' && ` : ''}printf '%s' '${b64}' | base64 -d > '${path}'`;
  }).join(' && ');
}

export function promptField(prompt: string, pattern: RegExp): string {
  return pattern.exec(prompt)?.[1] ?? '';
}

const CALL = /longbuild call ([^\s)]+)\)/;
const CWD = /(?:Your working directory(?: is|,)) (\/[^\s,:]+)/;

export async function startScriptedModelServer(rules: readonly ScriptRule[]): Promise<ScriptedModelServer> {
  const ledger: LedgerEntry[] = [];
  const holds: { when: (e: LedgerEntry, prompt: string) => boolean; resolve: (e: LedgerEntry) => void }[] = [];
  const held: ServerResponse[] = [];

  const handle = (req: IncomingMessage, res: ServerResponse, body: string): void => {
    const url = req.url ?? '';
    // Debugging a protocol: SCRIPTED_MODEL_DUMP=FILE appends every request received.
    if (process.env.SCRIPTED_MODEL_DUMP) appendFileSync(process.env.SCRIPTED_MODEL_DUMP, `${req.method} ${url}\n${body}\n`);
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(body) as Record<string, unknown>;
    } catch {
      // not JSON: answered below as an unknown request
    }
    if (url.includes('count_tokens')) return sendJson(res, { input_tokens: 100 });
    const protocol = url.includes('/messages') ? 'anthropic' : url.includes('/responses') ? 'openai' : url.includes('/chat/completions') ? 'chat' : null;
    if (protocol === null) return sendJson(res, { error: { message: `scripted model server: no route ${req.method} ${url}` } }, 404);
    const { prompt, step } = protocol === 'anthropic' ? anthropicCall(json) : protocol === 'openai' ? openaiCall(json) : chatCall(json);
    // A request without tools is an agent's side request (a session title, a summary), not a step of the call.
    const tools = Array.isArray(json.tools) && json.tools.length > 0;
    const rule = prompt === '' || !tools ? undefined : rules.find((r) => r.matches(prompt));
    const callId = tools ? promptField(prompt, CALL) : '';
    const entry: LedgerEntry = {
      seq: ledger.length + 1, protocol, rule: rule?.name ?? '(other)', callId, step,
      key: `${callId || createHash('sha256').update(prompt).digest('hex').slice(0, 16)}#${step}`, held: false,
    };
    ledger.push(entry);
    const hold = holds.findIndex((h) => h.when(entry, prompt));
    if (hold >= 0) {
      const [h] = holds.splice(hold, 1);
      entry.held = true;
      held.push(res);
      h!.resolve(entry);
      return; // never answered: the caller is killed while it waits
    }
    const answer: ScriptAnswer = rule ? rule.answer({ prompt, step, cwd: promptField(prompt, CWD) }) : { kind: 'text', text: 'ok' };
    if (protocol === 'anthropic') anthropicAnswer(res, json, answer, entry.seq);
    else if (protocol === 'openai') openaiAnswer(res, answer, entry.seq);
    else chatAnswer(res, json, answer, entry.seq);
  };

  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => handle(req, res, body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    ledger,
    holdNext: (when) => new Promise((resolve) => holds.push({ when, resolve })),
    repeats: () => {
      const by = new Map<string, LedgerEntry[]>();
      for (const e of ledger) if (e.callId !== '') by.set(e.key, [...(by.get(e.key) ?? []), e]);
      return new Map([...by].filter(([, es]) => es.length > 1));
    },
    close: async () => {
      for (const r of held) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function sendJson(res: ServerResponse, value: unknown, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

function texts(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return content.flatMap((b: { type?: string; text?: string }) => (typeof b?.text === 'string' ? [b.text] : []));
}

/** Claude Code: our prompt is a text block of a user message; each assistant message is one step. */
function anthropicCall(j: Record<string, unknown>): { prompt: string; step: number } {
  const messages = Array.isArray(j.messages) ? (j.messages as { role: string; content: unknown }[]) : [];
  const prompt = messages.filter((m) => m.role === 'user').flatMap((m) => texts(m.content)).find((t) => CALL.test(t)) ?? '';
  return { prompt, step: messages.filter((m) => m.role === 'assistant').length };
}

/** Codex: our prompt is a user message of `input`; each function call in it is one step. */
function openaiCall(j: Record<string, unknown>): { prompt: string; step: number } {
  const input = Array.isArray(j.input) ? (j.input as { type?: string; role?: string; content?: unknown }[]) : [];
  const prompt = input.filter((i) => i.role === 'user').flatMap((i) => texts(i.content)).find((t) => CALL.test(t)) ?? '';
  return { prompt, step: input.filter((i) => i.type === 'function_call').length };
}

/** opencode (Chat Completions): our prompt is a user message; each assistant message with tool calls is one step. */
function chatCall(j: Record<string, unknown>): { prompt: string; step: number } {
  const messages = Array.isArray(j.messages) ? (j.messages as { role: string; content: unknown; tool_calls?: unknown[] }[]) : [];
  const prompt = messages.filter((m) => m.role === 'user').flatMap((m) => texts(m.content)).find((t) => CALL.test(t)) ?? '';
  return { prompt, step: messages.filter((m) => m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0).length };
}

function chatAnswer(res: ServerResponse, j: Record<string, unknown>, a: ScriptAnswer, seq: number): void {
  const base = { id: `chatcmpl-${seq}`, object: 'chat.completion.chunk', created: 0, model: j.model ?? 'scripted' };
  const delta = a.kind === 'text'
    ? { role: 'assistant', content: a.text }
    : { role: 'assistant', tool_calls: [{ index: 0, id: `call_${seq}`, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: a.command, description: 'write the files of this node' }) } }] };
  const finish = a.kind === 'text' ? 'stop' : 'tool_calls';
  if (j.stream !== true) {
    const message = a.kind === 'text' ? { role: 'assistant', content: a.text } : { role: 'assistant', content: null, tool_calls: (delta as { tool_calls: unknown[] }).tool_calls };
    return sendJson(res, { ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`);
  res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })}\n\n`);
  res.write('data: [DONE]\n\n');
  res.end();
}

function anthropicAnswer(res: ServerResponse, j: Record<string, unknown>, a: ScriptAnswer, seq: number): void {
  const block = a.kind === 'text'
    ? { type: 'text', text: a.text }
    : { type: 'tool_use', id: `toolu_${seq}`, name: 'Bash', input: { command: a.command, description: 'write the files of this node' } };
  const stop = a.kind === 'text' ? 'end_turn' : 'tool_use';
  const message = { id: `msg_${seq}`, type: 'message', role: 'assistant', model: j.model ?? 'scripted', content: [block], stop_reason: stop, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } };
  if (j.stream !== true) return sendJson(res, message);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const ev = (event: string, data: Record<string, unknown>) => res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  ev('message_start', { message: { ...message, content: [], stop_reason: null } });
  if (block.type === 'text') {
    ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: a.kind === 'text' ? a.text : '' } });
  } else {
    ev('content_block_start', { index: 0, content_block: { ...block, input: {} } });
    ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
  }
  ev('content_block_stop', { index: 0 });
  ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 1 } });
  ev('message_stop', {});
  res.end();
}

function openaiAnswer(res: ServerResponse, a: ScriptAnswer, seq: number): void {
  const item = a.kind === 'text'
    ? { type: 'message', role: 'assistant', id: `msg_${seq}`, content: [{ type: 'output_text', text: a.text, annotations: [] }] }
    : { type: 'function_call', id: `fc_${seq}`, call_id: `call_${seq}`, name: 'exec_command', arguments: JSON.stringify({ cmd: a.command }) };
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const ev = (event: string, data: Record<string, unknown>) => res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  ev('response.created', { response: { id: `resp_${seq}` } });
  ev('response.output_item.done', { output_index: 0, item });
  ev('response.completed', { response: { id: `resp_${seq}`, usage: { input_tokens: 1, input_tokens_details: null, output_tokens: 1, output_tokens_details: null, total_tokens: 2 } } });
  res.end();
}
