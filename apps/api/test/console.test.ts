import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOwner, createQuest, revokeApiKey, startTestApp, type TestApp } from './helpers.ts';

/**
 * The console's sessions and guards, through app.inject: sign-in exchanges a key for a cookie
 * (HttpOnly, SameSite=Strict, Secure over HTTPS), a wrong key is refused without telling why and
 * counts as a failed authentication, a revoked key ends its sessions, state changes need the CSRF
 * token and this origin, and the spec's routes still take only x-api-key. The journeys in a real
 * browser are tests/system/console.test.ts.
 */

const TOKEN = 'operator-token-0123456789';
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({
    env: {
      ADMIN_TOKEN: TOKEN,
      TRUST_PROXY: 'true',
      RATE_LIMIT_AUTH_FAILURES_MAX: '5',
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'),
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    },
  });
});
afterAll(async () => {
  await t?.close();
});

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** Sign in as `secret` from `ip`; the response and the session cookie (name=value) when one was set. */
async function signIn(secret: string, opts: { ip?: string; headers?: Record<string, string> } = {}) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/console/sign-in',
    remoteAddress: opts.ip ?? '10.0.0.1',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...opts.headers },
    payload: form({ apiKey: secret }),
  });
  const setCookie = res.headers['set-cookie'];
  const line = Array.isArray(setCookie) ? setCookie[0] : setCookie;
  return { res, line, cookie: line?.split(';')[0] };
}

const csrfOf = (page: LightMyRequestResponse) => /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1];

describe('console sign-in', () => {
  it('exchanges an owner key for an HttpOnly, SameSite=Strict session cookie with an expiry', async () => {
    const owner = await createOwner(t.sql);
    const { res, line, cookie } = await signIn(owner.apiKey);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/console/');
    expect(line).toMatch(/HttpOnly/);
    expect(line).toMatch(/SameSite=Strict/);
    expect(line).toMatch(/Path=\/console/);
    expect(line).toMatch(/Max-Age=\d+/);
    expect(line).toMatch(/Expires=/);
    expect(line).not.toMatch(/Secure/);
    expect(line).not.toContain(owner.apiKey);
    const quests = await t.app.inject({ url: '/console/quests', headers: { cookie: cookie! } });
    expect(quests.statusCode).toBe(200);
    expect(quests.body).toContain(owner.name);
    expect(quests.headers['content-security-policy']).toContain("script-src 'self'");
    expect(quests.headers['cache-control']).toBe('no-store');
  });

  it('marks the cookie Secure when served over HTTPS (X-Forwarded-Proto behind a trusted proxy)', async () => {
    const owner = await createOwner(t.sql);
    const { line } = await signIn(owner.apiKey, { headers: { 'x-forwarded-proto': 'https' } });
    expect(line).toMatch(/; Secure/);
  });

  it('refuses an unknown, revoked or malformed key with the same answer', async () => {
    const owner = await createOwner(t.sql);
    const revoked = await createOwner(t.sql);
    await revokeApiKey(t.sql, revoked.apiKey);
    const unknown = `sk_${'a'.repeat(owner.apiKey.length - 3)}`;
    const answers = [];
    for (const [i, secret] of [unknown, revoked.apiKey, 'not a key', `${TOKEN}x`].entries()) {
      const { res, line } = await signIn(secret, { ip: `10.0.1.${i}` });
      expect(line).toBeUndefined();
      answers.push([res.statusCode, res.body.replace(/name="_csrf" value="[^"]*"/, '')]);
    }
    expect(answers[0]![0]).toBe(401);
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(answers[0]![1]).toContain('Sign-in failed: that key or token is not valid.');
  });

  it('counts failed sign-ins like failed authentications: 429 once over the limit', async () => {
    const ip = '10.0.2.1';
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await signIn('sk_wrong', { ip })).res.statusCode);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    // A good key from that address is refused too until the window passes; another address is not.
    const owner = await createOwner(t.sql);
    expect((await signIn(owner.apiKey, { ip })).res.statusCode).toBe(429);
    expect((await signIn(owner.apiKey, { ip: '10.0.2.2' })).res.statusCode).toBe(303);
  });

  it('ends the sessions of a revoked key, and sign-out ends its own', async () => {
    const owner = await createOwner(t.sql);
    const a = await signIn(owner.apiKey);
    const b = await signIn(owner.apiKey);
    const page = await t.app.inject({ url: '/console/quests', headers: { cookie: b.cookie! } });
    expect(page.statusCode).toBe(200);
    const out = await t.app.inject({
      method: 'POST',
      url: '/console/sign-out',
      headers: { cookie: b.cookie!, 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ _csrf: csrfOf(page)! }),
    });
    expect(out.statusCode).toBe(303);
    expect((await t.app.inject({ url: '/console/quests', headers: { cookie: b.cookie! } })).headers.location).toBe(
      '/console/sign-in',
    );
    expect((await t.app.inject({ url: '/console/quests', headers: { cookie: a.cookie! } })).statusCode).toBe(200);
    await revokeApiKey(t.sql, owner.apiKey);
    const after = await t.app.inject({ url: '/console/quests', headers: { cookie: a.cookie! } });
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toBe('/console/sign-in');
  });

  it("keeps the spec's routes on x-api-key: a session cookie alone is no key", async () => {
    const owner = await createOwner(t.sql);
    const questId = await createQuest(t.sql, { ownerId: owner.id });
    const { cookie } = await signIn(owner.apiKey);
    const res = await t.request({ url: `/quests/${questId}`, headers: { cookie: cookie! } });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('INVALID_API_KEY');
    expect((await t.app.inject({ url: `/console/quests/${questId}`, headers: { cookie: cookie! } })).statusCode).toBe(200);
    for (const [period, bucket] of [
      ['24h', 'Credits per 15 minutes'],
      ['7d', 'Credits per 2 hours'],
    ]) {
      const page = await t.app.inject({ url: `/console/quests/${questId}?period=${period}`, headers: { cookie: cookie! } });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain(bucket);
    }
    // The console's hooks stay in its own context: no CSP, no session lookup on the API's routes.
    const api = await t.request({ url: `/quests/${questId}`, headers: { 'x-api-key': owner.apiKey, cookie: cookie! } });
    expect(api.statusCode).toBe(200);
    expect(api.headers['content-security-policy']).toBeUndefined();
  });

  it("answers another owner's quest as not found", async () => {
    const owner = await createOwner(t.sql);
    const other = await createOwner(t.sql);
    const questId = await createQuest(t.sql, { ownerId: other.id });
    const { cookie } = await signIn(owner.apiKey);
    const res = await t.app.inject({ url: `/console/quests/${questId}`, headers: { cookie: cookie! } });
    expect(res.statusCode).toBe(404);
    expect(res.body).toContain('QUEST_NOT_FOUND');
  });
});

