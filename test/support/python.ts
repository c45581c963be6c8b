/** Whether Debian's python3 (with `module` importable) can serve as an independent oracle here. */
import { execFileSync } from 'node:child_process';

export function hasPython(module = 'os'): boolean {
  try {
    execFileSync('python3', ['-c', `import ${module}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
