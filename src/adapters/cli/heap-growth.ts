import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets a long `run`'s heap grow past what it holds after a full collection, in percent
 * (decision 0052). V8 picks a factor of up to 4 (300 %) when collections are cheap, which a
 * controller's are (its live set is ~20–40 MB, most of what it allocates dies young): the heap
 * then settles at several times the live set, and a build's RSS grew with the time it ran, not
 * with what it kept (10,000 nodes: 301 MB; 50,000: 672 MB). At 50 % the same runs took the same
 * time and 215 and 424 MB. At 20 % (decision 0054, once the state let go of closed attempts):
 * 50,000 nodes 311 → 286 MB, 20,000 nodes 236 → 220 MB, 1,000 nodes unchanged, the same time.
 */
export const HEAP_GROWING_PERCENT = 20;

/**
 * How much V8 grows the young generation when much of it survives a scavenge: 1, never (decision
 * 0057). V8 lets each of its two semi-spaces grow from 1 to 16 MB, and a controller's step keeps
 * enough alive across a scavenge (the step's events, its state's new leaves) that they do: 32 MB
 * of young generation, and an old-generation limit raised by as much (V8 adds the young
 * generation's capacity to it). Held where it is when `run` starts (8 MB, once its modules have
 * loaded), a step's survivors are promoted and die in the old generation: peak RSS 50,000 nodes
 * 212 → 171 MB, 1,000 nodes 128 → 101 MB, ~1.7 % more time in scavenges. (Held at 2 MB, set
 * before the modules load: 6–17 MB less again, but ~4 % more time a node; not kept.)
 */
export const SEMI_SPACE_GROWTH_FACTOR = 1;

/** Keep this process's heap near what it holds (a long-running command; see the constants above). */
export function boundHeapGrowth(): void {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  setFlagsFromString(`--semi-space-growth-factor=${SEMI_SPACE_GROWTH_FACTOR}`);
}
