import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseTrustedCommand, runProcess } from '../src/adapters/process/run-process.js';
import { ValidationError } from '../src/events/errors.js';

const PATH = process.env['PATH'] ?? '/usr/bin:/bin';
const cwd = mkdtempSync(join(tmpdir(), 'lb-proc-'));

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

describe('runProcess (R-26)', () => {
  it('R-26 captures stdout and stderr as exact bytes and the exit code', async () => {
    const script = "process.stdout.write(Buffer.from([0,1,2,255,10,13])); process.stderr.write('e\\r\\n'); process.exit(7)";
    const r = await runProcess({ argv: [process.execPath, '-e', script], cwd, env: { PATH }, timeoutMs: 10_000 });
    expect(r.exitCode).toBe(7);
    expect(r.signal).toBeNull();
    expect([...r.stdout]).toEqual([0, 1, 2, 255, 10, 13]);
    expect(r.stderr.toString('latin1')).toBe('e\r\n');
    expect(r.timedOut).toBe(false);
    expect(r.leftover).toBe(false);
  });

  it('R-26 passes stdin bytes and runs in cwd', async () => {
    const r = await runProcess({ argv: ['sh', '-c', 'pwd; cat'], cwd, env: { PATH }, input: 'in-bytes', timeoutMs: 10_000 });
    expect(r.stdout.toString()).toBe(`${cwd}\nin-bytes`);
    expect(r.exitCode).toBe(0);
  });

  it('R-26 the environment is exactly what is passed (nothing inherited)', async () => {
    process.env['LB_SHOULD_NOT_LEAK'] = 'x';
    const r = await runProcess({ argv: ['/usr/bin/env'], cwd, env: { FOO: 'bar', EMPTY: '' }, timeoutMs: 10_000 });
    delete process.env['LB_SHOULD_NOT_LEAK'];
    expect(r.stdout.toString().split('\n').filter(Boolean).sort()).toEqual(['EMPTY=', 'FOO=bar']);
  });

  it('R-26 a timeout SIGKILLs the whole process group', async () => {
    const t0 = Date.now();
    const r = await runProcess({
      argv: ['sh', '-c', 'sleep 30 & echo $!; sleep 30'],
      cwd,
      env: { PATH },
      timeoutMs: 300,
    });
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBeNull();
    expect(r.signal).toBe('SIGKILL');
    expect(Date.now() - t0).toBeLessThan(5_000);
    const bgPid = Number(r.stdout.toString().trim());
    expect(bgPid).toBeGreaterThan(0);
    expect(alive(bgPid)).toBe(false);
  });

  it('R-26 a process left behind is reported as leftover and killed', async () => {
    const t0 = Date.now();
    const r = await runProcess({ argv: ['sh', '-c', 'sleep 30 & echo $!; exit 0'], cwd, env: { PATH }, timeoutMs: 20_000 });
    expect(r.exitCode).toBe(0);
    expect(r.leftover).toBe(true);
    expect(r.timedOut).toBe(false);
    const bgPid = Number(r.stdout.toString().trim());
    expect(alive(bgPid)).toBe(false);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it('R-26 a command that waits for its children has no leftover', async () => {
    const r = await runProcess({ argv: ['sh', '-c', 'sleep 0.1 & wait; echo done'], cwd, env: { PATH }, timeoutMs: 10_000 });
    expect(r.leftover).toBe(false);
    expect(r.stdout.toString()).toBe('done\n');
  });

  it('R-26 never uses a shell: metacharacters are plain argv bytes', async () => {
    const r = await runProcess({ argv: ['echo', '$HOME; rm -rf / | `x`'], cwd, env: { PATH }, timeoutMs: 10_000 });
    expect(r.stdout.toString()).toBe('$HOME; rm -rf / | `x`\n');
  });

  it('R-26 a missing executable is a failed result, not a crash', async () => {
    const r = await runProcess({ argv: ['longbuild-no-such-exe'], cwd, env: { PATH }, timeoutMs: 10_000 });
    expect(r.exitCode).toBeNull();
    expect(r.spawnError).toMatch(/ENOENT|not found/i);
  });

  it('R-26 refuses an empty argv or non-string parts', async () => {
    await expect(runProcess({ argv: [], cwd, env: {}, timeoutMs: 1000 })).rejects.toThrow(ValidationError);
    await expect(runProcess({ argv: [1 as unknown as string], cwd, env: {}, timeoutMs: 1000 })).rejects.toThrow(/argv\[0\] must be a string/);
    await expect(runProcess({ argv: [''], cwd, env: {}, timeoutMs: 1000 })).rejects.toThrow(/must not be empty/);
  });
});

describe('parseTrustedCommand (R-26)', () => {
  it('R-26 accepts argv arrays with a bare or absolute executable', () => {
    expect(parseTrustedCommand(['node', '--test'])).toEqual(['node', '--test']);
    expect(parseTrustedCommand(['/usr/bin/env', 'a b'])).toEqual(['/usr/bin/env', 'a b']);
  });

  it.each([
    ['node --test', /must be an array/],
    [[], /must not be empty/],
    [['node', ''], /element 1 must not be empty/],
    [['node', 3], /element 1 must be a string/],
    [['no\0de'], /NUL/],
    [['node --test'], /bare name/],
    [['./run.sh'], /bare name/],
    [['bin/run'], /bare name/],
    [['/usr/../bin/sh'], /normalized absolute path/],
    [['..'], /bare name/],
  ])('R-26 refuses %j', (value, msg) => {
    expect(() => parseTrustedCommand(value)).toThrow(msg);
    expect(() => parseTrustedCommand(value)).toThrow(/R-26/);
  });
});
