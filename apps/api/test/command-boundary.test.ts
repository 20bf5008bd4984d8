import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type BoundaryDeps, CommandBoundary } from '../src/commands/boundary.ts';
import type { FeatureFlagCache } from '../src/flags.ts';
import { OwnerItemLimit } from '../src/rate-limits.ts';
import { readOnlyAllocator } from './helpers.ts';

/**
 * The command boundary is the only way in for a write: entry points (routes/, console/) hold no
 * writer, so a check made there (switch, authorisation, rate budget) cannot be skipped by the next
 * page or route. tests/system/switches.test.ts proves it end to end for the `quests` switch.
 */

const SRC = join(import.meta.dirname, '../src');

/** What writes on behalf of an owner: reaching one of these outside the boundary skips its checks. */
const WRITERS = [
  'insertBatch',
  'insertEndpoint',
  'deleteEndpoint',
  'rotateEndpointSecret',
  'replayEvents',
  'recordPendingRequest',
];
const SUBMITS = /\.(allocate|runBatch)\(/;
const BOUNDARY = ['commands/'];

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => join(e.parentPath, e.name));
}

/** A boundary on no database: every switch on, no rate budget, unless the test gives its own. */
function boundaryWith(deps: Partial<BoundaryDeps>): CommandBoundary {
  return new CommandBoundary({
    sql: {} as never,
    allocator: readOnlyAllocator(),
    flags: { require: () => {} } as unknown as FeatureFlagCache,
    ownerItems: new OwnerItemLimit(undefined, 'test'),
    webhooks: { secretKey: null, allowPrivateUrls: false },
    batches: { waitMs: 0, maxItems: 10 },
    ...deps,
  });
}

describe('the command boundary', () => {
  it('is the only place that writes for an owner or submits to the queue', async () => {
    const offenders: string[] = [];
    for (const file of await sources(SRC)) {
      const path = relative(SRC, file);
      if (BOUNDARY.some((b) => path.startsWith(b))) continue;
      const text = await readFile(file, 'utf8');
      const imports = [...text.matchAll(/import\s[^;]*?from\s+'@quest\/db[^']*'/g)].map((m) => m[0]).join('\n');
      for (const writer of WRITERS) if (new RegExp(`\\b${writer}\\b`).test(imports)) offenders.push(`${path}: ${writer}`);
      if (SUBMITS.test(text)) offenders.push(`${path}: submits to the queue`);
    }
    expect(offenders).toEqual([]);
  });

  it('declares a switch for every command, and the quests switch for every credit', () => {
    const flags = { require: () => {} } as unknown as FeatureFlagCache;
    const boundary = boundaryWith({ flags });
    const declared = Object.fromEntries(Object.entries(boundary.commands).map(([name, c]) => [name, c.flag]));
    expect(declared).toEqual({
      credit: 'quests',
      reverse: 'quests',
      createBatch: 'quests',
      createEndpoint: null,
      deleteEndpoint: null,
      rotateSecret: null,
      replayEvents: null,
    });
  });

  it('refuses a switched-off command before it authorises, charges or submits anything', async () => {
    const calls: string[] = [];
    const flags = {
      require: (feature: string) => {
        calls.push(`flag ${feature}`);
        throw new Error('switched off');
      },
    } as unknown as FeatureFlagCache;
    const allocator = {
      ...readOnlyAllocator(),
      allocate: async () => {
        calls.push('submit');
        return { kind: 'failed' as const };
      },
    };
    const ownerItems = { charge: async () => void calls.push('charge') } as unknown as OwnerItemLimit;
    const boundary = boundaryWith({ allocator, flags, ownerItems });
    const caller = {
      questOwner: async () => {
        calls.push('authorise');
        return 'own_1';
      },
      owner: async () => {
        calls.push('authorise');
        return 'own_1';
      },
      headers: { header: () => {} },
      requestId: 'req-1',
    };
    const address = '0x52908400098527886e0f7030069857d2e4169ee7';
    await expect(boundary.credit(caller, { questId: 1, points: 5, address, idempotencyKey: undefined })).rejects.toThrow(
      'switched off',
    );
    expect(calls).toEqual(['flag quests']);
  });

  it('validates a console-shaped input like the route schema: 400 VALIDATION_FAILED details, not a 500', async () => {
    const boundary = boundaryWith({});
    const caller = { questOwner: async () => 'own_1', owner: async () => 'own_1', headers: { header: () => {} }, requestId: 'r' };
    const refused = await boundary
      .reverse(caller, { questId: 1, payoutId: 'pay_x', points: 0, idempotencyKey: undefined })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ validationContext: 'body' });
    expect((refused as { validation: { instancePath: string }[] }).validation.map((v) => v.instancePath).sort()).toEqual([
      '/payoutId',
      '/points',
    ]);
  });
});
