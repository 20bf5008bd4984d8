import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { CONFIGURATION_DOC, renderConfigurationDoc } from '../../scripts/config-docs.ts';

const read = (path: string) => readFile(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('docs/configuration.md', () => {
  it('is what `npm run docs:config` generates from the env schemas (run it after changing a schema)', async () => {
    expect(await readFile(CONFIGURATION_DOC, 'utf8')).toBe(renderConfigurationDoc());
  });

  it('documents every variable .env.example names', async () => {
    const page = renderConfigurationDoc();
    const documented = new Set([...page.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]));
    const example = await read('.env.example');
    const named = [...example.matchAll(/^#? ?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(10);
    expect(named.filter((name) => !documented.has(name))).toEqual([]);
  });
});
