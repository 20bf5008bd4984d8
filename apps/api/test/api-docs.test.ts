import { readFile } from 'node:fs/promises';
import { ERROR_CODES, STATUS_BY_CODE } from '@quest/domain';
import { beforeAll, describe, expect, it } from 'vitest';
import { servedOpenApiDocument } from './helpers.ts';

/**
 * docs/api.md stays true to the code: its error table and its curl lines (which
 * tests/docs/commands.test.ts runs).
 */

let api: string;

beforeAll(async () => {
  api = await readFile(new URL('../../../docs/api.md', import.meta.url), 'utf8');
});

describe('docs/api.md', () => {
  it('lists exactly the error codes the service emits, each with the status it is answered with', () => {
    const errors = api.slice(api.indexOf('\n## Errors\n'));
    const rows = errors.split('\n').filter((line) => line.startsWith('| `'));
    const listed: [string, number][] = rows.flatMap((row) => {
      const [, codes, status] = row.split('|');
      return [...codes!.matchAll(/`([A-Z_]+)`/g)].map((m): [string, number] => [m[1]!, Number(status!.trim())]);
    });
    expect(listed.map(([code]) => code).sort()).toEqual([...ERROR_CODES].sort());
    expect(Object.fromEntries(listed)).toEqual(STATUS_BY_CODE);
  });

  it('shows a curl line for every documented operation', async () => {
    const doc = (await servedOpenApiDocument()) as { paths: Record<string, Record<string, unknown>> };
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const method of Object.keys(operations)) {
        const pattern = path.replace(/\{[^}]+\}/g, '[^ "?/]+');
        const post = method === 'post' ? '-X POST ' : '';
        expect(api, `${method} ${path}`).toMatch(new RegExp(`curl -sS ${post}"\\$BASE${pattern}[?"]`));
      }
    }
  });

  it('says how an API key is obtained', () => {
    expect(api).toContain('npx quest-admin owner create --name');
    expect(api).toContain('npx quest-admin key create --owner');
  });
});
