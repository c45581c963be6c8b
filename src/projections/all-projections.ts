import type { Projection } from './projection.js';
import { buildProjection } from './build-projection.js';

/**
 * Every projection the build maintains, in one list: the CLI (`verify`, `rebuild`, `show`, ...)
 * and the controller open a ProjectionStore over exactly these. Domain projections (graph,
 * horizon, checkpoints, attempts, integration, cache index) are added here, one line each.
 * Names and table names must be unique. Changing a projection's table layout makes the engine
 * rebuild that projection's tables on next open; changing only `evolve` needs `longbuild rebuild`.
 */
export function allProjections(): Projection<any>[] {
  return [buildProjection];
}
