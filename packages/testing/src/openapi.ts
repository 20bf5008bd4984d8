import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/** What a response must expose to be checked: light-my-request's shape, or an adapted fetch one. */
export interface CheckedResponse {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
  json(): unknown;
}

/**
 * The API's contract in tests: each response is validated against the operation's schema for its
 * status in the generated OpenAPI document (or the error envelope for undocumented routes).
 */
interface Operation {
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}
interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes?: Record<string, unknown> };
}

export class OpenApiContract {
  readonly #ajv: Ajv2020;
  readonly #validators = new Map<string, ValidateFunction>();
  /** How many responses were checked against a schema of the document. */
  checked = 0;

  private constructor(readonly doc: OpenApiDoc) {
    this.#ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(this.#ajv);
  }

  static async load(app: {
    inject(opts: { method: 'GET'; url: string }): Promise<{ statusCode: number; json(): unknown }>;
  }): Promise<OpenApiContract> {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    if (res.statusCode !== 200) throw new Error(`GET /openapi.json answered ${res.statusCode}`);
    return new OpenApiContract(res.json() as OpenApiDoc);
  }

  static fromDocument(doc: unknown): OpenApiContract {
    return new OpenApiContract(doc as OpenApiDoc);
  }

  /** The documented path template a concrete path falls under, if any. */
  templateFor(path: string): string | undefined {
    const templates = Object.keys(this.doc.paths);
    if (templates.includes(path)) return path;
    return templates.find((t) => new RegExp(`^${t.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path));
  }

  /** A validator of `schema`, resolving `#/components/...` references against the document. */
  validator(key: string, schema: unknown): ValidateFunction {
    let validate = this.#validators.get(key);
    if (!validate) {
      validate = this.#ajv.compile({ ...(schema as object), components: this.doc.components });
      this.#validators.set(key, validate);
    }
    return validate;
  }

  check(method: string, url: string, res: CheckedResponse): void {
    const where = `${method} ${url} → ${res.statusCode}`;
    const requestId = res.headers['x-request-id'];
    if (typeof requestId !== 'string' || requestId.length === 0) throw new Error(`${where}: no x-request-id header`);
    const path = url.split('?', 1)[0]!;
    const template = this.templateFor(path);
    const operation = template ? this.doc.paths[template]?.[method.toLowerCase()] : undefined;
    let schema: unknown;
    let key: string;
    if (operation) {
      const response = operation.responses?.[String(res.statusCode)];
      if (!response) throw new Error(`${where}: status ${res.statusCode} is not documented for ${method} ${template}`);
      schema = response.content?.['application/json']?.schema;
      key = `${method} ${template} ${res.statusCode}`;
      if (!schema) throw new Error(`${where}: no application/json schema documented`);
    } else if (res.statusCode >= 400) {
      // Unknown routes (and test-only routes hidden from the document) still answer the envelope.
      schema = { $ref: '#/components/schemas/ErrorResponse' };
      key = 'ErrorResponse';
    } else {
      throw new Error(`${where}: undocumented route answered ${res.statusCode}`);
    }
    const contentType = String(res.headers['content-type'] ?? '');
    if (!contentType.startsWith('application/json')) throw new Error(`${where}: content-type ${contentType}`);
    const validate = this.validator(key, schema);
    const body: unknown = res.json();
    if (!validate(body)) {
      throw new Error(`${where}: body does not match the OpenAPI schema: ${JSON.stringify(validate.errors)}\n${res.body}`);
    }
    if (res.statusCode >= 400 && (body as { requestId?: unknown }).requestId !== requestId) {
      throw new Error(`${where}: requestId in the body differs from the x-request-id header`);
    }
    this.checked++;
  }
}
