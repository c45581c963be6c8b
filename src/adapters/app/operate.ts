import { userInfo } from 'node:os';
import type { DomainEvent } from '../../events/catalogue.js';
import type { OperatorVerdict } from '../../commands/operator.js';
import type { BuildState } from '../../projections/build-state.js';
import type { AppContext } from './context.js';
import { withBuild } from './with-build.js';
import { leaseOptions, withControl } from './control.js';

/** The user an operator's event names, when the system can say. */
export function operatorUser(): string | undefined {
  try {
    return userInfo().username;
  } catch {
    return undefined;
  }
}

/**
 * Record an operator's decision (R-38: retry, cancel, accept) under the controller lease: the
 * verdict is taken on the state as it is, then appended as one event; `report` makes the
 * command's output from the state before, the state after and the event.
 */
export async function operate<T>(
  ctx: AppContext, causationId: string, decide: (state: BuildState, user: string | undefined) => OperatorVerdict,
  report: (before: BuildState, after: BuildState, event: DomainEvent) => T,
): Promise<T> {
  // `--as NAME` (approve, reject) names who decided when the OS user is not the person.
  const user = ctx.operator !== undefined && ctx.operator.trim() !== '' ? ctx.operator.slice(0, 200) : operatorUser();
  return withControl(ctx, (lease) => withBuild(ctx, async (s) => {
    const before = s.controller.current;
    let event: DomainEvent | null = null;
    await s.operate((state) => {
      const verdict = decide(state, user);
      if (verdict.ok) event = verdict.event;
      return verdict;
    }, causationId);
    return report(before, s.controller.current, event!);
  }, leaseOptions(lease)));
}
