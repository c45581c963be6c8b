/**
 * The formats agents speak, as zod schemas: what a planner is given (PlannerInput), what it
 * answers (PlannerProposalSchema, in horizon.ts: the host validates proposals with it), and what a
 * worker is given (WorkPacket). `longbuild schema …` prints them as JSON Schema and schemas/ keeps a
 * copy. The host builds planner inputs and packets as the TypeScript types in ports.ts; the checks
 * at the bottom fail the build when a type and its schema differ, and a test validates the inputs
 * and packets of a real build against these schemas.
 */
import { z } from 'zod';
import { CheckpointSchema, MilestoneRefSchema, NodeKindSchema, NodeStateSchema, TestIdSchema } from '../events/catalogue.js';
import { GitShaSchema, SafeIdSchema, Sha256Schema } from '../events/ids.js';
import type { PlannerInput, VerificationSurfaceInput, WorkPacket } from './ports.js';
import { PlannerProposalSchema } from './horizon.js';

const JsonSchema = z.json().describe('any JSON value');

export const VerificationSurfaceSchema = z.strictObject({
  files: z.array(z.string()).describe('files that decide what verification runs (package.json, lock files, test runner configs)'),
  tests: z.array(z.string()).describe('the existing test files'),
  testChanges: z.enum(['strict', 'review', 'record']).describe('what happens when a declared test change stops base tests passing'),
}).describe('the verification surface (R-48): a candidate changes these files and tests only when its node declares it in `changes`');

export const PlannerInputSchema = z.strictObject({
  purpose: z.enum(['seal', 'renew', 'repair']).describe('seal: the first plan; renew: the detailed window is done, plan the next; repair: a failed acceptance or a rejected head asks for a window of its own'),
  callId: z.string().describe('the idempotency key: the same call after a crash carries the same id (also LONGBUILD_IDEMPOTENCY_KEY)'),
  request: JsonSchema.describe('the request the build was started with'),
  horizon: z.strictObject({
    horizonId: z.string(),
    revision: z.number().int(),
    detailed: z.array(MilestoneRefSchema),
    coarse: z.array(MilestoneRefSchema),
  }).nullable().describe('the horizon in force (null on a seal)'),
  checkpoints: z.array(CheckpointSchema).describe("the exact checkpoints of the horizon's detailed milestones, oldest first; none on a seal"),
  feedback: z.array(z.strictObject({ callId: z.string(), rule: z.string(), reason: z.string() })).optional()
    .describe('on a re-ask: why each earlier proposal of this round was refused, oldest first; fix exactly what these name'),
  graph: z.strictObject({
    revision: z.number().int(),
    sha256: Sha256Schema,
    nodes: z.array(z.strictObject({ id: z.string(), kind: NodeKindSchema, state: NodeStateSchema, milestone: z.string() })),
  }).describe("the work graph as it stands; earlier windows' milestones appear as summary nodes"),
  integrationHead: GitShaSchema.describe('the commit the integration branch is at'),
  acceptance: z.array(z.strictObject({
    runId: z.string(), milestoneId: z.string().nullable(), head: GitShaSchema, passed: z.boolean(),
    reason: z.string().optional(), output: z.string().optional().describe("the tail of the failing command's output"),
    evidence: z.array(z.string()).optional(),
  })).optional().describe("the system acceptance runs of the window's checkpoints; a failed one is to be repaired"),
  verificationSurface: VerificationSurfaceSchema.optional(),
  reviews: z.array(z.strictObject({
    gate: z.enum(['checkpoint', 'land']), milestoneId: z.string().optional(), head: GitShaSchema, approved: z.boolean(), reason: z.string().optional(),
  })).optional().describe("operators' reviews of checkpoints and the final head, oldest first; a rejected one is to be repaired"),
  windows: z.strictObject({ detailed: z.number().int(), coarse: z.number().int() }).optional()
    .describe('a proposal holds at most this many detailed and coarse milestones'),
}).describe('What a planner is given (on stdin for a command planner). It answers with one proposal.');

const FileListSchema = z.array(z.string()).max(200);

