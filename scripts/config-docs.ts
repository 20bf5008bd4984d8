/**
 * `npm run docs:config`: write docs/configuration.md from the zod schemas every program parses its
 * environment with, so the schemas are the only place a variable is described. A test
 * (tests/docs/configuration.test.ts) renders the page in memory and fails when the file differs.
 *
 * Each variable's description, and where the schema cannot say it, its `defaultText` and
 * `boundsText`, come from its zod metadata (see packages/config/src/vars.ts); its default and
 * bounds come from the schema itself, through zod's JSON Schema conversion.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { adminEnvSchema } from '../apps/admin/src/env.ts';
import { apiEnvSchema } from '../apps/api/src/env.ts';
import { healthcheckEnvSchema, workerEnvSchema } from '../apps/worker/src/env.ts';
import { migrateEnvSchema } from '../packages/db/src/bin/env.ts';

export const CONFIGURATION_DOC = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));

type Group = 'api' | 'worker' | 'quest-admin' | 'migrate';

/** Every program that parses an environment, with the schema it parses it with. */
const PROGRAMS: { name: string; group: Group; schema: z.ZodType }[] = [
  { name: 'api', group: 'api', schema: apiEnvSchema },
  { name: 'worker', group: 'worker', schema: workerEnvSchema },
  { name: 'healthcheck', group: 'worker', schema: healthcheckEnvSchema },
  { name: 'migrate', group: 'migrate', schema: migrateEnvSchema },
  { name: 'quest-admin', group: 'quest-admin', schema: adminEnvSchema },
];

/** One property of a schema as JSON Schema describes it, with our metadata keys. */
interface Property {
  description?: string;
  default?: unknown;
  defaultText?: string;
  boundsText?: string;
  type?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  enum?: unknown[];
}

interface Variable {
  name: string;
  description: string;
  readers: { program: string; group: Group; property: Property }[];
}

const MiB = 1024 * 1024;

function bytes(n: number): string {
  if (n % MiB === 0) return `${n / MiB} MiB`;
  if (n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} B`;
}

const UNITS: [number, string][] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'min'],
  [1000, 's'],
  [1, 'ms'],
];

/** A duration in its largest whole unit, e.g. 86400000 → "1 d", 1500 → "1500 ms". */
function duration(ms: number): string {
  if (ms === 0) return '0';
  const [size, unit] = UNITS.find(([size]) => ms % size === 0)!;
  return `${ms / size} ${unit}`;
}

/** How a number of this variable reads to a person: bytes and durations in units, counts as they are. */
function human(name: string, n: number): string | undefined {
  if (name.endsWith('_BYTES')) return bytes(n);
  if (name.endsWith('_MS')) return duration(n);
  if (name.endsWith('_SECONDS')) return duration(n * 1000);
  return undefined;
}

function defaultOf(name: string, p: Property): string {
  if (p.defaultText) return p.defaultText;
  if (p.default === undefined) return 'unset';
  const literal = `\`${String(p.default)}\``;
  const unit = typeof p.default === 'number' && p.default !== 0 ? human(name, p.default) : undefined;
  return unit && unit !== `${p.default} ms` ? `${literal} (${unit})` : literal;
}

function boundsOf(name: string, p: Property): string {
  if (p.boundsText) return p.boundsText;
  if (p.type === 'integer' && p.minimum !== undefined && p.maximum !== undefined) {
    return `${human(name, p.minimum) ?? p.minimum} – ${human(name, p.maximum) ?? p.maximum}`;
  }
  if (p.enum) return p.enum.map((v) => `\`${String(v)}\``).join(', ');
  if (p.type === 'string' && p.minLength === 1) return 'not empty';
  if (p.type === 'string' && p.minLength !== undefined) return `at least ${p.minLength} characters`;
  return 'any string';
}

/** The same text for every program, or each program's own ("api `10`, worker `20`"). */
function perProgram(variable: Variable, render: (p: Property) => string): string {
  const texts = variable.readers.map((r) => ({ program: r.program, text: render(r.property) }));
  if (texts.every((t) => t.text === texts[0]!.text)) return texts[0]!.text;
  return texts.map((t) => `${t.program} ${t.text}`).join(', ');
}

function collectVariables(): Variable[] {
  const variables = new Map<string, Variable>();
  for (const program of PROGRAMS) {
    const json = z.toJSONSchema(program.schema, { io: 'input', unrepresentable: 'any' }) as {
      properties: Record<string, Property>;
    };
    for (const [name, property] of Object.entries(json.properties)) {
      if (!property.description) throw new Error(`${name} (${program.name}): no description in its schema's .meta()`);
      const known = variables.get(name);
      if (known && known.description !== property.description) {
        throw new Error(
          `${name}: described differently by ${known.readers[0]!.program} and ${program.name}; share one definition`,
        );
      }
      const variable = known ?? { name, description: property.description, readers: [] };
      variable.readers.push({ program: program.name, group: program.group, property });
      variables.set(name, variable);
    }
  }
  return [...variables.values()];
}

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

