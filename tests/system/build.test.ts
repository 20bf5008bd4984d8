import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminSourceDirs, bundleIsFresh } from '../../apps/admin/bin/fresh.js';
import { post, REPO_ROOT, type ServiceProcess, type System, seed, startProcess, startSystem, testAddress } from '@quest/testing';

/**
 * `npm start` runs the esbuild bundles (scripts/build.mjs) with plain node: build them and run a
 * real allocation through them, so the production start path cannot rot unnoticed.
 */
let system: System;
let bundledWorker: ServiceProcess | undefined;

beforeAll(async () => {
  await promisify(execFile)(process.execPath, ['scripts/build.mjs'], { cwd: REPO_ROOT });
  system = await startSystem({ workers: 0, partitions: 2 });
  await system.api.stop('SIGTERM');
  const api = await startProcess(
    'apps/api/dist/server.mjs',
    { ...system.env, PORT: '0' },
    /Server listening at http:\/\/127\.0\.0\.1:\d+/,
  );
  system.api = api;
  system.baseUrl = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(api.output())![1]!;
  bundledWorker = await startProcess('apps/worker/dist/main.mjs', system.env, '"worker started"');
});
afterAll(async () => {
  await bundledWorker?.stop('SIGKILL');
  await system?.stop();
});

describe('the bundled api, worker and quest-admin', () => {
  it('migrate, serve, allocate and shut down gracefully', async () => {
    const { apiKey, questIds, accounts } = await seed(system, { quests: 1, total: 50 });
    const ok = await post(
      system,
      `/quests/${questIds[0]}`,
      { points: 20, address: accounts[0]!.toLowerCase() },
      { 'x-api-key': apiKey },
    );
    expect(ok.status).toBe(200);
    expect(ok.body.payout).toMatchObject({ amount: 20, account: { pass: accounts[0] } });
    const unknown = await post(
      system,
      `/quests/${questIds[0]}`,
      { points: 1, address: testAddress(0xfeedbeef) },
      { 'x-api-key': apiKey },
    );
    expect(unknown.body.code).toBe('ACCOUNT_NOT_FOUND');
    const docs = await fetch(`${system.baseUrl}/docs/static/index.html`);
    expect(docs.status).toBe(200);
    // quest-admin's launcher runs the fresh bundle (dist/cli.mjs) rather than the TypeScript.
    const cli = await promisify(execFile)(process.execPath, ['apps/admin/bin/quest-admin.js', '--version'], { cwd: REPO_ROOT });
    expect(cli.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(bundleIsFresh(join(REPO_ROOT, 'apps/admin/dist/cli.mjs'), adminSourceDirs(REPO_ROOT))).toBe(true);
    expect(await bundledWorker!.stop('SIGTERM')).toBe(0);
    expect(await system.api.stop('SIGTERM')).toBe(0);
  });
});
