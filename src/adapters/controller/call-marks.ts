import { closeSync, existsSync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Hex } from '../../events/hash.js';

/**
 * Durable marks of calls about to start. The controller marks a planner or worker call (by its
 * idempotency key) just before the process starts; after a crash, an open intent without a mark
 * is a call that never started: it is made for the first time, and no `EffectReinvoked` is
 * recorded for it. A mark is the only thing written: a file, fsynced, with its directory.
 */
export interface CallMarks {
  mark(key: string): void;
  started(key: string): boolean;
}

export class FileCallMarks implements CallMarks {
  constructor(private readonly dir: string) {}

  mark(key: string): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const fd = openSync(this.path(key), 'w', 0o600);
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    const dirFd = openSync(this.dir, 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  }

  started(key: string): boolean {
    return existsSync(this.path(key));
  }

  private path(key: string): string {
    return join(this.dir, sha256Hex(Buffer.from(key)));
  }
}