export const WorkPacketSchema = z.strictObject({
  attemptId: z.string().describe('<node>.<attempt> (also LONGBUILD_ATTEMPT_ID)'),
  idempotencyKey: z.string().describe('the same call after a crash carries the same key (also LONGBUILD_IDEMPOTENCY_KEY)'),
  nodeId: SafeIdSchema.describe('also LONGBUILD_NODE_ID'),
  attempt: z.number().int().positive(),
  kind: NodeKindSchema.describe('writable: change files in the working directory; read-only: print a decision on stdout'),
  milestone: SafeIdSchema,
  deps: z.array(z.string()),
  title: z.string().optional(),
  request: JsonSchema.optional().describe('the request the build was started with'),
  milestoneTitle: z.string().optional(),
  milestoneIntent: z.string().optional(),
  description: z.string().optional().describe('what to build, as the planner wrote it'),
  acceptance: z.array(z.string()).optional().describe('how the change will be judged, one criterion per entry'),
  changes: z.array(z.enum(['tests', 'verification'])).optional().describe('what of the verification surface this node may change'),
  retires: z.array(TestIdSchema).optional().describe('the tests this node may stop passing'),
  verificationSurface: VerificationSurfaceSchema.optional(),
  dependencies: z.array(z.strictObject({
    id: z.string(), kind: NodeKindSchema, title: z.string().optional(),
    commit: GitShaSchema.nullable().describe('its accepted commit (null: none yet, or read-only)'),
    decision: z.string().optional(),
    files: FileListSchema.optional().describe('the paths its accepted commit changed, at most 200'),
    summary: z.strictObject({
      milestoneId: z.string(),
      acceptedCommits: z.array(z.strictObject({ nodeId: z.string(), commit: z.string() })),
      decisions: z.array(z.strictObject({ nodeId: z.string(), decision: z.string() })),
    }).optional().describe('a compacted milestone: the head holding it and its nodes\' commits'),
  })).optional().describe('what each dependency is and produced'),
  previousFailure: z.strictObject({
    attemptId: z.string().optional(), jobId: z.string().optional(), reason: z.string(),
    output: z.string().optional().describe('the tail of the output that shows the failure'),
    reworks: z.string().optional().describe('the working directory starts from this candidate: rework it, do not start over'),
    conflicts: z.array(z.string()).optional().describe('files holding git conflict markers against the new base head: resolve them'),
  }).optional().describe('on attempt 2 and later: why the last attempt or integration of this node failed'),
  baseHead: GitShaSchema.describe('the integration head the attempt starts from'),
  branch: z.string().describe("the attempt's branch"),
  commitDate: z.string().describe('fixed author and committer date (ISO 8601) for reproducible commits (also GIT_AUTHOR_DATE, GIT_COMMITTER_DATE)'),
}).describe('What a worker is given (on stdin for a command worker; in the prompt for an agent preset). Exit 0 and the host commits the working directory.');

/** The formats `longbuild schema NAME` prints, by name. */
export const AGENT_FORMATS = {
  proposal: { schema: PlannerProposalSchema, io: 'input', file: 'proposal.schema.json', what: 'what a planner answers (validated by the host, R-28, R-55)' },
  packet: { schema: WorkPacketSchema, io: 'output', file: 'work-packet.schema.json', what: 'what a worker is given' },
  'planner-input': { schema: PlannerInputSchema, io: 'output', file: 'planner-input.schema.json', what: 'what a planner is given' },
} as const;
export type AgentFormat = keyof typeof AGENT_FORMATS;

/** The JSON Schema (draft 2020-12) of one format. */
export function agentFormatJsonSchema(name: AgentFormat): Record<string, unknown> {
  const f = AGENT_FORMATS[name];
  const schema = z.toJSONSchema(f.schema, { io: f.io }) as Record<string, unknown>;
  return { $schema: schema.$schema, title: `longbuild ${name}: ${f.what}`, ...schema };
}

// ---- the types the host builds must be what the schemas say -----------------

type Plain<T> = T extends readonly (infer U)[] ? Plain<U>[] : T extends object ? { -readonly [K in keyof T]: Plain<T[K]> } : T;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Without<T, K extends PropertyKey> = Omit<T, K>;
const sameTypes: [
  Same<Plain<Without<WorkPacket, 'request'>>, Without<z.infer<typeof WorkPacketSchema>, 'request'>>,
  Same<Plain<Without<PlannerInput, 'request'>>, Without<z.infer<typeof PlannerInputSchema>, 'request'>>,
  Same<Plain<VerificationSurfaceInput>, z.infer<typeof VerificationSurfaceSchema>>,
] = [true, true, true];
void sameTypes;
