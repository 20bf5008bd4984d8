import { ERROR_CODES, type ErrorCode, STATUS_BY_CODE } from '@quest/domain';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers.ts';

let t: TestApp;
type Doc = TestApp['contract']['doc'];
let doc: Doc;

beforeAll(async () => {
  t = await startTestApp();
  doc = t.contract.doc;
});
afterAll(async () => {
  await t.close();
});

const READ_OPERATIONS = {
  '/quests': 'listPublicQuests',
  '/quests/{questId}': 'getQuest',
  '/campaigns/{id}': 'getCampaign',
  '/healthz': 'getHealth',
  '/readyz': 'getReadiness',
} as const;

interface SchemaObject {
  type?: unknown;
  properties?: Record<string, SchemaObject>;
  required?: string[];
  additionalProperties?: unknown;
  enum?: unknown[];
  anyOf?: unknown[];
  pattern?: string;
}
interface MediaObject {
  schema: SchemaObject;
  example?: unknown;
  examples?: Record<string, { summary?: string; value: { statusCode: number; code: ErrorCode } }>;
}
interface ResponseObject {
  description: string;
  headers?: Record<string, { required?: boolean; schema: SchemaObject & { $ref?: string } }>;
  content: Record<string, MediaObject>;
}
interface OperationObject {
  operationId?: string;
  security?: unknown;
  parameters?: { name: string; in: string; required: boolean; schema: SchemaObject }[];
  responses: Record<string, ResponseObject>;
}
const op = (path: string) => doc.paths[path]!.get as OperationObject;
const errorRef = { $ref: '#/components/schemas/ErrorResponse' };

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1, served at GET /openapi.json (/docs/json redirects there), generated from the route schemas', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(doc.openapi).toBe('3.1.0');
    const docsJson = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(docsJson.statusCode).toBe(301);
    expect(docsJson.headers.location).toBe('/openapi.json');
    const initializer = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    expect(initializer.body).toContain("url: resolveUrl('../openapi.json')");
  });

  it('writes the examples with the address the request reached, not a fixed one', async () => {
    const base = (host: string) => {
      const description = async () =>
        (await t.app.inject({ method: 'GET', url: '/openapi.json', headers: { host } })).json().info.description as string;
      return description().then((d) => /BASE=(\S+)/.exec(d)?.[1]);
    };
    expect(await base('api.example.com:3917')).toBe('http://api.example.com:3917');
    expect(await base('[::1]:8080')).toBe('http://[::1]:8080');
    // A Host header that is not a host keeps the written example.
    expect(await base('evil"><script>')).toBe('http://127.0.0.1:3000');
  });

  it('serves the interactive docs at /docs', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('swagger');
  });

  it('documents every read operation, and hides the documentation routes themselves', () => {
    for (const [path, operationId] of Object.entries(READ_OPERATIONS)) expect(op(path).operationId).toBe(operationId);
    for (const hidden of ['/openapi.json', '/docs', '/docs/json']) expect(doc.paths).not.toHaveProperty(hidden);
  });

  it('documents the apiKey security scheme (header x-api-key) and where it applies', () => {
    expect(doc.components.securitySchemes).toEqual({
      apiKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'x-api-key' }),
    });
    expect(op('/quests/{questId}').security).toEqual([{ apiKey: [] }]);
    for (const path of ['/quests', '/campaigns/{id}', '/healthz', '/readyz']) expect(op(path).security).toEqual([]);
  });

  it('documents parameters as integers with their bounds and defaults', () => {
    const params = Object.fromEntries(op('/quests/{questId}').parameters!.map((p) => [p.name, p]));
    expect(params.questId).toMatchObject({
      in: 'path',
      required: true,
      schema: { type: 'integer', minimum: 1, maximum: 2147483647 },
    });
    expect(params.limit).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    });
    expect(params.offset).toMatchObject({ in: 'query', required: false, schema: { type: 'integer', minimum: 0, default: 0 } });
    const listParams = Object.fromEntries(op('/quests').parameters!.map((p) => [p.name, p]));
    expect(listParams.owner).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' },
    });
    expect(Object.keys(listParams).sort()).toEqual(['limit', 'offset', 'owner']);
    const campaignParams = op('/campaigns/{id}').parameters!;
    expect(campaignParams).toEqual([
      expect.objectContaining({ name: 'id', in: 'path', required: true, schema: expect.objectContaining({ type: 'integer' }) }),
    ]);
  });

  it('documents each status with a JSON schema, error statuses with the envelope', () => {
    const expected: Record<string, { ok: string; errors: string[] }> = {
      '/quests/{questId}': { ok: 'QuestDetail', errors: ['400', '401', '404', '429', '500', '503'] },
      '/quests': { ok: '', errors: ['400', '429', '500', '503'] },
      '/campaigns/{id}': { ok: 'Campaign', errors: ['400', '404', '429', '500', '503'] },
      '/readyz': { ok: 'Readiness', errors: ['429', '500', '503'] },
    };
    for (const [path, { ok, errors }] of Object.entries(expected)) {
      const responses = op(path).responses;
      expect(Object.keys(responses).sort(), path).toEqual(['200', ...errors].sort());
      const okSchema = responses['200']!.content['application/json']!.schema;
      if (ok) expect(okSchema).toEqual({ $ref: `#/components/schemas/${ok}` });
      for (const status of errors) {
        expect(responses[status]!.content['application/json']!.schema, `${path} ${status}`).toEqual(errorRef);
        expect(responses[status]!.description.length).toBeGreaterThan(3);
      }
    }
    expect(op('/quests').responses['200']!.content['application/json']!.schema).toMatchObject({
      type: 'array',
      items: { $ref: '#/components/schemas/PublicQuest' },
    });
  });

  it('names the views of the spec as components, with exactly the spec fields, all required, nothing extra', () => {
    const fields: Record<string, string[]> = {
      QuestDetail: ['id', 'name', 'description', 'total_points', 'points_remaining', 'start', 'end', 'is_active', 'payouts'],
      PublicQuest: ['id', 'name', 'description', 'total_points', 'expected_points_per_completion', 'start', 'end', 'campaign'],
      Campaign: [
        'id',
        'created_at',
        'updated_at',
        'name',
        'description',
        'start',
        'end',
        'is_active',
        'external_app_id',
        'quests',
      ],
      CampaignQuest: [
        'id',
        'name',
        'created_at',
        'updated_at',
        'description',
        'start',
        'end',
        'is_public',
        'total_points',
        'expected_points_per_completion',
        'owner_id',
        'campaign_id',
      ],
      Payout: ['id', 'amount', 'created_at', 'account'],
      ErrorResponse: ['statusCode', 'error', 'code', 'message', 'requestId', 'details'],
    };
    const schemas = doc.components.schemas as Record<string, Required<SchemaObject>>;
    for (const [name, props] of Object.entries(fields)) {
      expect(Object.keys(schemas[name]!.properties), name).toEqual(props);
      expect(schemas[name]!.additionalProperties, name).toBe(false);
      expect(schemas[name]!.required, name).toEqual(props.filter((p) => p !== 'details'));
    }
    expect(schemas.ErrorResponse!.properties.code).toEqual({ $ref: '#/components/schemas/ErrorCode' });
    expect((schemas.ErrorCode as SchemaObject).enum).toEqual([...ERROR_CODES]);
    expect(schemas.Campaign!.properties.external_app_id!.type).toEqual(['string', 'null']);
    expect(schemas.PublicQuest!.properties.campaign!.anyOf).toEqual([
      { $ref: '#/components/schemas/CampaignSummary' },
      { type: 'null' },
    ]);
    for (const ts of ['created_at', 'updated_at']) expect(schemas.Campaign!.properties[ts]!.pattern).toContain('\\.\\d{3}');
  });

  it('lists only components the paths use (no unused …Input twins)', () => {
    const names = Object.keys(doc.components.schemas);
    const text = JSON.stringify(doc.paths) + JSON.stringify(doc.components.schemas);
    for (const name of names) expect(text, name).toContain(`#/components/schemas/${name}"`);
  });

  it('the contract check rejects a body that does not match the document', () => {
    const fake = (statusCode: number, body: unknown) =>
      ({
        statusCode,
        headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r1' },
        body: JSON.stringify(body),
        json: () => body,
      }) as unknown as LightMyRequestResponse;
    expect(() => t.contract.check('GET', '/quests', fake(200, [{ id: 1 }]))).toThrow(/does not match/);
    expect(() => t.contract.check('GET', '/campaigns/1', fake(418, {}))).toThrow(/not documented/);
    expect(() =>
      t.contract.check(
        'GET',
        '/quests/1',
        fake(404, { statusCode: 404, error: 'Not Found', code: 'NOPE', message: 'x', requestId: 'r1' }),
      ),
    ).toThrow(/does not match/);
    expect(() =>
      t.contract.check(
        'GET',
        '/quests/1',
        fake(404, { statusCode: 404, error: 'Not Found', code: 'QUEST_NOT_FOUND', message: 'x', requestId: 'r1' }),
      ),
    ).not.toThrow();
  });

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops as Record<string, OperationObject>).map(([method, o]) => ({ where: `${method} ${path}`, o })),
    );

  it('states a version, an MIT license and a server relative to where it is served', () => {
    const info = (doc as unknown as { info: { version: string; license: unknown; description: string } }).info;
    expect(info.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(info.license).toEqual({ name: 'MIT', identifier: 'MIT' });
    expect((doc as unknown as { servers: unknown }).servers).toEqual([{ url: '/', description: expect.any(String) }]);
    // How a key is obtained, and a curl line per operation.
    expect(info.description).toContain('quest-admin owner create --name');
    expect(info.description).toContain('quest-admin key create --owner');
    for (const { where } of operations()) {
      const [method, path] = where.split(' ') as [string, string];
      const curlPath = path.replace(/\{[^}]+\}/g, '[^ "?]+');
      const post = method === 'post' ? '-X POST ' : '';
      expect(info.description, where).toMatch(new RegExp(`curl -sS ${post}"?\\$BASE${curlPath}[?" ]`));
    }
  });

  it('describes every response in its own words, never "Default Response"; 200 and 202 differently', () => {
    for (const { where, o } of operations()) {
      for (const [status, response] of Object.entries(o.responses)) {
        expect(response.description, `${where} ${status}`).not.toBe('Default Response');
        expect(response.description.length, `${where} ${status}`).toBeGreaterThan(10);
      }
      if (o.responses['202']) expect(o.responses['202'].description, where).not.toBe(o.responses['200']!.description);
    }
  });

  it('gives every response an example; each error example carries a code answered with that status', () => {
    for (const { where, o } of operations()) {
      for (const [status, response] of Object.entries(o.responses)) {
        const media = response.content['application/json']!;
        if (Number(status) < 400) {
          expect(media.example, `${where} ${status}`).toBeDefined();
          continue;
        }
        const examples = Object.values(media.examples ?? {});
        expect(examples.length, `${where} ${status}`).toBeGreaterThan(0);
        for (const { value } of examples) {
          expect(value.statusCode, `${where} ${status} ${value.code}`).toBe(Number(status));
          expect(STATUS_BY_CODE[value.code], `${where} ${status} ${value.code}`).toBe(Number(status));
        }
        // The codes the description names are exactly the codes of the examples.
        const named = new Set(response.description.match(/\b[A-Z][A-Z_]+[A-Z]\b/g)?.filter((w) => w in STATUS_BY_CODE));
        expect(new Set(examples.map((e) => e.value.code)), `${where} ${status}`).toEqual(named);
      }
    }
  });

  it('answers 200 and 202 with named components: PayoutResponse, AllocationResponse, BatchResponse', () => {
    const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
    const body = (path: string, method: 'get' | 'post', status: string) =>
      (doc.paths[path] as Record<string, OperationObject>)[method]!.responses[status]!.content['application/json']!.schema;
    expect(body('/quests/{questId}', 'post', '200')).toEqual(ref('PayoutResponse'));
    expect(body('/quests/{questId}', 'post', '202')).toEqual(ref('AllocationResponse'));
    expect(body('/quests/{questId}/allocations/{allocationId}', 'get', '200')).toEqual(ref('AllocationResponse'));
    for (const status of ['200', '202']) expect(body('/quests/{questId}/batches', 'post', status)).toEqual(ref('BatchResponse'));
    expect(body('/quests/{questId}/batches/{batchId}', 'get', '200')).toEqual(ref('BatchResponse'));
    const schemas = doc.components.schemas as Record<string, Required<SchemaObject>>;
    expect(schemas.AllocationResponse!.properties.allocation).toEqual(ref('Allocation'));
    expect(schemas.BatchResponse!.properties.batch).toEqual(ref('Batch'));
    expect(schemas.Batch!.properties.results).toMatchObject({ items: ref('BatchResult') });
    expect(schemas.Batch!.properties.created_at).toMatchObject({ type: 'string', format: 'date-time' });
    // Result errors use the code enum.
    expect(schemas.Allocation!.properties.error).toMatchObject(ref('OutcomeError'));
    expect(schemas.BatchResult!.properties.error).toMatchObject(ref('OutcomeError'));
    expect((schemas.OutcomeError as Required<SchemaObject>).properties.code).toEqual(ref('ErrorCode'));
  });

  it('documents the Location of every 202 (required), Idempotent-Replayed on the POSTs, x-request-id everywhere', () => {
    for (const { where, o } of operations()) {
      for (const [status, response] of Object.entries(o.responses)) {
        expect(response.headers?.['x-request-id']?.required, `${where} ${status}`).toBe(true);
        if (status === '202') expect(response.headers?.Location).toMatchObject({ required: true });
        if (status === '429' || status === '503') expect(response.headers?.['Retry-After'], `${where} ${status}`).toBeDefined();
      }
    }
    for (const path of ['/quests/{questId}', '/quests/{questId}/batches']) {
      const post = (doc.paths[path] as Record<string, OperationObject>).post!;
      expect(post.responses['200']!.headers?.['Idempotent-Replayed']?.schema).toEqual({ type: 'string', enum: ['true'] });
    }
    expect((doc.components.schemas.StatusUrl as { format: string }).format).toBe('uri-reference');
  });

  it('bounds every integer (no −2^53 counters or amounts) and formats every timestamp as date-time', () => {
    const visit = (schema: unknown, where: string): void => {
      if (Array.isArray(schema)) {
        for (const [i, item] of schema.entries()) visit(item, `${where}[${i}]`);
        return;
      }
      if (typeof schema !== 'object' || schema === null) return;
      const s = schema as Record<string, unknown> & { properties?: Record<string, Record<string, unknown>> };
      if (s.type === 'integer') expect(typeof (s.minimum ?? s.exclusiveMinimum), where).toBe('number');
      for (const [name, prop] of Object.entries(s.properties ?? {})) {
        if (/_at$|^(start|end)$/.test(name) && prop.type !== undefined) expect(prop.format, `${where}.${name}`).toBe('date-time');
        if (/_at$/.test(name) && prop.anyOf)
          expect(prop.anyOf, `${where}.${name}`).toContainEqual(expect.objectContaining({ format: 'date-time' }));
      }
      for (const [key, value] of Object.entries(s)) if (key !== 'example' && key !== 'examples') visit(value, `${where}.${key}`);
    };
    visit(doc.components.schemas, 'components');
    visit(doc.paths, 'paths');
  });
});