describe('console CSRF and roles', () => {
  it('refuses a state change without the session CSRF token, or from another origin', async () => {
    const { cookie } = await signIn(TOKEN);
    const page = await t.app.inject({ url: '/console/operator', headers: { cookie: cookie! } });
    expect(page.statusCode).toBe(200);
    const csrf = csrfOf(page)!;
    const create = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
      t.app.inject({
        method: 'POST',
        url: '/console/operator/owners',
        headers: { cookie: cookie!, 'content-type': 'application/x-www-form-urlencoded', host: 'console.test', ...headers },
        payload: form(fields),
      });
    const fields = { name: 'Acme', pass: '0x52908400098527886E0F7030069857D2E4169EE7' };
    const missing = await create(fields);
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain('CSRF');
    expect((await create({ ...fields, _csrf: 'x'.repeat(csrf.length) })).statusCode).toBe(400);
    const foreign = await create({ ...fields, _csrf: csrf }, { origin: 'https://evil.example' });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.body).toContain('Cross-site request refused');
    const ok = await create({ ...fields, _csrf: csrf }, { origin: 'http://console.test' });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toMatch(/<code id="new-api-key">sk_[A-Za-z0-9_-]+<\/code>/);
  });

  it("keeps owners out of the operator's views and the operator out of owners'", async () => {
    const owner = await createOwner(t.sql);
    const asOwner = await signIn(owner.apiKey);
    const asOperator = await signIn(TOKEN);
    expect((await t.app.inject({ url: '/console/operator', headers: { cookie: asOwner.cookie! } })).headers.location).toBe(
      '/console/',
    );
    expect((await t.app.inject({ url: '/console/quests', headers: { cookie: asOperator.cookie! } })).headers.location).toBe(
      '/console/',
    );
    const post = await t.app.inject({
      method: 'POST',
      url: '/console/operator/quests',
      headers: { cookie: asOwner.cookie!, 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ name: 'x' }),
    });
    expect(post.statusCode).toBe(401);
  });
});

