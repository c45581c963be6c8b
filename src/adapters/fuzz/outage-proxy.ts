import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a PostgreSQL server, for `fuzz --faults db-down`: the fuzzed
 * builds reach their log through it, and an outage is the proxy cutting every connection and
 * resetting new ones until it is brought back. To the controller that is a database gone away
 * (connections terminated, then refused at connect), without stopping a server others may share.
 */
export class OutageProxy {
  private readonly sockets = new Set<Socket>();
  private isDown = false;

  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(targetHost: string, targetPort: number): Promise<OutageProxy> {
    let proxy: OutageProxy | null = null;
    const server = createServer((client) => {
      if (proxy === null || proxy.isDown) {
        client.destroy();
        return;
      }
      const upstream = createConnection({ host: targetHost, port: targetPort });
      const pair = [client, upstream];
      for (const s of pair) {
        proxy.sockets.add(s);
        s.on('error', () => pair.forEach((x) => x.destroy()));
        s.on('close', () => {
          proxy?.sockets.delete(s);
          pair.forEach((x) => x.destroy());
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
    });
    proxy = new OutageProxy(server, port);
    return proxy;
  }

  /** Cut every connection; new ones are reset until `up()`. */
  down(): void {
    this.isDown = true;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  up(): void {
    this.isDown = false;
  }

  async close(): Promise<void> {
    this.down();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
