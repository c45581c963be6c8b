// What the CLI benches share: the CLIs they time (this checkout's, and LONGBUILD_BASELINE's when
// set, interleaved) and the median they print.
import { join } from 'node:path';

/** [name, bin/longbuild.js] of this checkout and, with LONGBUILD_BASELINE=DIR, of that built checkout. */
export function cliBins() {
  const bins = [['longbuild', join(import.meta.dirname, '..', '..', 'bin', 'longbuild.js')]];
  if (process.env.LONGBUILD_BASELINE) bins.push(['baseline', join(process.env.LONGBUILD_BASELINE, 'bin', 'longbuild.js')]);
  return bins;
}

/** The median of a list of numbers (the upper one of an even list). */
export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
