import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@quest/testing';
import { activeOwnerOf, expectFailure, expectUsageError, expectUsageErrors, jsonOf, runCli } from './helpers.ts';

let db: TestDatabase;
const cli = (...args: string[]) => runCli(args, { DATABASE_URL: db.url });
const randomHex = () => randomBytes(20).toString('hex');

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe('quest-admin owner create', () => {
  it('--json prints the owner with its checksummed pass and the key, and stores only the key hash', async () => {
    const result = await cli(
      'owner',
      'create',
      '--name',
      'Acme Games',
      '--pass',
      '0x52908400098527886e0f7030069857d2e4169ee7',
      '--json',
    );
    expect(result.code, result.stderr).toBe(0);
    const out = jsonOf(result);
    expect(Object.keys(out).sort()).toEqual(['apiKey', 'owner']);
    expect(out.owner).toEqual({
      id: expect.stringMatching(/^own_[0-9a-z]{26}$/),
      name: 'Acme Games',
      pass: '0x52908400098527886E0F7030069857D2E4169EE7',
    });
    expect(out.apiKey).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);

    const [owner] = await db.sql`select name, pass_address from owners where id = ${out.owner.id}`;
    expect(owner).toEqual({ name: 'Acme Games', pass_address: '0x52908400098527886E0F7030069857D2E4169EE7' });
    const keys = await db.sql<
      { key_hash: Buffer; prefix: string }[]
    >`select key_hash, prefix from api_keys where owner_id = ${out.owner.id}`;
    expect(keys).toHaveLength(1);
    expect(keys[0]!.key_hash.equals(createHash('sha256').update(out.apiKey).digest())).toBe(true);
    expect(keys[0]!.prefix).toBe(out.apiKey.slice(0, 7));
    expect(await activeOwnerOf(db.sql, out.apiKey)).toBe(out.owner.id);
  });

  it('prints readable text with the key once, and checksums upper-case input', async () => {
    const upper = `0x${'DE709F2102306220921060314715629080E2FB77'}`;
    const result = await cli('owner', 'create', '--name', 'Upper', '--pass', upper);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^Owner created\n {2}id {4}own_[0-9a-z]{26}\n {2}name {2}Upper\n {2}pass {2}0xde709f2102306220921060314715629080e2fb77\n/,
    );
    const key = /(sk_[A-Za-z0-9_-]{43})/.exec(result.stdout)?.[1];
    expect(key).toBeDefined();
    const ownerId = await activeOwnerOf(db.sql, key!);
    const [owner] = await db.sql`select pass_address from owners where id = ${ownerId}`;
    expect(owner?.pass_address).toBe('0xde709f2102306220921060314715629080e2fb77');
  });

  it('refuses an invalid address as a usage error, before touching the database', async () => {
    await expectUsageErrors(cli, [
      ...['0x1234', `0x${'z'.repeat(40)}`, randomHex()].map(
        (bad) => [['owner', 'create', '--name', 'Bad', '--pass', bad, '--json'], "option '--pass <address>' argument"] as const,
      ),
      [['owner', 'create', '--name', 'No pass'], "required option '--pass <address>' not specified"],
    ]);
    const [{ n }] = (await db.sql`select count(*)::int as n from owners where name = 'Bad'`) as unknown as [{ n: number }];
    expect(n).toBe(0);
  });

  it('reports a second owner with the same pass (any case) as one error line, and in JSON', async () => {
    const hex = randomHex();
    expect((await cli('owner', 'create', '--name', 'First', '--pass', `0x${hex}`)).code).toBe(0);
    const text = await cli('owner', 'create', '--name', 'Second', '--pass', `0x${hex.toUpperCase()}`);
    expectFailure(text, 'already exists');
    expect(text.stdout).toBe('');
    const json = await cli('owner', 'create', '--name', 'Second', '--pass', `0x${hex}`, '--json');
    expectFailure(json, 'already exists');
    expect(jsonOf(json)).toEqual({ error: { code: 'ALREADY_EXISTS', message: expect.stringContaining('already exists') } });
  });
});

