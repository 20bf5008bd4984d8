import { STATUS_CODES } from 'node:http';
import { DEFAULT_MESSAGE, type ErrorCode, type ErrorResponse, errorResponseSchema, STATUS_BY_CODE } from '@quest/domain';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';

/**
 * How the OpenAPI document is made beyond what the route schemas say by themselves: response
 * descriptions, headers and examples (which the zod transform does not carry), the error
 * responses with one example per code, and the document-wide parts (servers, license, the
 * headers every answer carries). Served at GET /openapi.json and rendered at /docs.
 */

/** The API version the document states (info.version). */
export const API_VERSION = '1.0.0';

/** An OpenAPI Header Object (schema as JSON Schema). */
export interface HeaderDoc {
  description: string;
  schema: Record<string, unknown>;
  required?: boolean;
}

/** An OpenAPI Example Object. */
export interface ExampleDoc {
  summary?: string;
  value: unknown;
}

/** A response entry of a route schema: a zod schema under `content`, with documentation around it. */
export interface ResponseDoc<S> {
  description: string;
  content: { 'application/json': { schema: S; example?: unknown; examples?: Record<string, ExampleDoc> } };
  headers?: Record<string, HeaderDoc>;
}

/** A documented success response (see ResponseDoc). */
export function documented<S>(
  schema: S,
  doc: { description: string; example?: unknown; headers?: Record<string, HeaderDoc> },
): ResponseDoc<S> {
  const media: ResponseDoc<S>['content']['application/json'] = { schema };
  if (doc.example !== undefined) media.example = doc.example;
  const response: ResponseDoc<S> = { description: doc.description, content: { 'application/json': media } };
  if (doc.headers) response.headers = doc.headers;
  return response;
}

// ---------------------------------------------------------------------------------------------
// Headers
// ---------------------------------------------------------------------------------------------

/** The request id used in every example. */
export const EXAMPLE_REQUEST_ID = '5b0e7f0a-3c1d-4f8e-9a52-1c7d2e6b9f40';

/**
 * The value of a 202's Location header, as a named schema: generators that do not type response
 * headers (e.g. @hey-api/openapi-ts) still give clients a `StatusUrl` type for it.
 */
const STATUS_URL_SCHEMA = {
  type: 'string',
  format: 'uri-reference',
  description:
    'The status URL of an allocation or batch, relative to the server: `/quests/{questId}/allocations/{allocationId}` ' +
    'or `/quests/{questId}/batches/{batchId}`. Sent in the Location header of a 202.',
  examples: ['/quests/7/allocations/alc_01jf8q4g0x7m3r6v2k9d1n5bta'],
};

export const LOCATION_HEADER: HeaderDoc = {
  description: 'Where to poll for the outcome: the status URL of this allocation or batch, relative to the server.',
  required: true,
  schema: { $ref: '#/components/schemas/StatusUrl' },
};

export const PREFERENCE_APPLIED_HEADER: HeaderDoc = {
  description:
    'RFC 7240: `respond-async` when the request asked for it with `Prefer: respond-async` (this 202 came as soon as the batch was queued).',
  schema: { type: 'string', enum: ['respond-async'] },
};

export const IDEMPOTENT_REPLAYED_HEADER: HeaderDoc = {
  description:
    'Present, and `true`, when this answer replays an outcome decided earlier for the same Idempotency-Key ' +
    '(by an earlier request with that key) instead of deciding now; absent on an answer decided by this request. ' +
    'For a batch: the batch was created by an earlier request with this key, and this answer reports it (resuming it if it had stopped).',
  schema: { type: 'string', enum: ['true'] },
};

const REQUEST_ID_HEADER: HeaderDoc = {
  description: "The request id: the client's own `x-request-id` when sane (1–128 of `A-Za-z0-9._:-`), else a fresh UUID.",
  required: true,
  schema: { type: 'string', example: EXAMPLE_REQUEST_ID },
};

const RETRY_AFTER_HEADER: HeaderDoc = {
  description: 'Seconds to wait before retrying.',
  schema: { type: 'integer', minimum: 0, example: 1 },
};

const RATE_LIMIT_HEADERS: Record<string, HeaderDoc> = {
  'x-ratelimit-limit': {
    description: 'Requests (or allocation items) allowed per window.',
    schema: { type: 'integer', minimum: 0 },
  },
  'x-ratelimit-remaining': { description: 'What is left of the limit in this window.', schema: { type: 'integer', minimum: 0 } },
  'x-ratelimit-reset': { description: 'Seconds until the window resets.', schema: { type: 'integer', minimum: 0 } },
};

