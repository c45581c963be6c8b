/**
 * The fuzzer's audit of notifications (issue 46, R-61), pure: what the notifiers received (their
 * own ledger lines) against the log's NotificationSent records — received at least once when the
 * log says delivered, at most once more per crash.
 */
import { describe, expect, it } from 'vitest';
import { auditNotifications, type Delivery, type NotificationRecord } from '../src/commands/fuzz-compare.js';

const sent = (position: number, triggers: number[], outcome: 'delivered' | 'failed' = 'delivered'): NotificationRecord => ({ position, notifier: 0, kind: 'awaiting_approval', triggers, outcome });
const got = (...positions: number[]): Delivery => ({ notifier: 0, kind: 'awaiting_approval', positions });

describe('fuzz: the notification audit (R-61)', () => {
  it('passes deliveries that match the log: once each, or once more after a crash', () => {
    expect(auditNotifications([sent(20, [5, 9])], [got(5, 9)], 0)).toEqual([]);
    expect(auditNotifications([sent(20, [5, 9])], [got(5, 9), got(5, 9)], 1)).toEqual([]);
    // A failed delivery says nothing was received; a record from before the case started is not the case's.
    expect(auditNotifications([sent(20, [5], 'failed'), sent(3, [2])], [], 0, 10)).toEqual([]);
  });

  it('finds a delivery the log records that the notifier never received, and one received too often', () => {
    expect(auditNotifications([sent(20, [5, 9])], [got(5)], 0)).toEqual([expect.objectContaining({ what: 'notification recorded at 20 as delivered', rule: 'R-61', clean: 'notifier 0 received awaiting_approval of 9' })]);
    expect(auditNotifications([sent(20, [5])], [got(5), got(5), got(5)], 1)).toEqual([expect.objectContaining({ what: 'notification 0:awaiting_approval:5 received 3 times', clean: 'at most 2 (once, and once more per crash)' })]);
    // Another notifier's or kind's delivery is not this one's.
    expect(auditNotifications([sent(20, [5])], [{ notifier: 1, kind: 'awaiting_approval', positions: [5] }, { notifier: 0, kind: 'completed', positions: [5] }], 0)).toHaveLength(1);
  });
});