describe('quest-admin key create / revoke', () => {
  async function newOwner(): Promise<{ id: string; apiKey: string }> {
    const out = jsonOf(await cli('owner', 'create', '--name', 'Key owner', '--pass', `0x${randomHex()}`, '--json'));
    return { id: out.owner.id, apiKey: out.apiKey };
  }

  it('issues a further key (json and text) that authenticates as the owner', async () => {
    const owner = await newOwner();
    const json = await cli('key', 'create', '--owner', owner.id, '--json');
    expect(json.code, json.stderr).toBe(0);
    const { apiKey } = jsonOf(json);
    expect(Object.keys(jsonOf(json))).toEqual(['apiKey']);
    expect(apiKey).not.toBe(owner.apiKey);
    expect(await activeOwnerOf(db.sql, apiKey)).toBe(owner.id);

    const text = await cli('key', 'create', '--owner', owner.id);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`API key for ${owner.id}`);
    const textKey = /(sk_[A-Za-z0-9_-]{43})/.exec(text.stdout)![1]!;
    expect(await activeOwnerOf(db.sql, textKey)).toBe(owner.id);
    const [{ n }] = (await db.sql`select count(*)::int as n from api_keys where owner_id = ${owner.id}`) as unknown as [
      { n: number },
    ];
    expect(n).toBe(3);
  });

  it('names an unknown owner; refuses a malformed owner id as usage', async () => {
    const unknown = await cli('key', 'create', '--owner', 'own_01jf8q4g0x7m3r6v2k9d1n5bta', '--json');
    expectFailure(unknown, 'own_01jf8q4g0x7m3r6v2k9d1n5bta');
    expect(jsonOf(unknown).error.code).toBe('OWNER_NOT_FOUND');
    expectUsageError(await cli('key', 'create', '--owner', 'acme'), "option '--owner <ownerId>' argument 'acme' is invalid");
  });

  it('revokes a key (json): it stops resolving, the owner keeps its other keys', async () => {
    const owner = await newOwner();
    const second = jsonOf(await cli('key', 'create', '--owner', owner.id, '--json')).apiKey;
    const result = await cli('key', 'revoke', '--key', owner.apiKey, '--json');
    expect(result.code, result.stderr).toBe(0);
    const out = jsonOf(result);
    const [row] = await db.sql<
      { id: string; revoked_at: Date }[]
    >`select id, revoked_at from api_keys where key_hash = ${createHash('sha256').update(owner.apiKey).digest()}`;
    expect(out).toEqual({
      revoked: true,
      alreadyRevoked: false,
      keyId: row!.id,
      ownerId: owner.id,
      revokedAt: row!.revoked_at.toISOString(),
    });
    expect(await activeOwnerOf(db.sql, owner.apiKey)).toBeNull();
    expect(await activeOwnerOf(db.sql, second)).toBe(owner.id);
  });

  it('revokes a key (text), and reports an unknown key as an error', async () => {
    const owner = await newOwner();
    const text = await cli('key', 'revoke', '--key', owner.apiKey);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^API key revoked\n {2}key id +key_/);
    expect(text.stdout).toContain(owner.id);
    expect(await activeOwnerOf(db.sql, owner.apiKey)).toBeNull();

    const unknownKey = `sk_${randomBytes(32).toString('base64url')}`;
    const unknown = await cli('key', 'revoke', '--key', unknownKey, '--json');
    expectFailure(unknown, 'not found');
    expect(jsonOf(unknown).error.code).toBe('API_KEY_NOT_FOUND');
    // The error names the key by its prefix only.
    expect(unknown.stderr).not.toContain(unknownKey);
    expectUsageError(
      await cli('key', 'revoke', '--key', 'hello'),
      'Expected a key id (key_…, see "key list") or the full API key (sk_…)',
    );
  });

  it('says a key that cannot exist was not found, not how keys are spelled', async () => {
    const text = await cli('key', 'revoke', '--key', 'sk_doesnotexist');
    expectFailure(text, 'API key sk_does… not found');
    const json = await cli('key', 'revoke', '--key', 'sk_doesnotexist', '--json');
    expect(jsonOf(json)).toEqual({ error: { code: 'API_KEY_NOT_FOUND', message: 'API key sk_does… not found' } });
    const byId = await cli('key', 'revoke', '--key', 'key_01jf8q4g0x7m3r6v2k9d1n5bta', '--json');
    expectFailure(byId, 'API key "key_01jf8q4g0x7m3r6v2k9d1n5bta" not found');
    expect(jsonOf(byId).error.code).toBe('API_KEY_NOT_FOUND');
  });

  it('revokes by key id (as key list shows it), and a second revocation says "already revoked"', async () => {
    const owner = await newOwner();
    const [{ id: keyId }] = (await db.sql`select id from api_keys where owner_id = ${owner.id}`) as unknown as [{ id: string }];
    const first = await cli('key', 'revoke', '--key', keyId, '--json');
    expect(first.code, first.stderr).toBe(0);
    const out = jsonOf(first);
    expect(out).toEqual({
      revoked: true,
      alreadyRevoked: false,
      keyId,
      ownerId: owner.id,
      revokedAt: expect.stringMatching(/^\d{4}-/),
    });
    expect(await activeOwnerOf(db.sql, owner.apiKey)).toBeNull();

    // Again, by id and by the full key: nothing changes, and the answer says so.
    const again = await cli('key', 'revoke', '--key', keyId, '--json');
    expect(again.code, again.stderr).toBe(0);
    expect(jsonOf(again)).toEqual({ ...out, alreadyRevoked: true });
    const text = await cli('key', 'revoke', '--key', owner.apiKey);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^API key already revoked \(nothing changed\)\n {2}key id +key_/);
    expect(text.stdout).toContain(out.revokedAt);
  });
});

