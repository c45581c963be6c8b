import { ValidationError } from './errors.js';

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };

/**
 * Canonical JSON (R-2): object keys sorted by code point, no insignificant white space,
 * no `undefined`, no non-finite numbers. Throws ValidationError naming the path otherwise.
 * A `KeyOrderMemo` shared by the values of one batch saves sorting the same key set again.
 */
export function canonicalJson(value: unknown, memo?: KeyOrderMemo): string {
  try {
    return fast(value, memo);
  } catch (err) {
    if (err !== NOT_CANONICAL) throw err;
    return write(value, '$'); // the slow walk finds the path for the message
  }
}

const NOT_CANONICAL = Symbol('not canonical');

/** A string that JSON.stringify would escape: quote, backslash, control or surrogate units. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** JSON.stringify of a string, without the call for the common string that needs no escape. */
export function jsonString(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}

/** One object shape's keys in code-point order, each with its `{"key":` or `,"key":` prefix. */
interface KeyOrder {
  readonly keys: readonly string[];
  readonly sorted: readonly string[];
  readonly prefixes: readonly string[];
}

/**
 * Sorted key orders by key set, for one batch of values (create one per append; never shared
 * between unrelated callers). Events of one type share their shapes, so after the first event
 * an object costs one lookup instead of a sort. Bounded: objects with many keys (maps keyed by
 * id) are not memoised, and the memo starts over when it holds too many shapes.
 */
export class KeyOrderMemo {
  private readonly byId = new Map<string, KeyOrder>();

  order(keys: string[]): KeyOrder {
    // The joined id may collide (keys can hold NUL), so the cached key list is compared too.
    const id = keys.length === 1 ? keys[0]! : keys.join('\u0000');
    const hit = this.byId.get(id);
    if (hit !== undefined && sameKeys(hit.keys, keys)) return hit;
    const order = keyOrder(keys);
    if (keys.length <= MEMO_MAX_KEYS) {
      if (this.byId.size >= MEMO_MAX_SHAPES) this.byId.clear();
      this.byId.set(id, order);
    }
    return order;
  }
}

const MEMO_MAX_KEYS = 32;
const MEMO_MAX_SHAPES = 1024;

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function keyOrder(keys: string[]): KeyOrder {
  const sorted = keys.slice();
  if (sorted.length > 1) sortKeys(sorted);
  return { keys, sorted, prefixes: sorted.map((k, i) => `${i === 0 ? '{' : ','}${jsonString(k)}:`) };
}

/** The hot path: no path bookkeeping; any problem throws NOT_CANONICAL. */
function fast(value: unknown, memo: KeyOrderMemo | undefined): string {
  switch (typeof value) {
    case 'string':
      return jsonString(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw NOT_CANONICAL;
      return String(value); // -0 prints as 0, as in JSON.stringify
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        if (value.length === 0) return '[]';
        let out = '[';
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          if (item === undefined) throw NOT_CANONICAL;
          out += i === 0 ? fast(item, memo) : `,${fast(item, memo)}`;
        }
        return `${out}]`;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) throw NOT_CANONICAL;
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj);
      if (keys.length === 0) return '{}';
      const { sorted, prefixes } = memo === undefined ? keyOrder(keys) : memo.order(keys);
      let out = '';
      for (let i = 0; i < sorted.length; i++) {
        const v = obj[sorted[i]!];
        if (v === undefined) throw NOT_CANONICAL;
        out += prefixes[i]! + fast(v, memo);
      }
      return `${out}}`;
    }
    default:
      throw NOT_CANONICAL;
  }
}

const ABOVE_SURROGATES = /[\ud800-\uffff]/;

/**
 * Sort keys by code point. The engine's default sort compares UTF-16 code units, which agrees
 * with code-point order unless a key holds a unit at or above U+D800; only then re-sort.
 */
function sortKeys(keys: string[]): void {
  keys.sort();
  for (let i = 0; i < keys.length; i++) {
    if (ABOVE_SURROGATES.test(keys[i]!)) {
      keys.sort(compareCodePoints);
      return;
    }
  }
}

/** The slow walk with paths, used only to name the problem in the error. */
function write(value: unknown, path: string): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new ValidationError(`non-canonical number ${String(value)} at ${path}: only finite numbers are allowed`, 'R-2');
      return Object.is(value, -0) ? '0' : JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) {
        const parts: string[] = [];
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          if (item === undefined) throw new ValidationError(`undefined at ${path}[${i}]`, 'R-2');
          parts.push(write(item, `${path}[${i}]`));
        }
        return `[${parts.join(',')}]`;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        throw new ValidationError(`non-plain object at ${path}`, 'R-2');
      }
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj).sort(compareCodePoints);
      const parts: string[] = [];
      for (const key of keys) {
        const v = obj[key];
        if (v === undefined) throw new ValidationError(`undefined at ${path}.${key}`, 'R-2');
        parts.push(`${JSON.stringify(key)}:${write(v, `${path}.${key}`)}`);
      }
      return `{${parts.join(',')}}`;
    }
    default:
      throw new ValidationError(`value of type ${typeof value} at ${path} is not JSON`, 'R-2');
  }
}

/**
 * Code-point order (not UTF-16 code-unit order, which differs above U+FFFF). Compares code
 * units and fixes up only where a surrogate meets a unit in U+E000..U+FFFF.
 */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return fixup(x) - fixup(y);
  }
  return a.length - b.length;
}

/** Surrogates (D800–DFFF) sort above E000–FFFF in code-point order. */
function fixup(u: number): number {
  if (u < 0xd800) return u;
  return u <= 0xdfff ? u + 0x2000 : u - 0x800;
}

/** Drop keys whose value is undefined (deeply), so optional fields can be canonicalised. */
export function stripUndefined<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => stripUndefined(v)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (v !== undefined) out[k] = stripUndefined(v);
    }
    return out as T;
  }
  return value;
}
