import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { adminSourceDirs, bundleIsFresh } from '../bin/fresh.js';

/** The launcher runs dist/cli.mjs only while no source it is built from is newer. */
describe('quest-admin launcher: bundle or TypeScript', () => {
  let root: string;
  const at = (path: string, seconds: number) => utimesSync(path, seconds, seconds);
  const setup = () => {
    root = mkdtempSync(join(tmpdir(), 'quest-launcher-'));
    for (const dir of ['apps/admin/src/commands', 'apps/admin/dist', 'packages/domain/src', 'packages/db/src']) {
      mkdirSync(join(root, dir), { recursive: true });
    }
    const files = {
      cli: join(root, 'apps/admin/src/commands/credit.ts'),
      domain: join(root, 'packages/domain/src/ids.ts'),
      db: join(root, 'packages/db/src/ledger.ts'),
      notes: join(root, 'packages/db/src/README.md'),
      bundle: join(root, 'apps/admin/dist/cli.mjs'),
    };
    for (const f of Object.values(files)) writeFileSync(f, '');
    for (const f of Object.values(files)) at(f, 1_000);
    return files;
  };
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('uses the bundle when it is at least as new as every source', () => {
    const f = setup();
    at(f.bundle, 2_000);
    expect(bundleIsFresh(f.bundle, adminSourceDirs(root))).toBe(true);
  });

  it('falls back to the TypeScript when a source of the CLI or of any workspace package is newer', () => {
    const f = setup();
    at(f.bundle, 2_000);
    at(f.cli, 3_000);
    expect(bundleIsFresh(f.bundle, adminSourceDirs(root))).toBe(false);
    at(f.cli, 1_000);
    at(f.db, 3_000);
    expect(bundleIsFresh(f.bundle, adminSourceDirs(root))).toBe(false);
  });

  it('ignores files that are not TypeScript, and falls back when there is no bundle', () => {
    const f = setup();
    at(f.bundle, 2_000);
    at(f.notes, 3_000);
    expect(bundleIsFresh(f.bundle, adminSourceDirs(root))).toBe(true);
    rmSync(f.bundle);
    expect(bundleIsFresh(f.bundle, adminSourceDirs(root))).toBe(false);
  });
});
