/** Whether bubblewrap can run here (installed, and able to create its namespaces): the sandbox tests skip, saying why, where it cannot. */
import { execFileSync } from 'node:child_process';
import { findBwrap } from '../../src/adapters/sandbox/sandbox.js';

export const HAVE_BWRAP = findBwrap() !== null && (() => {
  try {
    execFileSync('bwrap', ['--unshare-user', '--unshare-pid', '--ro-bind', '/', '/', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
