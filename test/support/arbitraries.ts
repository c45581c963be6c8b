/**
 * fast-check generators shared by the domain, fuzz and compaction tests: random DAGs split into
 * milestones, random (valid and mutated) horizon proposals, random renewal proposals.
 *
 * Everything is plain data; the mutations are described by small numbers (`a`, `b`) taken modulo
 * the proposal's sizes, so fast-check can shrink a failing case to a readable one.
 */
import fc from 'fast-check';
import type { MilestoneRef, NodeKind } from '../../src/events/catalogue.js';
import { isSafeId } from '../../src/events/ids.js';
import type { Proposal } from '../../src/commands/horizon.js';
import type { NodeSpec } from './given.js';

/** Short safe ids, so counterexamples stay readable. */
export const safeIdArb: fc.Arbitrary<string> = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,6}$/).filter(isSafeId);

/** Ids that R-8 must refuse before they reach a path or a ref. */
export const unsafeIdArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('../x', 'a/b', 'A', 'Node', '', '.', '..', 'a..b', 'x.', '-x', '_x', 'a b', 'a\nb', 'a\u0000b', 'a\tb', '\u00e9t\u00e9', 'x'.repeat(65)),
  fc.string({ minLength: 1, maxLength: 70 }).filter((s) => !isSafeId(s)),
);

// ---- random DAGs ------------------------------------------------------------

export interface DagNode {
  readonly id: string;
  readonly kind: NodeKind;
  /** Ids of earlier nodes (in `nodes` order) and of external, already accepted nodes. */
  readonly deps: readonly string[];
  /** Index into `milestones`; non-decreasing along `nodes`, so no dependency is in a later milestone. */
  readonly milestone: number;
}

/** A DAG in topological order, split into milestones, plus the order the planner lists it in. */
export interface RandomDag {
  readonly nodes: readonly DagNode[];
  readonly milestones: readonly string[];
  /** A permutation of node indexes: the insertion order of the proposal (must not matter). */
  readonly listing: readonly number[];
}

export interface DagOptions {
  readonly minNodes?: number;
  readonly maxNodes?: number;
  readonly maxMilestones?: number;
  /** Already accepted nodes of the graph the new nodes may depend on. */
  readonly external?: readonly string[];
  /** Milestone ids to use (default m1, m2, ...). */
  readonly milestoneIds?: readonly string[];
  /** Prefix for node ids; when set, ids are `<prefix><n>` instead of random safe ids. */
  readonly idPrefix?: string;
}

/** Random DAG: node i depends on up to three of the nodes before it (and maybe on external ones). */
export function dagArb(opts: DagOptions = {}): fc.Arbitrary<RandomDag> {
  const { minNodes = 1, maxNodes = 10, maxMilestones = 2, external = [] } = opts;
  const milestoneIds = opts.milestoneIds ?? Array.from({ length: maxMilestones }, (_, i) => `m${i + 1}`);
  return fc.integer({ min: minNodes, max: maxNodes }).chain((n) => {
    const ids = opts.idPrefix !== undefined
      ? fc.constant(Array.from({ length: n }, (_, i) => `${opts.idPrefix}${i}`))
      : fc.uniqueArray(safeIdArb, { minLength: n, maxLength: n });
    const indexes = Array.from({ length: n }, (_, i) => i);
    return fc.record({
      ids,
      kinds: fc.array(fc.constantFrom<NodeKind>('read-only', 'writable'), { minLength: n, maxLength: n }),
      deps: fc.tuple(...indexes.map((i) => fc.subarray(indexes.slice(0, i), { maxLength: Math.min(3, i) }))),
      externalDeps: fc.array(external.length ? fc.subarray([...external], { maxLength: Math.min(2, external.length) }) : fc.constant([] as string[]), { minLength: n, maxLength: n }),
      milestoneCount: fc.integer({ min: 1, max: Math.min(maxMilestones, milestoneIds.length) }),
      cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: n, maxLength: n }),
      listing: fc.shuffledSubarray(indexes, { minLength: n, maxLength: n }),
    }).map(({ ids, kinds, deps, externalDeps, milestoneCount, cuts, listing }) => {
      // Sorted cut values make the milestone index non-decreasing along the topological order.
      const sortedCuts = [...cuts].sort((a, b) => a - b);
      const nodes: DagNode[] = indexes.map((i) => ({
        id: ids[i]!,
        kind: kinds[i]!,
        deps: [...(deps[i] as number[]).map((d) => ids[d]!), ...externalDeps[i]!],
        milestone: Math.min(milestoneCount - 1, Math.floor(sortedCuts[i]! * milestoneCount)),
      }));
      return { nodes, milestones: milestoneIds.slice(0, milestoneCount), listing };
    });
  });
}

