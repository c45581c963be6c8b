/**
 * Where the symbolic links of a tree lead (R-31), resolved the way a filesystem would: component
 * by component, each link met on the way replaced by its target, so a chain (`d/up -> ..`,
 * `gp -> d/up/../..`) is judged by where it ends, not by its own text. Pure: the tree's links are
 * given as a map from path to target.
 */

/** At most this many links are followed for one path (Linux's MAXSYMLINKS is 40). */
export const MAX_LINK_HOPS = 40;

/** Why the link at `linkPath` leads outside the tree (or loops), or null when it stays inside. */
export function linkEscape(links: ReadonlyMap<string, string>, linkPath: string): string | null {
  const target = links.get(linkPath);
  if (target === undefined) return null;
  if (target.startsWith('/')) return `its target ${JSON.stringify(target)} is absolute`;
  const dir = linkPath.split('/').slice(0, -1);
  let todo = [...dir, ...target.split('/')];
  const at: string[] = [];
  let hops = 0;
  while (todo.length > 0) {
    const c = todo.shift()!;
    if (c === '' || c === '.') continue;
    if (c === '..') {
      if (at.length === 0) return `it leads above the tree${hops > 0 ? ` through ${hops} more link${hops > 1 ? 's' : ''}` : ''} (${JSON.stringify(target)})`;
      at.pop();
      continue;
    }
    at.push(c);
    const next = links.get(at.join('/'));
    if (next === undefined) continue;
    if (++hops > MAX_LINK_HOPS) return `it loops, or chains more than ${MAX_LINK_HOPS} links (${JSON.stringify(target)})`;
    if (next.startsWith('/')) return `it leads through '${at.join('/')}' to the absolute path ${JSON.stringify(next)}`;
    at.pop();
    todo = [...next.split('/'), ...todo];
  }
  return null;
}
