/**
 * The formats agents speak (issue 49): `longbuild schema …` prints JSON Schemas generated from the
 * zod schemas the host uses, schemas/ keeps equal copies, and an independent validator (ajv, which
 * knows nothing of zod) accepts every planner input, proposal and work packet of a real command
 * build — with a refused ask (feedback), a renewal (horizon, checkpoints), a failed attempt
 * (previousFailure) and dependencies — and refuses what the host would refuse.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import Ajv2020 from 'ajv/dist/2020.js';
import { cliJson, ROOT, runCli, tempDir } from './support/cli.js';

const FILES = { proposal: 'proposal.schema.json', packet: 'work-packet.schema.json', 'planner-input': 'planner-input.schema.json', config: 'longbuild.config.schema.json' } as const;
const committed = (name: keyof typeof FILES) => JSON.parse(readFileSync(join(ROOT, 'schemas', FILES[name]), 'utf8'));

function validator(name: keyof typeof FILES) {
  const ajv = new Ajv2020.default({ allErrors: true, strict: false });
  return ajv.compile(committed(name));
}

const CAPTURE = `import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
const [role, ...argv] = process.argv.slice(2);
const input = readFileSync(0, 'utf8');
const dir = new URL('./captured/', import.meta.url).pathname;
mkdirSync(dir, { recursive: true });
const given = JSON.parse(input);
appendFileSync(dir + role + '-in.jsonl', JSON.stringify(given) + '\\n');
if (role === 'planner' && given.callId === 'plan.seal.0') { process.stdout.write('{"detailed":[],"coarse":[]}'); process.exit(0); }
if (role === 'worker' && given.nodeId === 'goodbye-module' && given.attempt === 1) { console.error('the first attempt fails on purpose'); process.exit(1); }
const r = spawnSync(argv[0], argv.slice(1), { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'inherit'] });
if (role === 'planner') appendFileSync(dir + 'proposals.jsonl', r.stdout.trim() + '\\n');
process.stdout.write(r.stdout);
process.exit(r.status ?? 1);
`;

const lines = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));

describe('the formats agents speak, as JSON Schema (issue 49)', () => {
  it('longbuild schema NAME prints what schemas/ holds, for every format; an unknown name is refused naming the known ones', () => {
    for (const name of Object.keys(FILES) as (keyof typeof FILES)[]) {
      const r = runCli(['schema', name], { cwd: ROOT });
      expect(r.code, name).toBe(0);
      expect(JSON.parse(r.stdout), `schemas/${FILES[name]} differs from \`longbuild schema ${name}\`: regenerate it`).toEqual(committed(name));
    }
    const bad = runCli(['schema', 'packets'], { cwd: ROOT });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^longbuild: schema: unknown format 'packets' \(expected: proposal, packet, planner-input, config\)/);
  });

  it('every planner input, proposal and packet of a real command build validates; the host\'s refusals are the schema\'s', () => {
    const cfg = tempDir('longbuild-formats-');
    cpSync(join(ROOT, 'examples', 'scripts'), cfg, { recursive: true });
    writeFileSync(join(cfg, 'capture.mjs'), CAPTURE);
    writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({
      planner: { command: ['node', './capture.mjs', 'planner', 'node', './planner.mjs'], timeoutSeconds: 60 },
      worker: { command: ['node', './capture.mjs', 'worker', 'node', './worker.mjs'], timeoutSeconds: 60 },
      verify: [['node', '--test']], detailedWindow: 2, sandbox: 'off',
    }));
    expect(validator('config')(JSON.parse(readFileSync(join(cfg, 'longbuild.config.json'), 'utf8')))).toBe(true);
    const repo = tempDir();
    cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');

    const inputs = lines(join(cfg, 'captured', 'planner-in.jsonl'));
    const packets = lines(join(cfg, 'captured', 'worker-in.jsonl'));
    const proposals = lines(join(cfg, 'captured', 'proposals.jsonl'));
    // What the build exercised: a refused ask, a renewal with checkpoints, a retry, dependencies.
    expect(inputs.map((i) => i.purpose)).toEqual(['seal', 'seal', 'renew']);
    expect(inputs[1].feedback).toHaveLength(1);
    expect(inputs[2].checkpoints.length).toBeGreaterThan(0);
    expect(packets.some((p) => p.previousFailure !== undefined)).toBe(true);
    expect(packets.some((p) => (p.dependencies ?? []).some((d: { commit: string | null }) => d.commit !== null))).toBe(true);

    const check = (name: keyof typeof FILES, values: unknown[]) => {
      const v = validator(name);
      for (const value of values) expect(v(value) ? [] : v.errors, `${name}: ${JSON.stringify(value).slice(0, 200)}`).toEqual([]);
    };
    check('planner-input', inputs);
    check('packet', packets);
    check('proposal', proposals);

    // The validator is no rubber stamp: what the host refuses, the schema refuses too.
    const proposal = validator('proposal');
    const good = proposals[0];
    expect(proposal({ ...good, extra: 1 })).toBe(false);
    expect(proposal({ ...good, detailed: [{ ...good.detailed[0], nodes: [{ ...good.detailed[0].nodes[0], id: 'Bad Id' }] }] })).toBe(false);
    expect(proposal({ ...good, detailed: [{ ...good.detailed[0], nodes: [{ ...good.detailed[0].nodes[0], accepted: true }] }] })).toBe(false);
    const packet = validator('packet');
    expect(packet({ ...packets[0], baseHead: 'main' })).toBe(false);
    const { nodeId: _dropped, ...noNode } = packets[0];
    expect(packet(noNode)).toBe(false);
  });

  it('the example wrapper\'s README names every field of the packet and the planner input', () => {
    const readme = readFileSync(join(ROOT, 'examples', 'agent-wrapper', 'README.md'), 'utf8');
    for (const name of ['packet', 'planner-input'] as const) {
      for (const field of Object.keys(committed(name).properties)) expect(readme, `${name}.${field}`).toContain(`\`${field}\``);
    }
  });
});
