/**
 * One shape for every refusal of the pure core: the rule that refuses and why, in words a user can
 * act on. Verdicts are `{ ok: true, ... } | Refusal`; the host records a refusal (ProposalRejected,
 * a failed attempt) or reports it (RefusedTransitionError), never reshapes it.
 */
export interface Refusal {
  readonly ok: false;
  /** The rule (R-n, see docs/rules.md) that refuses, or `operator` for an operator's request. */
  readonly rule: string;
  readonly reason: string;
}

export const refuse = (rule: string, reason: string): Refusal => ({ ok: false, rule, reason });
