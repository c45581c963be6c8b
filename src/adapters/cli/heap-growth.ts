import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets a long `run`'s heap grow past what it holds after a full collection, in percent
 * (decision 0052). V8 picks a factor of up to 4 (300 %) when collections are cheap, which a
 * controller's are (its live set is ~20–40 MB, most of what it allocates dies young): the heap
 * then settles at several times the live set, and a build's RSS grew with the time it ran, not
 * with what it kept (10,000 nodes: 301 MB; 50,000: 672 MB). At 50 % the same runs took the same
 * time and 215 and 424 MB.
 */
export const HEAP_GROWING_PERCENT = 50;

/** Keep this process's heap near what it holds (a long-running command; see HEAP_GROWING_PERCENT). */
export function boundHeapGrowth(): void {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