// ---------------------------------------------------------------------------------------------
// Error responses: the envelope, with one example per code the route can answer with that status
// ---------------------------------------------------------------------------------------------

/** An example answer with a more specific message or details than the code's default. */
export interface ErrorExample {
  code: ErrorCode;
  message?: string;
  details?: unknown;
  summary?: string;
}

/** Messages and details as the service really words them, for codes whose default says little. */
const TYPICAL: Partial<Record<ErrorCode, Omit<ErrorExample, 'code'>>> = {
  VALIDATION_FAILED: {
    message: 'Invalid request: body.points: Too small: expected number to be >=1',
    details: [{ location: 'body', path: 'points', code: 'too_small', message: 'Too small: expected number to be >=1' }],
  },
  ROUTE_NOT_FOUND: { message: 'No route GET /quest/7.' },
  RATE_LIMITED: { message: 'Rate limit exceeded; retry in 42 s.' },
  BATCH_TOO_LARGE: { message: 'A batch holds at most 10000 allocations; this one has 12000.' },
};

function exampleValue(status: number, spec: ErrorExample): ErrorResponse {
  const typical = TYPICAL[spec.code] ?? {};
  const body: ErrorResponse = {
    statusCode: status,
    error: STATUS_CODES[status] ?? 'Error',
    code: spec.code,
    message: spec.message ?? typical.message ?? DEFAULT_MESSAGE[spec.code],
    requestId: EXAMPLE_REQUEST_ID,
  };
  const details = 'details' in spec ? spec.details : typical.details;
  if (details !== undefined) body.details = details;
  return body;
}

type ErrorSpec = { description: string; codes: readonly (ErrorCode | ErrorExample)[]; headers?: Record<string, HeaderDoc> };

const STANDARD_ERRORS = {
  429: {
    description:
      'RATE_LIMITED: over a rate limit (per client address, API key, owner allocation items, or failed authentications; see the README). ' +
      'Retry-After says when to retry; x-ratelimit-limit, -remaining and -reset describe the limit.',
    codes: ['RATE_LIMITED'],
  },
  500: {
    description: 'INTERNAL_ERROR: unexpected server error (logged with the request id; the message never carries internals).',
    codes: ['INTERNAL_ERROR'],
  },
  503: {
    description: 'DATABASE_UNAVAILABLE: PostgreSQL is unreachable; retry later (Retry-After).',
    codes: ['DATABASE_UNAVAILABLE'],
  },
} as const satisfies Record<number, ErrorSpec>;

type ErrorResponseDoc = ResponseDoc<typeof errorResponseSchema>;

/**
 * Response-schema entries documenting the error statuses of a route: the envelope schema, a
 * description of when each happens, and an example per code listed (the first is the default).
 * 429, 500 and 503 are added unless given, or left out with `omit`. Throws when a code is listed
 * under a status it is never answered with, so the document cannot drift from STATUS_BY_CODE.
 */
export function errorResponses<const S extends number, const O extends keyof typeof STANDARD_ERRORS = never>(
  specs: Record<S, ErrorSpec>,
  opts: { omit?: readonly O[] } = {},
): Record<S | Exclude<keyof typeof STANDARD_ERRORS, O>, ErrorResponseDoc> {
  const all: Record<number, ErrorSpec> = { ...STANDARD_ERRORS, ...specs };
  for (const status of opts.omit ?? []) if (!(status in specs)) delete all[status];
  return Object.fromEntries(
    Object.entries(all).map(([key, spec]) => {
      const status = Number(key);
      const examples: Record<string, ExampleDoc> = {};
      for (const entry of spec.codes) {
        const example = typeof entry === 'string' ? { code: entry } : entry;
        if (STATUS_BY_CODE[example.code] !== status)
          throw new Error(`${example.code} is answered ${STATUS_BY_CODE[example.code]}, not ${status}`);
        let name: string = example.code;
        for (let n = 2; name in examples; n++) name = `${example.code}_${n}`;
        examples[name] = {
          summary: example.summary ?? DEFAULT_MESSAGE[example.code],
          value: exampleValue(status, example),
        };
      }
      const response: ErrorResponseDoc = {
        description: spec.description,
        content: { 'application/json': { schema: errorResponseSchema, examples } },
      };
      if (spec.headers) response.headers = spec.headers;
      return [status, response];
    }),
  ) as Record<S | Exclude<keyof typeof STANDARD_ERRORS, O>, ErrorResponseDoc>;
}

// ---------------------------------------------------------------------------------------------
// The transforms given to @fastify/swagger
// ---------------------------------------------------------------------------------------------

