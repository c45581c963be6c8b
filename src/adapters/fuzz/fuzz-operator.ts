/**
 * The fuzzer's operator: a build gated for approval stops at each gate with
 * outcome `awaiting_approval`; the operator approves (`longbuild approve --as fuzz`) and runs it
 * again, as a person would, until it ends otherwise. A fault aimed at the K-th occurrence of a
 * point strikes in whichever of these processes reaches it (a run, or an approve: a gate in doubt):
 * each process after the first is told how many occurrences are left, from the points file the
 * earlier ones wrote.
 */
import { longbuild, pointLines, type ChildOptions, type ChildResult } from './child.js';

/** At most this many approvals in one drive (a build that keeps asking is reported, not looped on). */
const MAX_APPROVALS = 64;

export const FUZZ_OPERATOR = 'fuzz';

export interface Drive {
  /** The last process's result: the one a fault struck, or the run that ended otherwise. */
  readonly result: ChildResult;
  readonly approvals: number;
}

/** `drive`'s last process. */
export const driven = async (repo: string, env: NodeJS.ProcessEnv, o: ChildOptions = {}): Promise<ChildResult> => (await drive(repo, env, o)).result;

/** Whether a `run --json` ended waiting for an operator. */
export function awaitsApproval(r: ChildResult): boolean {
  if (r.signal !== null || r.code !== 0) return false;
  try {
    return (JSON.parse(r.stdout) as { outcome?: string }).outcome === 'awaiting_approval';
  } catch {
    return false;
  }
}

/** `run`, and while it ends awaiting approval, `approve` and `run` again. */
export async function drive(repo: string, env: NodeJS.ProcessEnv, o: ChildOptions = {}): Promise<Drive> {
  let e = env;
  let approvals = 0;
  for (;;) {
    const points = pointsSoFar(env);
    const r = await longbuild(['run', '--json'], repo, e, o);
    if (!awaitsApproval(r) || approvals >= MAX_APPROVALS) return { result: r, approvals };
    e = occurrencesLeft(e, env, points);
    const before = pointsSoFar(env);
    const a = await longbuild(['approve', '--as', FUZZ_OPERATOR, '--reason', 'approved by longbuild fuzz'], repo, e, o);
    if (a.signal !== null || a.code !== 0) return { result: a, approvals };
    approvals += 1;
    e = occurrencesLeft(e, env, before);
  }
}

const pointsSoFar = (env: NodeJS.ProcessEnv): number => (env.LONGBUILD_POINTS_FILE === undefined ? 0 : pointLines(env.LONGBUILD_POINTS_FILE).length);

/** The fault variables of `env` with their occurrence lowered by the points the last process reached (after line `from`). */
function occurrencesLeft(e: NodeJS.ProcessEnv, base: NodeJS.ProcessEnv, from: number): NodeJS.ProcessEnv {
  const file = base.LONGBUILD_POINTS_FILE;
  if (file === undefined) return e;
  const reached = pointLines(file).slice(from).map((l) => l.split('\t')[0]!.trim());
  const seen = (point: string): number => reached.filter((p) => p === point).length;
  const out = { ...e };
  // POINT:K, KIND@POINT:K, POINT:K:MS — the occurrence is the number after the point; a fault
  // already met (a pause the process came through) is not met again.
  const shift = (name: string, re: RegExp): void => {
    const v = out[name];
    const m = v === undefined ? null : re.exec(v);
    if (m === null) return;
    const left = Number(m[3]) - seen(m[2]!);
    if (left < 1) delete out[name];
    else out[name] = `${m[1]}${left}${m[4]}`;
  };
  shift('LONGBUILD_CRASH_AT', /^((.+):)(\d+)()$/);
  shift('LONGBUILD_FAULT', /^([a-z]+@(.+):)(\d+)()$/);
  shift('LONGBUILD_PAUSE_AT', /^((.+):)(\d+)(:\d+)$/);
  return out;
}
