import { createClient } from '@hey-api/openapi-ts';
await createClient({ input: '/tmp/wt15a/doc1.json', output: { path: '/tmp/wt15a/gen' }, logs: { level: 'silent' } } as never);
