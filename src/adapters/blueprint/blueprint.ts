/**
 * The blueprint format (docs/cli.md "Blueprint"): a JSON file that drives the scripted
 * planner and worker. Parsing is strict (unknown fields refused, R-28) but structural only: a
 * blueprint may describe an invalid PLAN (coarseWindow 13, a dependency on a later milestone,
 * an unknown dep) — the host refuses that when the planner proposes it.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { SandboxSettingSchema } from '../sandbox/settings.js';
import { canonicalSha256 } from '../../events/hash.js';
import { ValidationError } from '../../events/errors.js';
import { RESERVED_IDS, reservedIdReason, SafeIdSchema, SUMMARY_ID_PREFIX, summaryPrefixReason } from '../../events/ids.js';
import { closestIssue, PlannedNodeSchema } from '../../events/catalogue.js';
import { testPolicyFields, verifyEntrySchema } from '../verify-commands.js';

/** Problem with a file path inside the blueprint, or null when it is a safe relative path. */
export function relativePathProblem(p: string): string | null {
  if (p.length === 0) return 'empty path';
  if (p.length > 1024) return 'path longer than 1024 characters';
  if (/[\u0000-\u001f\u007f\\]/.test(p)) return 'control character or backslash in path';
  if (p.startsWith('/')) return 'absolute path (must be relative to the repository)';
  for (const seg of p.split('/')) {
    if (seg === '') return 'empty path segment (leading, trailing or double slash)';
    if (seg === '.' || seg === '..') return `'${seg}' segment (paths must stay inside the repository)`;
    if (seg.toLowerCase() === '.git') return "'.git' segment (git metadata is not writable)";
  }
  return null;
}

const RelativePathSchema = z.string().superRefine((p, ctx) => {
  const problem = relativePathProblem(p);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: `unsafe file path ${JSON.stringify(p)}: ${problem}` });
});

const FilesSchema = z.record(RelativePathSchema, z.string());

const ArgvSchema = z
  .array(z.string().min(1, { message: 'argv elements must not be empty' }).refine((s) => !s.includes('\0'), { message: 'NUL byte in argv' }))
  .min(1, { message: 'a verification command must have at least an executable (argv array, no shell)' });

export const BlueprintNodeSchema = z.strictObject({
  id: SafeIdSchema,
  kind: z.enum(['read-only', 'writable']),
  deps: z.array(SafeIdSchema),
  title: z.string().optional(),
  accepted: z.boolean().optional(),
  contract: PlannedNodeSchema.shape.contract,
  foundation: PlannedNodeSchema.shape.foundation,
  decision: z.string().optional(),
  changes: PlannedNodeSchema.shape.changes,
  retires: PlannedNodeSchema.shape.retires,
  files: FilesSchema.optional(),
  failAttempts: z.number().int().min(0).max(100).optional(),
  failFiles: FilesSchema.optional(),
});
export type BlueprintNode = z.infer<typeof BlueprintNodeSchema>;

export const BlueprintMilestoneSchema = z.strictObject({
  id: SafeIdSchema,
  title: z.string(),
  intent: z.string().optional(),
  nodes: z.array(BlueprintNodeSchema),
});
export type BlueprintMilestone = z.infer<typeof BlueprintMilestoneSchema>;

export const BlueprintSchema = z.strictObject({
  request: z.record(z.string(), z.json()),
  /** Trusted commands run before `verify` (and acceptance) in the setup phase: an install. */
  setup: z.array(ArgvSchema).max(20).optional(),
  /** Git-ignored files setup and verification leave: allowed (default with setup), or dirty (the default without). */
  ignoredFiles: z.enum(['allowed', 'dirty']).optional(),
  verify: z.array(verifyEntrySchema(ArgvSchema)),
  ...testPolicyFields,
  /** System-level acceptance commands, run on the head of every checkpoint. */
  acceptance: z.array(ArgvSchema).optional(),
  /** Repair windows the planner may plan for a failing acceptance (default 2). */
  acceptanceRepairs: z.number().int().min(0).max(10).optional(),
  /** What the scripted planner proposes when asked for a repair window (purpose "repair"), one per ask, in order. */
  repairs: z.array(BlueprintMilestoneSchema).optional(),
  detailedWindow: z.literal([1, 2], { message: 'detailedWindow must be 1 or 2' }),
  /** Any 0..64 so that an over-long coarse list can be described; the host refuses > 12. */
  coarseWindow: z.number().int().min(0).max(64).default(12),
  // Optional build settings (extensions of the docs/cli.md format); the controller applies defaults.
  maxBatch: z.number().int().min(1).max(64).optional(),
  concurrency: z.number().int().min(1).max(64).optional(),
  /** Integration jobs verified at once, each on top of the ones ahead (default: concurrency). */
  speculation: z.number().int().min(1).max(64).optional(),
  maxAttempts: z.number().int().min(1).max(100).optional(),
  compaction: z.boolean().optional(),
  protectedPaths: z.array(RelativePathSchema).optional(),
  /** Blueprint workers are longbuild's own; only verification is sandboxed. Default: bwrap when installed, else off (said and recorded). */
  sandbox: SandboxSettingSchema.optional(),
  maxFileBytes: z.number().int().positive().optional(),
  maxFiles: z.number().int().positive().max(10_000_000).optional(),
  /** Untrusted processes (verification commands) run at once; absent: no cap beyond concurrency and speculation. */
  maxProcesses: z.number().int().min(1).max(256).optional(),
  milestones: z.array(BlueprintMilestoneSchema),
});
export type Blueprint = z.infer<typeof BlueprintSchema>;

