import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '@quest/testing/processes';
import { FULL_LOAD, runScenario, type ScenarioResult, SMALL_LOAD } from './run.ts';
import { SCENARIOS } from './scenarios/index.ts';
import { formatTable } from './table.ts';

/**
 * `npm run chaos [-- --only a,b] [--small] [--no-readme] [--dump DIR]`: every fault scenario in turn, each on
 * its own private PostgreSQL and Redis; prints the table and writes it into docs/reliability.md's "Fault
 * suite" section. Exits 1 when any invariant was violated.
 */
const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    small: { type: 'boolean', default: false },
    'no-readme': { type: 'boolean', default: false },
    dump: { type: 'string' },
  },
});
const only = values.only?.split(',');
const scenarios = SCENARIOS.filter((s) => !only || only.includes(s.name));
if (scenarios.length === 0) {
  console.error(`no scenario matches; known: ${SCENARIOS.map((s) => s.name).join(', ')}`);
  process.exit(2);
}

const results: ScenarioResult[] = [];
for (const s of scenarios) {
  try {
    results.push(await runScenario(s, values.small ? SMALL_LOAD : FULL_LOAD, undefined, values.dump));
  } catch (err) {
    results.push({
      name: s.name,
      fault: s.fault,
      requests: 0,
      reversals: 0,
      s200: 0,
      s202: 0,
      s4xx: 0,
      s5xx: 0,
      errors: 0,
      recoveryMs: undefined,
      violations: [`scenario could not run: ${(err as Error).message.split('\n')[0]}`],
    });
  }
  const r = results.at(-1)!;
  for (const v of r.violations.slice(0, 15)) console.error(`  [${r.name}] ${v}`);
  if (r.violations.length > 15) console.error(`  [${r.name}] … ${r.violations.length - 15} more`);
}

const table = formatTable(results);
console.log(table);
if (!values['no-readme'] && !only) {
  const readme = join(REPO_ROOT, 'docs/reliability.md');
  const text = readFileSync(readme, 'utf8');
  const start = '<!-- CHAOS:START -->';
  const end = '<!-- CHAOS:END -->';
  const i = text.indexOf(start);
  const j = text.indexOf(end);
  if (i >= 0 && j > i) {
    const stamp = `Latest \`npm run chaos\` (${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${FULL_LOAD.clients} clients; the 4xx are the intended rejections: 1 request in 23 credits an address with no account):`;
    writeFileSync(readme, `${text.slice(0, i + start.length)}\n${stamp}\n\n${table}\n${text.slice(j)}`);
    console.error('docs/reliability.md: Fault suite table updated');
  }
}
process.exit(results.some((r) => r.violations.length > 0) ? 1 : 0);
