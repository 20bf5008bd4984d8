import { describe, expect, it } from 'vitest';
import { isJobName, JOB_NAMES, type JobHandlers, jobReplySchema, payoutView } from './jobs.ts';

describe('job catalogue', () => {
  it('needs a handler for every job: a set without one does not compile (checked by npm run typecheck)', () => {
    // @ts-expect-error the batch handler is missing
    const partial: JobHandlers = { allocate: async () => ({ outcomes: [], worker: 'w' }) };
    const complete: JobHandlers = {
      allocate: async () => ({ outcomes: [], worker: 'w' }),
      batch: async ({ batchId }) => ({ batchId, status: 'completed', total: 0, succeeded: 0, failed: 0, worker: 'w' }),
    };
    expect(Object.keys(complete).sort()).toEqual([...JOB_NAMES].sort());
    expect(Object.keys(partial)).toEqual(['allocate']);
  });

  it('names its jobs, and nothing else', () => {
    expect(JOB_NAMES).toEqual(['allocate', 'batch']);
    expect(isJobName('allocate')).toBe(true);
    expect(isJobName('constructor')).toBe(false);
    expect(isJobName('toString')).toBe(false);
  });

  it('reads a reply as a result or a failure, and refuses anything else', () => {
    const schema = jobReplySchema('allocate');
    const payout = payoutView({ id: 'pay_1', amount: 3, createdAt: new Date(0), pass: '0xabc' });
    const ok = { ok: true, result: { outcomes: [{ status: 'completed', payout }], worker: 'w' } };
    expect(schema.parse(ok)).toEqual(ok);
    expect(schema.parse({ ok: false, reason: 'boom' })).toEqual({ ok: false, reason: 'boom' });
    expect(schema.safeParse({ failed: true }).success).toBe(false);
    expect(schema.safeParse({ ok: true, result: { outcomes: [{ status: 'paid' }], worker: 'w' } }).success).toBe(false);
  });

  it('builds the payout view in one shape from a date or an ISO string', () => {
    const view = { id: 'pay_1', amount: 3, created_at: '1970-01-01T00:00:00.000Z', account: { pass: '0xabc' } };
    expect(payoutView({ id: 'pay_1', amount: 3, createdAt: new Date(0), pass: '0xabc' })).toEqual(view);
    expect(payoutView({ id: 'pay_1', amount: 3, createdAt: view.created_at, pass: '0xabc' })).toEqual(view);
  });
});
