import type { ScenarioOutput } from '../context.ts';
import type { ServiceRun } from './runs.ts';

export function memoryOutput(svc: ServiceRun): ScenarioOutput {
  const rss = svc.rss ?? {};
  const names = Object.keys(rss).sort((a, b) => (a === 'api' ? -1 : b === 'api' ? 1 : a.localeCompare(b)));
  const ok = svc.verdict.ok;
  return {
    name: 'memory',
    ok,
    rows: names.map((n) => ({
      scenario: 'memory',
      metric: `peak RSS ${n} (during throughput)`,
      unit: 'MB' as const,
      service: rss[n]!.peakRssMb,
      status: ok ? 'PASS' : 'FAILED',
    })),
    raw: { rss },
    notes: [
      `memory: VmRSS sampled every 200 ms during the throughput run; VmHWM (peak since process start) ${names
        .map((n) => `${n} ${rss[n]!.hwmMb.toFixed(0)} MB`)
        .join(', ')}`,
    ],
  };
}
