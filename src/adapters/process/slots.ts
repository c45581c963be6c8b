/**
 * A cap on the untrusted processes a controller runs at once (config `maxProcesses`):
 * workers, planners and verification commands take a slot for as long as their process runs;
 * a call that finds none free waits its turn (first come, first served). Git, longbuild's own
 * tool, takes none. Timing only: which call waits never changes what the log records.
 */
export class ProcessSlots {
  private free: number;
  private readonly queue: (() => void)[] = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Calls waiting for a slot now. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Run `work` holding a slot. */
  async with<T>(work: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free -= 1;
    else await new Promise<void>((resolve) => this.queue.push(resolve));
    try {
      return await work();
    } finally {
      const next = this.queue.shift();
      if (next !== undefined) next();
      else this.free += 1;
    }
  }
}
