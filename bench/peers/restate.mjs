// Restate: its server (from @restatedev/restate-server) and a TS SDK 1.12 service whose handler
// makes N journaled ctx.run steps. The runner starts the server; this process is the service
// endpoint and the client. node restate.mjs DIR N   (RESTATE_INGRESS, RESTATE_ADMIN: the server's URLs)
import * as restate from '@restatedev/restate-sdk';
import { ownCpuMs, report, stepResult } from './lib.mjs';

const n = Number(process.argv[3] ?? 1000);
const ingress = process.env.RESTATE_INGRESS ?? 'http://127.0.0.1:8080';
const admin = process.env.RESTATE_ADMIN ?? 'http://127.0.0.1:9070';
const port = Number(process.env.RESTATE_SERVICE_PORT ?? 9080);
const service = restate.service({
  name: 'bench',
  handlers: {
    build: async (ctx, count) => {
      let done = 0;
      for (let i = 0; i < count; i++) {
        await ctx.run(`step-${i}`, () => stepResult(i));
        done++;
      }
      return done;
    },
  },
});
const server = await restate.endpoint().bind(service).listen(port);
const reg = await fetch(`${admin}/deployments`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ uri: `http://127.0.0.1:${port}`, force: true }) });
if (!reg.ok) throw new Error(`registering the service: ${reg.status} ${await reg.text()}`);
await new Promise((r) => setTimeout(r, 500)); // the deployment reaches the partition processors
const cpu0 = ownCpuMs();
const t0 = performance.now();
const res = await fetch(`${ingress}/bench/build`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': `run-${process.pid}` }, body: JSON.stringify(n) });
const done = await res.json();
const ms = performance.now() - t0;
const cpuMs = ownCpuMs() - cpu0;
if (done !== n) throw new Error(`restate ran ${JSON.stringify(done)} steps`);
report({ ms, cpuMs });
process.exit(0);
void server;