/** The proposal a planner would send for a DAG (nodes listed in the DAG's listing order). */
export function dagToProposal(dag: RandomDag, coarseRefs: readonly MilestoneRef[] = []): Proposal {
  const detailed = dag.milestones.map((id) => ({ id, title: `Milestone ${id}`, nodes: [] as NodeSpec[] }));
  for (const i of dag.listing) {
    const n = dag.nodes[i]!;
    detailed[n.milestone]!.nodes.push({ id: n.id, kind: n.kind, deps: [...n.deps] });
  }
  return { detailed, coarse: coarseRefs.map((c) => ({ ...c })) };
}

/** Coarse milestones `<prefix>1..<prefix>n`. */
export const coarseRefs = (n: number, prefix = 'c'): MilestoneRef[] =>
  Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i + 1}`, title: `Coarse ${prefix}${i + 1}`, intent: `later work ${i + 1}` }));

/** A valid proposal: a random DAG in one or two detailed milestones and 0..12 coarse ones. */
export function validProposalArb(opts: DagOptions = {}): fc.Arbitrary<Proposal> {
  return fc.tuple(dagArb(opts), fc.integer({ min: 0, max: 12 })).map(([dag, k]) => dagToProposal(dag, coarseRefs(k)));
}

// ---- mutations of proposals (R-13 invariants) ----------------------------------

export type MutationKind =
  | 'no-detailed' | 'three-detailed' | 'thirteen-coarse' | 'node-in-two-milestones' | 'omitted-dep' | 'dep-on-coarse'
  | 'later-dep' | 'cycle' | 'self-dep' | 'duplicate-milestone' | 'writable-accepted' | 'read-only-accepted'
  | 'unsafe-node-id' | 'unsafe-milestone-id' | 'unsafe-dep-id' | 'existing-node' | 'checkpointed-milestone' | 'reverse-edge';

export interface Mutation {
  readonly kind: MutationKind;
  readonly a: number;
  readonly b: number;
  readonly unsafe: string;
}

export const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom<MutationKind>(
    'no-detailed', 'three-detailed', 'thirteen-coarse', 'node-in-two-milestones', 'omitted-dep', 'dep-on-coarse', 'later-dep', 'cycle',
    'self-dep', 'duplicate-milestone', 'writable-accepted', 'read-only-accepted', 'unsafe-node-id', 'unsafe-milestone-id', 'unsafe-dep-id',
    'existing-node', 'checkpointed-milestone', 'reverse-edge',
  ),
  a: fc.nat(1000),
  b: fc.nat(1000),
  unsafe: unsafeIdArb,
});

type MutableProposal = { detailed: (MilestoneRef & { nodes: NodeSpec[] })[]; coarse: MilestoneRef[] };

const clone = (p: Proposal): MutableProposal => JSON.parse(JSON.stringify(p)) as MutableProposal;
const allNodes = (p: MutableProposal) => p.detailed.flatMap((m, mi) => m.nodes.map((n) => ({ n, mi })));

/**
 * Apply one mutation. Most break an R-13 (or R-8) invariant; some may leave the plan valid
 * (e.g. `reverse-edge` when it creates no cycle, `read-only-accepted`): a reference checker decides.
 * `existing` names nodes and `checkpointed` milestones of the graph the proposal is checked against.
 */
export function mutateProposal(p: Proposal, m: Mutation, existing: readonly string[] = [], checkpointed: readonly string[] = []): Proposal {
  const q = clone(p);
  const nodes = allNodes(q);
  const pick = <T>(xs: readonly T[], k: number): T | undefined => (xs.length ? xs[k % xs.length] : undefined);
  switch (m.kind) {
    case 'no-detailed':
      q.detailed = [];
      break;
    case 'three-detailed':
      while (q.detailed.length < 3) q.detailed.push({ id: `x${q.detailed.length}`, title: 'extra', nodes: [] });
      break;
    case 'thirteen-coarse':
      for (let i = q.coarse.length; i < 13 + (m.a % 2); i++) q.coarse.push({ id: `over${i}`, title: `over ${i}` });
      break;
    case 'node-in-two-milestones': {
      const x = pick(nodes, m.a);
      if (!x) break;
      const target = pick(q.detailed, m.b)!;
      target.nodes.push({ ...x.n, deps: [] });
      break;
    }
    case 'omitted-dep':
      pick(nodes, m.a)?.n.deps.push(`ghost${m.b % 3}`);
      break;
    case 'dep-on-coarse': {
      const c = pick(q.coarse, m.b);
      pick(nodes, m.a)?.n.deps.push(c ? c.id : 'c-missing');
      break;
    }
    case 'later-dep': {
      // A node of the first milestone depends on a node of a later one (if there is one).
      const early = nodes.filter((x) => x.mi === 0);
      const late = nodes.filter((x) => x.mi > 0);
      const e = pick(early, m.a);
      if (!e) break;
      let l = pick(late, m.b)?.n;
      if (!l) {
        // Make a later milestone with a node, so the mutation always bites.
        if (q.detailed.length < 2) q.detailed.push({ id: 'later', title: 'Later', nodes: [] });
        l = { id: `late${m.b % 10}`, kind: 'read-only', deps: [] };
        q.detailed[1]!.nodes.push(l);
      }
      e.n.deps.push(l.id);
      break;
    }
    case 'cycle': {
      // Close an existing edge into a two-cycle (or a self-dependency when there is no edge).
      const withDep = nodes.filter((x) => x.n.deps.some((d) => nodes.some((y) => y.n.id === d)));
      const x = pick(withDep, m.a);
      if (x) {
        const depId = x.n.deps.find((d) => nodes.some((y) => y.n.id === d))!;
        nodes.find((y) => y.n.id === depId)!.n.deps.push(x.n.id);
      } else pick(nodes, m.a)?.n.deps.push(pick(nodes, m.a)!.n.id);
      break;
    }
    case 'self-dep': {
      const x = pick(nodes, m.a);
      x?.n.deps.push(x.n.id);
      break;
    }
    case 'reverse-edge': {
      // Add dep from an earlier-listed node to another node: valid unless it closes a cycle or points later.
      const x = pick(nodes, m.a);
      const y = pick(nodes, m.b);
      if (x && y && x.n.id !== y.n.id && !x.n.deps.includes(y.n.id)) x.n.deps.push(y.n.id);
      break;
    }
    case 'duplicate-milestone': {
      const d = pick(q.detailed, m.a);
      if (!d) break;
      if (m.b % 2 === 0 || q.detailed.length < 2) q.coarse.splice(m.b % (q.coarse.length + 1), 0, { id: d.id, title: 'again' });
      else q.detailed[(q.detailed.indexOf(d) + 1) % q.detailed.length]!.id = d.id;
      break;
    }
    case 'writable-accepted': {
      const x = pick(nodes, m.a);
      if (x) {
        x.n.kind = 'writable';
        x.n.accepted = true;
      }
      break;
    }
    case 'read-only-accepted': {
      const x = pick(nodes, m.a);
      if (x) {
        x.n.kind = 'read-only';
        x.n.accepted = true;
      }
      break;
    }
    case 'unsafe-node-id': {
      const x = pick(nodes, m.a);
      if (x) x.n.id = m.unsafe;
      break;
    }
    case 'unsafe-milestone-id': {
      const all: MilestoneRef[] = [...q.detailed, ...q.coarse];
      const x = pick(all, m.a);
      if (x) x.id = m.unsafe;
      break;
    }
    case 'unsafe-dep-id':
      pick(nodes, m.a)?.n.deps.push(m.unsafe);
      break;
    case 'existing-node': {
      const x = pick(nodes, m.a);
      const e = pick(existing, m.b);
      if (x && e) x.n.id = e;
      break;
    }
    case 'checkpointed-milestone': {
      const c = pick(checkpointed, m.b);
      const all: MilestoneRef[] = [...q.detailed, ...q.coarse];
      const x = pick(all, m.a);
      if (x && c) x.id = c;
      break;
    }
    default: {
      const never: never = m.kind;
      throw new Error(`unknown mutation ${String(never)}`);
    }
  }
  return q;
}

/** Valid proposals and proposals with one or two mutations, roughly half and half. */
export function anyProposalArb(opts: DagOptions = {}, existing: readonly string[] = [], checkpointed: readonly string[] = []): fc.Arbitrary<Proposal> {
  return fc.tuple(validProposalArb(opts), fc.array(mutationArb, { maxLength: 2 })).map(([p, ms]) =>
    ms.reduce((acc, m) => mutateProposal(acc, m, existing, checkpointed), p),
  );
}

// ---- renewals (R-16) ------------------------------------------------------------

export type RenewalMutationKind =
  | 'none' | 'skip' | 'rename' | 'retitle-suffix' | 'reintent-suffix' | 'reorder-promoted' | 'reorder-suffix' | 'repeat' | 'lose'
  | 'overflow' | 'stale' | 'promote-too-many' | 'retitle-promoted' | 'insert-before-suffix';

export interface RenewalCase {
  /** The sealed horizon being renewed. */
  readonly current: { readonly revision: number; readonly detailed: readonly MilestoneRef[]; readonly coarse: readonly MilestoneRef[] };
  readonly expectedRevision: number;
  readonly proposal: Proposal;
  readonly mutation: RenewalMutationKind;
}

const renewalMutationArb = fc.constantFrom<RenewalMutationKind>(
  'none', 'none', 'none', 'skip', 'rename', 'retitle-suffix', 'reintent-suffix', 'reorder-promoted', 'reorder-suffix', 'repeat', 'lose',
  'overflow', 'stale', 'promote-too-many', 'retitle-promoted', 'insert-before-suffix',
);

/**
 * A sealed horizon with 1..12 coarse milestones and a renewal proposal for it: an exact prefix
 * promotion (1 or 2 promoted, suffix untouched, 0..n appended, ≤ 12 coarse), then maybe mutated.
 * Promoted milestones carry small DAGs whose nodes may depend on the `external` accepted nodes.
 */
export function renewalCaseArb(external: readonly string[] = []): fc.Arbitrary<RenewalCase> {
  return fc.record({
    revision: fc.integer({ min: 1, max: 5 }),
    coarseCount: fc.integer({ min: 1, max: 12 }),
    promote: fc.constantFrom(1, 2),
    append: fc.nat(12),
    titles: fc.array(fc.constantFrom('Alpha', 'Beta', 'Gamma'), { minLength: 12, maxLength: 12 }),
    mutation: renewalMutationArb,
    a: fc.nat(100),
    b: fc.nat(100),
    dag: dagArb({ minNodes: 0, maxNodes: 5, external, idPrefix: 'r', maxMilestones: 2, milestoneIds: ['p0', 'p1'] }),
  }).map(({ revision, coarseCount, promote, append, titles, mutation, a, b, dag }): RenewalCase => {
    const coarse: MilestoneRef[] = Array.from({ length: coarseCount }, (_, i) => ({ id: `c${i + 1}`, title: `${titles[i]} ${i + 1}`, intent: `intent ${i + 1}` }));
    const k = Math.min(promote, coarseCount);
    const suffix = coarse.slice(k);
    const room = 12 - suffix.length;
    const appended: MilestoneRef[] = Array.from({ length: Math.min(append, room) }, (_, i) => ({ id: `new${i + 1}`, title: `New ${i + 1}` }));
    // Nodes of the random DAG go to the promoted milestones (dag milestone p0 -> first promoted, p1 -> last).
    const proposal0 = dagToProposal(dag);
    const detailed = coarse.slice(0, k).map((c, i) => ({
      id: c.id, title: c.title, intent: c.intent ?? '',
      nodes: proposal0.detailed.filter((_, di) => Math.min(di, k - 1) === i).flatMap((m) => m.nodes),
    }));
    const p: MutableProposal = { detailed, coarse: [...suffix.map((c) => ({ ...c })), ...appended] };
    let expectedRevision = revision;
    const current = { revision, detailed: [{ id: 'd0', title: 'done' }], coarse };
    switch (mutation) {
      case 'none':
        break;
      case 'skip':
        // Promote the next coarse milestone instead of the first one.
        if (coarseCount > k) {
          p.detailed[0]!.id = coarse[k]!.id;
          p.coarse = p.coarse.filter((c) => c.id !== coarse[k]!.id);
        }
        break;
      case 'rename':
        if (a % 2 === 0 || p.coarse.length === 0) p.detailed[b % k]!.id = `renamed${b % 3}`;
        else p.coarse[b % p.coarse.length]!.id = `renamed${b % 3}`;
        break;
      case 'retitle-suffix':
        if (suffix.length) p.coarse[a % suffix.length]!.title = 'Something else';
        break;
      case 'reintent-suffix':
        if (suffix.length) {
          const c = p.coarse[a % suffix.length]!;
          if (b % 2 === 0) delete (c as { intent?: string }).intent;
          else c.intent = 'another intent';
        }
        break;
      case 'retitle-promoted':
        p.detailed[a % k]!.title = 'Refined title';
        break;
      case 'reorder-promoted':
        if (k === 2) p.detailed.reverse();
        break;
      case 'reorder-suffix':
        if (p.coarse.length >= 2) {
          const i = a % (p.coarse.length - 1);
          [p.coarse[i], p.coarse[i + 1]] = [p.coarse[i + 1]!, p.coarse[i]!];
        }
        break;
      case 'repeat': {
        const all = [...p.detailed, ...p.coarse];
        const x = all[a % all.length]!;
        p.coarse.splice(b % (p.coarse.length + 1), 0, { id: x.id, title: x.title, ...(x.intent !== undefined ? { intent: x.intent } : {}) });
        break;
      }
      case 'lose':
        if (p.coarse.length) p.coarse.splice(a % p.coarse.length, 1);
        break;
      case 'overflow':
        for (let i = p.coarse.length; i < 13; i++) p.coarse.push({ id: `more${i}`, title: `More ${i}` });
        break;
      case 'stale':
        expectedRevision = revision + (a % 2 === 0 ? -1 : 1);
        break;
      case 'promote-too-many':
        // One more detailed milestone than was coarse: either invented or taken from the suffix.
        if (k === 1 && coarseCount === 1) p.detailed.push({ id: 'invented', title: 'Invented', intent: '', nodes: [] });
        else if (k === 1) {
          p.detailed.push({ id: coarse[1]!.id, title: coarse[1]!.title, intent: coarse[1]!.intent ?? '', nodes: [] });
          p.coarse.shift();
        } else p.detailed.push({ id: 'third', title: 'Third', intent: '', nodes: [] });
        break;
      case 'insert-before-suffix':
        p.coarse.splice(0, 0, { id: 'jumped', title: 'Jumped the queue' });
        break;
      default: {
        const never: never = mutation;
        throw new Error(`unknown renewal mutation ${String(never)}`);
      }
    }
    return { current, expectedRevision, proposal: p, mutation };
  });
}

// ---- progress of a build over a random DAG ------------------------------------------------

/** What happens to a node whose dependencies are accepted (see `progressedBuild` in given.ts). */
export type NodeFate = 'accept' | 'leave' | 'run' | 'commit' | 'fail';

export interface ProgressCase {
  readonly dag: RandomDag;
  /** One fate per node, in the DAG's topological order. */
  readonly fates: readonly NodeFate[];
  /** Checkpoint the first milestone when all its nodes are accepted (then the second is active). */
  readonly checkpointFirst: boolean;
  /** A second listing order of the same proposal (ranking must not depend on it). */
  readonly otherListing: readonly number[];
}

/** A random DAG with random progress; mostly acceptances so ready waves are non-trivial. */
export function progressCaseArb(opts: DagOptions = {}): fc.Arbitrary<ProgressCase> {
  return dagArb(opts).chain((dag) => {
    const n = dag.nodes.length;
    const indexes = Array.from({ length: n }, (_, i) => i);
    return fc.record({
      dag: fc.constant(dag),
      fates: fc.array(fc.constantFrom<NodeFate>('accept', 'accept', 'accept', 'leave', 'leave', 'run', 'commit', 'fail'), { minLength: n, maxLength: n }),
      checkpointFirst: fc.boolean(),
      otherListing: fc.shuffledSubarray(indexes, { minLength: n, maxLength: n }),
    });
  });
}
