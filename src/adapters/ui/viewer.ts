/**
 * `longbuild ui`: a local, read-only web viewer of one build. A plain node:http server:
 * the page's assets ship in the package (`ui/`), the API reads the log through the log port in
 * pages, and the state at a point comes from `stateAsOf` (snapshots, R-6), shared with `show` and
 * `diff` through `projections/view.ts`.
 *
 * Read-only by construction: GET and HEAD only, nothing here appends or writes the build directory.
 * Bound to 127.0.0.1 unless a host is given; a request whose Host header names another host is
 * refused (a web page elsewhere cannot reach the viewer through DNS rebinding).
 *
 * API (JSON unless said otherwise):
 *   GET /api/meta                 build id, title, head position, timeline marks, the cumulative spend, chain check
 *   GET /api/view?at=N            the view at position N (default: head) with its DAG layout
 *   GET /api/diff?from=A&to=B     diffViews between two positions
 *   GET /api/events?from=&limit=&type=&node=&q=   a page of the event index (filters optional)
 *   GET /api/event?position=N     one stored event: canonical JSON, hash, previous hash, git SHAs, evidence
 *   GET /api/evidence?sha256=H    the recorded bytes of one evidence file (text/plain)
 *   GET /api/stream               server-sent events: `{"position":N}` each time the log grows
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { canonicalJson, type JsonValue } from '../../events/canonical.js';
import type { EventLog } from '../../events/event-log.js';
import { LongbuildError, NotFoundError } from '../../events/errors.js';
import { diffViews, viewOf } from '../../projections/view.js';
import { criticalPath } from '../../projections/critical-path.js';
import { evidenceRefs, gitRefs, HEX64, MARK_BUCKETS } from './event-index.js';
import { EventList, openStoredIndex } from './event-list.js';
import type { StoredEvent } from '../../events/envelope.js';
import { layoutOf, type LaidOut } from './layout.js';
import { FileEvidenceStore } from '../evidence-store.js';
import { readPages } from '../log/paging.js';
import type { BuildPaths } from '../build-dir.js';
import { stateAsOf, type TimeSource } from '../app/state-at.js';
import type { OpenTimeSource } from '../app/reading.js';
import { packageFile } from '../package-files.js';

/** Where the page's files are: `ui/` at the package's root. */
export const ASSETS = `${packageFile('ui')}/`;

export interface ViewerOptions {
  readonly host: string;
  readonly port: number;
  /** Host names the Host header may carry besides the bound address (`localhost` for 127.0.0.1). */
  readonly allowAnyHost: boolean;
  readonly paths: BuildPaths;
  /** Open the build's log for reading (the event index). */
  readonly openLog: () => Promise<EventLog>;
  /** Open the build for reading (no lease, nothing written); the viewer keeps one open and reopens it when the log grew. */
  readonly openSource: () => Promise<OpenTimeSource>;
  /** How often the event index looks for new events (live mode). */
  readonly pollMs?: number;
  /** The chain check for the badge (the `verify` command's run), started once in the background. */
  readonly verify?: () => Promise<{ ok: boolean; events: number; checkpoints?: number; problem?: string }>;
}

/** While a build runs, the chain check runs again at most this often. */
const CHECK_SPACING_MS = 3000;

const TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

/** A query parameter as a whole number ≥ 0, or undefined; anything else is a 400. */
function intParam(u: URL, name: string): number | undefined {
  const v = u.searchParams.get(name);
  if (v === null || v === '') return undefined;
  if (!/^\d{1,12}$/.test(v)) throw new HttpError(400, `${name} must be a whole number ≥ 0, got '${v.slice(0, 40)}'`);
  return Number(v);
}

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** The viewer: an event index kept current, views cached by position (a past position never changes). */
export class Viewer {
  /** The event index: the stored one (projections.db) and the events after it (decision 0051). */
  private list = new EventList(null);
  private stored: { close(): void } | null = null;
  private readonly views = new Map<number, LaidOut>();
  private readonly clients = new Set<ServerResponse>();
  private meta: { buildId: string; title: string; completed: boolean } = { buildId: '', title: '', completed: false };
  private verified: { state: 'running' } | { state: 'done'; ok: boolean; events: number; checkpoints?: number; problem?: string } = { state: 'running' };
  private timer: NodeJS.Timeout | null = null;
  private server: Server | null = null;
  private reading: Promise<void> = Promise.resolve();
  private checking = false;
  private open: OpenTimeSource | null = null;
  /** The log, read by the event index (polled); the build is opened for reading only for states at a point. */
  private log: EventLog | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private checkAgain = false;

  constructor(private readonly o: ViewerOptions) {}

  get head(): number {
    return this.list.head;
  }

  /** The log's head as the viewer started (the index may still be reading up to it). */
  private startHead = 0;
  /** The first read of the event index: the API waits for it. */
  private ready: Promise<void> = Promise.resolve();

