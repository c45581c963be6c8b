/**
 * OpenTelemetry traces from the log, pure: the build as one trace in OTLP/JSON
 * (`ExportTraceServiceRequest`, opentelemetry-proto's JSON encoding): a span for the build, each
 * milestone, planner call, attempt, integration job and verification command, with their
 * attributes (GenAI semantic conventions for model calls). Trace and span ids are derived from the
 * build id and the stable keys the log names (call, attempt, job ids), not from positions or
 * hashes, so an export is byte-identical each time and the spans of a resumed build carry the ids
 * of an uninterrupted one.
 */
import { createHash } from 'node:crypto';
import type { StoredEvent } from '../events/envelope.js';

export interface OtlpAttribute {
  readonly key: string;
  readonly value: { readonly stringValue: string } | { readonly intValue: string } | { readonly doubleValue: number } | { readonly boolValue: boolean };
}

export interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  /** SPAN_KIND_INTERNAL (1) or SPAN_KIND_CLIENT (3, a call out to an agent). */
  readonly kind: 1 | 3;
  readonly startTimeUnixNano: string;
  readonly endTimeUnixNano: string;
  readonly attributes: readonly OtlpAttribute[];
  /** STATUS_CODE_UNSET (0), OK (1) or ERROR (2). */
  readonly status: { readonly code: 0 | 1 | 2; readonly message?: string };
}

export interface OtlpTraces {
  readonly resourceSpans: readonly {
    readonly resource: { readonly attributes: readonly OtlpAttribute[] };
    readonly scopeSpans: readonly { readonly scope: { readonly name: string; readonly version: string }; readonly spans: readonly OtlpSpan[] }[];
  }[];
}

const hex = (text: string, bytes: number): string => createHash('sha256').update(text).digest('hex').slice(0, bytes * 2);

/** The build's trace id: 16 bytes of SHA-256 over its id. */
export const traceIdOf = (buildId: string): string => hex(`longbuild-trace\n${buildId}`, 16);

/** A span's id: 8 bytes of SHA-256 over the build id, the span's kind and its key in the log. */
export const spanIdOf = (buildId: string, kind: string, key: string): string => hex(`longbuild-span\n${buildId}\n${kind}\n${key}`, 8);

/** A W3C traceparent naming a span of the build (what a planner or worker call is given as TRACEPARENT). */
export const traceparentOf = (buildId: string, kind: string, key: string): string => `00-${traceIdOf(buildId)}-${spanIdOf(buildId, kind, key)}-01`;

const nanos = (iso: string): string => {
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? (BigInt(ms) * 1_000_000n).toString() : '0';
};

const str = (key: string, v: string): OtlpAttribute => ({ key, value: { stringValue: v } });
const int = (key: string, v: number): OtlpAttribute => ({ key, value: { intValue: String(Math.trunc(v)) } });
const dbl = (key: string, v: number): OtlpAttribute => ({ key, value: { doubleValue: v } });
const bool = (key: string, v: boolean): OtlpAttribute => ({ key, value: { boolValue: v } });

interface Usage { model?: string; inputTokens: number; outputTokens: number; cachedTokens?: number; costUsd?: number }

/** GenAI semantic conventions for a model call's usage (and longbuild's cost). */
function usageAttributes(u: Usage | undefined): OtlpAttribute[] {
  if (u === undefined) return [];
  return [
    ...(u.model !== undefined ? [str('gen_ai.request.model', u.model), str('gen_ai.response.model', u.model)] : []),
    int('gen_ai.usage.input_tokens', u.inputTokens),
    int('gen_ai.usage.output_tokens', u.outputTokens),
    ...(u.cachedTokens !== undefined ? [int('gen_ai.usage.cache_read.input_tokens', u.cachedTokens)] : []),
    ...(u.costUsd !== undefined ? [dbl('longbuild.cost.usd', u.costUsd)] : []),
  ];
}

interface Open {
  readonly kind: string;
  readonly key: string;
  readonly name: string;
  readonly spanKind: 1 | 3;
  readonly parent: string | undefined;
  readonly start: string;
  attributes: OtlpAttribute[];
}

