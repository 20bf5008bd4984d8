import { execFile } from 'node:child_process';
import { Document, Spectral } from '@stoplight/spectral-core';
import * as Parsers from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedOpenApiDocument } from './helpers.ts';

/**
 * The served OpenAPI document passes `redocly lint` with the recommended ruleset, and Spectral with
 * its `spectral:oas` ruleset (the recommended rules of @stoplight/spectral-rulesets' `oas`): no
 * error and no warning from either (redocly also checks every example against its schema).
 * Offline: telemetry and the update check are off, and the document references nothing outside
 * itself.
 */

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const redoclyPackage = require.resolve('@redocly/cli/package.json');
const redocly = join(dirname(redoclyPackage), (require(redoclyPackage) as { bin: { redocly: string } }).bin.redocly);

interface Problem {
  ruleId: string;
  severity: string;
  message: string;
  location: { pointer: string }[];
}
interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: Problem[];
}

let dir: string;
let file: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'openapi-lint-'));
  file = join(dir, 'openapi.json');
  await writeFile(file, JSON.stringify(await servedOpenApiDocument(), null, 2));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function lint(path: string): Promise<LintReport> {
  // Exits 1 on errors; the JSON report on stdout says what they were either way.
  const result = await run(process.execPath, [redocly, 'lint', '--extends=recommended', '--format=json', path], {
    cwd: dir,
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
    maxBuffer: 16 * 1024 * 1024,
  }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  return JSON.parse(result.stdout) as LintReport;
}

const summary = (report: LintReport) =>
  report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);

describe('redocly lint (recommended)', () => {
  it('passes the served document with no error and no warning', async () => {
    const report = await lint(file);
    expect(summary(report)).toEqual([]);
    expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
  });

  it('would catch a wrong example or a missing license (the check can fail)', async () => {
    const doc = (await servedOpenApiDocument()) as {
      info: Record<string, unknown>;
      paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { example?: unknown }> }> }>>;
    };
    delete doc.info.license;
    doc.paths['/quests/{questId}']!.post!.responses['200']!.content['application/json']!.example = { payout: { amount: -1 } };
    const broken = join(dir, 'broken.json');
    await writeFile(broken, JSON.stringify(doc));
    const rules = new Set((await lint(broken)).problems.map((p) => p.ruleId));
    expect(rules).toContain('info-license');
    expect(rules).toContain('no-invalid-media-type-examples');
  });
});

/** `spectral lint` with `extends: spectral:oas`, run in-process; every result of the ruleset, as text. */
async function spectralLint(doc: unknown): Promise<string[]> {
  const spectral = new Spectral();
  // What a `.spectral.yaml` of `extends: spectral:oas` means: the oas ruleset's recommended rules.
  spectral.setRuleset({ extends: [[oas as never, 'recommended']] });
  const results = await spectral.run(new Document(JSON.stringify(doc, null, 2), Parsers.Json));
  const severity = ['error', 'warn', 'info', 'hint'];
  return results.map((r) => `${severity[r.severity]} ${r.code} at ${r.path.join('.')}: ${r.message}`);
}

describe('Spectral (spectral:oas)', () => {
  it('passes the served document with no error, warning, info or hint', async () => {
    expect(await spectralLint(await servedOpenApiDocument())).toEqual([]);
  });

  it('would catch a missing contact or operation description (the check can fail)', async () => {
    const doc = (await servedOpenApiDocument()) as {
      info: Record<string, unknown>;
      paths: Record<string, Record<string, Record<string, unknown>>>;
    };
    delete doc.info.contact;
    delete doc.paths['/healthz']!.get!.description;
    const problems = await spectralLint(doc);
    expect(problems).toContainEqual(expect.stringMatching(/^warn info-contact at info:/));
    expect(problems).toContainEqual(expect.stringMatching(/^warn operation-description at paths\.\/healthz\.get:/));
  });
});
