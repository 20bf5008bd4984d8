import { describe, expect, it } from 'vitest';
import { workerApplicationName } from './observe.ts';

describe('workerApplicationName', () => {
  it('is the id itself when the server keeps it as written, a digest otherwise, never truncated', () => {
    expect(workerApplicationName('host-42-a1b2c3')).toBe('quest-worker host-42-a1b2c3');
    const long = 'w'.repeat(51);
    const named = workerApplicationName(long);
    expect(named).toMatch(/^quest-worker #[0-9a-f]{40}$/);
    expect(Buffer.byteLength(named)).toBeLessThanOrEqual(63);
    // Two ids alike in their first 50 characters get different names.
    expect(workerApplicationName(`${long}x`)).not.toBe(named);
    expect(workerApplicationName('wörker')).toMatch(/^quest-worker #[0-9a-f]{40}$/);
  });
});