/**
 * The build in `events` (the whole log, in order) as OTLP/JSON traces. Spans still open at the
 * log's end (a run in progress or interrupted) end at the last event, marked `longbuild.open`.
 */
export function traceOfLog(events: readonly StoredEvent[], version: string): OtlpTraces {
  const first = events[0];
  if (first === undefined || first.type !== 'BuildInitialized') return { resourceSpans: [] };
  const buildId = (first.data as { buildId: string }).buildId;
  const traceId = traceIdOf(buildId);
  const spans: OtlpSpan[] = [];
  const open = new Map<string, Open>();
  const milestoneOf = new Map<string, string>();
  const lastAt = events.at(-1)!.metadata.recordedAt;
  const id = (kind: string, key: string): string => spanIdOf(buildId, kind, key);
  const rootId = id('build', buildId);
  const closedMilestones = new Set<string>();
  let outcome: 'completed' | 'blocked' | null = null;
  let blockedReason = '';
  const milestoneSpan = (m: string, at: string): string => {
    const k = `milestone:${m}`;
    if (!open.has(k) && !closedMilestones.has(m)) {
      open.set(k, { kind: 'milestone', key: m, name: `milestone ${m}`, spanKind: 1, parent: rootId, start: at, attributes: [str('longbuild.milestone.id', m)] });
    }
    return id('milestone', m);
  };
  const begin = (o: Open): void => void open.set(`${o.kind}:${o.key}`, o);
  const end = (kind: string, key: string, at: string, extra: OtlpAttribute[] = [], status: OtlpSpan['status'] = { code: 0 }): void => {
    const o = open.get(`${kind}:${key}`);
    if (o === undefined) return;
    open.delete(`${kind}:${key}`);
    spans.push({
      traceId, spanId: id(o.kind, o.key), ...(o.parent !== undefined ? { parentSpanId: o.parent } : {}), name: o.name, kind: o.spanKind,
      startTimeUnixNano: nanos(o.start), endTimeUnixNano: nanos(at), attributes: [...o.attributes, ...extra], status,
    });
  };
  begin({ kind: 'build', key: buildId, name: 'longbuild build', spanKind: 1, parent: undefined, start: first.metadata.recordedAt, attributes: [str('longbuild.build.id', buildId)] });
  for (const e of events) {
    const at = e.metadata.recordedAt;
    const d = e.data as Record<string, any>;
    switch (e.type) {
      case 'HorizonSealed':
      case 'HorizonRenewed':
        for (const n of d.nodes as { id: string; milestone: string }[]) milestoneOf.set(n.id, n.milestone);
        break;
      case 'PlannerInvoked':
        begin({ kind: 'planner', key: d.callId, name: `planner ${d.purpose}`, spanKind: 3, parent: rootId, start: at, attributes: [str('gen_ai.operation.name', 'invoke_agent'), str('longbuild.call.id', d.callId), str('longbuild.planner.purpose', d.purpose)] });
        break;
      case 'PlannerReturned':
        end('planner', d.callId, at, [...usageAttributes(d.usage), ...(d.reused !== undefined ? [bool('longbuild.reused', true)] : [])], { code: 1 });
        break;
      case 'AttemptStarted': {
        const m = milestoneOf.get(d.nodeId);
        const parent = m !== undefined ? milestoneSpan(m, at) : rootId;
        begin({ kind: 'attempt', key: d.attemptId, name: `attempt ${d.attemptId}`, spanKind: 3, parent, start: at, attributes: [str('gen_ai.operation.name', 'invoke_agent'), str('longbuild.node.id', d.nodeId), int('longbuild.attempt', d.attempt), str('longbuild.attempt.id', d.attemptId)] });
        break;
      }
      case 'AttemptFinished':
        end('attempt', d.attemptId, at, [str('longbuild.attempt.outcome', d.outcome), ...(d.commit !== undefined ? [str('vcs.ref.head.revision', d.commit)] : []), ...usageAttributes(d.usage)],
          d.outcome === 'failed' ? { code: 2, message: String(d.reason ?? 'failed').slice(0, 500) } : { code: 1 });
        break;
      case 'IntegrationStarted':
        begin({ kind: 'job', key: d.jobId, name: `integrate ${d.jobId}`, spanKind: 1, parent: rootId, start: at, attributes: [str('longbuild.job.id', d.jobId), str('longbuild.job.nodes', (d.nodeIds as string[]).join(',')), str('longbuild.job.base', d.baseHead)] });
        break;
      case 'VerificationFinished': {
        // Each verification command ran for its recorded duration, one after another, ending here.
        const evidence = d.evidence as { argv: string[]; exitCode: number | null; durationMs: number; cacheHit: boolean }[];
        let t = Date.parse(at) - evidence.reduce((n, c) => n + c.durationMs, 0);
        evidence.forEach((c, i) => {
          const start = new Date(t).toISOString();
          t += c.durationMs;
          spans.push({
            traceId, spanId: id('command', `${d.jobId}:${i}`), parentSpanId: id('job', d.jobId), name: `verify ${c.argv[0]}`, kind: 1,
            startTimeUnixNano: nanos(start), endTimeUnixNano: nanos(new Date(t).toISOString()),
            attributes: [str('process.command_line', c.argv.join(' ')), ...(c.exitCode !== null ? [int('process.exit.code', c.exitCode)] : []), bool('longbuild.cache_hit', c.cacheHit)],
            status: c.exitCode === 0 ? { code: 1 } : { code: 2, message: `exit ${c.exitCode ?? 'none'}` },
          });
        });
        break;
      }
      case 'IntegrationPromoted':
        end('job', d.jobId, at, [str('longbuild.job.outcome', 'promoted'), str('vcs.ref.head.revision', d.receipt.resultCommit)], { code: 1 });
        break;
      case 'IntegrationFailed':
        end('job', d.jobId, at, [str('longbuild.job.outcome', 'failed')], { code: 2, message: String(d.reason).slice(0, 500) });
        break;
      case 'IntegrationDiscarded':
        end('job', d.jobId, at, [str('longbuild.job.outcome', 'discarded')], { code: 0, message: String(d.reason).slice(0, 500) });
        break;
      case 'CheckpointWritten':
        closedMilestones.add(d.checkpoint.milestoneId);
        end('milestone', d.checkpoint.milestoneId, at, [str('vcs.ref.head.revision', d.checkpoint.integrationHead)], { code: 1 });
        break;
      case 'BuildCompleted':
        outcome = 'completed';
        for (const o of [...open.values()].filter((x) => x.kind === 'milestone')) end('milestone', o.key, at, [], { code: 1 });
        end('build', buildId, at, [str('longbuild.build.outcome', 'completed')], { code: 1 });
        break;
      case 'BuildBlocked':
        // A blocked build may be retried and go on: the build's span ends with the log.
        outcome = 'blocked';
        blockedReason = String(d.reason).slice(0, 500);
        break;
      default:
        if (outcome === 'blocked' && (e.type === 'NodeRetried' || e.type === 'PlanningReopened' || e.type === 'NodeCanceled' || e.type === 'BudgetChanged')) outcome = null;
    }
  }
  if (outcome === 'blocked') end('build', buildId, lastAt, [str('longbuild.build.outcome', 'blocked')], { code: 2, message: blockedReason });
  for (const o of [...open.values()]) end(o.kind, o.key, lastAt, [bool('longbuild.open', true)]);
  spans.sort((a, b) => (a.startTimeUnixNano === b.startTimeUnixNano ? (a.spanId < b.spanId ? -1 : 1) : BigInt(a.startTimeUnixNano) < BigInt(b.startTimeUnixNano) ? -1 : 1));
  return {
    resourceSpans: [{
      resource: { attributes: [str('service.name', 'longbuild'), str('service.version', version), str('longbuild.build.id', buildId)] },
      scopeSpans: [{ scope: { name: 'longbuild', version }, spans }],
    }],
  };
}
