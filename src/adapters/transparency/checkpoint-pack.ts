/**
 * A build's signed checkpoints on disk (R-35, decision 0052): one file per tree size
 * (`checkpoints/N.checkpoint`) as they are signed, and, once a milestone closes with at least
 * PACK_AFTER of them, every one but the newest moved into one append-only file
 * (`checkpoints/packed.jsonl`, a line `{"size":N,"note":"…"}` each, the note byte for byte as
 * signed): a build that signs after every promotion kept tens of thousands of small files. Each
 * packed note verifies exactly as its file did; readers list both (`checkpointFiles`).
 *
 * Crash safety: the lines are appended and flushed before the files they copy are removed, so
 * every note is in one place or both (a file and a line of the same size: the file is read); a
 * line cut short by a crash (no newline) is not read, and is cut off before the next append.
 */
import { closeSync, existsSync, fsyncSync, ftruncateSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { BuildPaths } from '../build-dir.js';
import { fsyncDirectory } from '../atomic-write.js';
import { guarded } from '../../projections/storage-guard.js';

/** The pack's name in the checkpoints directory. */
export const CHECKPOINT_PACK = 'packed.jsonl';
/** A milestone's close packs the loose checkpoint files once there are this many besides the newest. */
export const PACK_AFTER = 32;

/** One signed checkpoint as stored: its tree size, where it is (for messages) and its note. */
export interface CheckpointEntry {
  readonly size: number;
  /** `checkpoints/N.checkpoint`, or `checkpoints/packed.jsonl (size N)` for a packed one. */
  readonly file: string;
  /** True for a note in the pack. */
  readonly packed: boolean;
  /** The note's text, read now (a loose file) or as read with the pack. */
  note(): string;
}

const LOOSE = /^([0-9]+)\.checkpoint$/;

/** The loose checkpoint files, by size. */
function looseFiles(dir: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const f of readdirSync(dir)) {
    const m = LOOSE.exec(f);
    if (m !== null) out.set(Number(m[1]), join(dir, f));
  }
  return out;
}

/** The whole lines of the pack (a last line without its newline, cut short by a crash, left out), with the length they take. */
function packLines(file: string): { lines: { size: number; note: string }[]; whole: number } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return { lines: [], whole: 0 };
    throw err;
  }
  const whole = text.lastIndexOf('\n') + 1;
  const lines: { size: number; note: string }[] = [];
  for (const line of text.slice(0, whole).split('\n')) {
    if (line === '') continue;
    let parsed: { size?: unknown; note?: unknown };
    try {
      parsed = JSON.parse(line) as { size?: unknown; note?: unknown };
    } catch {
      parsed = {};
    }
    // A line that is not a checkpoint is listed as size -1 with its text: verifying it names the damage.
    lines.push(Number.isSafeInteger(parsed.size) && typeof parsed.note === 'string' ? { size: parsed.size as number, note: parsed.note } : { size: -1, note: line });
  }
  return { lines, whole: Buffer.byteLength(text.slice(0, whole)) };
}

/** Every signed checkpoint of a build, smallest tree size first (a size both loose and packed: the file). */
export function checkpointFiles(paths: BuildPaths): CheckpointEntry[] {
  const dir = paths.checkpoints;
  if (!existsSync(dir)) return [];
  const loose = looseFiles(dir);
  const out: CheckpointEntry[] = [...loose].map(([size, file]) => ({ size, file, packed: false, note: () => readFileSync(file, 'utf8') }));
  const pack = join(dir, CHECKPOINT_PACK);
  for (const { size, note } of packLines(pack).lines) {
    if (loose.has(size)) continue;
    out.push({ size, file: `${pack} (size ${size})`, packed: true, note: () => note });
  }
  return out.sort((a, b) => a.size - b.size);
}

/**
 * Move every loose checkpoint file but the newest into the pack, when there are at least `after`
 * of them: the lines appended and flushed, then the files removed. Returns how many were packed.
 */
export function packCheckpoints(paths: BuildPaths, after = PACK_AFTER): number {
  const dir = paths.checkpoints;
  if (!existsSync(dir)) return 0;
  const loose = [...looseFiles(dir)].sort((a, b) => a[0] - b[0]);
  const moving = loose.slice(0, -1);
  if (moving.length === 0 || moving.length < after) return 0;
  const pack = join(dir, CHECKPOINT_PACK);
  return guarded(pack, () => {
    const { lines, whole } = packLines(pack);
    const packed = new Map(lines.map((l) => [l.size, l.note]));
    const text = moving.filter(([size]) => !packed.has(size)).map(([size, file]) => `${JSON.stringify({ size, note: readFileSync(file, 'utf8') })}\n`).join('');
    const fd = openSync(pack, 'a+', 0o600);
    try {
      ftruncateSync(fd, whole); // a line a crash cut short goes; its file is still there
      if (text !== '') writeSync(fd, text, whole);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    fsyncDirectory(dir);
    for (const [size, file] of moving) {
      // A file whose size the pack already held with other bytes stays: the file is what is read.
      if (packed.has(size) && packed.get(size) !== readFileSync(file, 'utf8')) continue;
      rmSync(file, { force: true });
    }
    return moving.length;
  });
}
