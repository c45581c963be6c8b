#!/usr/bin/env node
// Plug a coding agent's CLI into longbuild as planner and worker.
//
//   node agent.mjs planner   (longbuild gives the planner input on stdin, wants a proposal on stdout)
//   node agent.mjs worker    (longbuild gives the work packet on stdin; cwd is the attempt's worktree)
//
// The agent command comes from LONGBUILD_AGENT_ARGV, a JSON array, e.g.
//   ["claude", "-p", "--permission-mode", "acceptEdits"]      (Claude Code, headless)
//   ["codex", "exec", "--full-auto"]                           (Codex CLI)
// The prompt is passed as the last argument. Add LONGBUILD_AGENT_ARGV (and the agent's API key
// variable, HOME, ...) to `env.allow` in longbuild.config.json so they reach this script.
//
// longbuild stays the authority: the planner only proposes (its JSON is validated, R-14/R-28),
// it runs in a read-only export of the integration head; the worker can only change its
// own worktree; verification commands come from the config alone.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const mode = process.argv[2];
const input = JSON.parse(readFileSync(0, 'utf8'));
const argv = JSON.parse(process.env.LONGBUILD_AGENT_ARGV ?? 'null');
if (!Array.isArray(argv) || argv.length === 0) {
  console.error('set LONGBUILD_AGENT_ARGV to the agent command as a JSON array, e.g. ["claude","-p"]');
  process.exit(2);
}

function ask(prompt) {
  const r = spawnSync(argv[0], [...argv.slice(1), prompt], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 });
  if (r.status !== 0) {
    console.error(`agent exited ${r.status ?? r.signal}`);
    process.exit(1);
  }
  return r.stdout;
}

if (mode === 'planner') {
  const prompt = [
    'You are the read-only planner of a long software build. Do not modify any file.',
    'Propose the next planning window as ONE JSON object and nothing else, of this shape:',
    '{"detailed":[{"id":"m1","title":"...","intent":"...","nodes":[{"id":"n1","kind":"writable|read-only","title":"...","deps":["..."]}]}],',
    ' "coarse":[{"id":"m3","title":"...","intent":"..."}]}',
    'Rules: 1 or 2 detailed milestones, at most 12 coarse; ids match ^[a-z0-9][a-z0-9._-]{0,63}$; every dependency is',
    'an existing graph node or a node of an earlier (or the same) detailed milestone.',
    input.purpose === 'renew'
      ? 'This is a renewal: promote exactly the first one or two coarse milestones of the current horizon (same ids and order) and keep the rest of the coarse list unchanged at its start.'
      : 'This is the first window of the build.',
    'Planner input:',
    JSON.stringify(input, null, 1),
  ].join('\n');
  const reply = ask(prompt);
  const start = reply.indexOf('{');
  const end = reply.lastIndexOf('}');
  process.stdout.write(start >= 0 && end > start ? reply.slice(start, end + 1) : reply);
} else if (mode === 'worker') {
  const prompt = [
    `Implement work-graph node "${input.nodeId}" (${input.title ?? 'no title'}) in the current directory, a git worktree.`,
    'Make the change and its tests; do not commit (the host commits), do not touch .longbuild/.',
    'Work packet:',
    JSON.stringify(input, null, 1),
  ].join('\n');
  process.stdout.write(ask(prompt));
} else {
  console.error('usage: agent.mjs planner|worker');
  process.exit(2);
}
