/** A check of the audit bundle that failed: which check, why, and at which log position. */
export class AuditFailure extends Error {
  constructor(readonly check: string, message: string, readonly position?: number) {
    super(message);
  }
}