type RouteDocument = Parameters<typeof jsonSchemaTransform>[0];
type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * jsonSchemaTransform turns each response's zod schema into JSON Schema but keeps only the
 * description and schema of a `content` response: carry its headers and examples over too.
 */
export function transformRoute(route: RouteDocument): ReturnType<typeof jsonSchemaTransform> {
  const transformed = jsonSchemaTransform(route);
  const given = (route.schema as Json | undefined)?.response;
  const out = (transformed.schema as Json | undefined)?.response;
  if (!isObject(given) || !isObject(out)) return transformed;
  for (const [status, original] of Object.entries(given)) {
    const target = out[status];
    if (!isObject(original) || !isObject(target) || !isObject(original.content)) continue;
    if (original.headers) target.headers = original.headers;
    const content = target.content as Json;
    for (const [type, media] of Object.entries(original.content)) {
      if (!isObject(media) || !isObject(content[type])) continue;
      if (media.example !== undefined) content[type].example = media.example;
      if (media.examples !== undefined) content[type].examples = media.examples;
    }
  }
  return transformed;
}

type OpenApiDocument = ReturnType<typeof jsonSchemaTransformObject>;
interface DocumentShape {
  paths?: Record<string, Record<string, { responses?: Record<string, { headers?: Record<string, HeaderDoc> }> }>>;
  components?: { schemas?: Record<string, unknown> };
}

/**
 * The zod transform emits an `…Input` twin of every named schema; keep only the components the
 * paths reach, so the document lists what the API really uses.
 */
function pruneUnusedComponents(doc: DocumentShape): void {
  const schemas = doc.components?.schemas ?? {};
  const used = new Set<string>();
  const visit = (value: unknown): void => {
    const text = JSON.stringify(value);
    for (const match of text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      const name = match[1]!;
      if (!used.has(name)) {
        used.add(name);
        visit(schemas[name]);
      }
    }
  };
  visit(doc.paths);
  doc.components = { ...doc.components, schemas: Object.fromEntries(Object.entries(schemas).filter(([n]) => used.has(n))) };
}

/** The headers every answer carries, by status: x-request-id always; Retry-After and the limits where they apply. */
function addCommonHeaders(doc: DocumentShape): void {
  for (const operations of Object.values(doc.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const headers: Record<string, HeaderDoc> = { 'x-request-id': REQUEST_ID_HEADER };
        // @fastify/swagger takes a route's response headers for schemas and wraps each as
        // `{ description, schema: <given> }`: unwrap the HeaderDoc it was given.
        for (const [name, header] of Object.entries(response.headers ?? {})) {
          const inner = header.schema as Partial<HeaderDoc>;
          headers[name] = isObject(inner.schema) ? ({ description: header.description, ...inner } as HeaderDoc) : header;
        }
        if (status === '503') headers['Retry-After'] = RETRY_AFTER_HEADER;
        if (status === '429') Object.assign(headers, { 'Retry-After': RETRY_AFTER_HEADER }, RATE_LIMIT_HEADERS);
        response.headers = headers;
      }
    }
  }
}

/** transformObject: the zod components, pruned, and the document-wide parts. */
export function transformDocument(document: Parameters<typeof jsonSchemaTransformObject>[0]): OpenApiDocument {
  const doc = jsonSchemaTransformObject(document) as OpenApiDocument & DocumentShape;
  doc.components = { ...doc.components, schemas: { ...doc.components?.schemas, StatusUrl: STATUS_URL_SCHEMA } };
  pruneUnusedComponents(doc);
  addCommonHeaders(doc);
  return doc;
}

// ---------------------------------------------------------------------------------------------
// info.description: what a newcomer needs first (rendered as Markdown by /docs)
// ---------------------------------------------------------------------------------------------

