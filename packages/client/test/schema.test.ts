import { describe, expect, it } from 'vitest';
import { servedOpenApiDocument } from '../../../apps/api/test/helpers.ts';
import { schemaSource } from '../scripts/schema.ts';

describe('generated/openapi.ts', () => {
  it('is what openapi-typescript makes of the served document (regenerate: npm run generate --workspace @quest/client)', async () => {
    const source = await schemaSource(await servedOpenApiDocument());
    await expect(source).toMatchFileSnapshot('../generated/openapi.ts');
  }, 60_000);
});
