import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Hex } from '../events/hash.js';
import { writeAtomically } from './atomic-write.js';
import type { EvidenceStore } from './controller/effect-ports.js';

/**
 * Evidence bytes (worker and verification stdout/stderr), content-addressed under
 * `<dir>/evidence/<sha256>`. Written via a temp file and rename, so a crash leaves either the
 * whole file or none; a file whose bytes do not hash to its name is treated as absent.
 */
export class FileEvidenceStore implements EvidenceStore {
  constructor(private readonly dir: string) {}

  put(bytes: Uint8Array): string {
    const sha = sha256Hex(bytes);
    const path = join(this.dir, sha);
    if (existsSync(path)) return sha;
    // Private to the build's owner: evidence is what untrusted processes printed.
    writeAtomically(path, bytes, { mode: 0o600 });
    return sha;
  }

  /** The bytes stored under `sha`, or null when missing or corrupt. */
  get(sha: string): Buffer | null {
    const path = join(this.dir, sha);
    if (!/^[0-9a-f]{64}$/.test(sha) || !existsSync(path)) return null;
    const bytes = readFileSync(path);
    return sha256Hex(bytes) === sha ? bytes : null;
  }
}