function table(variables: Variable[]): string {
  const rows = variables.map((v) =>
    [
      `\`${v.name}\``,
      perProgram(v, (p) => defaultOf(v.name, p)),
      perProgram(v, (p) => boundsOf(v.name, p)),
      v.readers.map((r) => r.program).join(', '),
      v.description,
    ]
      .map(cell)
      .join(' | '),
  );
  return ['| Variable | Default | Accepted | Read by | Meaning |', '|---|---|---|---|---|', ...rows.map((r) => `| ${r} |`)].join(
    '\n',
  );
}

const SECTIONS: { title: string; takes: (v: Variable) => boolean }[] = [
  { title: 'Read by more than one program', takes: (v) => new Set(v.readers.map((r) => r.group)).size > 1 },
  { title: 'API', takes: (v) => v.readers.every((r) => r.group === 'api') },
  { title: 'Worker', takes: (v) => v.readers.every((r) => r.group === 'worker') },
  { title: 'quest-admin', takes: (v) => v.readers.every((r) => r.group === 'quest-admin') },
];

const INTRO = `# Configuration

<!-- Generated by \`npm run docs:config\` (scripts/config-docs.ts) from the zod schemas the programs parse
their environment with; edit the descriptions there, not here. A test fails when this page is stale. -->

Each program parses its environment once at start-up with zod and exits with a readable message
naming every bad variable. Only the entry points hand \`process.env\` to those schemas (Biome's
\`noProcessEnv\` rule enforces it); everything else receives the parsed values.

**Programs.** \`api\` (\`npm run start:api\`, \`apps/api\`), \`worker\` (\`npm run start:worker\`,
\`apps/worker\`), \`healthcheck\` (the worker's container healthcheck,
\`apps/worker/dist/healthcheck.mjs\`), \`migrate\` (\`npm run migrate\`), \`quest-admin\` (the operator
CLI). \`npm start\` runs migrate, then one api and one worker.

**\`.env\` file.** Every program reads a dotenv file: the one named by \`ENV_FILE\`, else the nearest
\`.env\` from the working directory up to the project root (the directory with
\`package-lock.json\`), so \`npm start\` and the workspace scripts it runs read the repository's
\`.env\`. A variable set in the real environment — even to an empty string — wins over the file;
the file fills in only what is unset; defaults apply last.
\`.env.example\` lists the common variables (copy it to \`.env\`, which git and the Docker build
ignore). The file is parsed with Node's own dotenv parser (\`util.parseEnv\`: \`KEY=value\`, quotes,
\`#\` comments, \`export\` prefixes) and never written into \`process.env\`.

**Production settings.** Redis with \`maxmemory-policy noeviction\` and AOF \`appendfsync everysec\`
(the compose file uses both); the API behind TLS (clients must use HTTPS).

**Tests.** \`npm test\` does not read \`.env\`: it takes \`TEST_DATABASE_URL\` and \`TEST_REDIS_URL\` from the
environment (default: the local servers, or testcontainers when a Docker engine is present and
neither is set; each test file makes its own database and key prefix), and \`FUZZ_RUNS\` (default
150) sets the cases per property of the API fuzz test. The tests start their processes with
\`ENV_FILE=/dev/null\`.
Both URLs may carry credentials and options, and the Redis URL a database index: every URL the
tests, the bench and the fault proxies derive from them (another database, a proxy's port) keeps
the user, password, index and options (\`packages/config/src/urls.ts\`). For a Redis with
\`requirepass\` on database 7 and a PostgreSQL user with a password (it needs \`CREATEDB\`; the URL
names the maintenance database \`postgres\`):
\`TEST_REDIS_URL=redis://:secret@127.0.0.1:6379/7 TEST_DATABASE_URL=postgres://quest:secret@127.0.0.1:5432/postgres npm test\`.
A password with \`@\`, \`:\` or \`/\` in it is percent-encoded (\`p%40ss\`).
`;

/** The whole page, as \`npm run docs:config\` writes it. */
export function renderConfigurationDoc(): string {
  const variables = collectVariables();
  const parts = [INTRO];
  for (const section of SECTIONS) {
    const mine = variables.filter(section.takes);
    if (mine.length === 0) continue;
    parts.push(`## ${section.title}\n\n${table(mine)}\n`);
  }
  const placed = SECTIONS.reduce((n, s) => n + variables.filter(s.takes).length, 0);
  if (placed !== variables.length) throw new Error('a variable fits no section, or more than one');
  return parts.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(CONFIGURATION_DOC, renderConfigurationDoc());
  console.log(`wrote ${CONFIGURATION_DOC}`);
}
