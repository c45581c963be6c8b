/**
 * `run --otel URL` (decision 0045): the spans of the build streamed to an OTLP/HTTP
 * collector as the run goes, from the log — after a step ends, in the background, never holding a
 * step up. Each poke reads the events appended since the last, derives the trace (commands/otel.ts)
 * and posts the spans that have ended and were not posted yet. A collector that fails is tried
 * again with back-off, then skipped with one line (the spans stay in the log: `otel export`
 * sends them later); the run's end waits for the last post at most `settleMs`.
 */
import type { StoredEvent } from '../../events/envelope.js';
import type { EventLog } from '../../events/event-log.js';
import { traceOfLog, type OtlpSpan } from '../../commands/otel-trace.js';

/** What one OTLP/HTTP POST came to. */
export type Posted = { readonly kind: 'sent' } | { readonly kind: 'refused'; readonly status: number; readonly text: string } | { readonly kind: 'unreachable'; readonly why: string };

/** POST OTLP/JSON traces to a collector, within `timeoutMs`; never throws. */
export async function postTraces(url: URL, body: string, timeoutMs: number): Promise<Posted> {
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    return { kind: 'unreachable', why: (err as Error).name === 'TimeoutError' ? `no answer within ${Math.round(timeoutMs / 1000)} s` : ((err as Error & { cause?: Error }).cause?.message ?? (err as Error).message) };
  }
  const text = await res.text().catch(() => '');
  return res.ok ? { kind: 'sent' } : { kind: 'refused', status: res.status, text: text.trim() };
}

export interface OtelStreamOptions {
  readonly url: URL;
  readonly log: EventLog;
  readonly version: string;
  readonly warn: (line: string) => void;
  /** One post's time limit (ms). */
  readonly timeoutMs?: number;
  /** Tries per batch before it is skipped. */
  readonly tries?: number;
  /** The least time between two posts (ms): steps that end meanwhile are sent together. */
  readonly intervalMs?: number;
}

export class OtelStream {
  private readonly events: StoredEvent[] = [];
  private readonly posted = new Set<string>();
  private chain: Promise<void> = Promise.resolve();
  private pending = false;
  private lastPost = 0;
  private skipped = 0;
  /** Spans posted (accepted by the collector). */
  sent = 0;

  constructor(private readonly o: OtelStreamOptions) {}

  /** After a step: post what ended since, in the background (one post at a time; pokes meanwhile fold into the next). */
  poke(): void {
    if (this.pending) return;
    this.pending = true;
    this.chain = this.chain.then(async () => {
      const wait = this.lastPost + (this.o.intervalMs ?? 1000) - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait).unref());
      this.pending = false;
      await this.flush(false);
    });
  }

  /** As the run ends: post what is left (open spans too), waiting at most `settleMs` for it. */
  async settle(settleMs: number): Promise<void> {
    this.chain = this.chain.then(() => this.flush(true));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), settleMs)));
    const got = await Promise.race([this.chain.then(() => 'done' as const), late]);
    clearTimeout(timer);
    if (got === 'late') this.o.warn(`the OpenTelemetry collector at ${this.o.url.href} did not take the last spans within ${Math.round(settleMs / 1000)} s; \`longbuild otel export --endpoint ${this.o.url.href}\` sends them`);
    else if (this.skipped > 0) this.o.warn(`${this.skipped} span${this.skipped === 1 ? '' : 's'} did not reach the OpenTelemetry collector at ${this.o.url.href}; \`longbuild otel export --endpoint ${this.o.url.href}\` sends the whole trace`);
  }

  private async flush(final: boolean): Promise<void> {
    try {
      for (;;) {
        const page = await this.o.log.readAll({ from: (this.events.at(-1)?.position ?? 0) + 1, limit: 5000 });
        if (page.length === 0) break;
        this.events.push(...page);
      }
    } catch {
      return; // the log is busy for a moment: the next poke reads it
    }
    const trace = traceOfLog(this.events, this.o.version);
    const spans = trace.resourceSpans[0]?.scopeSpans[0]?.spans ?? [];
    const key = (s: OtlpSpan): string => `${s.spanId}:${s.endTimeUnixNano}:${s.attributes.some((a) => a.key === 'longbuild.open')}`;
    // An open span (longbuild.open) is sent only at the end; a span that ended is sent once.
    const fresh = spans.filter((s) => (final || !s.attributes.some((a) => a.key === 'longbuild.open')) && !this.posted.has(key(s)));
    if (fresh.length === 0) return;
    const body = JSON.stringify({ resourceSpans: [{ ...trace.resourceSpans[0]!, scopeSpans: [{ ...trace.resourceSpans[0]!.scopeSpans[0]!, spans: fresh }] }] });
    this.lastPost = Date.now();
    const tries = this.o.tries ?? 3;
    for (let i = 0; i < tries; i++) {
      if ((await postTraces(this.o.url, body, this.o.timeoutMs ?? 5000)).kind === 'sent') {
        for (const s of fresh) this.posted.add(key(s));
        this.sent += fresh.length;
        return;
      }
      // refused, down or too slow: tried again after a pause
      if (i < tries - 1) await new Promise((r) => setTimeout(r, 200 * 2 ** i).unref());
    }
    for (const s of fresh) this.posted.add(key(s)); // skipped: not tried again (otel export sends the whole trace)
    this.skipped += fresh.length;
  }
}