export const API_DESCRIPTION = `Read quests and campaigns, and credit quest points to pass-address accounts — one at a time, or in batches — never lost, never doubled, never over a quest's budget.

## Getting an API key

The owner routes need the quest owner's API key in the \`x-api-key\` header. Keys are issued by the operator CLI on the server (it reads \`DATABASE_URL\`):

\`\`\`sh
npx quest-admin owner create --name "Acme Games" --pass 0x52908400098527886E0F7030069857D2E4169EE7
# → owner own_… and its first key sk_… (shown only this once)
npx quest-admin key create --owner own_01jf8q4g0x7m3r6v2k9d1n5bta   # another key for that owner
npx quest-admin demo                                                 # or: demo owner, key, quests, accounts and curl lines
\`\`\`

Quests belong to an owner (\`quest-admin quest create --owner own_… …\`); a key works on its owner's quests only. Press **Authorize** above to try the routes from this page.

## Examples

\`\`\`sh
BASE=http://127.0.0.1:3000 KEY=sk_…
curl -sS "$BASE/quests?limit=20"                                  # public quests
curl -sS "$BASE/campaigns/1"                                      # a campaign with its public quests
curl -sS "$BASE/quests/1?limit=20&offset=0" -H "x-api-key: $KEY"  # a quest and its payouts (owner)
curl -sS -X POST "$BASE/quests/1" -H "x-api-key: $KEY" -H 'content-type: application/json' \\
  -H 'Idempotency-Key: order-1234' -d '{"points":10,"address":"0x52908400098527886E0F7030069857D2E4169EE7"}'
curl -sS "$BASE/quests/1/allocations/alc_…" -H "x-api-key: $KEY"   # the status URL of a 202 (Location)
curl -sS -X POST "$BASE/quests/1/batches" -H "x-api-key: $KEY" -H 'content-type: application/json' \\
  -H 'Idempotency-Key: import-2026-03-01' -d '{"allocations":[{"address":"0x52908400098527886E0F7030069857D2E4169EE7","points":5}]}'
curl -sS "$BASE/quests/1/batches/bat_…?limit=100&offset=0" -H "x-api-key: $KEY"
curl -sS "$BASE/healthz"; curl -sS "$BASE/readyz"
\`\`\`

## Answers

- **200** is a decided outcome; **202** means accepted and queued but not decided yet: poll the \`Location\` header's URL.
- Every non-2xx answer is the \`ErrorResponse\` envelope; its \`code\` is one of \`ErrorCode\`. Every answer carries an \`x-request-id\` header.
- **Idempotency**: send an \`Idempotency-Key\` with a POST and retry with the same key and body as often as needed — the same owner + quest + key always gets the original outcome, never a second credit. An answer that replays an earlier outcome carries \`Idempotent-Replayed: true\`.
- 503 answers (\`DATABASE_UNAVAILABLE\`, \`QUEUE_UNAVAILABLE\`, \`ALLOCATION_FAILED\`) applied nothing: retry after \`Retry-After\` seconds, with the same Idempotency-Key.`;

// ---------------------------------------------------------------------------------------------
// Examples of the read answers (what a real quest, campaign and payout look like)
// ---------------------------------------------------------------------------------------------

export const EXAMPLE_ADDRESS = '0x52908400098527886E0F7030069857D2E4169EE7';

export const EXAMPLE_PAYOUT = {
  id: 'pay_01jf8q4g0x7m3r6v2k9d1n5bta',
  amount: 250,
  created_at: '2026-03-01T12:00:00.123Z',
  account: { pass: EXAMPLE_ADDRESS },
};

const QUEST_WINDOW = { start: '2026-03-01T00:00:00.000Z', end: '2026-04-01T00:00:00.000Z' };

export const EXAMPLE_QUEST_DETAIL = {
  id: 7,
  name: 'Spring raid',
  description: 'Clear the spring raid dungeon.',
  total_points: 100_000,
  points_remaining: 99_750,
  ...QUEST_WINDOW,
  is_active: true,
  payouts: [EXAMPLE_PAYOUT],
};

export const EXAMPLE_PUBLIC_QUESTS = [
  {
    id: 7,
    name: 'Spring raid',
    description: 'Clear the spring raid dungeon.',
    total_points: 100_000,
    expected_points_per_completion: 250,
    ...QUEST_WINDOW,
    campaign: { id: 3, name: 'Spring season', description: 'Quests of the spring season.' },
  },
  {
    id: 8,
    name: 'Daily login',
    description: 'Log in on any day of March.',
    total_points: 50_000,
    expected_points_per_completion: 10,
    ...QUEST_WINDOW,
    campaign: null,
  },
];

export const EXAMPLE_CAMPAIGN = {
  id: 3,
  created_at: '2026-02-20T09:30:00.000Z',
  updated_at: '2026-02-21T10:15:42.512Z',
  name: 'Spring season',
  description: 'Quests of the spring season.',
  ...QUEST_WINDOW,
  is_active: true,
  external_app_id: null,
  quests: [
    {
      id: 7,
      name: 'Spring raid',
      created_at: '2026-02-20T09:31:00.000Z',
      updated_at: '2026-02-20T09:31:00.000Z',
      description: 'Clear the spring raid dungeon.',
      ...QUEST_WINDOW,
      is_public: true,
      total_points: 100_000,
      expected_points_per_completion: 250,
      owner_id: 'own_01jf8q2m5c0v7k3r9x1d4n6bta',
      campaign_id: 3,
    },
  ],
};
