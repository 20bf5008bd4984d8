import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { loadEnvironment } from './env-file.ts';

/**
 * Webhooks on a developer's machine in one step: the two settings the API and the worker need to
 * take endpoints at `http://127.0.0.1:…` — a fresh `WEBHOOK_SECRET_KEY` and
 * `WEBHOOK_ALLOW_PRIVATE_URLS=true` — appended to the `.env` both read (created at the project root
 * when there is none). A setting already given (in the file or the environment) is kept: a second
 * key would make the endpoints' stored secrets unreadable.
 */

export interface LocalWebhookSetup {
  /** The env file written (or that would have been). */
  file: string;
  /** Names of the settings appended to it. */
  added: string[];
  /** Names already set, left as they are. */
  kept: string[];
}

/** Where a new `.env` goes: the project root (the directory holding package-lock.json), else `cwd`. */
export function projectEnvFile(cwd: string): string {
  let dir = resolve(cwd);
  for (;;) {
    if (existsSync(join(dir, 'package-lock.json'))) return join(dir, '.env');
    const parent = dirname(dir);
    if (parent === dir) return join(resolve(cwd), '.env');
    dir = parent;
  }
}

export function setUpLocalWebhooks(source: Record<string, string | undefined>, cwd: string): LocalWebhookSetup {
  const loaded = loadEnvironment(source, cwd);
  const file = loaded.file ?? projectEnvFile(cwd);
  const wanted: [string, () => string][] = [
    ['WEBHOOK_SECRET_KEY', () => randomBytes(32).toString('hex')],
    ['WEBHOOK_ALLOW_PRIVATE_URLS', () => 'true'],
  ];
  const isSet = (name: string) => (loaded.env[name] ?? '') !== '';
  const added = wanted.filter(([name]) => !isSet(name));
  const kept = wanted.filter(([name]) => isSet(name)).map(([name]) => name);
  if (added.length > 0) {
    const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
    const lines = [
      '# Webhooks on this machine (npx quest-admin webhooks local): the key encrypts the endpoints',
      '# signing secrets; private URLs let endpoints be http://127.0.0.1:… (never in production).',
      ...added.map(([name, value]) => `${name}=${value()}`),
    ];
    const separator = text === '' || text.endsWith('\n') ? '' : '\n';
    // Created readable by its owner only: it holds a key.
    appendFileSync(file, `${separator}${text === '' ? '' : '\n'}${lines.join('\n')}\n`, { mode: 0o600 });
  }
  return { file, added: added.map(([name]) => name), kept };
}
