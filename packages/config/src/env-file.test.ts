import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from './errors.ts';
import { findEnvFile, loadEnvironment } from './env-file.ts';

let root: string;
beforeEach(() => {
  // A project root (it has the lockfile) inside a directory that has a .env of its own, which
  // must never be read from inside the project.
  const outer = mkdtempSync(join(tmpdir(), 'quest-env-'));
  writeFileSync(join(outer, '.env'), 'OUTSIDE=1\n');
  root = join(outer, 'project');
  mkdirSync(join(root, 'apps', 'api'), { recursive: true });
  writeFileSync(join(root, 'package-lock.json'), '{}');
});
afterEach(() => {
  rmSync(join(root, '..'), { recursive: true, force: true });
});

describe('findEnvFile', () => {
  it('finds the project .env from the root and from a workspace below it', () => {
    writeFileSync(join(root, '.env'), 'PORT=3917\n');
    expect(findEnvFile(root)).toBe(join(root, '.env'));
    expect(findEnvFile(join(root, 'apps', 'api'))).toBe(join(root, '.env'));
  });

  it('prefers the nearest .env, and stops at the project root', () => {
    expect(findEnvFile(join(root, 'apps', 'api'))).toBeNull();
    writeFileSync(join(root, 'apps', 'api', '.env'), 'PORT=1\n');
    expect(findEnvFile(join(root, 'apps', 'api'))).toBe(join(root, 'apps', 'api', '.env'));
  });
});

describe('loadEnvironment', () => {
  it('fills in only what the real environment leaves unset', () => {
    writeFileSync(
      join(root, '.env'),
      [
        '# comment',
        'PORT=3917',
        'DATABASE_URL="postgres://u:p@db:5432/q"',
        'export REDIS_URL=redis://cache:6379',
        'LOG_LEVEL=debug',
        'EMPTY_IN_ENV=from-file',
      ].join('\n'),
    );
    const source = { LOG_LEVEL: 'warn', EMPTY_IN_ENV: '', OTHER: 'x' };
    const loaded = loadEnvironment(source, join(root, 'apps', 'api'));
    expect(loaded.file).toBe(join(root, '.env'));
    expect(loaded.env).toEqual({
      PORT: '3917',
      DATABASE_URL: 'postgres://u:p@db:5432/q',
      REDIS_URL: 'redis://cache:6379',
      LOG_LEVEL: 'warn',
      EMPTY_IN_ENV: '',
      OTHER: 'x',
    });
    expect(loaded.fromFile.sort()).toEqual(['DATABASE_URL', 'PORT', 'REDIS_URL']);
    // The caller's object is not modified.
    expect(source).toEqual({ LOG_LEVEL: 'warn', EMPTY_IN_ENV: '', OTHER: 'x' });
  });

  it('returns the environment unchanged when there is no file', () => {
    expect(loadEnvironment({ A: '1' }, root)).toEqual({ env: { A: '1' }, file: null, fromFile: [] });
  });

  it('reads ENV_FILE instead (relative to the working directory); /dev/null reads nothing', () => {
    writeFileSync(join(root, '.env'), 'PORT=1\n');
    writeFileSync(join(root, 'staging.env'), 'PORT=4000\n');
    const staging = loadEnvironment({ ENV_FILE: 'staging.env' }, root);
    expect(staging.file).toBe(join(root, 'staging.env'));
    expect(staging.env.PORT).toBe('4000');
    const none = loadEnvironment({ ENV_FILE: '/dev/null' }, root);
    expect(none.env).toEqual({ ENV_FILE: '/dev/null' });
  });

  it('refuses an ENV_FILE that cannot be read, naming it', () => {
    expect(() => loadEnvironment({ ENV_FILE: 'missing.env' }, root)).toThrow(ConfigError);
    expect(() => loadEnvironment({ ENV_FILE: 'missing.env' }, root)).toThrow(
      `ENV_FILE: cannot read ${join(root, 'missing.env')}: ENOENT`,
    );
  });
});
