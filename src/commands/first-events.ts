/** The first event of a build (pure): its id and everything the rest of the build is pinned to. */
import type { JsonValue } from '../events/canonical.js';
import type { BuildSettings, DataOf, DomainEvent, SandboxSettings, TestPolicy } from '../events/catalogue.js';
import { canonicalSha256 } from '../events/hash.js';

export interface BuildInputs {
  readonly buildId: string;
  readonly request: JsonValue;
  readonly integrationRef: string;
  readonly baseHead: string;
  readonly verify: readonly (readonly string[])[];
  /** Trusted acceptance commands; empty: none (not recorded). */
  readonly acceptance?: readonly (readonly string[])[];
  readonly settings: BuildSettings;
  readonly driver: { readonly kind: 'blueprint' | 'command'; readonly sourceSha256: string };
  readonly sandbox: SandboxSettings;
  /** The build's verifier key (signed checkpoints, R-35). */
  readonly vkey: string;
  /** The tests candidates are judged by (R-48..R-51). */
  readonly tests?: TestPolicy;
}

/** The BuildInitialized event of a build with these inputs. */
export function buildInitialized(i: BuildInputs): Extract<DomainEvent, { type: 'BuildInitialized' }> {
  return {
    type: 'BuildInitialized',
    data: {
      buildId: i.buildId, request: i.request, requestSha256: canonicalSha256(i.request), integrationRef: i.integrationRef, baseHead: i.baseHead,
      verify: i.verify.map((c) => [...c]), ...((i.acceptance ?? []).length > 0 ? { acceptance: i.acceptance!.map((c) => [...c]) } : {}),
      settings: i.settings, driver: { ...i.driver }, sandbox: i.sandbox,
      signing: { vkey: i.vkey }, ...(i.tests !== undefined ? { tests: i.tests } : {}), callJournal: 1,
    },
  };
}

/** What a fork goes on under: the parent and point, and its driver's pin and record. */
export interface ForkInputs {
  readonly parent: DataOf<'ForkedFrom'>['parent'];
  readonly driver: { readonly kind: 'blueprint' | 'command'; readonly sourceSha256: string };
  readonly request: JsonValue;
  readonly verify: readonly (readonly string[])[];
  /** Empty: none (not recorded). */
  readonly acceptance: readonly (readonly string[])[];
  readonly settings: BuildSettings;
  /** The test policy the fork goes on under (absent: none). */
  readonly tests?: TestPolicy;
  readonly graphRevision: number;
}

/** The ForkedFrom event of a fork with these inputs. */
export function forkedFrom(i: ForkInputs): Extract<DomainEvent, { type: 'ForkedFrom' }> {
  return {
    type: 'ForkedFrom',
    data: {
      parent: { ...i.parent }, driver: { ...i.driver }, request: i.request, requestSha256: canonicalSha256(i.request),
      verify: i.verify.map((c) => [...c]), ...(i.acceptance.length > 0 ? { acceptance: i.acceptance.map((c) => [...c]) } : {}),
      settings: i.settings, ...(i.tests !== undefined ? { tests: i.tests } : {}), graphRevision: i.graphRevision,
    },
  };
}