describe('console webhooks', () => {
  it('adds an endpoint (secret shown once), shows its log, replays and deletes it', async () => {
    const owner = await createOwner(t.sql);
    const { cookie } = await signIn(owner.apiKey);
    const list = await t.app.inject({ url: '/console/webhooks', headers: { cookie: cookie! } });
    expect(list.statusCode).toBe(200);
    const post = (url: string, fields: Record<string, string>) =>
      t.app.inject({
        method: 'POST',
        url,
        headers: { cookie: cookie!, 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({ _csrf: csrfOf(list)!, ...fields }),
      });
    const created = await post('/console/webhooks', { url: 'https://127.0.0.1:9/hook', description: 'orders' });
    expect(created.statusCode).toBe(200);
    expect(created.body).toMatch(/<code id="new-webhook-secret">whsec_[^<]+<\/code>/);
    const id = /href="\/console\/webhooks\/(whe_[^"]+)"/.exec(created.body)![1]!;
    const page = await t.app.inject({ url: `/console/webhooks/${id}`, headers: { cookie: cookie! } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Delivery log');
    expect(page.body).not.toContain('whsec_');
    // A time PostgreSQL cannot take is refused as bad input, not a server error.
    for (const since of ['0000-01-01T00:00', '-000001-01-01T00:00']) {
      const refused = await post(`/console/webhooks/${id}/replay`, { since });
      expect(refused.statusCode, since).toBe(400);
    }
    const replay = await post(`/console/webhooks/${id}/replay`, { since: '2026-01-01T00:00' });
    expect(replay.statusCode).toBe(200);
    expect(replay.body).toContain('queued for delivery again');
    const deleted = await post(`/console/webhooks/${id}/delete`, {});
    expect(deleted.statusCode).toBe(200);
    expect(deleted.body).toContain('deleted');
    expect((await t.app.inject({ url: `/console/webhooks/${id}`, headers: { cookie: cookie! } })).statusCode).toBe(404);
  });
});

describe('console webhooks without WEBHOOK_SECRET_KEY', () => {
  it('says why no endpoint can be added and how to set it up, instead of a form that cannot work', async () => {
    const plain = await startTestApp({ db: t.db });
    try {
      const owner = await createOwner(plain.sql);
      const signedIn = await plain.app.inject({
        method: 'POST',
        url: '/console/sign-in',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({ apiKey: owner.apiKey }),
      });
      const cookie = String(signedIn.headers['set-cookie']).split(';')[0]!;
      const page = await plain.app.inject({ url: '/console/webhooks', headers: { cookie } });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('Webhooks are not configured');
      expect(page.body).toContain('WEBHOOK_SECRET_KEY');
      expect(page.body).toContain('npx quest-admin webhooks local');
      expect(page.body).not.toContain('Add endpoint');
    } finally {
      await plain.close();
    }
  });
});

describe('console operator tools', () => {
  it('switches a quest off and on, turns a feature flag off and on, and runs the audit', async () => {
    const owner = await createOwner(t.sql);
    const questId = await createQuest(t.sql, { ownerId: owner.id, name: 'Toggle me' });
    const { cookie } = await signIn(TOKEN);
    const page = await t.app.inject({ url: '/console/operator/quests', headers: { cookie: cookie! } });
    const post = (url: string, fields: Record<string, string>) =>
      t.app.inject({
        method: 'POST',
        url,
        headers: { cookie: cookie!, 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({ _csrf: csrfOf(page)!, ...fields }),
      });
    const off = await post(`/console/operator/quests/${questId}/action-status`, { status: 'deactivated' });
    expect(off.body).toContain('is now deactivated');
    const [row] = await t.sql<{ action_status: string }[]>`select action_status from quests where id = ${questId}`;
    expect(row!.action_status).toBe('deactivated');
    expect((await post(`/console/operator/quests/${questId}/action-status`, { status: 'active' })).body).toContain(
      'is now active',
    );

    const edit = await t.app.inject({ url: `/console/operator/quests/${questId}/window`, headers: { cookie: cookie! } });
    expect(edit.statusCode).toBe(200);
    expect(edit.body).toContain('Toggle me');
    const moved = await post(`/console/operator/quests/${questId}/window`, {
      startAt: '2027-01-01T00:00',
      endAt: '2027-02-01T12:30',
    });
    expect(moved.body).toContain('now runs 2027-01-01 00:00:00 UTC → 2027-02-01 12:30:00 UTC');
    const [window] = await t.sql<{ start_at: Date; end_at: Date }[]>`select start_at, end_at from quests where id = ${questId}`;
    expect(window!.end_at.toISOString()).toBe('2027-02-01T12:30:00.000Z');
    const inverted = await post(`/console/operator/quests/${questId}/window`, {
      startAt: '2027-03-01T00:00',
      endAt: '2027-02-01T00:00',
    });
    expect(inverted.statusCode).toBe(400);

    expect((await post('/console/operator/flags', { feature: 'campaigns', enabled: 'false' })).body).toContain(
      'campaigns turned off',
    );
    const [flag] = await t.sql<{ enabled: boolean }[]>`select enabled from feature_flags where name = 'campaigns'`;
    expect(flag!.enabled).toBe(false);
    expect((await post('/console/operator/flags', { feature: 'campaigns', enabled: 'true' })).body).toContain(
      'campaigns turned on',
    );
    expect((await post('/console/operator/flags', { feature: 'nope', enabled: 'true' })).statusCode).toBe(400);

    const audit = await t.app.inject({ url: '/console/operator/audit?run=1', headers: { cookie: cookie! } });
    expect(audit.statusCode).toBe(200);
    expect(audit.body).toContain('The ledger is consistent');
  });
});

describe('console and the API document', () => {
  it('keeps the console out of /openapi.json, and /console leads to the sign-in page', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/console'))).toEqual([]);
    expect(Object.keys(doc.paths)).toContain('/quests/{questId}');
    for (const url of ['/console', '/console/']) {
      const res = await t.app.inject({ url });
      expect(res.statusCode).toBe(303);
      expect(res.headers.location).toBe('/console/sign-in');
    }
  });
});

describe('console campaigns and accounts', () => {
  it('creates a campaign and a quest in it, and imports accounts from a file', async () => {
    const owner = await createOwner(t.sql);
    const { cookie } = await signIn(TOKEN);
    const page = await t.app.inject({ url: '/console/operator/campaigns', headers: { cookie: cookie! } });
    expect(page.statusCode).toBe(200);
    const csrf = csrfOf(page)!;
    const post = (url: string, fields: Record<string, string>) =>
      t.app.inject({
        method: 'POST',
        url,
        headers: { cookie: cookie!, 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({ _csrf: csrf, ...fields }),
      });
    const window = { startAt: '2026-01-01T00:00', endAt: '2030-01-01T00:00' };
    const campaign = await post('/console/operator/campaigns', { name: 'Spring', ...window });
    expect(campaign.body).toContain('Campaign <strong>Spring</strong> created');
    const campaignId = /created with id (\d+)/.exec(campaign.body)![1]!;
    const quest = await post('/console/operator/quests', {
      ownerId: owner.id,
      campaignId,
      name: 'In spring',
      totalPoints: '1000',
      expectedPointsPerCompletion: '10',
      ...window,
    });
    expect(quest.body).toContain('created with id');
    const [row] = await t.sql<{ campaign_id: number }[]>`select campaign_id from quests where name = 'In spring'`;
    expect(row!.campaign_id).toBe(Number(campaignId));

    const a = '0x52908400098527886E0F7030069857D2E4169EE7';
    const b = '0xde709f2102306220921060314715629080e2fb77';
    const imported = await t.app.inject({
      method: 'POST',
      url: '/console/operator/accounts/import',
      headers: { cookie: cookie!, 'content-type': 'text/csv', 'x-csrf-token': csrf },
      payload: `address\n${a}\n${b},x\nnot-an-address\n${a}\n`,
    });
    expect(imported.statusCode).toBe(200);
    expect(imported.json()).toMatchObject({ created: 2, invalid: 1, invalidRows: [{ line: 4 }] });
    const refused = await t.app.inject({
      method: 'POST',
      url: '/console/operator/accounts/import',
      headers: { cookie: cookie!, 'content-type': 'text/csv' },
      payload: `${a}\n`,
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().code).toBe('VALIDATION_FAILED');
  });
});
