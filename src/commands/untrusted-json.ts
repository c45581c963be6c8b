/**
 * JSON from an untrusted party: a planner's answer, an agent CLI's output line, a test
 * report. Parsed only after a linear scan has checked what `JSON.parse` lets through and what
 * would hurt later: nesting deeper than a fixed bound (every recursive reader after the parse —
 * canonical JSON, schema validation, `JSON.stringify` — would overflow the stack), and, where the
 * answer is a decision (a planner's proposal), a key named twice in one object (`JSON.parse`
 * silently keeps the last: a reviewer reading the first would see another plan than the host).
 */

/** The deepest nesting of arrays and objects the host reads from an untrusted party. */
export const MAX_JSON_DEPTH = 64;

export type UntrustedJson = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problem: string; readonly syntax: boolean };

export interface UntrustedJsonOptions {
  /** Refuse a key named twice in one object (a decision: the planner's proposal). */
  readonly duplicateKeys: 'refuse' | 'allow';
  readonly maxDepth?: number;
}

/**
 * Why `text` (assumed to be JSON; its syntax is `JSON.parse`'s to judge) nests too deep or names a
 * key twice, with the path to it; null when it does neither. Linear in the text, no recursion.
 */
export function jsonShapeProblem(text: string, o: UntrustedJsonOptions): string | null {
  const max = o.maxDepth ?? MAX_JSON_DEPTH;
  // One frame per open container: an object's keys so far (null for an array), and its path.
  const stack: { keys: Set<string> | null; path: string; index: number }[] = [];
  let expectKey = false;
  let lastKey = '';
  const pathHere = (): string => {
    const top = stack[stack.length - 1];
    if (top === undefined) return '$';
    return top.keys === null ? `${top.path}[${top.index}]` : `${top.path}.${lastKey}`;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let j = i + 1;
      while (j < text.length) {
        const d = text.charCodeAt(j);
        if (d === 0x5c) j += 2;
        else if (d === 0x22) break;
        else j++;
      }
      const top = stack[stack.length - 1];
      if (expectKey && top?.keys) {
        let key: string;
        try {
          key = JSON.parse(text.slice(i, j + 1)) as string;
        } catch {
          return null; // not JSON: JSON.parse says why
        }
        if (top.keys.has(key) && o.duplicateKeys === 'refuse') return `the key ${JSON.stringify(key.slice(0, 60))} is named twice in one object (at ${top.path})`;
        top.keys.add(key);
        lastKey = /^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key.slice(0, 60));
        expectKey = false;
      }
      i = j;
    } else if (c === 0x7b || c === 0x5b) {
      if (stack.length >= max) return `it nests deeper than ${max} levels (at ${pathHere()})`;
      stack.push({ keys: c === 0x7b ? new Set() : null, path: pathHere(), index: 0 });
      expectKey = c === 0x7b;
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
      expectKey = false;
    } else if (c === 0x2c) {
      const top = stack[stack.length - 1];
      if (top !== undefined) {
        top.index++;
        expectKey = top.keys !== null;
      }
    }
  }
  return null;
}

/** Parse JSON from an untrusted party: refused (with the reason) when its shape is, or when it is not JSON. */
export function parseUntrustedJson(text: string, o: UntrustedJsonOptions): UntrustedJson {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown; // iterative in V8: any depth parses; what comes after would not
  } catch (err) {
    return { ok: false, problem: `it is not JSON: ${(err as Error).message.slice(0, 160)}`, syntax: true };
  }
  const shape = jsonShapeProblem(text, o);
  return shape === null ? { ok: true, value } : { ok: false, problem: shape, syntax: false };
}
