import type { ScenarioResult } from './run.ts';

export function formatTable(results: ScenarioResult[]): string {
  const lines = [
    '| Fault | Requests | 200 | 202 | 4xx | 5xx | conn. errors | Time to recover | `credit` | Webhooks | Violations |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|',
  ];
  for (const r of results) {
    const v = r.violations.length === 0 ? '0' : `**${r.violations.length}**: ${summarize(r.violations)}`;
    const rec = r.recoveryMs === undefined ? 'never' : `${(r.recoveryMs / 1000).toFixed(1)} s`;
    const resume =
      (r.resumeMs === undefined ? '' : `; first 200 ${(r.resumeMs / 1000).toFixed(1)} s after the promotion`) +
      (r.availability ? `; ${r.availability}` : '');
    lines.push(
      `| ${r.fault} | ${r.requests}${r.reversals ? ` (${r.reversals} reversals)` : ''} | ${r.s200} | ${r.s202} | ${r.s4xx} | ${r.s5xx} | ${r.errors} | ${rec}${resume} | ${r.credit ?? '–'} | ${r.webhooks ?? '–'} | ${v} |`,
    );
  }
  return lines.join('\n');
}

/** Group violations by kind (the text before the first digit-bearing detail) for one table cell. */
function summarize(violations: string[]): string {
  const kinds = new Map<string, number>();
  for (const v of violations) {
    const kind = v
      .replace(/^(alloc|batch|allocation|reversal|request|quest \d+:) \S+( \(quest \d+\))?:?\s*/, '')
      .replace(/\|/g, '/')
      .slice(0, 90);
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  return [...kinds].map(([k, n]) => `${n}× ${k}`).join('; ');
}
