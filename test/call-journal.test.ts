// The call-mark journal against a model (decisions 0017, 0025): through reopens, forgetting and
// crashes that leave a line torn at the journal's end — as long as a kept outcome, or whole but for
// its newline — a fresh reader (a resumed controller) answers `started` and `kept` exactly as the
// lines written say, and the next writer leaves exactly those lines and its own.
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { FileCallMarks } from '../src/adapters/controller/call-marks.js';
import type { JsonValue } from '../src/events/canonical.js';

const dirs: string[] = [];
const scratch = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'lb-journal-'));
  dirs.push(d);
  return join(d, 'calls');
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const lineOf = (key: string, invocation: number, outcome?: JsonValue): string =>
  `${JSON.stringify(outcome === undefined ? { key, invocation } : { key, invocation, outcome })}\n`;

/** What a crash leaves when it cuts the write of `line` short after `keep` bytes: that prefix at the journal's end. */
function tear(dir: string, line: string, keep: number): void {
  mkdirSync(dir, { recursive: true });
  appendFileSync(join(dir, 'journal'), line.slice(0, keep));
}

describe('call-mark journal against a model', () => {
  it('a mark whole but for its newline (a crash cut its last byte) is not a mark: the call never started, and the next writer cuts it off', () => {
    const dir = scratch();
    const marks = new FileCallMarks(dir);
    marks.mark('worker:a.1', 1);
    marks.close();
    const torn = lineOf('worker:b.1', 1);
    tear(dir, torn, torn.length - 1);
    const reader = new FileCallMarks(dir);
    expect(reader.started('worker:a.1', 1)).toBe(true);
    expect(reader.started('worker:b.1', 1)).toBe(false);
    reader.close();
    const writer = new FileCallMarks(dir);
    writer.mark('worker:c.1', 1);
    writer.close();
    expect(readFileSync(join(dir, 'journal'), 'utf8')).toBe(lineOf('worker:a.1', 1) + lineOf('worker:c.1', 1));
  });

  type Op =
    | { readonly op: 'mark'; readonly key: number; readonly invocation: number }
    | { readonly op: 'keep'; readonly key: number; readonly invocation: number; readonly size: number; readonly flush: boolean }
    | { readonly op: 'reopen' }
    | { readonly op: 'forget' }
    | { readonly op: 'crash'; readonly key: number; readonly invocation: number; readonly outcome: boolean; readonly keep: number };
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    { arbitrary: fc.record({ op: fc.constant('mark' as const), key: fc.nat(5), invocation: fc.integer({ min: 1, max: 3 }) }), weight: 5 },
    // Outcomes up to 100 KiB: longer than the 64 KiB the writer reads back at a time to find the last whole line.
    { arbitrary: fc.record({ op: fc.constant('keep' as const), key: fc.nat(5), invocation: fc.integer({ min: 1, max: 3 }), size: fc.oneof(fc.nat(40), fc.integer({ min: 20_000, max: 100_000 })), flush: fc.boolean() }), weight: 3 },
    { arbitrary: fc.constant({ op: 'reopen' as const }), weight: 1 },
    { arbitrary: fc.constant({ op: 'forget' as const }), weight: 1 },
    // A crash while a mark or an outcome was being written: a prefix of it (-1: all of it but its newline).
    { arbitrary: fc.record({ op: fc.constant('crash' as const), key: fc.nat(5), invocation: fc.integer({ min: 1, max: 3 }), outcome: fc.boolean(), keep: fc.option(fc.nat(), { nil: -1, freq: 2 }) }), weight: 1 },
  );

  /** What a fresh reader of `dir` (a resumed controller, before it writes anything) answers must be what `model`'s lines say. */
  function readsAsModel(dir: string, model: readonly string[]): void {
    const reader = new FileCallMarks(dir);
    const seen = model.map((l) => JSON.parse(l) as { key: string; invocation: number; outcome?: JsonValue });
    for (let key = 0; key <= 5; key++) {
      for (let invocation = 1; invocation <= 3; invocation++) {
        const mine = seen.filter((l) => l.key === `k${key}` && l.invocation === invocation);
        expect(reader.started(`k${key}`, invocation)).toBe(mine.some((l) => l.outcome === undefined));
        expect(reader.kept(`k${key}`, invocation)).toEqual(mine.filter((l) => l.outcome !== undefined).at(-1)?.outcome ?? null);
      }
    }
    reader.close();
  }

  it('for all sequences of marks, kept outcomes, reopens, forgetting and crashes mid-line, a resumed reader answers as the model of the lines written', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 25 }), (ops) => {
        const dir = scratch();
        // The model: the lines written whole, in order (a torn line is never one of them).
        let model: string[] = [];
        let marks = new FileCallMarks(dir);
        for (const o of ops) {
          if (o.op === 'mark') {
            marks.mark(`k${o.key}`, o.invocation);
            model.push(lineOf(`k${o.key}`, o.invocation));
          } else if (o.op === 'keep') {
            const outcome = { outcome: 'recorded', stdout: 'x'.repeat(o.size) };
            marks.keep(`k${o.key}`, o.invocation, outcome, { flush: o.flush });
            model.push(lineOf(`k${o.key}`, o.invocation, outcome));
          } else if (o.op === 'reopen') {
            marks.close();
            marks = new FileCallMarks(dir);
          } else if (o.op === 'forget') {
            marks.forgetSettled();
            model = [];
          } else {
            // The writer is gone mid-line; a new one (a resumed controller) takes over.
            marks.close();
            const line = lineOf(`k${o.key}`, o.invocation, o.outcome ? { outcome: 'torn', stdout: 'y'.repeat(2000) } : undefined);
            tear(dir, line, o.keep < 0 ? line.length - 1 : o.keep % line.length);
            readsAsModel(dir, model);
            marks = new FileCallMarks(dir);
          }
        }
        marks.close();
        readsAsModel(dir, model);
        // The next writer leaves the journal as exactly the model's lines and its own (no torn bytes left).
        const writer = new FileCallMarks(dir);
        writer.mark('last', 1);
        writer.close();
        expect(readFileSync(join(dir, 'journal'), 'utf8')).toBe(model.join('') + lineOf('last', 1));
      }),
      { numRuns: 200 },
    );
  });
});
