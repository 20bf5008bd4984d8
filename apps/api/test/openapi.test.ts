import { ERROR_CODES } from '@quest/domain';
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
interface OperationObject {
  operationId?: string;
  security?: unknown;
  parameters?: { name: string; in: string; required: boolean; schema: SchemaObject }[];
  responses: Record<string, { description: string; content: Record<string, { schema: SchemaObject }> }>;
}
const op = (path: string) => doc.paths[path]!.get as OperationObject;
const errorRef = { $ref: '#/components/schemas/ErrorResponse' };

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1, served at GET /openapi.json and /docs/json, generated from the route schemas', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(doc.openapi).toBe('3.1.0');
    const docsJson = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(docsJson.json()).toEqual(res.json());
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
    expect(schemas.ErrorResponse!.properties.code!.enum).toEqual([...ERROR_CODES]);
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
});