describe('quest-admin owner list / key list', () => {
  it('lists owners and keys page by page (json), never showing a key, and continues with --after', {
    timeout: 120_000,
  }, async () => {
    const created: any[] = [];
    for (let i = 0; i < 3; i++) {
      created.push(jsonOf(await cli('owner', 'create', '--name', `Listed ${i}`, '--pass', `0x${randomHex()}`, '--json')));
    }
    const extra = jsonOf(await cli('key', 'create', '--owner', created[0].owner.id, '--json')).apiKey;
    expect((await cli('key', 'revoke', '--key', extra)).code).toBe(0);

    // Every owner of this database, two at a time, until `next` is null.
    const seen: any[] = [];
    let after: string | null = null;
    for (let pages = 0; pages < 100; pages++) {
      const result = await cli('owner', 'list', '--limit', '2', ...(after ? ['--after', after] : []), '--json');
      expect(result.code, result.stderr).toBe(0);
      const out = jsonOf(result);
      expect(Object.keys(out).sort()).toEqual(['next', 'owners']);
      expect(out.owners.length).toBeLessThanOrEqual(2);
      seen.push(...out.owners);
      if (out.next === null) break;
      expect(out.next).toBe(out.owners.at(-1).id);
      after = out.next;
    }
    const [{ n }] = (await db.sql`select count(*)::int as n from owners`) as unknown as [{ n: number }];
    expect(seen).toHaveLength(n);
    expect(seen.map((o) => o.id)).toEqual([...seen.map((o) => o.id)].sort());
    expect(seen.find((o) => o.id === created[0].owner.id)).toEqual({
      ...created[0].owner,
      activeKeys: 1,
      quests: 0,
      createdAt: expect.stringMatching(/^\d{4}-/),
    });

    const keys = await cli('key', 'list', '--owner', created[0].owner.id, '--json');
    expect(keys.code, keys.stderr).toBe(0);
    const listed = jsonOf(keys);
    expect(listed.next).toBeNull();
    expect(listed.keys).toHaveLength(2);
    expect(listed.keys.map((k: any) => k.revokedAt === null).sort()).toEqual([false, true]);
    for (const k of listed.keys) {
      expect(Object.keys(k).sort()).toEqual(['createdAt', 'id', 'ownerId', 'prefix', 'revokedAt']);
      expect(k.ownerId).toBe(created[0].owner.id);
    }
    expect(keys.stdout).not.toContain(created[0].apiKey);
    expect(keys.stdout).not.toContain(extra);
    expect(listed.keys.map((k: any) => k.prefix).sort()).toEqual([created[0].apiKey.slice(0, 7), extra.slice(0, 7)].sort());
  });

  it('prints tables with a hint for the next page; refuses bad limits; names an unknown owner', async () => {
    const owner = jsonOf(await cli('owner', 'create', '--name', 'Tabled', '--pass', `0x${randomHex()}`, '--json'));
    const text = await cli('key', 'list', '--owner', owner.owner.id);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^ID +PREFIX +OWNER +CREATED +REVOKED\nkey_[0-9a-z]+ +sk_.{4}… +own_/);
    expect(text.stdout).toContain('\n1 API key.\n');
    const paged = await cli('owner', 'list', '--limit', '1');
    expect(paged.code, paged.stderr).toBe(0);
    expect(paged.stdout).toMatch(/\n1 owner shown; more: quest-admin owner list --after own_[0-9a-z]+\n$/);

    await expectUsageErrors(cli, [
      [['owner', 'list', '--limit', '0'], "option '--limit <n>' argument '0' is invalid"],
      [['key', 'list', '--limit', '1001', '--json'], 'Expected an integer from 1 to 1000'],
      [['key', 'list', '--after', 'sk_abc'], "option '--after <keyId>' argument 'sk_abc' is invalid"],
    ]);
    const unknown = await cli('key', 'list', '--owner', 'own_01jf8q4g0x7m3r6v2k9d1n5bta', '--json');
    expectFailure(unknown, 'own_01jf8q4g0x7m3r6v2k9d1n5bta');
    expect(jsonOf(unknown).error.code).toBe('OWNER_NOT_FOUND');
  });
});
