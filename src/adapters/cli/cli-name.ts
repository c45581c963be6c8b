import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** `longbuild` when it is on PATH (npm link, a global install), else the node command that ran us. */
export function cliName(): string {
  // Through npx (npm exec) the bin is on PATH only for npx's own child: what the user types is npx's.
  if (process.env.npm_command === 'exec') return 'npx longbuild';
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, 'longbuild'))) return 'longbuild';
  }
  const script = process.argv[1];
  return script ? `node ${script}` : 'longbuild';
}