/** `milestones[0].nodes[1].id` from a zod issue path. */
function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (typeof seg === 'string' && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(String(seg))}]`;
  }
  return out === '' ? '(top level)' : out;
}

function describeValue(v: unknown): string {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? s.slice(0, 57) + '...' : s;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[seg];
  }
  return cur;
}

/**
 * The path of the first object holding a key named `__proto__`, or null. zod rebuilds records and
 * JSON values by assignment, where that key sets the object's prototype instead: the entry would
 * vanish from the parsed blueprint (a file not written, a request key not recorded).
 */
function protoKeyPath(value: unknown, path: PropertyKey[] = []): PropertyKey[] | null {
  if (value === null || typeof value !== 'object') return null;
  if (!Array.isArray(value) && Object.hasOwn(value, '__proto__')) return [...path, '__proto__'];
  for (const [k, v] of Object.entries(value)) {
    const found = protoKeyPath(v, [...path, Array.isArray(value) ? Number(k) : k]);
    if (found !== null) return found;
  }
  return null;
}

/** Line and column (1-based) of a character offset. */
function lineCol(text: string, pos: number): string {
  const before = text.slice(0, pos);
  const line = before.split('\n').length;
  const col = pos - before.lastIndexOf('\n');
  return `line ${line}, column ${col}`;
}

/**
 * Parse a blueprint: JSON text, or an already parsed JSON value. `source` names the file in
 * messages. Throws ONE ValidationError naming the source, the field path and the problem.
 */
export function parseBlueprint(input: unknown, source = 'blueprint'): Blueprint {
  const fail = (where: string, problem: string): never => {
    throw new ValidationError(`invalid blueprint ${source}: ${where}: ${problem}`, 'R-28');
  };
  let raw: unknown = input;
  if (typeof input === 'string') {
    const text = input;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      const m = /at position (\d+)/.exec(msg);
      const where = m ? `${lineCol(text, Number(m[1]))} (position ${m[1]})` : text.trim() === '' ? 'empty file' : 'end of input';
      return fail('bad JSON', `${msg} — ${where}`);
    }
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return fail('(top level)', 'expected a JSON object');
  const proto = protoKeyPath(raw);
  if (proto !== null) return fail(formatPath(proto), 'a key named "__proto__" cannot be kept (a JavaScript object takes it for its prototype): rename it');
  const parsed = BlueprintSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = closestIssue(parsed.error.issues[0]!);
    const path = formatPath(issue.path);
    if (issue.code === 'unrecognized_keys') {
      const keys = issue.keys.map((k) => `'${k}'`).join(', ');
      return fail(path, `unknown field${issue.keys.length > 1 ? 's' : ''} ${keys}`);
    }
    if (issue.code === 'invalid_key') {
      // A record key (a file path) was refused: the inner issue says why.
      return fail(path, issue.issues[0]?.message ?? issue.message);
    }
    const got = valueAt(raw, issue.path);
    const suffix = got === undefined ? ' (missing)' : typeof got === 'object' && got !== null ? '' : `, got ${describeValue(got)}`;
    return fail(path, `${issue.message}${suffix}`);
  }
  const bp = parsed.data;
  const milestoneAt = new Map<string, string>();
  const nodeAt = new Map<string, string>();
  placedMilestones(bp).forEach(({ m, at }) => {
    const prev = milestoneAt.get(m.id);
    if (prev !== undefined) fail(`${at}.id`, `duplicate milestone id '${m.id}' (also ${prev})`);
    milestoneAt.set(m.id, at);
    m.nodes.forEach((n, j) => {
      const here = `${at}.nodes[${j}]`;
      const other = nodeAt.get(n.id);
      if (other !== undefined) fail(`${here}.id`, `duplicate node id '${n.id}' (also ${other})`);
      nodeAt.set(n.id, here);
    });
  });
  return bp;
}

/**
 * Refuse, at `init` and `fork --blueprint`, a blueprint whose plan the host would refuse at its
 * first planner call: an id `constructor` (decision 0030) or a node id with the reserved
 * prefix `summary-`. Not part of parseBlueprint: a stored driver is parsed again at every open, and
 * a build made before this check must still open (to be shown blocked).
 */
export function refuseUnplannableIds(bp: Blueprint, source: string): void {
  const fail = (where: string, problem: string): never => {
    throw new ValidationError(`invalid blueprint ${source}: ${where}: ${problem}`, 'R-8');
  };
  placedMilestones(bp).forEach(({ m, at }) => {
    if (RESERVED_IDS.has(m.id)) fail(`${at}.id`, reservedIdReason(m.id));
    m.nodes.forEach((n, j) => {
      if (RESERVED_IDS.has(n.id)) fail(`${at}.nodes[${j}].id`, reservedIdReason(n.id));
      if (n.id.startsWith(SUMMARY_ID_PREFIX)) fail(`${at}.nodes[${j}].id`, summaryPrefixReason(n.id));
      n.deps.forEach((d, k) => RESERVED_IDS.has(d) && fail(`${at}.nodes[${j}].deps[${k}]`, reservedIdReason(d)));
    });
  });
}

/** The blueprint's milestones and repair windows, each with its place for a message (`milestones[2]`). */
function placedMilestones(bp: Blueprint): { m: BlueprintMilestone; at: string }[] {
  return [...bp.milestones.map((m, i) => ({ m, at: `milestones[${i}]` })), ...(bp.repairs ?? []).map((m, i) => ({ m, at: `repairs[${i}]` }))];
}

/** Read and parse a blueprint file (see parseBlueprint). */
export function loadBlueprint(path: string): Blueprint {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new ValidationError(`cannot read blueprint ${path}: ${code}`, 'R-28');
  }
  return parseBlueprint(text, path);
}

/** SHA-256 of the parsed blueprint's canonical JSON (defaults applied; white space irrelevant). */
export function blueprintSha256(blueprint: Blueprint): string {
  return canonicalSha256(blueprint);
}

/**
 * The node with this id and its milestone (the first milestone, then repair window, holding it), or
 * undefined. Every worker call asks, twice (its driver's digest, the scripted worker): the nodes are
 * indexed once per blueprint, where a scan of every milestone at each call made a 50,000-node build
 * quadratic (~5 s of its run). The index holds each id's milestone, not its node: a compact
 * blueprint's nodes are not kept as objects (`compactBlueprint`).
 */
export function findBlueprintNode(blueprint: Blueprint, nodeId: string): { node: BlueprintNode; milestone: BlueprintMilestone } | undefined {
  let index = nodeIndexes.get(blueprint);
  if (index === undefined) {
    index = new Map();
    for (const milestone of [...blueprint.milestones, ...(blueprint.repairs ?? [])]) {
      for (const node of milestone.nodes) if (!index.has(node.id)) index.set(node.id, milestone);
    }
    nodeIndexes.set(blueprint, index);
  }
  const milestone = index.get(nodeId);
  const node = milestone?.nodes.find((n) => n.id === nodeId);
  return milestone === undefined || node === undefined ? undefined : { node, milestone };
}

/** Each parsed blueprint's milestone of each node id (a blueprint is never changed once parsed). */
const nodeIndexes = new WeakMap<Blueprint, Map<string, BlueprintMilestone>>();

/** How many milestones' nodes a compact blueprint keeps parsed: the ones its calls are on. */
const PARSED_MILESTONES = 4;

/**
 * `blueprint` with each milestone's and repair window's nodes kept as their JSON text, parsed when
 * read (decision 0055). A blueprint build's plan is as long as the build, and its nodes as
 * objects (with the node index's pair per node) were ~200 bytes a node of the controller's heap for
 * the whole run; as text they are ~70 (measured at 20,000 nodes: the live heap 1.5 MB smaller).
 * Reads see the same data: `nodes` is an enumerable property
 * (JSON, canonical JSON and spreads see it as before) that gives the parsed nodes, the same array
 * while its milestone is one of the last PARSED_MILESTONES read. Nodes are never changed once
 * parsed, here as before.
 */
export function compactBlueprint(blueprint: Blueprint): Blueprint {
  const parsed = new Map<string, BlueprintNode[]>();
  const nodesOf = (text: string): BlueprintNode[] => {
    let nodes = parsed.get(text);
    if (nodes !== undefined) parsed.delete(text);
    else nodes = JSON.parse(text) as BlueprintNode[];
    parsed.set(text, nodes);
    if (parsed.size > PARSED_MILESTONES) parsed.delete(parsed.keys().next().value!);
    return nodes;
  };
  const compact = (m: BlueprintMilestone): BlueprintMilestone => {
    const text = JSON.stringify(m.nodes);
    const out = {} as BlueprintMilestone;
    for (const [key, value] of Object.entries(m)) {
      if (key === 'nodes') Object.defineProperty(out, 'nodes', { enumerable: true, configurable: true, get: () => nodesOf(text) });
      else (out as Record<string, unknown>)[key] = value;
    }
    return out;
  };
  return {
    ...blueprint,
    milestones: blueprint.milestones.map(compact),
    ...(blueprint.repairs === undefined ? {} : { repairs: blueprint.repairs.map(compact) }),
  };
}
