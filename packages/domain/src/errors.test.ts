import { describe, expect, it } from 'vitest';
import { DEFAULT_MESSAGE, DomainError, ERROR_CODES, isDomainError, REJECTION_CODES, STATUS_BY_CODE } from './errors.ts';

describe('error catalogue', () => {
  it('gives every code a status and a message', () => {
    for (const code of ERROR_CODES) {
      expect(STATUS_BY_CODE[code], code).toBeGreaterThanOrEqual(400);
      expect(DEFAULT_MESSAGE[code], code).toMatch(/\S/);
    }
    expect(Object.keys(STATUS_BY_CODE).sort()).toEqual([...ERROR_CODES].sort());
  });

  it('keeps the spec statuses: rejections 400, auth 401, unknown things 404', () => {
    for (const code of REJECTION_CODES) expect(STATUS_BY_CODE[code], code).toBe(code === 'PAYOUT_NOT_FOUND' ? 404 : 400);
    expect(STATUS_BY_CODE.REVERSAL_NOT_FOUND).toBe(404);
    expect(STATUS_BY_CODE.INVALID_API_KEY).toBe(401);
    expect(STATUS_BY_CODE.NOT_QUEST_OWNER).toBe(401);
    expect(STATUS_BY_CODE.QUEST_NOT_FOUND).toBe(404);
    expect(STATUS_BY_CODE.QUESTS_DISABLED).toBe(400);
    expect(STATUS_BY_CODE.CAMPAIGNS_DISABLED).toBe(400);
  });

  it('DomainError carries code, status, default or given message, and details', () => {
    const e = new DomainError('INSUFFICIENT_POINTS');
    expect(e).toMatchObject({ code: 'INSUFFICIENT_POINTS', statusCode: 400, message: DEFAULT_MESSAGE.INSUFFICIENT_POINTS });
    expect(isDomainError(e)).toBe(true);
    expect(isDomainError(new Error('x'))).toBe(false);
    expect(new DomainError('BATCH_TOO_LARGE', 'too many', { max: 1 })).toMatchObject({
      message: 'too many',
      details: { max: 1 },
    });
  });
});
