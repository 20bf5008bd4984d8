import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadEnvironment } from './env-file.ts';
import { setUpLocalWebhooks } from './local-webhooks.ts';
import { parseSecretKey } from './vars.ts';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'quest-local-webhooks-'));
  await writeFile(join(root, 'package-lock.json'), '{}');
  await mkdir(join(root, 'apps', 'api'), { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('setUpLocalWebhooks', () => {
  it('creates the project .env with a fresh key and private URLs, which every process then reads', async () => {
    const done = setUpLocalWebhooks({}, join(root, 'apps', 'api'));
    expect(done).toEqual({ file: join(root, '.env'), added: ['WEBHOOK_SECRET_KEY', 'WEBHOOK_ALLOW_PRIVATE_URLS'], kept: [] });
    expect((await stat(done.file)).mode & 0o777).toBe(0o600);
    const { env } = loadEnvironment({}, join(root, 'apps', 'api'));
    expect(parseSecretKey(env.WEBHOOK_SECRET_KEY!)).toHaveLength(32);
    expect(env.WEBHOOK_ALLOW_PRIVATE_URLS).toBe('true');
  });

  it('appends to an existing .env, keeping its lines, and a second run changes nothing', async () => {
    await writeFile(join(root, '.env'), 'PORT=3917');
    expect(setUpLocalWebhooks({}, root).added).toHaveLength(2);
    const text = await readFile(join(root, '.env'), 'utf8');
    expect(text.startsWith('PORT=3917\n\n# Webhooks on this machine')).toBe(true);
    expect(setUpLocalWebhooks({}, root)).toMatchObject({ added: [], kept: ['WEBHOOK_SECRET_KEY', 'WEBHOOK_ALLOW_PRIVATE_URLS'] });
    expect(await readFile(join(root, '.env'), 'utf8')).toBe(text);
  });

  it('never adds a second key: one set in the environment or the file is kept', async () => {
    const key = 'ab'.repeat(32);
    expect(setUpLocalWebhooks({ WEBHOOK_SECRET_KEY: key }, root)).toMatchObject({
      added: ['WEBHOOK_ALLOW_PRIVATE_URLS'],
      kept: ['WEBHOOK_SECRET_KEY'],
    });
    expect(await readFile(join(root, '.env'), 'utf8')).not.toContain('WEBHOOK_SECRET_KEY=');
  });
});