  /** The log's position as far as the viewer knows it. */
  get knownHead(): number {
    return Math.max(this.head, this.startHead);
  }

  /** Read the log's new events into the index (page by page, through the port), after taking what the stored index holds. */
  private async readNew(): Promise<void> {
    const before = this.head;
    const log = (this.log ??= await this.o.openLog());
    await this.list.adopt(async (p) => (await log.readAll({ from: p, limit: 1 }))[0]?.hash ?? null);
    if (this.meta.buildId === '' && this.head > 0) this.takeMeta((await log.readAll({ from: 1, limit: 1 }))[0]);
    for await (const page of readPages(log, this.head + 1)) {
      for (const e of page) {
        if (e.type === 'BuildInitialized') this.takeMeta(e);
        this.list.add(e);
      }
    }
    // A completed build stays completed: asked until it is.
    if (!this.meta.completed) this.meta.completed = this.list.completed;
    if (this.head !== before) {
      this.checkChain();
      for (const c of this.clients) c.write(`data: ${JSON.stringify({ position: this.head })}\n\n`);
    }
  }

  private takeMeta(e: StoredEvent | undefined): void {
    if (e?.type !== 'BuildInitialized') return;
    const d = e.data as { buildId: string; request?: { title?: unknown; goal?: unknown } };
    this.meta.buildId = d.buildId;
    this.meta.title = typeof d.request?.title === 'string' ? d.request.title : typeof d.request?.goal === 'string' ? d.request.goal : d.buildId;
  }

