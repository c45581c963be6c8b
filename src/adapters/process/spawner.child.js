// The spawner (spawner.ts): a small helper process that starts longbuild's own short-lived
// commands (git) for the controller. Forking a small process costs a fraction of forking the
// controller, and the controller's thread is not blocked while the kernel copies it.
//
// Protocol, one JSON object per line. Out first: { ready: true } once the helper listens. In:
// { id, argv, cwd, env, input?: base64, timeoutMs }. Out: { id, pid } once started, then
// { id, code, signal, stdout: base64, stderr: base64, timedOut, spawnError? }. Each command runs in a process group of its own (detached), with
// exactly the given environment; on a timeout the group is SIGKILLed. Signals for the
// controller's terminal (SIGINT, SIGTERM) are ignored here: the controller decides what to kill
// (it gets every pid). When the controller goes away (stdin ends), the helper exits.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

process.on('SIGINT', () => {});
process.on('SIGTERM', () => {});
const send = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

createInterface({ input: process.stdin }).on('line', (line) => {
  let r;
  try {
    r = JSON.parse(line);
  } catch {
    return;
  }
  const out = [];
  const err = [];
  let timedOut = false;
  let spawnError;
  let child;
  try {
    child = spawn(r.argv[0], r.argv.slice(1), { cwd: r.cwd, env: r.env, detached: true, stdio: [r.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  } catch (e) {
    send({ id: r.id, code: null, signal: null, stdout: '', stderr: '', timedOut: false, spawnError: String(e && e.message) });
    return;
  }
  if (child.pid !== undefined) send({ id: r.id, pid: child.pid });
  const kill = () => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  };
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, r.timeoutMs);
  child.stdout.on('data', (b) => out.push(b));
  child.stderr.on('data', (b) => err.push(b));
  child.on('error', (e) => {
    spawnError = e.message;
  });
  if (r.input !== undefined) {
    child.stdin.on('error', () => {});
    child.stdin.end(Buffer.from(r.input, 'base64'));
  }
  child.on('close', (code, signal) => {
    clearTimeout(timer);
    send({
      id: r.id, code, signal, stdout: Buffer.concat(out).toString('base64'), stderr: Buffer.concat(err).toString('base64'), timedOut,
      ...(spawnError === undefined ? {} : { spawnError }),
    });
  });
});
process.stdin.on('end', () => process.exit(0));
send({ ready: true });