  /**
   * Run `fn` on the build open for reading, one at a time; reopened first when it was opened before
   * the log reached position `needs` (its state at its head is what time travel starts from). Each
   * request does not pay the opening (the newest view and the events after it, decision 0020).
   */
  private withSource<T>(needs: number, fn: (s: TimeSource) => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      if (this.open === null || this.open.source.state.position < needs) {
        const old = this.open;
        this.open = null;
        await old?.close();
        this.open = await this.o.openSource();
      }
      return fn(this.open.source);
    };
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => {});
    return next;
  }

  /** Run the chain check for the badge; once at a time, again when the log grew while it ran. */
  private checkChain(): void {
    if (!this.o.verify) return;
    if (this.checking) {
      this.checkAgain = true;
      return;
    }
    this.checking = true;
    this.o.verify().then((r) => { this.verified = { state: 'done', ...r }; }, (err: unknown) => {
      this.verified = { state: 'done', ok: false, events: 0, problem: err instanceof Error ? err.message : String(err) };
    }).finally(() => {
      this.checking = false;
      if (this.checkAgain) {
        // The log grew while it ran (a live build): again, but not back to back.
        this.checkAgain = false;
        setTimeout(() => this.checkChain(), CHECK_SPACING_MS).unref();
      } else for (const c of this.clients) c.write(`data: ${JSON.stringify({ position: this.head, verified: true })}\n\n`);
    });
  }

  private refresh(): Promise<void> {
    this.reading = this.reading.then(() => this.readNew()).catch(() => {});
    return this.reading;
  }

  /**
   * Listen at once: the log is opened and its head read (O(1) of its length); the event index is
   * read in the background, and the API answers once it is (static files at once).
   */
  async start(): Promise<{ url: string }> {
    const log = (this.log ??= await this.o.openLog());
    this.startHead = (await log.head())?.position ?? 0;
    const stored = openStoredIndex(this.o.paths.projections);
    this.stored = stored;
    this.list = new EventList(stored?.reader ?? null);
    this.timer = setInterval(() => void this.refresh(), this.o.pollMs ?? 500);
    this.timer.unref();
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.o.port, this.o.host, () => resolve());
    });
    // Read once listening: a local log's pages resolve at once, and would hold the listen back.
    this.ready = this.refresh();
    const addr = server.address();
    const port = typeof addr === 'object' && addr !== null ? addr.port : this.o.port;
    const host = this.o.host.includes(':') ? `[${this.o.host}]` : this.o.host;
    return { url: `http://${host}:${port}/` };
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.reading;
    await this.queue;
    await this.open?.close();
    this.open = null;
    await this.log?.close();
    this.log = null;
    this.stored?.close();
    this.stored = null;
    for (const c of this.clients) c.end();
    this.clients.clear();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections?.();
  }

  /** The Host header names this server (or any host was allowed explicitly). */
  private hostAllowed(req: IncomingMessage): boolean {
    if (this.o.allowAnyHost) return true;
    const host = (req.headers.host ?? '').toLowerCase().replace(/:\d+$/, '');
    return host === '127.0.0.1' || host === 'localhost' || host === '[::1]';
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'the viewer is read-only: GET only');
      if (!this.hostAllowed(req)) throw new HttpError(403, 'this viewer answers requests for 127.0.0.1 or localhost only (start it with --host to serve others)');
      const u = new URL(req.url ?? '/', 'http://viewer.invalid');
      if (u.pathname.startsWith('/api/')) {
        await this.ready;
        return await this.api(u, res);
      }
      return this.asset(u.pathname, res);
    } catch (err) {
      const status = err instanceof HttpError ? err.status : err instanceof NotFoundError ? 404 : err instanceof LongbuildError ? 400 : 500;
      const message = err instanceof Error ? err.message : String(err);
      if (!res.headersSent) {
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
        res.end(JSON.stringify({ error: message }));
      } else res.end();
    }
  }

  private asset(pathname: string, res: ServerResponse): void {
    if (pathname === '/favicon.ico') {
      res.writeHead(204);
      res.end();
      return;
    }
    const name = pathname === '/' ? 'index.html' : pathname.slice(1);
    if (!/^[a-z0-9-]+\.(html|js|css|svg)$/.test(name)) throw new HttpError(404, `no such page: ${pathname}`);
    const file = join(ASSETS, name);
    if (!existsSync(file)) throw new HttpError(404, `no such page: ${pathname}`);
    res.writeHead(200, { 'content-type': TYPES[extname(name)] ?? 'application/octet-stream', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff', 'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:" });
    res.end(readFileSync(file));
  }

  private json(res: ServerResponse, body: unknown): void {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  }

  private position(u: URL, name: string): number {
    const p = intParam(u, name) ?? this.head;
    if (p > this.head) throw new HttpError(404, `position ${p} is beyond the end of the log (${this.head})`);
    return p;
  }

  /** The view at a position, laid out; cached (the log below a position never changes). */
  async viewAt(at: number): Promise<LaidOut> {
    const hit = this.views.get(at);
    if (hit) return hit;
    const view = await this.withSource(at, async (s) => {
      const st = await stateAsOf(s, { at });
      return { ...layoutOf(viewOf(st)), criticalPath: criticalPath(st) };
    });
    if (this.views.size > 256) this.views.delete(this.views.keys().next().value!);
    this.views.set(at, view);
    return view;
  }

  private async api(u: URL, res: ServerResponse): Promise<void> {
    switch (u.pathname) {
      case '/api/meta':
        return this.json(res, { ...this.meta, head: this.head, events: this.head, ...this.list.timeline(this.head, MARK_BUCKETS), verify: this.verified, types: this.list.types() });
      case '/api/view':
        return this.json(res, await this.viewAt(this.position(u, 'at')));
      case '/api/diff': {
        const from = this.position(u, 'from');
        const to = this.position(u, 'to');
        return this.json(res, diffViews(await this.viewAt(from), await this.viewAt(to)));
      }
      case '/api/events': {
        const type = u.searchParams.get('type') || null;
        const node = u.searchParams.get('node') || null;
        const q = (u.searchParams.get('q') ?? '').toLowerCase();
        const from = intParam(u, 'offset') ?? 0;
        const limit = Math.min(intParam(u, 'limit') ?? 200, 1000);
        const { total, rows } = this.list.rows({ type, node, q }, from, limit);
        return this.json(res, { total, offset: from, rows });
      }
      case '/api/event': {
        const p = intParam(u, 'position');
        if (p === undefined || p < 1) throw new HttpError(400, 'position must be given, a whole number ≥ 1');
        const e = (await this.log!.readAll({ from: p, limit: 1 }))[0];
        if (e === undefined || e.position !== p) throw new HttpError(404, `no event at position ${p} (the log ends at ${this.head})`);
        return this.json(res, {
          position: e.position, type: e.type, streamId: e.streamId, revision: e.revision, schemaVersion: e.schemaVersion,
          hash: e.hash, prevHash: e.prevHash, metadata: e.metadata,
          // The exact bytes the event's hash is the SHA-256 of (the page recomputes it).
          canonical: canonicalJson({ data: e.data as JsonValue, metadata: e.metadata as unknown as JsonValue, position: e.position, prevHash: e.prevHash, revision: e.revision, schemaVersion: e.schemaVersion, streamId: e.streamId, type: e.type }),
          data: e.data, git: gitRefs(e), evidence: evidenceRefs(e),
        });
      }
      case '/api/evidence': {
        const sha = u.searchParams.get('sha256') ?? '';
        if (!HEX64.test(sha)) throw new HttpError(400, 'sha256 must be 64 lower-case hex digits');
        const bytes = new FileEvidenceStore(this.o.paths.evidence).get(sha);
        if (bytes === null || bytes === undefined) throw new HttpError(404, `no evidence file ${sha} in this build (or it does not match its SHA-256)`);
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
        res.end(bytes);
        return;
      }
      case '/api/stream': {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
        res.write(`data: ${JSON.stringify({ position: this.head })}\n\n`);
        this.clients.add(res);
        res.on('close', () => this.clients.delete(res));
        return;
      }
      default:
        throw new HttpError(404, `no such API: ${u.pathname}`);
    }
  }
}
